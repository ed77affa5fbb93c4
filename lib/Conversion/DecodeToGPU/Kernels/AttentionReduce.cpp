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

SplitPositions fdc::gpu::getSplitPositions(GpuEmitter &e, ArrayRef<Value> args,
                                           Value sequence, Value split,
                                           Value chunk) {
  ImplicitLocOpBuilder &b = e.builder();
  SplitPositions positions;
  positions.slot = e.loadIndex(args[AttentionArgs::Slots], sequence);
  Value lastPosition = e.loadIndex(args[AttentionArgs::Positions], sequence);
  positions.length = addI(b, lastPosition, e.index(1));
  Value chunkLength = idx(b, chunk);
  positions.start = mulI(b, split, chunkLength);
  Value splitEnd = addI(b, positions.start, chunkLength);
  positions.end = arith::MinUIOp::create(b, splitEnd, positions.length);
  return positions;
}

SmallVector<KernelArg>
fdc::gpu::getAttentionArgs(const AttentionProblem &problem, Buffer partials,
                           Value numSplits) {
  SmallVector<KernelArg> args(AttentionArgs::FirstOwnArg);
  args[AttentionArgs::Query] = KernelArg::buffer(problem.query);
  args[AttentionArgs::Cache] = KernelArg::buffer(problem.cache);
  args[AttentionArgs::Slots] = KernelArg::buffer(problem.slots);
  args[AttentionArgs::Positions] = KernelArg::buffer(problem.positions);
  args[AttentionArgs::Partials] = KernelArg::buffer(partials);
  args[AttentionArgs::NumSplits] = KernelArg::scalar(numSplits);
  return args;
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
  if (policy.minSplits > 1) {
    Value fewest = ctx.hostI64(policy.minSplits);
    wanted = arith::MaxSIOp::create(host, wanted, fewest);
  }
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

SplitState fdc::gpu::mergeSplitStates(GpuEmitter &e,
                                      const AttentionProblem &problem,
                                      ArrayRef<SplitState> states) {
  ImplicitLocOpBuilder &b = e.builder();
  Value first = states.front().first;
  for (const SplitState &state : states.drop_front())
    first = arith::MaximumFOp::create(b, first, state.first);
  Value sum = e.f32(0), acc = e.f32(0);
  for (const SplitState &state : states) {
    if (problem.unified()) {
      sum = e.add(sum, state.sum);
      acc = e.add(acc, state.acc);
      continue;
    }
    Value factor = attentionScaleFactor(e, state.first, first);
    Value scaledSum = e.mul(state.sum, factor);
    Value scaledAcc = e.mul(state.acc, factor);
    sum = e.add(sum, scaledSum);
    acc = e.add(acc, scaledAcc);
  }
  return {first, sum, acc};
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

/// The most split groups of one unit (below) and the partial rows a lane
/// of a group loads at once: 64 splits take one round of loads, whose
/// latency the lanes wait for once.
constexpr int64_t kMaxSplitGroups = 16;
constexpr int64_t kSplitsPerRound = 4;

/// The shape of attention_reduce's block: `groups` groups of `rowThreads`
/// threads (a subgroup each; groups a power of two). A unit of work is
/// `rowThreads` head dims of one (sequence, query head) row, one thread per
/// dim. The host gives each unit P groups (a power of two: enough for the
/// splits in one round of loads, at most `groups`), group p combining
/// splits p, p + P, ..., and a block takes groups / P units. With few
/// splits a block serves many rows; with many, many lanes combine a row's
/// splits at once instead of a few lanes that each wait on one load after
/// another.
struct ReduceShape {
  int64_t rowThreads, groups, headDim;
  int64_t threads() const { return rowThreads * groups; }
  /// Units per (sequence, query head) row.
  int64_t chunks() const { return llvm::divideCeil(headDim, rowThreads); }
  /// f32s of shared memory: (max or flag, sum, acc) per thread.
  int64_t sharedFloats() const { return 3 * threads(); }
};

ReduceShape getReduceShape(const AttentionProblem &problem, int64_t subgroup,
                           int64_t maxThreads) {
  int64_t rowThreads = std::min(subgroup, maxThreads);
  int64_t groups =
      std::clamp<int64_t>(maxThreads / rowThreads, 1, kMaxSplitGroups);
  return {rowThreads,
          static_cast<int64_t>(llvm::bit_floor(static_cast<uint64_t>(groups))),
          problem.headDim()};
}

/// The body of attention_reduce.
class AttentionReduceBuilder : AttentionArgs {
public:
  AttentionReduceBuilder(GpuEmitter &e, const AttentionProblem &problem,
                         const ReduceShape &shape)
      : e(e), b(e.builder()), problem(problem), shape(shape) {}

  /// The kernel's own arguments, after the attention kernels' shared
  /// ones (AttentionArgs).
  enum Arg { GroupsPerUnitLog2 = FirstOwnArg, Units, Out, Layer };

  void build(ArrayRef<Value> v) {
    args = v;
    shared = v.back();
    layerIndex = idx(b, v[Layer]);
    numSplits = idx(b, v[NumSplits]);
    // Powers of two: shifts and masks, not divisions.
    Value log2GroupsPerUnit = idx(b, v[GroupsPerUnitLog2]);
    Value one = e.index(1);
    Value groupsPerUnit = arith::ShLIOp::create(b, one, log2GroupsPerUnit);
    Value units = idx(b, v[Units]);
    Value thread = e.threadId();
    Value rowThreads = e.index(shape.rowThreads);
    Value lane = arith::RemUIOp::create(b, thread, rowThreads);
    Value warp = arith::DivUIOp::create(b, thread, rowThreads);
    Value groupMask = arith::SubIOp::create(b, groupsPerUnit, one);
    Value group = arith::AndIOp::create(b, warp, groupMask);
    Value unitInBlock = arith::ShRUIOp::create(b, warp, log2GroupsPerUnit);
    Value groups = e.index(shape.groups);
    Value unitsPerBlock = arith::ShRUIOp::create(b, groups, log2GroupsPerUnit);
    Value firstUnit = mulI(b, e.blockId(Dimension::x), unitsPerBlock);
    Value unit = addI(b, firstUnit, unitInBlock);
    Value active = e.cmpi(CmpIPredicate::ult, unit, units);
    // Past the last unit a group runs no split (its state stays the
    // identity) and writes nothing, but it reaches the barrier.
    Value lastUnit = arith::SubIOp::create(b, units, one);
    Value inRange = arith::MinUIOp::create(b, unit, lastUnit);
    Value chunks = e.index(shape.chunks());
    Value chunk = arith::RemUIOp::create(b, inRange, chunks);
    Value rowIndex = arith::DivUIOp::create(b, inRange, chunks);
    Value heads = e.index(problem.queryHeads());
    h = arith::RemUIOp::create(b, rowIndex, heads);
    i = arith::DivUIOp::create(b, rowIndex, heads);
    Value firstSplit = mulI(b, rowIndex, numSplits);
    base = mulI(b, firstSplit, e.index(problem.partialRowFloats()));
    Value chunkBase = mulI(b, chunk, rowThreads);
    Value j = addI(b, chunkBase, lane);
    Value lastDim = e.index(problem.headDim() - 1);
    dim = arith::MinUIOp::create(b, j, lastDim);

    // Each group's rounds: kSplitsPerRound partial rows loaded at once,
    // those past the last split as the identity.
    Value end = e.select(active, numSplits, e.index(0));
    Value round = mulI(b, groupsPerUnit, e.index(kSplitsPerRound));
    SmallVector<Value> state =
        e.reduce(group, end, round, identity(), [&](Value first, ValueRange c) {
          SmallVector<SmallVector<Value>> states = {llvm::to_vector(c)};
          for (int64_t k = 0; k < kSplitsPerRound; ++k) {
            Value offset = mulI(b, groupsPerUnit, e.index(k));
            states.push_back(splitState(addI(b, first, offset)));
          }
          return mergeAll(states);
        });
    state = mergeGroups(thread, group, groupsPerUnit, state);
    // The unit's first group holds the row's result and writes it.
    Value firstGroup = e.cmpi(CmpIPredicate::eq, group, e.index(0));
    Value inRow = e.cmpi(CmpIPredicate::ult, j, e.index(problem.headDim()));
    Value writes = arith::AndIOp::create(b, firstGroup, inRow);
    writes = arith::AndIOp::create(b, writes, active);
    e.ifThenElse(writes, [&] {
      ArrayRef<Value> merged = state;
      if (problem.unified())
        storeUnifiedAttentionResult(e, problem,
                                    {args, args[Out], layerIndex, i, h, j},
                                    merged[0], merged[1], merged[2]);
      else
        e.store(e.div(merged[2], merged[1]), args[Out], {i, h, j});
    });
  }

private:
  /// The unit's groups' states merged into its first group's, through
  /// shared memory in a tree: at level l (while 2^l < the groups per unit,
  /// the same for the whole block), group g with g mod 2^(l+1) = 0 merges
  /// group g + 2^l's state (the thread 2^l subgroups on), and stores the
  /// result where the next level reads it. Returns this thread's state
  /// after the last level: the unit's in its first group.
  SmallVector<Value> mergeGroups(Value thread, Value group, Value groupsPerUnit,
                                 ArrayRef<Value> state) {
    SmallVector<Value> current(state);
    for (int64_t k = 0; k < 3; ++k)
      memref::StoreOp::create(b, current[k], shared,
                              ValueRange{sharedAt(thread, k)});
    SmallVector<Type> types(current.size(), b.getF32Type());
    for (int64_t stride = 1; stride < shape.groups; stride *= 2) {
      Value level = e.cmpi(CmpIPredicate::ult, e.index(stride), groupsPerUnit);
      auto levelIf =
          scf::IfOp::create(b, types, level, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(levelIf.thenBlock());
      e.barrier(); // the last level's stores
      Value bits = e.index(2 * stride - 1);
      Value position = arith::AndIOp::create(b, group, bits);
      Value first = e.cmpi(CmpIPredicate::eq, position, e.index(0));
      Value partner = addI(b, group, e.index(stride));
      Value inUnit = e.cmpi(CmpIPredicate::ult, partner, groupsPerUnit);
      Value merges = arith::AndIOp::create(b, first, inUnit);
      auto mergeIf =
          scf::IfOp::create(b, types, merges, /*withElseRegion=*/true);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(mergeIf.thenBlock());
        Value other = addI(b, thread, e.index(stride * shape.rowThreads));
        SmallVector<Value> loaded;
        for (int64_t k = 0; k < 3; ++k)
          loaded.push_back(memref::LoadOp::create(
              b, shared, ValueRange{sharedAt(other, k)}));
        SmallVector<Value> merged = mergeAll({current, loaded});
        for (int64_t k = 0; k < 3; ++k)
          memref::StoreOp::create(b, merged[k], shared,
                                  ValueRange{sharedAt(thread, k)});
        scf::YieldOp::create(b, merged);
        b.setInsertionPointToStart(mergeIf.elseBlock());
        scf::YieldOp::create(b, current);
      }
      scf::YieldOp::create(b, mergeIf.getResults());
      b.setInsertionPointToStart(levelIf.elseBlock());
      scf::YieldOp::create(b, current);
      current.assign(levelIf.getResults().begin(), levelIf.getResults().end());
    }
    return current;
  }

  /// (max or flag, sum, acc) of no split.
  SmallVector<Value> identity() {
    Value first = e.f32(problem.unified() ? 0.0 : -INFINITY);
    Value zero = e.f32(0);
    return {first, zero, zero};
  }
  /// Split `split`'s (max or flag, sum, acc) of this thread's dim; the
  /// identity past the last split (whose row it reads instead).
  SmallVector<Value> splitState(Value split) {
    Value valid = e.cmpi(CmpIPredicate::ult, split, numSplits);
    Value last = arith::SubIOp::create(b, numSplits, e.index(1));
    Value readable = arith::MinUIOp::create(b, split, last);
    SmallVector<Value> loaded = {maxAt(readable), sumAt(readable),
                                 partialAt(readable, dim)};
    SmallVector<Value> none = identity();
    SmallVector<Value> state;
    for (int64_t k = 0; k < 3; ++k)
      state.push_back(e.select(valid, loaded[k], none[k]));
    return state;
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

  /// Several (max or flag, sum, acc) combined (mergeSplitStates).
  SmallVector<Value> mergeAll(ArrayRef<SmallVector<Value>> states) {
    SmallVector<SplitState> splits;
    for (const SmallVector<Value> &state : states)
      splits.push_back({state[0], state[1], state[2]});
    SplitState merged = mergeSplitStates(e, problem, splits);
    return {merged.first, merged.sum, merged.acc};
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const AttentionProblem &problem;
  const ReduceShape &shape;
  ArrayRef<Value> args;
  Value shared, layerIndex, h, i, numSplits, base, dim;
};

/// out[i][h][j] from the cache, one thread's online softmax over the whole
/// row: unified max's fallback.
void recomputeAttentionElement(GpuEmitter &e, const AttentionProblem &problem,
                               const AttentionOutputElement &element) {
  ImplicitLocOpBuilder &b = e.builder();
  ArrayRef<Value> args = element.args;
  Value i = element.sequence, h = element.head;
  Value kvHead = arith::DivUIOp::create(b, h, e.index(problem.group()));
  Value slot = e.loadIndex(args[AttentionArgs::Slots], i);
  Value position = e.loadIndex(args[AttentionArgs::Positions], i);
  auto cacheElement = [&](int64_t kv, Value t, Value d) {
    SmallVector<Value> row = {slot, element.layer, e.index(kv), kvHead, t};
    Value vector = loadCacheVector(e, args[AttentionArgs::Cache],
                                   problem.cacheType, row, d, 1);
    return e.extract(vector, 0);
  };
  Value length = addI(b, position, e.index(1));
  Value zeroIndex = e.index(0);
  Value oneIndex = e.index(1);
  SmallVector<Value> st = e.reduce(
      zeroIndex, length, oneIndex, {e.f32(-INFINITY), e.f32(0), e.f32(0)},
      [&](Value t, ValueRange c) {
        Value dims = e.index(problem.headDim());
        Value zero = e.f32(0);
        Value dot = e.reduce1(dims, zero, [&](Value dd, Value sum) {
          Value k = cacheElement(0, t, dd);
          Value q = e.load(args[AttentionArgs::Query], {i, h, dd});
          return e.add(sum, e.mul(q, k));
        });
        Value sc = e.mul(dot, e.f32(problem.scale));
        Value newMax = arith::MaximumFOp::create(b, c[0], sc);
        Value correction = attentionScaleFactor(e, c[0], newMax);
        Value p = attentionExp(e, e.sub(sc, newMax));
        Value vj = cacheElement(1, t, element.dim);
        Value sum = e.add(e.mul(c[1], correction), p);
        Value kept = e.mul(c[2], correction);
        Value added = e.mul(p, vj);
        return SmallVector<Value>{newMax, sum, e.add(kept, added)};
      });
  e.store(e.div(st[2], st[1]), element.out, {i, h, element.dim});
}
} // namespace

void fdc::gpu::storeUnifiedAttentionResult(
    GpuEmitter &e, const AttentionProblem &problem,
    const AttentionOutputElement &element, Value flag, Value sum, Value acc) {
  ImplicitLocOpBuilder &b = e.builder();
  Value maxFloat = e.f32(std::numeric_limits<float>::max());
  Value sumOverflow = e.cmpf(CmpFPredicate::UGT, sum, maxFloat);
  Value accOverflow =
      e.cmpf(CmpFPredicate::UGT, math::AbsFOp::create(b, acc), maxFloat);
  Value overflow = arith::OrIOp::create(b, sumOverflow, accOverflow);
  Value underflow = e.cmpf(CmpFPredicate::OEQ, sum, e.f32(0));
  Value unusable = arith::OrIOp::create(b, underflow, overflow);
  Value anyFlag = e.cmpf(CmpFPredicate::OGT, flag, e.f32(0));
  Value flagged = arith::OrIOp::create(b, anyFlag, unusable);
  e.ifThenElse(
      flagged, [&] { recomputeAttentionElement(e, problem, element); },
      [&] {
        e.store(e.div(acc, sum), element.out,
                {element.sequence, element.head, element.dim});
      });
}

void fdc::gpu::launchAttentionReduce(KernelContext &ctx,
                                     const AttentionProblem &problem,
                                     Buffer partials, Value numSplits) {
  ReduceShape shape =
      getReduceShape(problem, ctx.subgroupSize(),
                     ctx.primitives.target().getMaxWorkgroupSize());
  ImplicitLocOpBuilder &host = ctx.host;
  Value rows =
      arith::MulIOp::create(host, ctx.batch, ctx.hostI64(problem.queryHeads()));
  Value units = arith::MulIOp::create(host, rows, ctx.hostI64(shape.chunks()));
  // log2 of the groups per unit: of the fewest that take the splits in one
  // round (k where the rounds exceed 2^(k-1)), at most log2 of the block's
  // groups. (More groups, to give every compute unit a block when the
  // units are few, measured slower: bf16 MQA, B = 8, S = 1024, 16 splits:
  // 6.4 against 5.9 us; H100.)
  Value rounds = ctx.ceilDiv(numSplits, ctx.hostI64(kSplitsPerRound));
  Value log2GroupsPerUnit = ctx.hostI64(0);
  for (int64_t k = 1; (int64_t(1) << k) <= shape.groups; ++k) {
    Value half = ctx.hostI64(int64_t(1) << (k - 1));
    Value more = arith::CmpIOp::create(host, CmpIPredicate::sgt, rounds, half);
    Value log2 = ctx.hostI64(k);
    log2GroupsPerUnit =
        arith::SelectOp::create(host, more, log2, log2GroupsPerUnit);
  }
  Value blockGroups = ctx.hostI64(shape.groups);
  Value unitsPerBlock =
      arith::ShRUIOp::create(host, blockGroups, log2GroupsPerUnit);
  Value blocks = ctx.ceilDiv(units, unitsPerBlock);
  // The layer is an argument (the last one), so one kernel serves every
  // layer.
  Value layer = ctx.hostI64(problem.layer);
  SmallVector<KernelArg> args = getAttentionArgs(problem, partials, numSplits);
  args.append({KernelArg::scalar(log2GroupsPerUnit), KernelArg::scalar(units),
               KernelArg::buffer(problem.out), KernelArg::scalar(layer)});
  ctx.launch("attention_reduce", args,
             {ctx.toIndex(blocks), ctx.hostIndex(1), ctx.hostIndex(1)},
             shape.threads(), shape.sharedFloats(),
             [&](GpuEmitter &e, ArrayRef<Value> v) {
               AttentionReduceBuilder(e, problem, shape).build(v);
             });
}
