//===- SplitKVAttention.cpp - kernel family "split_kv_attention" ----------===//
//
// Flash-decoding with the two softmax schemes of #decode.softmax.
//
// attention_partial: one block per (split, query head, sequence). A group of
// G lanes holds one cached head vector, each lane 16 bytes of it, so a warp
// reads 32/G positions per step with fully coalesced 16-byte loads; warps
// take interleaved positions of the split. Online scheme: every lane keeps a
// running (max, sum, acc); unified max: (sum, acc, flag) with the one phi, no
// rescaling. Lane groups, then warps (through shared memory) combine, and
// the block writes its split's partial result: acc[D], then max (or the
// out-of-range flag) and sum.
//
// attention_reduce (AttentionReduce.cpp) combines the splits.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {

/// The family's config (see getDefaultConfig).
struct AttentionConfig {
  /// Subgroups per partial block.
  int64_t warps;
  /// Upper bound on KV splits (sizes the scratch for partial results).
  int64_t maxSplits;
  /// Blocks per compute unit of the target that automatic splits aim for.
  int64_t wavesPerUnit;
  /// Fewest positions per split when splits are automatic.
  int64_t minSplitLength;

  explicit AttentionConfig(const KernelConfig &config)
      : warps(config.get("subgroups")), maxSplits(config.get("max_splits")),
        wavesPerUnit(config.get("waves_per_unit")),
        minSplitLength(config.get("min_split_length")) {}

  /// Scratch bytes per sequence the partial results of `query` need.
  int64_t scratchPerSequence(RankedTensorType query) const;
};

struct Shape {
  int64_t queryHeads, kvHeads, headDim;
  int64_t groupLanes; // lanes that hold one head vector
  int64_t vecLen;     // elements per lane
};

FailureOr<Shape> getShape(decode::KVCacheType cache, int64_t queryHeads,
                          int64_t subgroup, int64_t vectorBytes) {
  Shape shape{queryHeads, cache.getKvHeads(), cache.getHeadDim(), 0, 0};
  int64_t d = shape.headDim;
  if (!isa<decode::Int4Type>(cache.getElementType())) {
    int64_t bytes = d * cache.getElementType().getIntOrFloatBitWidth() / 8;
    if (bytes % vectorBytes == 0 && bytes / vectorBytes <= subgroup &&
        subgroup % (bytes / vectorBytes) == 0) {
      shape.groupLanes = bytes / vectorBytes;
      shape.vecLen = d / shape.groupLanes;
      return shape;
    }
  }
  if (d % subgroup == 0) {
    shape.groupLanes = subgroup;
    shape.vecLen = d / subgroup;
    return shape;
  }
  if (subgroup % d == 0) {
    shape.groupLanes = d;
    shape.vecLen = 1;
    return shape;
  }
  return failure();
}

Value dotVector(GpuEmitter &e, Value a, Value b2) {
  ImplicitLocOpBuilder &b = e.builder();
  Value product = arith::MulFOp::create(b, a, b2);
  return vector::ReductionOp::create(b, vector::CombiningKind::ADD, product);
}

Value splat(GpuEmitter &e, Value scalar, int64_t lanes) {
  return vector::BroadcastOp::create(
      e.builder(), VectorType::get({lanes}, e.builder().getF32Type()), scalar);
}
} // namespace

int64_t AttentionConfig::scratchPerSequence(RankedTensorType query) const {
  int64_t heads = query.getDimSize(1), headDim = query.getDimSize(2);
  return heads * maxSplits * (headDim + 2) * 4;
}

namespace {
/// Builds the body of attention_partial; one instance per kernel.
class SplitKVAttentionBuilder : AttentionArgs {
public:
  SplitKVAttentionBuilder(GpuEmitter &e, const AttentionProblem &problem,
                          const AttentionConfig &config, const Shape &shape)
      : e(e), b(e.builder()), problem(problem), config(config), shape(shape),
        subgroup(e.subgroupSize()), d(shape.headDim), g(shape.groupLanes),
        vecLen(shape.vecLen), rowFloats(shape.headDim + 2) {}

  /// The kernel's own arguments, after the attention kernels' shared ones.
  enum Arg { Chunk = FirstOwnArg, Layer };

