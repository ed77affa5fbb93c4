//===- RowKernels.cpp - rms_norm, argmax, sample --------------------------===//
//
// One block per row (sequence); threads stride over the row and combine
// through block reductions.
//
//===----------------------------------------------------------------------===//

#include "../DecodeToHost/HostKernels.h"
#include "KernelContext.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

void fdc::gpu::buildRMSNorm(KernelContext &ctx, const RowConfig &config,
                            Buffer input, Buffer weight, float eps,
                            Buffer out) {
  int64_t hidden = input.type.getDimSize(1);
  int64_t warps = config.threads / ctx.subgroupSize();
  Type storage = input.type.getElementType();
  ctx.launch("rms_norm",
             {KernelArg::buffer(input), KernelArg::buffer(weight),
              KernelArg::buffer(out)},
             {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)},
             config.threads, warps, [&](GpuEmitter &e, ArrayRef<Value> v) {
               ImplicitLocOpBuilder &b = e.builder();
               Value i = e.blockId(Dimension::x);
               Value shared = v.back();
               Value step = e.index(config.threads);
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

namespace {
/// Block-parallel argmax of row `i` (first index on ties), stored to out[i].
void emitBlockArgmax(GpuEmitter &e, int64_t threads, Value logits, Value out,
                     Value i, Value shared) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t vocab = cast<MemRefType>(logits.getType()).getDimSize(1);
  int64_t warps = threads / e.subgroupSize();
  Value thread = e.threadId();
  Value vocabEnd = e.index(vocab);
  Value step = e.index(threads);
  SmallVector<Value> best =
      e.reduce(thread, vocabEnd, step, {e.f32(-INFINITY), e.index(0)},
               [&](Value j, ValueRange carried) {
                 Value x = e.load(logits, {i, j});
                 Value greater = e.cmpf(CmpFPredicate::OGT, x, carried[0]);
                 return SmallVector<Value>{e.select(greater, x, carried[0]),
                                           e.select(greater, j, carried[1])};
               });
  Value maximum = e.blockMax(best[0], shared, warps);
  // The smallest index holding the maximum: indices < 2^24 are exact in f32.
  Value isMaximum = e.cmpf(CmpFPredicate::OEQ, best[0], maximum);
  Value index = e.toF32(best[1]);
  Value infinity = e.f32(INFINITY);
  Value mine = e.select(isMaximum, index, infinity);
  Value zero = e.f32(0);
  Value first = e.sub(zero, e.blockMax(e.sub(e.f32(0), mine), shared, warps));
  Value threadForStore = e.threadId();
  e.ifThenElse(e.cmpi(CmpIPredicate::eq, threadForStore, e.index(0)), [&] {
    Value index = arith::FPToSIOp::create(b, b.getI32Type(), first);
    memref::StoreOp::create(b, index, out, i);
  });
}
} // namespace

void fdc::gpu::buildArgmax(KernelContext &ctx, const RowConfig &config,
                           Buffer logits, Buffer out) {
  ctx.launch("argmax", {KernelArg::buffer(logits), KernelArg::buffer(out)},
             {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)},
             config.threads, config.threads / ctx.subgroupSize(),
             [&](GpuEmitter &e, ArrayRef<Value> v) {
               emitBlockArgmax(e, config.threads, v[0], v[1],
                               e.blockId(Dimension::x), v.back());
             });
}

void fdc::gpu::buildSample(KernelContext &ctx, const RowConfig &config,
                           Buffer logits, Buffer uniform, Buffer temperature,
                           Buffer topK, Buffer topP, Buffer out) {
  ctx.launch(
      "sample",
      {KernelArg::buffer(logits), KernelArg::buffer(uniform),
       KernelArg::buffer(temperature), KernelArg::buffer(topK),
       KernelArg::buffer(topP), KernelArg::buffer(out)},
      {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)},
      config.threads, config.threads / ctx.subgroupSize(),
      [&](GpuEmitter &e, ArrayRef<Value> v) {
        Value i = e.blockId(Dimension::x);
        Value t = e.load(v[2], i);
        // The temperature is per row, so the whole block takes one branch.
        e.ifThenElse(
            e.cmpf(CmpFPredicate::OLE, t, e.f32(0)),
            [&] {
              emitBlockArgmax(e, config.threads, v[0], v[5], i, v.back());
            },
            [&] {
              // First version: one thread runs the reference sampling rule
              // (exact top-k / top-p thresholds by bisection).
              Value thread = e.threadId();
              e.ifThenElse(e.cmpi(CmpIPredicate::eq, thread, e.index(0)), [&] {
                host::emitSampleRow(e, v[0], v[1], v[2], v[3], v[4], v[5], i);
              });
            });
      });
}
