//===- LinearKernels.cpp - GEMV / flat GEMM and sparse linear -------------===//
//
// Dense linear, first version: one warp per output row n. Each lane reads 16
// bytes of the weight row per step (a warp covers 512 contiguous bytes, fully
// coalesced), multiplies with the same slice of each of the M activation rows
// and accumulates in f32; a shuffle reduction gives the dot product and lane
// 0 applies the epilogue. The weight row is read from HBM once; the M passes
// over it hit L1. With N / warpsPerBlock blocks (1024 for N = 4096) every
// SM gets work.
//
//===----------------------------------------------------------------------===//

#include "../DecodeToHost/PackedLayouts.h"
#include "KernelContext.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
/// bias / residual are optional: append those present and remember where.
struct OptionalArgs {
  int biasIndex = -1, residualIndex = -1;
  void add(SmallVectorImpl<KernelArg> &args, Buffer bias, Buffer residual) {
    if (bias.pointer) {
      biasIndex = args.size();
      args.push_back(KernelArg::buffer(bias));
    }
    if (residual.pointer) {
      residualIndex = args.size();
      args.push_back(KernelArg::buffer(residual));
    }
  }
};

/// The epilogue of output (i, j) from the accumulators of weight rows j
/// (and j + N for silu_gate_up); stores to out.
void emitEpilogue(GpuEmitter &e, ArrayRef<Value> v, const OptionalArgs &opt,
                  decode::Activation activation, Value i, Value j, Value accJ,
                  Value accUp, Value out, int64_t n) {
  ImplicitLocOpBuilder &b = e.builder();
  auto biased = [&](Value acc, Value row) {
    return opt.biasIndex >= 0 ? e.add(acc, e.load(v[opt.biasIndex], row)) : acc;
  };
  Value result = biased(accJ, j);
  if (activation == decode::Activation::silu_gate_up) {
    Value up = biased(accUp, arith::AddIOp::create(b, j, e.index(n)));
    Value one = e.f32(1);
    Value expNegResult = e.exp(e.sub(e.f32(0), result));
    Value silu = e.div(result, e.add(one, expNegResult));
    result = e.mul(silu, up);
  }
  if (opt.residualIndex >= 0)
    result = e.add(result, e.load(v[opt.residualIndex], {i, j}));
  e.store(result, out, {i, j});
}
} // namespace

void fdc::gpu::buildLinear(KernelContext &ctx, const GemvConfig &config,
                           Buffer input, Buffer weight, Type weightType,
                           Buffer bias, Buffer residual,
                           decode::Activation activation, Buffer out) {
  int64_t k = input.type.getDimSize(1);
  int64_t n = out.type.getDimSize(1);
  auto quant = dyn_cast<decode::QuantTensorType>(weightType);
  int64_t elementBytes =
      input.type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t lanes = config.vectorBytes / elementBytes;
  if (quant || k % lanes != 0)
    lanes = 1;
  int64_t warps = config.warpsPerBlock;

  SmallVector<KernelArg> args = {KernelArg::buffer(input),
                                 KernelArg::buffer(weight),
                                 KernelArg::buffer(out)};
  OptionalArgs opt;
  opt.add(args, bias, residual);
  ctx.launch(
      "linear", args,
      {ctx.hostIndex((n + warps - 1) / warps), ctx.hostIndex(1),
       ctx.hostIndex(1)},
      warps * ctx.subgroupSize(), 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value block = e.blockId(Dimension::x);
        Value firstRow = arith::MulIOp::create(b, block, e.index(warps));
        Value row = arith::AddIOp::create(b, firstRow, e.subgroupId());
        Value lane = e.laneId();
        Value start = arith::MulIOp::create(b, lane, e.index(lanes));
        Value stride = e.index(e.subgroupSize() * lanes);
        Value batch =
            arith::IndexCastOp::create(b, b.getIndexType(), v[args.size()]);
        auto dot = [&](Value i, Value weightRow) {
          if (quant) {
            Value end = e.index(k);
            Value zero = e.f32(0);
            return e.reduce(
                start, end, stride, zero, [&](Value kk, ValueRange acc) {
                  Value w = host::loadInt4Weight(e, v[1], quant, weightRow, kk);
                  Value x = e.load(v[0], {i, kk});
                  return SmallVector<Value>{e.add(acc[0], e.mul(w, x))};
                })[0];
          }
          auto vectorType = VectorType::get({lanes}, b.getF32Type());
          Value zero = arith::ConstantOp::create(
              b, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
          Value acc =
              e.reduce(start, e.index(k), stride, zero,
                       [&](Value kk, ValueRange carried) {
                         Value w = e.loadVector(v[1], {weightRow, kk}, lanes);
                         Value x = e.loadVector(v[0], {i, kk}, lanes);
                         Value product = arith::MulFOp::create(b, w, x);
                         return SmallVector<Value>{
                             arith::AddFOp::create(b, carried[0], product)};
                       })[0];
          return Value(
              vector::ReductionOp::create(b, vector::CombiningKind::ADD, acc));
        };
        e.ifThenElse(e.cmpi(CmpIPredicate::ult, row, e.index(n)), [&] {
          e.loop(batch, [&](Value i) {
            Value accRow = e.subgroupSum(dot(i, row));
            Value accUp;
            if (activation == decode::Activation::silu_gate_up)
              accUp = e.subgroupSum(
                  dot(i, arith::AddIOp::create(b, row, e.index(n))));
            e.ifThenElse(e.cmpi(CmpIPredicate::eq, lane, e.index(0)), [&] {
              emitEpilogue(e, v, opt, activation, i, row, accRow, accUp, v[2],
                           n);
            });
          });
        });
      });
}

