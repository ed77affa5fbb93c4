//===- SparseRowScan.cpp - kernel family "sparse_row_scan" ----------------===//
//
// decode.sparse_linear, a correct first version (not yet Flash-LLM's
// load-as-sparse / compute-as-dense kernel): one block per weight row scans
// the Tiled-CSL words of its tile row and keeps its own into an f32
// accumulator in scratch; a second kernel applies the shared epilogue.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"
#include "LinearArgs.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
void buildSparseRowScan(KernelContext &ctx, int64_t threads, Buffer input,
                        Buffer weight, decode::TiledCSLType type,
                        Buffer accumulator, Buffer bias, Buffer residual,
                        decode::Activation activation, Buffer out) {
  int64_t rows = type.getShape()[0], cols = type.getShape()[1];
  int64_t tileRows = type.getTile()[0], tileCols = type.getTile()[1];
  int64_t tilesPerRow = type.getTilesPerRow();
  int64_t warps = threads / ctx.subgroupSize();
  Type valueType = type.getElementType();

  // First version (correct, not yet Flash-LLM's kernel): one block per
  // weight row scans the words of its tile row and keeps its own.
  ctx.launch(
      "sparse_linear",
      {KernelArg::buffer(input), KernelArg::buffer(weight),
       KernelArg::buffer(accumulator)},
      {ctx.hostIndex(rows), ctx.hostIndex(1), ctx.hostIndex(1)}, threads, warps,
      [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value row = e.blockId(Dimension::x);
        Value tileRow = arith::DivUIOp::create(b, row, e.index(tileRows));
        Value rowInTile = arith::RemUIOp::create(b, row, e.index(tileRows));
        Value batch = arith::IndexCastOp::create(b, b.getIndexType(), v[3]);
        auto offsetAt = [&](Value tile) {
          Value word = memref::LoadOp::create(b, v[1], tile);
          Value wide = arith::ExtUIOp::create(b, b.getI64Type(), word);
          Value valuesBase = e.index(type.getHeaderWords());
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
                begin, end, e.index(threads), acc,
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
                  Value tileCol =
                      arith::MulIOp::create(b, tc, e.index(tileCols));
                  // A padding word's location may be outside the matrix:
                  // its column is clamped and its zero value not kept.
                  Value col = arith::AddIOp::create(b, tileCol, c);
                  col = arith::MinUIOp::create(b, col, e.index(cols - 1));
                  Value term = e.mul(value, e.load(v[0], {i, col}));
                  Value magnitude =
                      arith::AndIOp::create(b, word, e.i32(0x7fff));
                  Value real = e.cmpi(CmpIPredicate::ne, magnitude, e.i32(0));
                  Value inRow = e.cmpi(CmpIPredicate::eq, r, rowInTile);
                  Value mine = arith::AndIOp::create(b, real, inRow);
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

  launchLinearEpilogue(ctx, threads, accumulator, /*splits=*/1, out, bias,
                       residual, activation);
}

class SparseRowScanFamily : public BlockSizeFamily {
public:
  StringRef getName() const override { return "sparse_row_scan"; }
  bool canLower(Operation *op) const override {
    return isa<decode::SparseLinearOp>(op);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    decode::TiledCSLType type = sparse.getWeight().getType();
    int64_t rows = type.getShape()[0];
    Builder b(op->getContext());
    Buffer accumulator = buffers.scratch(
        MemRefType::get({ShapedType::kDynamic, rows}, b.getF32Type()),
        rows * 4);
    buildSparseRowScan(
        ctx, config.get("threads"), buffers.get(sparse.getInput()),
        buffers.get(sparse.getWeight()), type, accumulator,
        buffers.getOptional(sparse.getBias()),
        buffers.getOptional(sparse.getResidual()), sparse.getActivation(),
        buffers.result(sparse.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createSparseRowScanFamily() {
  return std::make_unique<SparseRowScanFamily>();
}
