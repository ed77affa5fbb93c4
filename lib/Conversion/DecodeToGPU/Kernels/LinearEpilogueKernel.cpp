//===- LinearEpilogueKernel.cpp - a linear's epilogue over partial sums ---===//
//
// The second kernel of a linear whose first kernel leaves f32 sums in
// scratch (split-K GEMMs, the sparse row scan): one thread per output
// feature and batch row adds the partial sums of the K splits and applies
// the shared epilogue (bias, SiLU-gate-up, residual).
//
//===----------------------------------------------------------------------===//

#include "LinearArgs.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

int64_t fdc::gpu::getSplitKWorkspaceBytesPerRow(decode::LinearOp op,
                                                int64_t splitK) {
  if (splitK == 1)
    return 0;
  int64_t n = op.getResult().getType().getDimSize(1);
  return splitK * getWeightHalves(op.getActivation()) * n * 4;
}

KTileRun fdc::gpu::planKTileRun(GpuEmitter &e, int64_t tiles, int64_t splitK) {
  ImplicitLocOpBuilder &b = e.builder();
  if (splitK == 1)
    return {Value(), e.index(0), e.index(tiles)};
  int64_t perSplit = llvm::divideCeil(tiles, splitK);
  Value split = e.blockId(mlir::gpu::Dimension::z);
  Value firstTile = arith::MulIOp::create(b, split, e.index(perSplit));
  Value left = arith::SubIOp::create(b, e.index(tiles), firstTile);
  Value tileCount = arith::MinUIOp::create(b, left, e.index(perSplit));
  return {split, firstTile, tileCount};
}

void fdc::gpu::launchLinearEpilogue(KernelContext &ctx, int64_t threads,
                                    Buffer partials, int64_t splits, Buffer out,
                                    Buffer bias, Buffer residual,
                                    decode::Activation activation) {
  int64_t n = out.type.getDimSize(1);
  int64_t halves = getWeightHalves(activation);
  SmallVector<KernelArg> args = {KernelArg::buffer(partials),
                                 KernelArg::buffer(out)};
  LinearOptionalArgs optional(activation);
  optional.add(args, bias, residual);
  ctx.launch(
      "linear_epilogue", args,
      {ctx.hostIndex((n + threads - 1) / threads), ctx.toIndex(ctx.batch),
       ctx.hostIndex(1)},
      threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value row = e.blockId(Dimension::y);
        Value block = e.blockId(Dimension::x);
        Value blockStart = arith::MulIOp::create(b, block, e.index(threads));
        Value feature = arith::AddIOp::create(b, blockStart, e.threadId());
        e.ifThenElse(e.cmpi(CmpIPredicate::ult, feature, e.index(n)), [&] {
          // Split s, half h of the row: partials[row][(s * halves + h) * n
          // + feature].
          auto sumHalf = [&](int64_t h) {
            Value sum;
            for (int64_t s = 0; s < splits; ++s) {
              Value column = arith::AddIOp::create(
                  b, feature, e.index((s * halves + h) * n));
              Value part = e.load(v[0], {row, column});
              sum = sum ? e.add(sum, part) : part;
            }
            return sum;
          };
          Value gate = sumHalf(0);
          Value up = halves == 2 ? sumHalf(1) : Value();
          emitLinearOutput(e, optional.operands(v, v[1]), row, feature, gate,
                           up);
        });
      });
}
