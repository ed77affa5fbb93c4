//===- AttentionReduce.cpp - the attention families' shared parts ---------===//
//
// The split choice, the cache loads and attention_reduce (Attention.h).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

#include "fdc/Conversion/Utils/PackedLayouts.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

AttentionProblem AttentionProblem::get(decode::AttentionOp op,
                                       StepBuffers &buffers) {
  AttentionProblem problem;
  problem.query = buffers.get(op.getQuery());
  problem.cache = buffers.get(op.getCache());
  problem.slots = buffers.get(op.getSlots());
  problem.positions = buffers.get(op.getPositions());
  problem.out = buffers.result(op.getResult());
  problem.cacheType = op.getCache().getType();
  problem.layer = op.getLayer();
  problem.scale = op.getScale().convertToFloat();
  problem.softmax = op.getSoftmax();
  problem.splits = op.getSplits();
  return problem;
}

Value fdc::gpu::getAttentionSplits(KernelContext &ctx,
                                   const AttentionProblem &problem,
                                   const AttentionSplitPolicy &policy,
                                   Value blocksPerSplit) {
  ImplicitLocOpBuilder &host = ctx.host;
  if (problem.splits > 0)
    return ctx.hostI64(std::min(problem.splits, policy.maxSplits));
  Value targetBlocks =
      ctx.hostI64(policy.wavesPerUnit * ctx.primitives.units());
  Value wanted =
      policy.wholeWaves
          ? Value(arith::DivSIOp::create(host, targetBlocks, blocksPerSplit))
          : ctx.ceilDiv(targetBlocks, blocksPerSplit);
  Value maxSplits = ctx.hostI64(policy.maxSplits);
  Value splitsOfMinLength =
      ctx.ceilDiv(ctx.maxContext, ctx.hostI64(policy.minSplitLength));
  Value cap = arith::MinSIOp::create(host, maxSplits, splitsOfMinLength);
  Value capped = arith::MinSIOp::create(host, wanted, cap);
  Value one = ctx.hostI64(1);
  return arith::MaxSIOp::create(host, one, capped);
}

Value fdc::gpu::attentionExp(GpuEmitter &e, Value x) {
  Value scaled = e.mul(x, e.f32(llvm::numbers::log2e));
  return e.target().exp2(e.builder(), scaled);
}

Value fdc::gpu::attentionScaleFactor(GpuEmitter &e, Value x, Value max) {
  Value empty = e.cmpf(CmpFPredicate::OEQ, x, e.f32(-INFINITY));
  Value zero = e.f32(0);
  Value factor = attentionExp(e, e.sub(x, max));
  return e.select(empty, zero, factor);
}

Value fdc::gpu::loadCacheVector(GpuEmitter &e, Value cache,
                                decode::KVCacheType type, ValueRange row,
                                Value d0, int64_t vecLen) {
  ImplicitLocOpBuilder &b = e.builder();
  if (auto int4 = dyn_cast<decode::Int4Type>(type.getElementType())) {
    SmallVector<Value> elements;
    for (int64_t c = 0; c < vecLen; ++c) {
      Value d = arith::AddIOp::create(b, d0, e.index(c));
      elements.push_back(
          loadInt4CacheElement(e, cache, int4, type.getHeadDim(), row, d));
    }
    return vector::FromElementsOp::create(
        b, VectorType::get({vecLen}, b.getF32Type()), elements);
  }
  SmallVector<Value> indices(row);
  indices.push_back(d0);
  return e.loadVector(cache, indices, vecLen);
}

namespace {

/// The shape of attention_reduce's block: `splitGroups` groups of
/// `rowThreads` threads (one per head dim, up to the block's limit); group w
/// combines splits w,
/// w + splitGroups, ..., so that a thread's loads of the partial rows are
/// few, then group 0 merges the groups' results through shared memory.
struct ReduceShape {
  int64_t rowThreads, splitGroups;
  int64_t threads() const { return rowThreads * splitGroups; }
  /// f32s of shared memory: (max or flag, sum, acc) per thread.
  int64_t sharedFloats() const { return 3 * threads(); }
};

ReduceShape getReduceShape(const AttentionProblem &problem, int64_t subgroup,
                           int64_t maxThreads) {
  constexpr int64_t kMaxSplitGroups = 4;
  int64_t rowThreads = std::min(
      (problem.headDim() + subgroup - 1) / subgroup * subgroup, maxThreads);
  int64_t groups =
      std::clamp<int64_t>(maxThreads / rowThreads, 1, kMaxSplitGroups);
  return {rowThreads, groups};
}

/// The body of attention_reduce: one block per (query head, sequence).
class AttentionReduceBuilder {
public:
  AttentionReduceBuilder(GpuEmitter &e, const AttentionProblem &problem,
                         const ReduceShape &shape)
      : e(e), b(e.builder()), problem(problem), shape(shape) {}