void fdc::gpu::buildSparseLinear(KernelContext &ctx, const RowConfig &config,
                                 Buffer input, Buffer weight,
                                 decode::TiledCSLType type, Buffer accumulator,
                                 Buffer bias, Buffer residual,
                                 decode::Activation activation, Buffer out) {
  int64_t rows = type.getShape()[0], cols = type.getShape()[1];
  int64_t tileRows = type.getTile()[0], tileCols = type.getTile()[1];
  int64_t tilesPerRow = cols / tileCols;
  int64_t tiles = (rows / tileRows) * tilesPerRow;
  int64_t warps = config.threads / ctx.subgroupSize();
  Type valueType = type.getElementType();

  // First version (correct, not yet Flash-LLM's kernel): one block per
  // weight row scans the words of its tile row and keeps its own.
  ctx.launch(
      "sparse_linear",
      {KernelArg::buffer(input), KernelArg::buffer(weight),
       KernelArg::buffer(accumulator)},
      {ctx.hostIndex(rows), ctx.hostIndex(1), ctx.hostIndex(1)}, config.threads,
      warps, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value row = e.blockId(Dimension::x);
        Value tileRow = arith::DivUIOp::create(b, row, e.index(tileRows));
        Value rowInTile = arith::RemUIOp::create(b, row, e.index(tileRows));
        Value batch = arith::IndexCastOp::create(b, b.getIndexType(), v[3]);
        auto offsetAt = [&](Value tile) {
          Value word = memref::LoadOp::create(b, v[1], tile);
          Value wide = arith::ExtUIOp::create(b, b.getI64Type(), word);
          Value valuesBase = e.index(tiles + 1);
          Value offset = arith::IndexCastOp::create(b, b.getIndexType(), wide);
          return arith::AddIOp::create(b, valuesBase, offset);
        };
        e.loop(batch, [&](Value i) {
          Value tilesInRow = e.index(tilesPerRow);
          Value zero = e.f32(0);
          Value partial = e.reduce1(tilesInRow, zero, [&](Value tc, Value acc) {
            Value tile = arith::AddIOp::create(
                b, arith::MulIOp::create(b, tileRow, e.index(tilesPerRow)), tc);
            Value tileStart = offsetAt(tile);
            Value begin = arith::AddIOp::create(b, tileStart, e.threadId());
            Value end = offsetAt(arith::AddIOp::create(b, tile, e.index(1)));
            return e.reduce(
                begin, end, e.index(config.threads), acc,
                [&](Value w, ValueRange sum) {
                  Value word = memref::LoadOp::create(b, v[1], w);
                  Value location = arith::IndexCastOp::create(
                      b, b.getIndexType(),
                      arith::ShRUIOp::create(b, word, e.i32(16)));
                  Value r =
                      arith::DivUIOp::create(b, location, e.index(tileCols));
                  Value c =
                      arith::RemUIOp::create(b, location, e.index(tileCols));
                  Value bits = arith::TruncIOp::create(b, b.getI16Type(), word);
                  Value narrow = arith::BitcastOp::create(b, valueType, bits);
                  Value value =
                      arith::ExtFOp::create(b, b.getF32Type(), narrow);
                  Value col = arith::AddIOp::create(
                      b, arith::MulIOp::create(b, tc, e.index(tileCols)), c);
                  Value term = e.mul(value, e.load(v[0], {i, col}));
                  Value mine = e.cmpi(CmpIPredicate::eq, r, rowInTile);
                  return SmallVector<Value>{
                      e.add(sum[0], e.select(mine, term, e.f32(0)))};
                })[0];
          });
          Value total = e.blockSum(partial, v.back(), warps);
          Value thread = e.threadId();
          e.ifThenElse(e.cmpi(CmpIPredicate::eq, thread, e.index(0)), [&] {
            memref::StoreOp::create(b, total, v[2], ValueRange{i, row});
          });
        });
      });

  int64_t n = out.type.getDimSize(1);
  SmallVector<KernelArg> args = {KernelArg::buffer(accumulator),
                                 KernelArg::buffer(out)};
  OptionalArgs opt;
  opt.add(args, bias, residual);
  ctx.launch("linear_epilogue", args,
             {ctx.hostIndex((n + config.threads - 1) / config.threads),
              ctx.toIndex(ctx.batch), ctx.hostIndex(1)},
             config.threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
               ImplicitLocOpBuilder &b = e.builder();
               Value i = e.blockId(Dimension::y);
               Value block = e.blockId(Dimension::x);
               Value blockStart =
                   arith::MulIOp::create(b, block, e.index(config.threads));
               Value j = arith::AddIOp::create(b, blockStart, e.threadId());
               e.ifThenElse(e.cmpi(CmpIPredicate::ult, j, e.index(n)), [&] {
                 Value acc = memref::LoadOp::create(b, v[0], ValueRange{i, j});
                 Value up;
                 if (activation == decode::Activation::silu_gate_up)
                   up = memref::LoadOp::create(
                       b, v[0],
                       ValueRange{i, arith::AddIOp::create(b, j, e.index(n))});
                 emitEpilogue(e, v, opt, activation, i, j, acc, up, v[1], n);
               });
             });
}
