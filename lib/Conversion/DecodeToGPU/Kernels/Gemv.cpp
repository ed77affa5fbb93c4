//===- Gemv.cpp - kernel family "gemv" ------------------------------------===//
//
// decode.linear, first version: one subgroup per output row n. Each lane
// reads `vector_bytes` of the weight row per step (a subgroup covers
// subgroup * vector_bytes contiguous bytes, fully coalesced), multiplies with
// the same slice of each of the M activation rows and accumulates in f32; a
// subgroup reduction gives the dot product and lane 0 applies the shared
// epilogue. The weight row is read from HBM once; the M passes over it hit
// L1. Where K is a whole number of steps, a lane takes kGemvUnroll steps an
// iteration, all their loads before the products. INT4 weights are
// dequantised on the fly. `rows_per_block` subgroups share a block.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"
#include "LinearArgs.h"

#include "fdc/Conversion/Utils/PackedLayouts.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
/// The steps of a lane's pass over K whose loads are in flight together.
constexpr int64_t kGemvUnroll = 4;

void buildGemv(KernelContext &ctx, int64_t rowsPerBlock, int64_t vectorBytes,
               Buffer input, Buffer weight, Type weightType, Buffer bias,
               Buffer residual, decode::Activation activation, Buffer out) {
  int64_t k = input.type.getDimSize(1);
  int64_t n = out.type.getDimSize(1);
  auto quant = dyn_cast<decode::QuantTensorType>(weightType);
  int64_t elementBytes =
      input.type.getElementType().getIntOrFloatBitWidth() / 8;
  int64_t lanes = vectorBytes / elementBytes;
  if (quant || k % lanes != 0)
    lanes = 1;
  int64_t warps = rowsPerBlock;

  SmallVector<KernelArg> args = {KernelArg::buffer(input),
                                 KernelArg::buffer(weight),
                                 KernelArg::buffer(out)};
  LinearOptionalArgs opt(activation);
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
        int64_t stepElements = e.subgroupSize() * lanes;
        Value stride = e.index(stepElements);
        // The steps of a lane's pass unrolled (vector loads only): where K
        // is a whole number of steps, every lane takes as many, so the
        // unrolled part ends at the same k for all and the rest runs one
        // step at a time.
        int64_t unroll = k % stepElements == 0 && lanes > 1 ? kGemvUnroll : 1;
        Value batch =
            arith::IndexCastOp::create(b, b.getIndexType(), v[args.size()]);
        // The dot products of activation row i with each weight row in one
        // pass over K: SiLU-gate-up's gate and up rows load side by side,
        // so that neither waits for the other's reduction.
        auto dots = [&](Value i, ArrayRef<Value> weightRows) {
          SmallVector<Value> sums;
          if (quant) {
            SmallVector<Value> zeros(weightRows.size(), e.f32(0));
            for (Value acc :
                 e.reduce(start, e.index(k), stride, zeros,
                          [&](Value kk, ValueRange carried) {
                            Value x = e.load(v[0], {i, kk});
                            SmallVector<Value> next;
                            for (auto [weightRow, partial] :
                                 llvm::zip_equal(weightRows, carried)) {
                              Value w =
                                  loadInt4Weight(e, v[1], quant, weightRow, kk);
                              next.push_back(e.add(partial, e.mul(w, x)));
                            }
                            return next;
                          }))
              sums.push_back(acc);
            return sums;
          }
          auto vectorType = VectorType::get({lanes}, b.getF32Type());
          Value zero = arith::ConstantOp::create(
              b, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
          SmallVector<Value> zeros(weightRows.size(), zero);
          // `unroll` steps of the lane's pass over K per iteration, every
          // load issued before the first multiply: a lane keeps that many
          // weight vectors in flight, where one step per iteration waited
          // for each load before issuing the next. The products add in k
          // order, as with one step.
          auto pass = [&](Value from, Value to, int64_t steps,
                          ValueRange init) {
            Value step = e.index(stepElements * steps);
            return e.reduce(
                from, to, step, init, [&](Value kk, ValueRange carried) {
                  SmallVector<Value> xs, ws;
                  for (int64_t u = 0; u < steps; ++u) {
                    Value at =
                        arith::AddIOp::create(b, kk, e.index(u * stepElements));
                    xs.push_back(e.loadVector(v[0], {i, at}, lanes));
                    for (Value weightRow : weightRows)
                      ws.push_back(e.loadVector(v[1], {weightRow, at}, lanes));
                  }
                  SmallVector<Value> next(carried.begin(), carried.end());
                  for (int64_t u = 0; u < steps; ++u)
                    for (size_t r = 0; r < weightRows.size(); ++r) {
                      Value w = ws[u * weightRows.size() + r];
                      Value product = arith::MulFOp::create(b, w, xs[u]);
                      next[r] = arith::AddFOp::create(b, next[r], product);
                    }
                  return next;
                });
          };
          // Every lane's unrolled steps end at the same k: `unrolledEnd`
          // past its first (0 without unrolling).
          SmallVector<Value> acc(zeros);
          int64_t unrolledSteps = stepElements * unroll;
          int64_t unrolledEnd =
              unroll > 1 ? k / unrolledSteps * unrolledSteps : 0;
          if (unrolledEnd > 0)
            acc = pass(start, e.index(unrolledEnd), unroll, acc);
          if (unrolledEnd < k) {
            Value from = arith::AddIOp::create(b, start, e.index(unrolledEnd));
            acc = pass(from, e.index(k), 1, acc);
          }
          for (Value partial : acc)
            sums.push_back(vector::ReductionOp::create(
                b, vector::CombiningKind::ADD, partial));
          return sums;
        };
        SmallVector<Value> weightRows = {row};
        if (activation == decode::Activation::silu_gate_up)
          weightRows.push_back(arith::AddIOp::create(b, row, e.index(n)));
        e.ifThenElse(e.cmpi(CmpIPredicate::ult, row, e.index(n)), [&] {
          e.loop(batch, [&](Value i) {
            SmallVector<Value> sums = dots(i, weightRows);
            Value accRow = e.subgroupSum(sums[0]);
            Value accUp;
            if (sums.size() > 1)
              accUp = e.subgroupSum(sums[1]);
            e.ifThenElse(e.cmpi(CmpIPredicate::eq, lane, e.index(0)), [&] {
              emitLinearOutput(e, opt.operands(v, v[2]), i, row, accRow, accUp);
            });
          });
        });
      });
}