  /// Kernel arguments, by position in the launch.
  enum Arg { Query, Cache, Slots, Positions, Partials, NumSplits, Out, Layer };

  void build(ArrayRef<Value> v) {
    args = v;
    shared = v.back();
    layerIndex = idx(b, v[Layer]);
    h = e.blockId(Dimension::x);
    i = e.blockId(Dimension::y);
    numSplits = idx(b, v[NumSplits]);
    Value rowIndex = addI(b, mulI(b, i, e.index(problem.queryHeads())), h);
    Value firstSplit = mulI(b, rowIndex, numSplits);
    base = mulI(b, firstSplit, e.index(problem.partialRowFloats()));
    kvHead = arith::DivUIOp::create(b, h, e.index(problem.group()));
    slot = e.loadIndex(v[Slots], i);
    Value position = e.loadIndex(v[Positions], i);
    length = addI(b, position, e.index(1));

    // Head dims in chunks of rowThreads (one chunk unless head_dim exceeds
    // the block): every thread runs every chunk, for the barriers inside.
    int64_t chunks =
        (problem.headDim() + shape.rowThreads - 1) / shape.rowThreads;
    e.loop(chunks, [&](Value chunk) { combineChunk(chunk); });
  }

private:
  /// Dims [chunk · rowThreads, + rowThreads): each group combines its
  /// splits, then group 0 merges the groups' results and writes the output.
  void combineChunk(Value chunk) {
    Value thread = e.threadId();
    Value rowThreads = e.index(shape.rowThreads);
    Value lane = arith::RemUIOp::create(b, thread, rowThreads);
    Value group = arith::DivUIOp::create(b, thread, rowThreads);
    Value chunkBase = mulI(b, chunk, rowThreads);
    Value j = addI(b, chunkBase, lane);
    Value lastDim = e.index(problem.headDim() - 1);
    Value dim = arith::MinUIOp::create(b, j, lastDim);
    Value step = e.index(shape.splitGroups);
    SmallVector<Value> init = {e.f32(problem.unified() ? 0.0 : -INFINITY),
                               e.f32(0), e.f32(0)};
    SmallVector<Value> state =
        e.reduce(group, numSplits, step, init, [&](Value sp, ValueRange c) {
          SmallVector<Value> split = {maxAt(sp), sumAt(sp), partialAt(sp, dim)};
          return merge(c, split);
        });
    for (int64_t k = 0; k < 3; ++k)
      memref::StoreOp::create(b, state[k], shared,
                              ValueRange{sharedAt(thread, k)});
    e.barrier();
    Value firstGroup = e.cmpi(CmpIPredicate::ult, thread, rowThreads);
    Value inRow = e.cmpi(CmpIPredicate::ult, j, e.index(problem.headDim()));
    Value writes = arith::AndIOp::create(b, firstGroup, inRow);
    e.ifThenElse(writes, [&] {
      SmallVector<Value> merged = state;
      for (int64_t w = 1; w < shape.splitGroups; ++w) {
        Value other = addI(b, thread, e.index(w * shape.rowThreads));
        SmallVector<Value> result;
        for (int64_t k = 0; k < 3; ++k)
          result.push_back(memref::LoadOp::create(
              b, shared, ValueRange{sharedAt(other, k)}));
        merged = merge(merged, result);
      }
      if (problem.unified())
        finishUnified(j, merged);
      else
        e.store(e.div(merged[2], merged[1]), args[Out], {i, h, j});
    });
    e.barrier(); // the next chunk rewrites the shared results
  }

  Value sharedAt(Value thread, int64_t k) {
    Value offset = mulI(b, thread, e.index(3));
    return addI(b, offset, e.index(k));
  }
  Value partialAt(Value split, Value offset) {
    Value splitBase = mulI(b, split, e.index(problem.partialRowFloats()));
    Value at = addI(b, base, addI(b, splitBase, offset));
    return memref::LoadOp::create(b, args[Partials], ValueRange{at});
  }
  Value maxAt(Value split) { return partialAt(split, e.index(maxOffset())); }
  Value sumAt(Value split) { return partialAt(split, e.index(sumOffset())); }
  int64_t maxOffset() const { return problem.headDim(); }
  int64_t sumOffset() const { return problem.headDim() + 1; }

  SmallVector<Value> row(int64_t kv, Value t) {
    return {slot, layerIndex, e.index(kv), kvHead, t};
  }
  Value cacheElement(int64_t kv, Value t, Value d) {
    Value vector =
        loadCacheVector(e, args[Cache], problem.cacheType, row(kv, t), d, 1);
    return e.extract(vector, 0);
  }

