//===- RMSNorm.cpp - kernel family "rms_norm" -----------------------------===//
//
// decode.rms_norm: a block per sequence; threads stride over the row, the
// mean square is a block reduction (subgroup reductions, then shared memory).
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
void buildRMSNorm(KernelContext &ctx, int64_t threads, Buffer input,
                  Buffer weight, float eps, Buffer out) {
  int64_t hidden = input.type.getDimSize(1);
  int64_t warps = threads / ctx.subgroupSize();
  Type storage = input.type.getElementType();
  ctx.launch("rms_norm",
             {KernelArg::buffer(input), KernelArg::buffer(weight),
              KernelArg::buffer(out)},
             {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)},
             threads, warps, [&](GpuEmitter &e, ArrayRef<Value> v) {
               ImplicitLocOpBuilder &b = e.builder();
               Value i = e.blockId(Dimension::x);
               Value shared = v.back();
               Value step = e.index(threads);
               Value thread = e.threadId();
               Value hiddenEnd = e.index(hidden);
               Value zero = e.f32(0);
               Value partial = e.reduce(
                   thread, hiddenEnd, step, zero, [&](Value j, ValueRange acc) {
                     Value x = e.load(v[0], {i, j});
                     return SmallVector<Value>{e.add(acc[0], e.mul(x, x))};
                   })[0];
               Value total = e.blockSum(partial, shared, warps);
               Value meanSquare = e.div(total, e.f32(hidden));
               Value rms =
                   math::RsqrtOp::create(b, e.add(meanSquare, e.f32(eps)));
               Value threadForScale = e.threadId();
               Value hiddenEndForScale = e.index(hidden);
               e.loop(threadForScale, hiddenEndForScale, step, [&](Value j) {
                 Value normalised =
                     e.roundTo(e.mul(e.load(v[0], {i, j}), rms), storage);
                 e.store(e.mul(normalised, e.load(v[1], j)), v[2], {i, j});
               });
             });
}

class RMSNormFamily : public BlockSizeFamily {
public:
  StringRef getName() const override { return "rms_norm"; }
  bool canLower(Operation *op) const override {
    return isa<decode::RMSNormOp>(op);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto norm = cast<decode::RMSNormOp>(op);
    buildRMSNorm(ctx, config.get("threads"), buffers.get(norm.getInput()),
                 buffers.get(norm.getWeight()), norm.getEps().convertToFloat(),
                 buffers.result(norm.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createRMSNormFamily() {
  return std::make_unique<RMSNormFamily>();
}