  void build(ArrayRef<Value> v) {
    args = v;
    layerIndex = idx(b, v[Layer]);
    s = e.blockId(Dimension::x);
    h = e.blockId(Dimension::y);
    i = e.blockId(Dimension::z);
    shared = v.back();
    warp = e.subgroupId();
    lane = e.laneId();
    sub = arith::DivUIOp::create(b, lane, e.index(g));
    Value groupLane = arith::RemUIOp::create(b, lane, e.index(g));
    d0 = mulI(b, groupLane, e.index(vecLen));
    int64_t group = shape.queryHeads / shape.kvHeads;
    kvHead = arith::DivUIOp::create(b, h, e.index(group));
    SplitPositions positions = getSplitPositions(e, v, i, s, v[Chunk]);
    slot = positions.slot;
    start = positions.start;
    end = positions.end;
    // The loop runs over warp-uniform base positions (every lane of a warp
    // iterates equally often, as the shuffles inside need); lane group
    // `sub` takes base + sub and masks positions past the split.
    int64_t positionsPerWarp = subgroup / g;
    first = addI(b, start, mulI(b, warp, e.index(positionsPerWarp)));
    query = e.loadVector(v[Query], {i, h, d0}, vecLen);
    SmallVector<Value> state =
        problem.unified() ? unifiedState() : onlineState();
    storeWarpResult(state);
    e.barrier();
    writePartial();
  }

private:
  /// (0, ..., 0) of the lane's vecLen dims.
  Value zeros() { return splat(e, e.f32(0), vecLen); }

  /// The cache row (slot, layer, k|v, KV head, position t).
  SmallVector<Value> row(int64_t kv, Value t) {
    return {slot, layerIndex, e.index(kv), kvHead, t};
  }

  /// This lane group's position for base `base`, clamped to a readable one
  /// when it is past the split (its weight is then masked to 0), and
  /// whether it is inside.
  std::pair<Value, Value> position(Value base) {
    Value t = addI(b, base, sub);
    Value valid = e.cmpi(CmpIPredicate::ult, t, end);
    return std::make_pair(e.select(valid, t, start), valid);
  }

  /// The scaled score of position t, summed over the lane group.
  Value score(Value t) {
    Value k = loadCacheVector(e, args[Cache], problem.cacheType, row(0, t), d0,
                              vecLen);
    Value dot = dotVector(e, query, k);
    dot = e.target().subgroupReduce(b, dot, ReduceKind::Sum, g);
    return e.mul(dot, e.f32(problem.scale));
  }

  /// The lane's dims of position t's value vector.
  Value value(Value t) {
    return loadCacheVector(e, args[Cache], problem.cacheType, row(1, t), d0,
                           vecLen);
  }

  Value stride() { return e.index(config.warps * (subgroup / g)); }

  /// Online: each lane's running (max, sum, acc) over its positions, then
  /// the warp's position groups combined (rescaled to their common max).
  SmallVector<Value> onlineState() {
    Value strideIndex = stride();
    SmallVector<Value> state = e.reduce(
        first, end, strideIndex, {e.f32(-INFINITY), e.f32(0), zeros()},
        [&](Value base, ValueRange c) {
          auto [t, valid] = position(base);
          Value rawScore = score(t);
          Value sc = e.select(valid, rawScore, e.f32(-INFINITY));
          Value newMax = arith::MaximumFOp::create(b, c[0], sc);
          Value correction = attentionScaleFactor(e, c[0], newMax);
          Value p = attentionScaleFactor(e, sc, newMax);
          Value kept =
              arith::MulFOp::create(b, c[2], splat(e, correction, vecLen));
          Value valueT = value(t);
          Value added = arith::MulFOp::create(b, valueT, splat(e, p, vecLen));
          Value acc = arith::AddFOp::create(b, kept, added);
          return SmallVector<Value>{newMax, e.add(e.mul(c[1], correction), p),
                                    acc};
        });
    for (int64_t offset = g; offset < subgroup; offset *= 2) {
      Value otherMax = e.shuffleXor(state[0], offset);
      Value otherSum = e.shuffleXor(state[1], offset);
      Value otherAcc = e.shuffleXor(state[2], offset);
      Value newMax = arith::MaximumFOp::create(b, state[0], otherMax);
      Value c1 = attentionScaleFactor(e, state[0], newMax);
      Value c2 = attentionScaleFactor(e, otherMax, newMax);
      Value sum1 = e.mul(state[1], c1);
      Value sum2 = e.mul(otherSum, c2);
      Value sum = e.add(sum1, sum2);
      Value acc1 = arith::MulFOp::create(b, state[2], splat(e, c1, vecLen));
      Value acc2 = arith::MulFOp::create(b, otherAcc, splat(e, c2, vecLen));
      state = {newMax, sum, arith::AddFOp::create(b, acc1, acc2)};
    }
    return state;
  }

