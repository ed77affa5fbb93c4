//===- Rope.cpp - kernel family "rope" ------------------------------------===//
//
// decode.rope: a thread per (head, dimension pair) of a sequence (blockIdx.y
// is the sequence); pairs past rotary_dim / 2 copy their dimensions.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
void buildRope(KernelContext &ctx, int64_t threads, Buffer input,
               Buffer positions, int64_t rotaryDim, float theta, Buffer out) {
  int64_t heads = input.type.getDimSize(1), headDim = input.type.getDimSize(2);
  int64_t half = rotaryDim / 2, pairs = headDim / 2;
  int64_t work = heads * pairs;
  ctx.launch(
      "rope",
      {KernelArg::buffer(input), KernelArg::buffer(positions),
       KernelArg::buffer(out)},
      {ctx.hostIndex((work + threads - 1) / threads), ctx.toIndex(ctx.batch),
       ctx.hostIndex(1)},
      threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value i = e.blockId(Dimension::y);
        Value flat = e.globalIdX(threads);
        e.ifThenElse(
            e.cmpi(arith::CmpIPredicate::ult, flat, e.index(work)), [&] {
              Value h = arith::DivUIOp::create(b, flat, e.index(pairs));
              Value j = arith::RemUIOp::create(b, flat, e.index(pairs));
              Value rotated =
                  e.cmpi(arith::CmpIPredicate::ult, j, e.index(half));
              e.ifThenElse(
                  rotated,
                  [&] {
                    Value position =
                        e.toF32(memref::LoadOp::create(b, v[1], i));
                    Value two = e.f32(2);
                    Value twoJ = e.mul(two, e.toF32(j));
                    Value exponent = e.div(twoJ, e.f32(rotaryDim));
                    Value one = e.f32(1);
                    Value invFreq = e.div(
                        one, math::PowFOp::create(b, e.f32(theta), exponent));
                    Value angle = e.mul(position, invFreq);
                    Value cos = math::CosOp::create(b, angle);
                    Value sin = math::SinOp::create(b, angle);
                    Value j2 = arith::AddIOp::create(b, j, e.index(half));
                    Value x1 = e.load(v[0], {i, h, j});
                    Value x2 = e.load(v[0], {i, h, j2});
                    Value x1Cos = e.mul(x1, cos);
                    Value x2Sin = e.mul(x2, sin);
                    e.store(e.sub(x1Cos, x2Sin), v[2], {i, h, j});
                    Value x2Cos = e.mul(x2, cos);
                    Value x1Sin = e.mul(x1, sin);
                    e.store(e.add(x2Cos, x1Sin), v[2], {i, h, j2});
                  },
                  [&] {
                    // Pairs past rotary_dim / 2 copy two pass-through dims.
                    Value rotaryEnd = e.index(rotaryDim);
                    Value pair = arith::SubIOp::create(b, j, e.index(half));
                    Value pairOffset =
                        arith::MulIOp::create(b, pair, e.index(2));
                    Value d = arith::AddIOp::create(b, rotaryEnd, pairOffset);
                    Value d1 = arith::AddIOp::create(b, d, e.index(1));
                    e.store(e.load(v[0], {i, h, d}), v[2], {i, h, d});
                    e.store(e.load(v[0], {i, h, d1}), v[2], {i, h, d1});
                  });
            });
      });
}

class RopeFamily : public BlockSizeFamily {
public:
  StringRef getName() const override { return "rope"; }
  bool canLower(Operation *op) const override {
    return isa<decode::RopeOp>(op);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto rope = cast<decode::RopeOp>(op);
    buildRope(ctx, config.get("threads"), buffers.get(rope.getInput()),
              buffers.get(rope.getPositions()), rope.getRotaryDim(),
              rope.getTheta().convertToFloat(),
              buffers.result(rope.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createRopeFamily() {
  return std::make_unique<RopeFamily>();
}
