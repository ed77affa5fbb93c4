//===- Sample.cpp - kernel family "sample" --------------------------------===//
//
// decode.sample: a block per sequence. Greedy rows (temperature 0) take the
// block-parallel argmax; sampled rows run the op's sampling rule (exact top-k
// / top-p thresholds by bisection) on one thread, a first version.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

#include "fdc/Conversion/Utils/Sampling.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
void buildSample(KernelContext &ctx, int64_t threads, Buffer logits,
                 Buffer uniform, Buffer temperature, Buffer topK, Buffer topP,
                 Buffer out) {
  ctx.launch(
      "sample",
      {KernelArg::buffer(logits), KernelArg::buffer(uniform),
       KernelArg::buffer(temperature), KernelArg::buffer(topK),
       KernelArg::buffer(topP), KernelArg::buffer(out)},
      {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)}, threads,
      threads / ctx.subgroupSize(), [&](GpuEmitter &e, ArrayRef<Value> v) {
        Value i = e.blockId(Dimension::x);
        Value t = e.load(v[2], i);
        // The temperature is per row, so the whole block takes one branch.
        e.ifThenElse(
            e.cmpf(CmpFPredicate::OLE, t, e.f32(0)),
            [&] { e.blockArgmax(threads, v[0], v[5], i, v.back()); },
            [&] {
              // First version: one thread runs the reference sampling rule
              // (exact top-k / top-p thresholds by bisection).
              Value thread = e.threadId();
              e.ifThenElse(e.cmpi(CmpIPredicate::eq, thread, e.index(0)), [&] {
                emitSampleRow(e, v[0], v[1], v[2], v[3], v[4], v[5], i);
              });
            });
      });
}

class SampleFamily : public BlockSizeFamily {
public:
  // One block reads a whole row of logits: the most threads the target
  // allows, so that the row is read in few rounds of loads (blockArgmax).
  SampleFamily() : BlockSizeFamily(kMaxWorkgroup) {}
  StringRef getName() const override { return "sample"; }
  bool canLower(Operation *op) const override {
    return isa<decode::SampleOp>(op);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto sample = cast<decode::SampleOp>(op);
    buildSample(ctx, config.get("threads"), buffers.get(sample.getLogits()),
                buffers.get(sample.getUniform()),
                buffers.get(sample.getTemperature()),
                buffers.get(sample.getTopK()), buffers.get(sample.getTopP()),
                buffers.result(sample.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createSampleFamily() {
  return std::make_unique<SampleFamily>();
}