  /// Unified max: each lane's (flag, sum, acc) with the weights
  /// exp(x - phi), then the warp's position groups added (flags or'ed).
  SmallVector<Value> unifiedState() {
    decode::SoftmaxAttr softmax = problem.softmax;
    float phi = softmax.getPhi().getValueAsDouble();
    float lo = softmax.getLo().getValueAsDouble();
    float hi = softmax.getHi().getValueAsDouble();
    Value strideIndex = stride();
    SmallVector<Value> state = e.reduce(
        first, end, strideIndex, {e.f32(0), e.f32(0), zeros()},
        [&](Value base, ValueRange c) {
          auto [t, valid] = position(base);
          Value rawScore = score(t);
          Value x = e.sub(rawScore, e.f32(phi));
          Value below = e.cmpf(CmpFPredicate::OLT, x, e.f32(lo));
          Value above = e.cmpf(CmpFPredicate::OGT, x, e.f32(hi));
          Value outside = arith::AndIOp::create(
              b, valid, arith::OrIOp::create(b, below, above));
          Value flag = e.select(outside, e.f32(1), c[0]);
          Value weight = attentionExp(e, x);
          Value p = e.select(valid, weight, e.f32(0));
          Value valueT = value(t);
          Value acc = arith::AddFOp::create(
              b, c[2], arith::MulFOp::create(b, valueT, splat(e, p, vecLen)));
          return SmallVector<Value>{flag, e.add(c[1], p), acc};
        });
    for (int64_t offset = g; offset < subgroup; offset *= 2) {
      state = {
          arith::MaximumFOp::create(b, state[0],
                                    e.shuffleXor(state[0], offset)),
          e.add(state[1], e.shuffleXor(state[1], offset)),
          arith::AddFOp::create(b, state[2], e.shuffleXor(state[2], offset))};
    }
    return state;
  }

  /// The lanes of position group 0 hold the warp's result: acc, then (max
  /// or flag, sum), to the warp's row of shared memory.
  void storeWarpResult(ArrayRef<Value> state) {
    Value warpBase = mulI(b, warp, e.index(rowFloats));
    e.ifThenElse(e.cmpi(CmpIPredicate::ult, lane, e.index(g)), [&] {
      for (int64_t c = 0; c < vecLen; ++c) {
        Value element = e.extract(state[2], c);
        Value at = addI(b, warpBase, addI(b, d0, e.index(c)));
        memref::StoreOp::create(b, element, shared, ValueRange{at});
      }
      e.ifThenElse(e.cmpi(CmpIPredicate::eq, lane, e.index(0)), [&] {
        memref::StoreOp::create(b, state[0], shared,
                                ValueRange{addI(b, warpBase, e.index(d))});
        memref::StoreOp::create(b, state[1], shared,
                                ValueRange{addI(b, warpBase, e.index(d + 1))});
      });
    });
  }

  /// Warp w's float at `offset` of its shared row.
  Value sharedAt(int64_t w, Value offset) {
    return memref::LoadOp::create(
        b, shared, ValueRange{addI(b, e.index(w * rowFloats), offset)});
  }

