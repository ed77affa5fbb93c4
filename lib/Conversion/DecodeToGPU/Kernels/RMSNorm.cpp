//===- RMSNorm.cpp - kernel family "rms_norm" -----------------------------===//
//
// decode.rms_norm: a block per sequence; the mean square is a block
// reduction (subgroup reductions, then shared memory). Where the row splits
// into the target's widest loads (vector_bytes) and a thread's share of them
// fits in registers, every thread loads its vectors of the row and of the
// weight at once, before the reduction, and scales them from registers: one
// memory round trip before the reduction and stores after it. Otherwise
// threads stride over the row twice, an element at a time.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
/// The most vectors of the row one thread keeps in registers.
constexpr int64_t kMaxVectorsPerThread = 8;

/// Launches `body` as the rms_norm kernel: a block of `threads` per row of
/// `input`; its arguments are input, weight, out and shared memory of an f32
/// per subgroup (the block reduction's).
void launchRMSNorm(KernelContext &ctx, int64_t threads, Buffer input,
                   Buffer weight, Buffer out, KernelContext::BodyBuilder body) {
  int64_t warps = threads / ctx.subgroupSize();
  ctx.launch(
      "rms_norm",
      {KernelArg::buffer(input), KernelArg::buffer(weight),
       KernelArg::buffer(out)},
      {ctx.toIndex(ctx.batch), ctx.hostIndex(1), ctx.hostIndex(1)}, threads,
      warps,
      [&, release = ctx.releasesDependents](GpuEmitter &e, ArrayRef<Value> v) {
        // A block per row, a short kernel: the next one (a linear's) may
        // launch from the start and copy its weights while the rows are
        // normalised.
        if (release)
          e.target().releaseDependents(e.builder());
        body(e, v);
      });
}

/// The row in `lanes`-element vectors (hidden % lanes == 0), each thread
/// holding vectors thread, thread + threads, ... (at most
/// kMaxVectorsPerThread).
void buildVectorRMSNorm(KernelContext &ctx, int64_t threads, int64_t lanes,
                        Buffer input, Buffer weight, float eps, Buffer out) {
  int64_t hidden = input.type.getDimSize(1);
  int64_t warps = threads / ctx.subgroupSize();
  int64_t vectors = hidden / lanes;
  int64_t perThread = (vectors + threads - 1) / threads;
  bool everyVectorValid = vectors % threads == 0;
  Type storage = input.type.getElementType();
  launchRMSNorm(
      ctx, threads, input, weight, out, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        // (One builder call per argument list: the IR's order must not
        // depend on the order a compiler evaluates arguments in.)
        Value i = e.blockId(Dimension::x);
        Value shared = v.back();
        Value thread = e.threadId();
        Value vectorsEnd = e.index(vectors);
        Value indexZero = e.index(0);
        Value lanesIndex = e.index(lanes);
        Value zero = e.f32(0);
        SmallVector<Value> columns, valid, rows, weights;
        for (int64_t r = 0; r < perThread; ++r) {
          Value offset = e.index(r * threads);
          Value w = arith::AddIOp::create(b, thread, offset);
          Value inRow = everyVectorValid
                            ? Value()
                            : e.cmpi(arith::CmpIPredicate::ult, w, vectorsEnd);
          Value safe = inRow ? e.select(inRow, w, indexZero) : w;
          Value column = arith::MulIOp::create(b, safe, lanesIndex);
          columns.push_back(column);
          valid.push_back(inRow);
          rows.push_back(e.loadVector(v[0], {i, column}, lanes));
          weights.push_back(e.loadVector(v[1], {column}, lanes));
        }
        Value partial = zero;
        for (int64_t r = 0; r < perThread; ++r) {
          Value sum = zero;
          for (int64_t l = 0; l < lanes; ++l) {
            Value x = e.extract(rows[r], l);
            Value square = e.mul(x, x);
            sum = e.add(sum, square);
          }
          partial =
              e.add(partial, valid[r] ? e.select(valid[r], sum, zero) : sum);
        }
        Value total = e.blockSum(partial, shared, warps);
        Value hiddenF32 = e.f32(hidden);
        Value meanSquare = e.div(total, hiddenF32);
        Value epsF32 = e.f32(eps);
        Value shifted = e.add(meanSquare, epsF32);
        Value rms = math::RsqrtOp::create(b, shifted);
        for (int64_t r = 0; r < perThread; ++r) {
          auto scaleAndStore = [&] {
            SmallVector<Value> scaled;
            for (int64_t l = 0; l < lanes; ++l) {
              Value x = e.extract(rows[r], l);
              Value normalised = e.roundTo(e.mul(x, rms), storage);
              Value g = e.extract(weights[r], l);
              scaled.push_back(e.mul(normalised, g));
            }
            e.storeVector(scaled, v[2], {i, columns[r]});
          };
          if (valid[r])
            e.ifThenElse(valid[r], scaleAndStore);
          else
            scaleAndStore();
        }
      });
}

void buildRMSNorm(KernelContext &ctx, int64_t threads, Buffer input,
                  Buffer weight, float eps, Buffer out) {
  int64_t hidden = input.type.getDimSize(1);
  int64_t warps = threads / ctx.subgroupSize();
  Type storage = input.type.getElementType();
  launchRMSNorm(
      ctx, threads, input, weight, out, [&](GpuEmitter &e, ArrayRef<Value> v) {
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
        Value rms = math::RsqrtOp::create(b, e.add(meanSquare, e.f32(eps)));
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
  bool readsReleasesDependents() const override { return true; }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto norm = cast<decode::RMSNormOp>(op);
    Buffer input = buffers.get(norm.getInput());
    int64_t threads = config.get("threads");
    int64_t hidden = input.type.getDimSize(1);
    int64_t elementBytes =
        input.type.getElementType().getIntOrFloatBitWidth() / 8;
    int64_t lanes = std::max<int64_t>(ctx.vectorBytes() / elementBytes, 1);
    int64_t vectors = hidden / lanes;
    if (hidden % lanes == 0 &&
        (vectors + threads - 1) / threads <= kMaxVectorsPerThread) {
      buildVectorRMSNorm(
          ctx, threads, lanes, input, buffers.get(norm.getWeight()),
          norm.getEps().convertToFloat(), buffers.result(norm.getResult()));
      return success();
    }
    buildRMSNorm(ctx, threads, input, buffers.get(norm.getWeight()),
                 norm.getEps().convertToFloat(),
                 buffers.result(norm.getResult()));
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createRMSNormFamily() {
  return std::make_unique<RMSNormFamily>();
}