class GemvFamily : public KernelFamily {
public:
  StringRef getName() const override { return "gemv"; }
  bool canLower(Operation *op) const override {
    return isa<decode::LinearOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    // SiLU-gate-up reads two weight rows per output: 8 outputs a block
    // (H100, [2 x 14336, 4096] at M = 1: 79.7 us against 82.3 with 4, 82.1
    // with 2 and 80.3 with 1; plain [28672, 4096] 78.6 with 4).
    int64_t rows = cast<decode::LinearOp>(op).getActivation() ==
                           decode::Activation::silu_gate_up
                       ? 8
                       : 4;
    int64_t maxRows = target.maxSubgroups();
    return makeConfig(op->getContext(),
                      {{"rows_per_block", std::min(rows, maxRows)},
                       {"vector_bytes", target.vectorBytes()}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    int64_t maxRows = target.maxSubgroups();
    if (failed(checkRange(op, config, "rows_per_block", 1, maxRows)))
      return failure();
    return checkVectorBytes(op, config, "vector_bytes", target,
                            cast<decode::LinearOp>(op).getInput().getType());
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto linear = cast<decode::LinearOp>(op);
    buildGemv(ctx, config.get("rows_per_block"), config.get("vector_bytes"),
              buffers.get(linear.getInput()), buffers.get(linear.getWeight()),
              linear.getWeight().getType(),
              buffers.getOptional(linear.getBias()),
              buffers.getOptional(linear.getResidual()), linear.getActivation(),
              buffers.result(linear.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createGemvFamily() {
  return std::make_unique<GemvFamily>();
}
