//===- Argmax.cpp - kernel family "argmax" --------------------------------===//
//
// decode.argmax: a block per sequence, a block-parallel argmax (first index
// on ties).
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
void buildArgmax(KernelContext &ctx, int64_t threads, Buffer logits,
                 Buffer out) {
  ctx.launch(
      "argmax", {KernelArg::buffer(logits), KernelArg::buffer(out)},
      {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)}, threads,
      threads / ctx.subgroupSize(), [&](GpuEmitter &e, ArrayRef<Value> v) {
        e.blockArgmax(threads, v[0], v[1], e.blockId(Dimension::x), v.back());
      });
}

class ArgmaxFamily : public BlockSizeFamily {
public:
  // One block reads a whole row of logits: the most threads the target
  // allows, so that the row is read in few rounds of loads (blockArgmax).
  ArgmaxFamily() : BlockSizeFamily(kMaxWorkgroup) {}
  StringRef getName() const override { return "argmax"; }
  bool canLower(Operation *op) const override {
    return isa<decode::ArgmaxOp>(op);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto argmax = cast<decode::ArgmaxOp>(op);
    buildArgmax(ctx, config.get("threads"), buffers.get(argmax.getLogits()),
                buffers.result(argmax.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createArgmaxFamily() {
  return std::make_unique<ArgmaxFamily>();
}