  /// Two (max or flag, sum, acc) combined. Online: both rescaled to the
  /// larger max; unified max: flags or'ed (as a max), sums added.
  SmallVector<Value> merge(ValueRange x, ValueRange y) {
    if (problem.unified()) {
      Value flag = arith::MaximumFOp::create(b, x[0], y[0]);
      return {flag, e.add(x[1], y[1]), e.add(x[2], y[2])};
    }
    Value max = arith::MaximumFOp::create(b, x[0], y[0]);
    Value cx = attentionScaleFactor(e, x[0], max);
    Value cy = attentionScaleFactor(e, y[0], max);
    Value sumX = e.mul(x[1], cx);
    Value sumY = e.mul(y[1], cy);
    Value accX = e.mul(x[2], cx);
    Value accY = e.mul(y[2], cy);
    return {max, e.add(sumX, sumY), e.add(accX, accY)};
  }

  /// Unified max: add and divide, unless a split is flagged or the sum
  /// under- or overflowed. Each thread checks its own dimension's
  /// accumulator; a row can mix recomputed and unified dimensions, both
  /// exact.
  void finishUnified(Value j, ArrayRef<Value> sums) {
    Value maxFloat = e.f32(std::numeric_limits<float>::max());
    Value sumOverflow = e.cmpf(CmpFPredicate::UGT, sums[1], maxFloat);
    Value accOverflow =
        e.cmpf(CmpFPredicate::UGT, math::AbsFOp::create(b, sums[2]), maxFloat);
    Value overflow = arith::OrIOp::create(b, sumOverflow, accOverflow);
    Value underflow = e.cmpf(CmpFPredicate::OEQ, sums[1], e.f32(0));
    Value unusable = arith::OrIOp::create(b, underflow, overflow);
    Value anyFlag = e.cmpf(CmpFPredicate::OGT, sums[0], e.f32(0));
    Value flagged = arith::OrIOp::create(b, anyFlag, unusable);
    e.ifThenElse(
        flagged, [&] { recompute(j); },
        [&] { e.store(e.div(sums[2], sums[1]), args[Out], {i, h, j}); });
  }

  /// Single-thread-per-dimension online softmax over the whole row.
  void recompute(Value j) {
    Value zeroIndex = e.index(0);
    Value oneIndex = e.index(1);
    SmallVector<Value> st = e.reduce(
        zeroIndex, length, oneIndex, {e.f32(-INFINITY), e.f32(0), e.f32(0)},
        [&](Value t, ValueRange c) {
          Value dims = e.index(problem.headDim());
          Value zero = e.f32(0);
          Value dot = e.reduce1(dims, zero, [&](Value dd, Value sum) {
            Value k = cacheElement(0, t, dd);
            Value q = e.load(args[Query], {i, h, dd});
            return e.add(sum, e.mul(q, k));
          });
          Value sc = e.mul(dot, e.f32(problem.scale));
          Value newMax = arith::MaximumFOp::create(b, c[0], sc);
          Value correction = attentionScaleFactor(e, c[0], newMax);
          Value p = attentionExp(e, e.sub(sc, newMax));
          Value vj = cacheElement(1, t, j);
          Value sum = e.add(e.mul(c[1], correction), p);
          Value kept = e.mul(c[2], correction);
          Value added = e.mul(p, vj);
          return SmallVector<Value>{newMax, sum, e.add(kept, added)};
        });
    e.store(e.div(st[2], st[1]), args[Out], {i, h, j});
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const AttentionProblem &problem;
  const ReduceShape &shape;
  ArrayRef<Value> args;
  Value shared, layerIndex, h, i, numSplits, base, kvHead, slot, length;
};
} // namespace

void fdc::gpu::launchAttentionReduce(KernelContext &ctx,
                                     const AttentionProblem &problem,
                                     Buffer partials, Value numSplits) {
  ReduceShape shape =
      getReduceShape(problem, ctx.subgroupSize(),
                     ctx.primitives.target().getMaxWorkgroupSize());
  // The layer is an argument (the last one), so one kernel serves every
  // layer.
  Value layer = ctx.hostI64(problem.layer);
  ctx.launch(
      "attention_reduce",
      {KernelArg::buffer(problem.query), KernelArg::buffer(problem.cache),
       KernelArg::buffer(problem.slots), KernelArg::buffer(problem.positions),
       KernelArg::buffer(partials), KernelArg::scalar(numSplits),
       KernelArg::buffer(problem.out), KernelArg::scalar(layer)},
      {ctx.hostIndex(problem.queryHeads()), ctx.toIndex(ctx.batch),
       ctx.hostIndex(1)},
      shape.threads(), shape.sharedFloats(),
      [&](GpuEmitter &e, ArrayRef<Value> v) {
        AttentionReduceBuilder(e, problem, shape).build(v);
      });
}