  /// Combines the warps: thread j writes dimension j of the split's
  /// partial row, thread 0 its max (or flag) and sum.
  void writePartial() {
    Value rowIndex = addI(b, mulI(b, i, e.index(shape.queryHeads)), h);
    Value splitRow = addI(b, mulI(b, rowIndex, idx(b, args[NumSplits])), s);
    Value out = mulI(b, splitRow, e.index(rowFloats));
    bool unified = problem.unified();
    Value globalMax = e.f32(unified ? 0.0 : -INFINITY);
    for (int64_t w = 0; w < config.warps; ++w)
      globalMax =
          arith::MaximumFOp::create(b, globalMax, sharedAt(w, e.index(d)));
    auto weight = [&](int64_t w) {
      return unified
                 ? e.f32(1)
                 : attentionScaleFactor(e, sharedAt(w, e.index(d)), globalMax);
    };
    Value thread = e.threadId();
    Value dims = e.index(d);
    Value blockThreads = e.index(config.warps * subgroup);
    e.loop(thread, dims, blockThreads, [&](Value j) {
      Value acc = e.f32(0);
      for (int64_t w = 0; w < config.warps; ++w) {
        Value partial = sharedAt(w, j);
        acc = e.add(acc, e.mul(partial, weight(w)));
      }
      memref::StoreOp::create(b, acc, args[Partials],
                              ValueRange{addI(b, out, j)});
    });
    Value threadForSum = e.threadId();
    Value isFirst = e.cmpi(CmpIPredicate::eq, threadForSum, e.index(0));
    e.ifThenElse(isFirst, [&] {
      Value sum = e.f32(0);
      for (int64_t w = 0; w < config.warps; ++w) {
        Value partial = sharedAt(w, e.index(d + 1));
        sum = e.add(sum, e.mul(partial, weight(w)));
      }
      memref::StoreOp::create(b, globalMax, args[Partials],
                              ValueRange{addI(b, out, e.index(d))});
      memref::StoreOp::create(b, sum, args[Partials],
                              ValueRange{addI(b, out, e.index(d + 1))});
    });
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const AttentionProblem &problem;
  const AttentionConfig &config;
  const Shape &shape;
  int64_t subgroup, d, g, vecLen, rowFloats;

  ArrayRef<Value> args;
  Value layerIndex, s, h, i, shared, warp, lane, sub, d0, kvHead, slot;
  Value start, end, first, query;
};

LogicalResult buildAttention(Location loc, KernelContext &ctx,
                             const AttentionConfig &config,
                             const AttentionProblem &problem, Buffer partials) {
  decode::KVCacheType cacheType = problem.cacheType;
  ImplicitLocOpBuilder &host = ctx.host;
  int64_t queryHeads = problem.queryHeads();
  int64_t subgroup = ctx.subgroupSize();
  FailureOr<Shape> maybeShape =
      getShape(cacheType, queryHeads, subgroup, ctx.primitives.vectorBytes());
  if (failed(maybeShape))
    return emitError(loc) << "head_dim " << cacheType.getHeadDim() << " of "
                          << cacheType.getElementType()
                          << " does not split into the " << subgroup
                          << " lanes of a subgroup for the GPU attention "
                             "generator";
  Shape shape = *maybeShape;

  // Splits: fixed by the op, or enough blocks to fill the GPU twice without
  // splitting the cache finer than minSplitLength positions.
  Value blocksPerSplit =
      arith::MulIOp::create(host, ctx.batch, ctx.hostI64(queryHeads));
  Value numSplits = getAttentionSplits(
      ctx, problem,
      {config.maxSplits, config.wavesPerUnit, config.minSplitLength},
      blocksPerSplit);
  Value chunk = ctx.ceilDiv(ctx.maxContext, numSplits);
  // The layer is an argument (the last one), so one kernel serves every
  // layer.
  Value layer = ctx.hostI64(problem.layer);
  SmallVector<KernelArg> args = getAttentionArgs(problem, partials, numSplits);
  args.append({KernelArg::scalar(chunk), KernelArg::scalar(layer)});
  ctx.launch("attention_partial", args,
             {ctx.toIndex(numSplits), ctx.hostIndex(queryHeads),
              ctx.toIndex(ctx.batch)},
             config.warps * subgroup, config.warps * (shape.headDim + 2),
             [&](GpuEmitter &e, ArrayRef<Value> v) {
               SplitKVAttentionBuilder(e, problem, config, shape).build(v);
             });
  launchAttentionReduce(ctx, problem, partials, numSplits);
  return success();
}

class SplitKVAttentionFamily : public KernelFamily {
public:
  StringRef getName() const override { return "split_kv_attention"; }
  bool canLower(Operation *op) const override {
    return isa<decode::AttentionOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &) const override {
    return makeConfig(op->getContext(), {{"subgroups", 4},
                                         {"max_splits", 64},
                                         {"waves_per_unit", 2},
                                         {"min_split_length", 64}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    int64_t maxSubgroups = target.maxSubgroups();
    if (failed(checkRange(op, config, "subgroups", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "max_splits", 1, 1024)) ||
        failed(checkRange(op, config, "waves_per_unit", 1, 64)) ||
        failed(checkRange(op, config, "min_split_length", 1, 1 << 20)))
      return failure();
    auto attention = cast<decode::AttentionOp>(op);
    int64_t headDim = attention.getQuery().getType().getDimSize(2);
    int64_t sharedBytes = config.get("subgroups") * (headDim + 2) * 4;
    if (sharedBytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel config subgroups = " << config.get("subgroups")
             << " needs " << sharedBytes << " bytes of shared memory, more "
             << "than the " << target.target().getSharedMemory() << " of "
             << target.target().getArch().getValue();
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &kernelConfig,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto attention = cast<decode::AttentionOp>(op);
    AttentionConfig config(kernelConfig);
    Builder b(op->getContext());
    Buffer partials = buffers.scratch(
        MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
        config.scratchPerSequence(attention.getQuery().getType()));
    return buildAttention(attention.getLoc(), ctx, config,
                          AttentionProblem::get(attention, buffers), partials);
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createSplitKVAttentionFamily() {
  return std::make_unique<SplitKVAttentionFamily>();
}
