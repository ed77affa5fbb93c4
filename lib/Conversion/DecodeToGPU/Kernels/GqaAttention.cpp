//===- GqaAttention.cpp - kernel family "gqa_attention" -------------------===//
//
// Split-KV decode attention on MMA units, one block per (split, KV head,
// sequence): each K and V element is read from memory once for all G query
// heads of the group, where split_kv_attention reads it G times. MHA (G = 1)
// runs the same way: the MMA columns past the group are padding, but the
// kernel is bound by its loads, not by the MMAs.
//
// Each subgroup takes steps of T = mma k positions. Where the group fits
// the MMA's narrow side (n; `heads_as_b`, the default) the heads are B
// columns and K and V the A operand, else the heads (padded to m) are A
// rows and K and V the B operand:
//
// - S = Q Kᵀ (or Sᵀ = K Qᵀ): Q stays in registers; K has one position per
//   MMA column (A row). A lane loads its positions' head dims straight from
//   global memory in 16-byte runs: a generator may map k indices to a
//   lane's k slots in any order, if A and B use the same map (MmaLayout),
//   so Q's slots are loaded in the order K's runs arrive (an INT4 cache's
//   runs are dequantised in registers, Int4Vectors.h).
// - The scores go to shared memory; the lanes of each head row
//   (softmax_lanes, a part of the step's T scores each) apply the softmax
//   scheme: online (running max, agreed over the row's lanes, sum, and a
//   correction of the accumulators) or unified max (exp(x - phi), sum and
//   the out-of-range flag, no correction), and write the weights P back.
//   Or, with the heads as A rows and `register_softmax` (where the target's
//   MMA accumulators are its A operand, AccumulatorOperandMap), the
//   softmax stays in registers: the k / n score tiles' accumulators are P's
//   A slots as they lie, a row's max is reduced over the lanes that share
//   it, each lane keeps its part of the row's sum, and V's k slots follow
//   the accumulators' columns. With the heads as B columns and
//   `register_softmax` (where the target describes which columns its
//   accumulators hold, AccumulatorColumns), every lane turns its own score
//   accumulators into weights, the lanes of a head column agreeing on the
//   step's max, and only the weights go through shared memory.
// - O += P V (or Oᵀ += Vᵀ Pᵀ): the k slots of a lane are consecutive
//   positions, and its MMA column c (A row r) of output tile t is head dim
//   c * D/n + t (r * D/m + t), so a lane loads the consecutive dims of each
//   of its positions in runs as well.
// - The steps inside the split (with prefetch, whose next step is too) run
//   in a first loop that reads rows unclamped; the rest, in a second loop,
//   clamp each position to the last readable row.
// - Or, with `stages`, a step's rows (K and V of its positions, contiguous
//   in the cache) are copied to one of the subgroup's shared-memory stages
//   by asynchronous 16-byte copies, stages - 1 steps ahead, each position
//   clamped (a bf16 or f16 row's 16-byte pieces XOR-ed with the row mod the
//   pieces that span the target's banks, 8 on every known target, so that
//   a subgroup's reads of one piece of that many rows spread over the
//   banks); the step reads them there, in one loop. With
//   `fragment_loads` (bf16 or f16, the heads as B columns, where the target
//   loads MMA operands as fragments: NVIDIA's ldmatrix), the subgroup
//   reads each 16 x 16 tile of K, and of V transposed, as the A operand in
//   one instruction; a lane's k slots then hold the k indices the loads
//   deal (GpuPrimitives::getMmaSlotK), so Q's slots are loaded in that
//   order, P's are the positions of V's slots, and output tile t holds
//   head dims t * m + r.
//
// Q and K have the cache's type, so S is exact up to f32 accumulation. With
// f32_operands, P is carried as a pair hi + lo of that type (two MMAs),
// which keeps the weighted sum as accurate as f32 arithmetic on the cache's
// values. An f16 cache takes the online scheme only: unified max's weights
// exp(x - phi) may leave f16's range. An INT4 cache's MMAs take f16 under
// the online scheme (its dequantised values are rounded to f16, so P is
// too); under unified max the scores' MMAs take f16 and P V's bf16, the
// values dequantised to bf16 (Int4Vectors.h).
// The subgroups then combine through shared memory and the block writes the
// split's partial rows, the same as split_kv_attention's, which
// attention_reduce combines; a launch of one split writes the output
// instead (unified max recomputing a flagged row there) and the step
// launches no reduce. Where the target has clusters, a launch of 2 to
// cluster_splits splits (gqa_attention_cluster) keeps each block's rows in
// its shared memory, and the blocks of a (KV head, sequence), one cluster,
// add them there and write the output (addSplitsInCluster): no reduce
// either.
//
//===----------------------------------------------------------------------===//

#include "../HostBranches.h"
#include "Attention.h"
#include "Int4Vectors.h"
#include "RowXorSwizzle.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {

/// The family's config (see getDefaultConfig).
struct GqaAttentionConfig {
  /// Subgroups per block.
  int64_t subgroups;
  AttentionSplitPolicy splits;
  /// P as a hi + lo pair of the cache's type (1) or rounded to it (0).
  bool f32Operands;
  /// Each step's loads are issued a step ahead (1) or at the step (0).
  bool prefetch;
  /// Shared-memory stages per subgroup through which the cache rows of the
  /// steps stream (asynchronous copies issued stages - 1 steps ahead; the
  /// step's loads read shared memory), or 0: the steps load global memory.
  int64_t stages;
  /// The lanes that share a head row of the softmax through shared memory,
  /// at most (GqaAttentionShape::softmaxRowLanes).
  int64_t softmaxLanes;
  /// The group's heads as the MMA's B columns, keys and values as A (1),
  /// or the heads as A rows, keys and values as B (0).
  bool headsAsB;
  /// The softmax in registers (1), or through shared memory by one lane
  /// per head row (0, and where the target's MMA does not allow it). With
  /// the heads as A rows the scores' accumulators are fed to P V as its A
  /// operand (GqaAttentionShape::accumulatorAsA); with the heads as B
  /// columns every lane computes the weights of its accumulators, the
  /// lanes of a column agreeing on its max (accumulatorColumns), and the
  /// weights go through shared memory to P's B slots.
  bool registerSoftmax;
  /// The blocks per unit the kernel is compiled to fit at once (the target's
  /// compiler bounds a lane's registers to let them), or 0: as many as the
  /// compiler's register choice lets fit.
  int64_t blocksPerUnit;
  /// The most splits that add their partial rows in a cluster of their
  /// blocks (a power of two the target can cluster), or 0: never, the
  /// splits go through the scratch to attention_reduce.
  int64_t clusterSplits;
  /// With stages: the steps read K and V as the MMA's A operand by fragment
  /// loads (GpuPrimitives::loadsAFragments), V transposed (1, where the
  /// shape and target allow it: allowsFragmentLoads), or each lane its own
  /// runs (0).
  bool fragmentLoads;

  explicit GqaAttentionConfig(const KernelConfig &config)
      : subgroups(config.get("subgroups")),
        splits{config.get("max_splits"), config.get("waves_per_unit"),
               config.get("min_split_length"), /*wholeWaves=*/true,
               config.get("min_splits")},
        f32Operands(config.get("f32_operands") != 0),
        prefetch(config.get("prefetch") != 0), stages(config.get("stages")),
        softmaxLanes(config.get("softmax_lanes")),
        headsAsB(config.get("heads_as_b") != 0),
        registerSoftmax(config.get("register_softmax") != 0),
        blocksPerUnit(config.get("blocks_per_unit")),
        clusterSplits(config.get("cluster_splits")),
        fragmentLoads(config.get("fragment_loads") != 0) {}
};

/// The sizes that follow from the MMA layout and the head dim.
struct GqaAttentionShape {
  MmaLayout layout;
  /// The MMA operand type: the cache's; for an INT4 cache f16 (online) or
  /// bf16 (unified max).
  Type operand;
  /// The MMA layout and operand type of the scores (Q and K): layout's and
  /// operand's, but f16 for an INT4 cache's keys under unified max.
  MmaLayout keyLayout;
  Type keyOperand;
  /// An INT4 cache's row layout.
  std::optional<Int4RowLayout> int4;
  /// The heads as B columns (K and V as A; a group of at most n) or as A
  /// rows (K and V as B; a group of at most m).
  bool headsAsB;
  int64_t group, headDim;
  /// Cache elements per vector load, per lane and k run (FlatGemm's super
  /// step), and the k run's MMAs and head dims.
  int64_t pieceLanes, laneRun, mmasPerRun, runDims;
  /// Positions per subgroup step (the MMA's k) and score tiles per step.
  int64_t stepPositions, scoreTiles;
  /// Output tiles (n head dims each, m with headsAsB) and the dims of a
  /// lane's V run (per A row with headsAsB).
  int64_t outputTiles, valueRun;
  /// f32s per vector access of the scores in shared memory (the target's
  /// vector width), and the f32 stride of a head row of them (one vector
  /// of padding).
  int64_t scoreLanes, scoreStride;
  /// The softmax through shared memory: the head rows of the scores (the
  /// MMA's n heads as B columns, else its m rows).
  int64_t scoreRows;
  /// With the heads as A rows: where the score tiles' accumulators are P's
  /// A operand, if the target's MMA allows the softmax in registers.
  std::optional<AccumulatorOperandMap> accumulatorAsA;
  /// With the heads as B columns: which heads (D columns) a lane's score
  /// accumulators hold, if the target's MMA allows the softmax in
  /// registers.
  std::optional<AccumulatorColumns> accumulatorColumns;

  /// Whether the target's MMA allows the softmax in registers.
  bool allowsRegisterSoftmax() const {
    return headsAsB ? accumulatorColumns.has_value()
                    : accumulatorAsA.has_value();
  }

  static std::optional<GqaAttentionShape>
  get(decode::AttentionOp op, const GpuPrimitives &target, bool headsAsB);

  /// Rows of the query (and of P) a lane holds: its B column with
  /// headsAsB, else its A rows; and the cache positions a lane loads keys
  /// for per step: its A rows, else one per score tile.
  int64_t laneHeads() const { return headsAsB ? 1 : layout.aRowsPerLane; }
  int64_t laneKeys() const {
    return headsAsB ? layout.aRowsPerLane : scoreTiles;
  }
  /// V runs a lane loads per k slot (position).
  int64_t laneValueRuns() const { return headsAsB ? layout.aRowsPerLane : 1; }

  /// f32s of shared memory: the scores and corrections of every subgroup
  /// during the loop, then every subgroup's partial rows; `clustered`: then
  /// the block's own partial rows, which the cluster's blocks read
  /// (clusterRowsOffset).
  int64_t sharedFloats(int64_t subgroups, bool clustered) const {
    int64_t rows = clustered ? group * (headDim + 2) : 0;
    return clusterRowsOffset(subgroups) + rows;
  }
  /// Where a clustered block's partial rows start in its f32s.
  int64_t clusterRowsOffset(int64_t subgroups) const {
    int64_t loop = subgroups * subgroupFloats();
    int64_t combine = subgroups * group * (headDim + 2);
    return std::max(loop, combine);
  }
  int64_t subgroupFloats() const {
    return layout.m() * scoreStride + layout.m();
  }

  /// Whether the steps may read their K and V tiles from the stages by
  /// fragment loads: bf16 or f16 rows with the heads as B columns (K and V
  /// the A operand), where a lane's piece of a tile lies inside one of the
  /// stages' vector pieces (which the swizzle moves whole).
  bool allowsFragmentLoads(const GpuPrimitives &target) const {
    if (int4 || !headsAsB || !target.loadsAFragments(layout))
      return false;
    int64_t pieceBytes = target.aFragmentPieceElements(layout) *
                         operand.getIntOrFloatBitWidth() / 8;
    return target.vectorBytes() % pieceBytes == 0 &&
           headDim % layout.k() == 0 && headDim % layout.m() == 0 &&
           layout.m() == stepPositions;
  }

  /// Bytes of a cache row (K or V of one position).
  int64_t rowBytes() const {
    return int4 ? int4->rowBytes
                : headDim * operand.getIntOrFloatBitWidth() / 8;
  }
  /// Bytes of one stage of a subgroup: a step's K and V rows.
  int64_t stageBytes() const { return 2 * stepPositions * rowBytes(); }
  /// Whether a subgroup of `lanes` lanes copies a step's rows in whole
  /// `pieceBytes` pieces, as many per lane (needed for stages).
  bool allowsStages(int64_t pieceBytes, int64_t lanes) const {
    return rowBytes() % pieceBytes == 0 &&
           (stageBytes() / pieceBytes) % lanes == 0;
  }
  /// How a stage's `pieceBytes` pieces are XOR-swizzled
  /// (GqaAttentionBuilder::swizzledStageElement): with the row mod the
  /// pieces that span the target's banks once (`bankRowBytes`: 8 of 16
  /// bytes in 32 banks of 4), within the largest power of two that divides
  /// a row's pieces (so a swizzled piece stays in its row); none for INT4
  /// rows.
  RowXorSwizzle stageSwizzle(int64_t pieceBytes, int64_t bankRowBytes) const {
    if (int4)
      return RowXorSwizzle();
    int64_t pieces = rowBytes() / pieceBytes;
    int64_t bankPieces = std::max<int64_t>(1, bankRowBytes / pieceBytes);
    return RowXorSwizzle::rowMod(std::min<int64_t>(
        llvm::bit_floor<uint64_t>(bankPieces), pieces & -pieces));
  }
  /// Bytes of shared memory: the f32s (sharedFloats), then, with stages,
  /// every subgroup's stages from a 16-byte boundary.
  int64_t sharedBytes(int64_t subgroups, int64_t stages, bool clustered) const {
    int64_t floats = sharedFloats(subgroups, clustered) * 4;
    if (stages == 0)
      return floats;
    return llvm::alignTo(floats, 16) + stages * subgroups * stageBytes();
  }

  /// The consecutive lanes that share a head row of the softmax through
  /// shared memory, a part of the step's positions each: the most, up to
  /// `most`, for which the subgroup has that many lanes for every row and
  /// each part is whole vectors of scoreLanes (a power of two).
  int64_t softmaxRowLanes(int64_t most, int64_t subgroupSize) const {
    int64_t lanes = 1;
    while (lanes * 2 <= most && lanes * 2 * scoreRows <= subgroupSize &&
           stepPositions % (lanes * 2 * scoreLanes) == 0)
      lanes *= 2;
    return lanes;
  }

  /// An estimate of the 32-bit registers a lane holds across a step: Q's
  /// slots, the step's K and V runs, P's slots (hi and lo with f32
  /// operands), the output accumulators, and addresses and softmax state.
  int64_t registersPerLane(bool f32Operands) const {
    int64_t elementsPerRegister = 2;
    int64_t queryDims = headDim / layout.kGroups();
    int64_t query = queryDims * laneHeads() / elementsPerRegister;
    int64_t weights = layout.kPerLane * laneHeads() * (f32Operands ? 2 : 1) /
                      elementsPerRegister;
    int64_t keys = laneKeys() * queryDims / elementsPerRegister;
    int64_t values =
        layout.kPerLane * laneValueRuns() * valueRun / elementsPerRegister;
    int64_t accumulators = outputTiles * layout.accPerLane;
    constexpr int64_t kOverhead = 24;
    return query + keys + values + weights + accumulators + kOverhead;
  }

  /// The 32-bit registers of one step's cache loads as they arrive (INT4:
  /// words and (scale, min) pairs), which a prefetch holds across a step.
  int64_t loadRegisters() const {
    auto run = [&](int64_t dims) {
      if (!int4)
        return dims / 2;
      return dims / 8 + std::max<int64_t>(1, dims / int4->groupSize);
    };
    int64_t runs = headDim / runDims;
    return laneKeys() * runs * run(laneRun) +
           layout.kPerLane * laneValueRuns() * run(valueRun);
  }
};

/// The registers per lane the default config keeps to, below the 256 both
/// vendors address, so that the kernel neither spills nor runs one
/// subgroup per scheduler.
constexpr int64_t kRegisterBudget = 224;
/// The most the default config adds in a cluster. On the H100 two splits in
/// a cluster beat the partial kernel and attention_reduce on 21 of 22
/// (config, scheme) pairs with two splits, by 0.3-5.2 % (bf16 MQA, B = 128,
/// S = 1024: 27.4 against 28.8 us; 0.2 % slower on one), while clusters of
/// 4 and 8 lost 7.6-51 % on every pair (bf16 MHA, B = 1, S = 2048, 8 splits:
/// 18.4 against 15.6 us; INT4 MQA, B = 32: 26.5 against 21.2; bf16 MQA, B
/// = 32, S = 32768: 223 against 182), as split-K GEMMs' clusters of 4 did
/// (ClusterSplitSums::kMaxSplits): 2026-12-07, docs/perf.md. Not the combine
/// but the placement: a cluster's blocks share a GPC, and ncu (bf16 MHA at
/// B = 1, S = 2048; INT4 and bf16 MQA at B = 32, S = 8192: 32 clusters of 8
/// each) found some SMs without a block while others ran three (or, two
/// blocks a unit, a second wave), where the partial kernel's 256 blocks
/// gave every SM one or two.
constexpr int64_t kDefaultClusterSplits = 2;

std::optional<GqaAttentionShape>
GqaAttentionShape::get(decode::AttentionOp op, const GpuPrimitives &target,
                       bool headsAsB) {
  decode::KVCacheType cache = op.getCache().getType();
  Type element = cache.getElementType();
  bool int4 = isa<decode::Int4Type>(element);
  bool unified =
      op.getSoftmax().getScheme() == decode::SoftmaxScheme::unified_max;
  // An INT4 cache is dequantised to f16 (the more precise), or to bf16
  // under unified max, whose weights exp(x - phi) need bf16's range.
  MLIRContext *context = op->getContext();
  Type operand = element;
  if (int4)
    operand = unified ? Type(BFloat16Type::get(context))
                      : Type(Float16Type::get(context));
  if (!operand.isBF16() && !(operand.isF16() && !unified))
    return std::nullopt;
  std::optional<MmaLayout> layout = target.getMmaLayout(operand);
  if (!layout)
    return std::nullopt;
  GqaAttentionShape shape;
  shape.layout = *layout;
  shape.operand = operand;
  shape.keyLayout = *layout;
  shape.keyOperand = operand;
  // Under unified max an INT4 cache's keys are dequantised to f16 all the
  // same (only P, and so V, needs bf16's range): the scores keep f16's
  // precision, where the target's f16 MMA lays its operands out as the
  // bf16 one.
  if (int4 && unified)
    if (std::optional<MmaLayout> f16 =
            target.getMmaLayout(Float16Type::get(context)))
      if (f16->sameLanes(*layout)) {
        shape.keyLayout = *f16;
        shape.keyOperand = Float16Type::get(context);
      }
  shape.headsAsB = headsAsB;
  shape.headDim = cache.getHeadDim();
  int64_t queryHeads = op.getQuery().getType().getDimSize(1);
  shape.group = queryHeads / cache.getKvHeads();
  // Elements per vector load: two per byte for INT4, where a lane's k run
  // is at most its share of the head dims (one load per position).
  shape.pieceLanes = int4 ? 2 * target.vectorBytes() : target.vectorBytes() / 2;
  shape.laneRun = std::max(layout->kPerLane, shape.pieceLanes);
  if (int4) {
    shape.int4 = Int4RowLayout::get(cache);
    shape.laneRun =
        std::max(layout->kPerLane,
                 std::min(shape.pieceLanes, shape.headDim / layout->kGroups()));
  }
  shape.mmasPerRun = shape.laneRun / layout->kPerLane;
  shape.runDims = shape.mmasPerRun * layout->k();
  shape.stepPositions = layout->k();
  // Heads as B: a step's k positions are one tile of A rows (m = k).
  shape.scoreTiles = headsAsB ? 1 : layout->k() / layout->n();
  shape.outputTiles = shape.headDim / (headsAsB ? layout->m() : layout->n());
  shape.valueRun = shape.outputTiles;
  shape.scoreLanes = target.vectorBytes() / 4;
  shape.scoreStride = shape.stepPositions + shape.scoreLanes;
  shape.scoreRows = headsAsB ? layout->n() : layout->m();
  bool groupFits =
      headsAsB ? shape.group <= layout->n() && layout->m() == layout->k()
               : shape.group <= layout->m();
  bool fits = groupFits && shape.laneRun % layout->kPerLane == 0 &&
              shape.headDim % shape.runDims == 0 &&
              layout->k() % layout->n() == 0 &&
              shape.headDim % (headsAsB ? layout->m() : layout->n()) == 0 &&
              shape.stepPositions % shape.scoreLanes == 0;
  if (int4)
    // One load per run, of whole words, within a group or of whole groups.
    fits = fits && shape.valueRun <= shape.pieceLanes &&
           shape.int4->supportsRun(shape.laneRun) &&
           shape.int4->supportsRun(shape.valueRun);
  else
    fits = fits && shape.laneRun % shape.pieceLanes == 0 &&
           (shape.valueRun % shape.pieceLanes == 0 ||
            shape.pieceLanes % shape.valueRun == 0);
  if (!fits)
    return std::nullopt;
  if (headsAsB)
    shape.accumulatorColumns = target.getAccumulatorColumns(*layout);
  // The softmax in registers takes a step's score tiles (k / n of them) as
  // the A operand of P V.
  if (!headsAsB)
    if (std::optional<AccumulatorOperandMap> map =
            target.getAccumulatorAsA(*layout))
      if (llvm::all_of(map->slots, [&](AccumulatorOperandMap::Slot slot) {
            return slot.tile < shape.scoreTiles;
          }))
        shape.accumulatorAsA = map;
  return shape;
}

/// The default config's shape: the heads as B columns where the group
/// fits them (half the MMAs and accumulators of heads as A rows padded to
/// m), else as A rows.
std::optional<GqaAttentionShape> getDefaultShape(decode::AttentionOp op,
                                                 const GpuPrimitives &target) {
  if (std::optional<GqaAttentionShape> shape =
          GqaAttentionShape::get(op, target, /*headsAsB=*/true))
    return shape;
  return GqaAttentionShape::get(op, target, /*headsAsB=*/false);
}

/// What a kernel's blocks write: their splits' partial rows, which
/// attention_reduce combines; the output, in a launch of one split; or,
/// in one kernel, either, as the launch's split count says; or the output,
/// from the partial rows of a launch's splits, which form one cluster
/// (GqaAttentionBuilder::addSplitsInCluster).
enum class GqaAttentionOutput { PartialRows, Result, ByLaunch, Cluster };

/// Builds the body of gqa_attention_partial, gqa_attention_cluster and, for
/// unified max, gqa_attention_single_split; one instance per kernel.
class GqaAttentionBuilder : AttentionArgs {
public:
  /// `clusterSplits`: with output Cluster, the launch's splits, one
  /// cluster of blocks per (KV head, sequence).
  GqaAttentionBuilder(GpuEmitter &e, const AttentionProblem &problem,
                      const GqaAttentionConfig &config,
                      const GqaAttentionShape &shape, GqaAttentionOutput output,
                      int64_t clusterSplits = 1)
      : e(e), b(e.builder()), target(e.target()), problem(problem),
        config(config), shape(shape), layout(shape.layout), output(output),
        clusterSplits(clusterSplits) {
    if (clustered())
      clusterRows = shape.clusterRowsOffset(config.subgroups);
    element = shape.operand;
    keyElement = shape.keyOperand;
    accType = VectorType::get({layout.accPerLane}, b.getF32Type());
  }

  /// The kernel's own arguments, after the attention kernels' shared
  /// ones (AttentionArgs).
  enum Arg { Chunk = FirstOwnArg, Out, Layer };

  void build(ArrayRef<Value> v) {
    args = v;
    shared = v.back();
    if (config.stages > 0)
      viewSharedBytes();
    layerIndex = idx(b, v[Layer]);
    split = e.blockId(Dimension::x);
    kvHead = e.blockId(Dimension::y);
    sequence = e.blockId(Dimension::z);
    lane = e.laneId();
    subgroup = e.subgroupId();
    SplitPositions positions =
        getSplitPositions(e, v, sequence, split, v[Chunk]);
    slot = positions.slot;
    Value length = positions.length;
    start = positions.start;
    end = positions.end;
    Value lastValid = arith::SubIOp::create(b, end, e.index(1));
    // Positions past the split read the last valid one (their weight is 0);
    // an empty split's (whose start may lie past the cache's capacity,
    // which a prefetch reads before the loop) the sequence's last (the
    // runtime rejects a position outside [0, max_context) before a step).
    Value lastOfSequence = arith::SubIOp::create(b, length, e.index(1));
    lastReadable =
        minU(arith::MaxSIOp::create(b, lastValid, start), lastOfSequence);
    computeLaneLayout();
    if (config.stages > 0)
      planStepCopies();

    // Each subgroup takes every subgroups-th step of the split.
    Value offset = mulI(b, subgroup, e.index(shape.stepPositions));
    Value first = addI(b, start, offset);
    Value stride = e.index(config.subgroups * shape.stepPositions);
    // With prefetch, the first step's loads are issued before the query's,
    // so that the two round trips to memory overlap: with one wave of blocks
    // per split, a block's prologue is not hidden behind another's steps.
    SmallVector<Value> firstLoads;
    if (config.prefetch)
      firstLoads = loadStep(first, /*clamp=*/true, cacheSource());
    // With stages, the copies of the first stages - 1 steps likewise.
    for (int64_t s = 0; s + 1 < config.stages; ++s) {
      Value stepBase = addI(b, first, mulI(b, stride, e.index(s)));
      copyStep(stepBase, e.index(s));
    }
    loadQuery();
    Value zero = arith::ConstantOp::create(b, accType, b.getZeroAttr(accType));
    SmallVector<Value> init(shape.outputTiles, zero);
    // Per head row the lane keeps state for (one; with the softmax in
    // registers, each of its A rows): the running max (online) or flag
    // (unified max), and the sum.
    for (int64_t r = 0; r < rowStates(); ++r) {
      init.push_back(e.f32(problem.unified() ? 0.0 : -INFINITY));
      init.push_back(e.f32(0));
    }
    // With prefetch, the loop carries the next step's loads: they are in
    // flight while the step before them computes.
    int64_t stateCount = init.size();
    llvm::append_range(init, firstLoads);
    if (config.stages > 0) {
      SmallVector<Value> state = stagedSteps(first, stride, init);
      finish(state);
      return;
    }
    auto stepsFrom = [&](Value lb, Value ub, ValueRange state, bool clamp) {
      return e.reduce(
          lb, ub, stride, state, [&](Value base, ValueRange carried) {
            ValueRange stepState = carried.take_front(stateCount);
            if (!config.prefetch)
              return step(base, loadStep(base, clamp, cacheSource()),
                          stepState);
            SmallVector<Value> next =
                loadStep(addI(b, base, stride), clamp, cacheSource());
            SmallVector<Value> current(carried.drop_front(stateCount));
            SmallVector<Value> result = step(base, current, stepState);
            llvm::append_range(result, next);
            return result;
          });
    };
    // The steps whose loads (with prefetch, the next step's) lie inside the
    // split, all but a subgroup's last one or two, read their rows as they
    // lie; the rest clamp each position (loadStep).
    int64_t lead =
        shape.stepPositions +
        (config.prefetch ? config.subgroups * shape.stepPositions : 0);
    // (One op-creating call per argument list: the IR must not depend on
    // the C++ compiler's order of evaluation.)
    Value pastEnd = addI(b, end, e.index(1));
    Value lastInside = arith::SubIOp::create(b, pastEnd, e.index(lead));
    Value insideLimit = arith::MaxSIOp::create(b, first, lastInside);
    SmallVector<Value> state = stepsFrom(first, insideLimit, init, false);
    Value insideSteps = arith::CeilDivSIOp::create(
        b, arith::SubIOp::create(b, insideLimit, first), stride);
    Value rest = addI(b, first, mulI(b, insideSteps, stride));
    state = stepsFrom(rest, end, state, true);
    finish(state);
  }

private:
  /// The steps from `first` (every `stride`-th position to the split's end)
  /// through the stages: each issues the copies of the step stages - 1
  /// ahead to the stage the step before it read, waits for its own
  /// stage's, and reads its rows there. `init`: the loop state.
  SmallVector<Value> stagedSteps(Value first, Value stride,
                                 ArrayRef<Value> init) {
    int64_t stages = config.stages;
    SmallVector<Value> state(init);
    state.push_back(e.index(0)); // the stage of the step
    Value ahead = mulI(b, stride, e.index(stages - 1));
    state = e.reduce(first, end, stride, state,
                     [&](Value base, ValueRange carried) {
                       return stagedStep(base, ahead, carried);
                     });
    state.pop_back();
    // No copy is left in flight past the loop.
    target.waitCopies(b, 0);
    return state;
  }

  /// One step of stagedSteps from `base`; `ahead`: the offset of the step
  /// whose rows it copies; `carried`: the loop state, then the step's stage.
  SmallVector<Value> stagedStep(Value base, Value ahead, ValueRange carried) {
    int64_t stages = config.stages;
    Value stage = carried.back();
    // Every lane is done with the rows of the step before (whose stage the
    // copies overwrite).
    if (!weightsInShared())
      target.subgroupBarrier(b);
    Value next = addI(b, stage, e.index(1));
    Value wrapped = e.cmpi(CmpIPredicate::eq, next, e.index(stages));
    Value nextStage = e.select(wrapped, e.index(0), next);
    Value aheadSum = addI(b, stage, e.index(stages - 1));
    Value aheadStage = arith::RemUIOp::create(b, aheadSum, e.index(stages));
    copyStep(addI(b, base, ahead), aheadStage);
    // This step's copies are done (this lane's), and every lane's seen.
    target.waitCopies(b, stages - 1);
    target.subgroupBarrier(b);
    SmallVector<Value> loads =
        config.fragmentLoads
            ? loadStepFragments(stage)
            : loadStep(base, /*clamp=*/false, {stageRows, stage});
    SmallVector<Value> result = step(base, loads, carried.drop_back());
    result.push_back(nextStage);
    return result;
  }

  /// Shared memory as bytes: its f32s (`shared`) and, from a 16-byte
  /// boundary, every subgroup's stages of cache rows (`stageRows`).
  void viewSharedBytes() {
    Value bytes = shared;
    auto bytesType = cast<MemRefType>(bytes.getType());
    Attribute space = bytesType.getMemorySpace();
    int64_t floats = shape.sharedFloats(config.subgroups, clustered());
    auto floatsType = MemRefType::get({floats}, b.getF32Type(),
                                      MemRefLayoutAttrInterface(), space);
    shared =
        memref::ViewOp::create(b, floatsType, bytes, e.index(0), ValueRange{});
    auto cacheType = cast<MemRefType>(args[Cache].getType());
    Type cacheElement = cacheType.getElementType();
    int64_t rowElements =
        shape.rowBytes() * 8 / cacheElement.getIntOrFloatBitWidth();
    int64_t rows = config.stages * config.subgroups * 2 * shape.stepPositions;
    auto rowsType = MemRefType::get({rows, rowElements}, cacheElement,
                                    MemRefLayoutAttrInterface(), space);
    int64_t offset = llvm::alignTo(floats * 4, 16);
    stageRows = memref::ViewOp::create(b, rowsType, bytes, e.index(offset),
                                       ValueRange{});
  }

  /// After the steps: the subgroups' results combined, the partial rows
  /// written.
  void finish(ArrayRef<Value> state) {
    e.barrier(); // every subgroup is done with its scores
    writeSubgroupResult(state);
    e.barrier();
    writePartials();
    if (clustered())
      addSplitsInCluster();
  }

  bool clustered() const { return output == GqaAttentionOutput::Cluster; }

  Value minU(Value x, Value y) { return arith::MinUIOp::create(b, x, y); }

  /// The head rows whose (max or flag, sum) a lane carries.
  int64_t rowStates() const {
    if (!config.registerSoftmax)
      return 1;
    return shape.headsAsB ? shape.accumulatorColumns->columns
                          : shape.laneHeads();
  }

  /// Whether the step's weights P go through shared memory.
  bool weightsInShared() const {
    return !config.registerSoftmax || shape.headsAsB;
  }

  /// The lane's MMA coordinates (loop invariant).
  void computeLaneLayout() {
    column = target.getMmaBColumn(b, layout, lane);
    kGroup = target.getMmaKGroup(b, layout, lane);
    for (int64_t j = 0; j < layout.aRowsPerLane; ++j)
      aRows.push_back(target.getMmaARow(b, layout, lane, j));
    for (int64_t j = 0; j < layout.accPerLane; ++j) {
      Value jIndex = e.index(j);
      auto [row, col] = target.getMmaAccumulator(b, layout, lane, jIndex);
      accHeads.push_back(shape.headsAsB ? col : row);
      accOthers.push_back(shape.headsAsB ? row : col);
    }
    if (shape.headsAsB)
      laneHeads.push_back(column);
    else
      laneHeads = aRows;
    // The step offset of the position in each of the lane's k slots: any
    // order (MmaLayout), so consecutive ones; with fragment loads, the
    // order they deal V's positions in; with the softmax in registers, the
    // column of the score accumulator that becomes the slot of P.
    for (int64_t s = 0; s < layout.kPerLane; ++s) {
      if (config.fragmentLoads) {
        slotOffsets.push_back(target.getMmaSlotK(b, layout, lane, s));
        continue;
      }
      if (weightsInShared()) {
        Value slotBase = mulI(b, kGroup, e.index(layout.kPerLane));
        slotOffsets.push_back(addI(b, slotBase, e.index(s)));
        continue;
      }
      AccumulatorOperandMap::Slot slot =
          shape.accumulatorAsA->at(layout, /*r=*/0, s);
      Value tileBase = e.index(slot.tile * layout.n());
      slotOffsets.push_back(addI(b, tileBase, accOthers[slot.accumulator]));
    }
    if (config.fragmentLoads) {
      keyPiece =
          target.getAFragmentPiece(b, layout, lane, /*transposed=*/false);
      valuePiece =
          target.getAFragmentPiece(b, layout, lane, /*transposed=*/true);
    }
    if (!weightsInShared()) {
      rowOfAccumulator.assign(layout.accPerLane, 0);
      for (int64_t r = 0; r < layout.aRowsPerLane; ++r)
        for (int64_t s = 0; s < layout.kPerLane; ++s)
          rowOfAccumulator[shape.accumulatorAsA->at(layout, r, s).accumulator] =
              r;
    }
    Value scoresBase = mulI(b, subgroup, e.index(shape.subgroupFloats()));
    scores = scoresBase;
    corrections = addI(b, scoresBase, e.index(layout.m() * shape.scoreStride));
    // Lanes [r * rowLanes, (r + 1) * rowLanes) share score row r, lane
    // part p taking positions [p, p + 1) * stepPositions / rowLanes.
    rowLanes =
        shape.softmaxRowLanes(config.softmaxLanes, target.subgroupSize());
    Value lanesOfRow = e.index(rowLanes);
    Value ownerLanes = e.index(shape.scoreRows * rowLanes);
    Value ownerLane = arith::RemUIOp::create(b, lane, ownerLanes);
    ownerRow = arith::DivUIOp::create(b, ownerLane, lanesOfRow);
    ownerPart = arith::RemUIOp::create(b, lane, lanesOfRow);
    isOwner = e.cmpi(CmpIPredicate::ult, lane, ownerLanes);
    Value firstPart = e.cmpi(CmpIPredicate::eq, ownerPart, e.index(0));
    isFirstOwner = arith::AndIOp::create(b, isOwner, firstPart);
  }

  /// Head `row` of the group's query head, clamped, and whether it is one.
  std::pair<Value, Value> queryHead(Value row) {
    Value valid = e.cmpi(CmpIPredicate::ult, row, e.index(shape.group));
    Value clamped = minU(row, e.index(shape.group - 1));
    Value groupBase = mulI(b, kvHead, e.index(shape.group));
    return {addI(b, groupBase, clamped), valid};
  }

  /// The first dim of the lane's part of k run `run`: its laneRun dims
  /// hold the k slots of the run's MMAs, in order.
  Value runStart(int64_t run) {
    Value laneOffset = mulI(b, kGroup, e.index(shape.laneRun));
    return addI(b, laneOffset, e.index(run * shape.runDims));
  }

  /// `value` (f32 vector) as the MMA operand type: hi, and lo = the rest.
  std::pair<Value, Value> splitOperand(Value value) {
    auto f32Type = cast<VectorType>(value.getType());
    auto narrow = VectorType::get(f32Type.getShape(), element);
    Value hi = arith::TruncFOp::create(b, narrow, value);
    if (!config.f32Operands)
      return {hi, Value()};
    Value hiWide = arith::ExtFOp::create(b, f32Type, hi);
    Value rest = arith::SubFOp::create(b, value, hiWide);
    Value lo = arith::TruncFOp::create(b, narrow, rest);
    return {hi, lo};
  }

  /// Q as MMA operands: per k run and MMA, per head the lane holds (its A
  /// rows, or with headsAsB its B column); heads past the group are zeros. A
  /// lane loads its run of each row at once; with an INT4 cache the run is
  /// permuted to the keys' decoded order; with fragment loads each MMA's
  /// slots are loaded in the order the keys' fragments deal them
  /// (loadQueryInSlotOrder). A query of another type than the operands' is
  /// scaled by a power of two, 2^-k, that keeps the largest |q| of the group
  /// within f16's range (k = 0 but for huge queries), and scoreScale undoes
  /// it.
  void loadQuery() {
    SmallVector<SmallVector<Value>> queryRuns; // [k run][A row]
    int64_t slicesPerRun = shape.mmasPerRun;
    if (config.fragmentLoads) {
      queryRuns = loadQueryInSlotOrder();
      slicesPerRun = 1;
    } else {
      queryRuns = loadQueryRuns();
    }
    scoreScale = e.f32(problem.scale);
    if (problem.query.type.getElementType() != keyElement)
      rescaleQuery(queryRuns);
    for (SmallVector<Value> &rows : queryRuns) {
      for (Value &run : rows) {
        auto runType = cast<VectorType>(run.getType());
        auto operandRunType = VectorType::get(runType.getShape(), keyElement);
        if (runType != operandRunType)
          run = arith::TruncFOp::create(b, operandRunType, run);
      }
      for (int64_t s = 0; s < slicesPerRun; ++s) {
        SmallVector<Value> slices;
        for (Value run : rows)
          slices.push_back(e.mmaSlice(run, layout, s));
        query.push_back(std::move(slices));
      }
    }
  }

  /// The query's k runs as the query's type: per k run, per head the lane
  /// holds, its laneRun dims from runStart.
  SmallVector<SmallVector<Value>> loadQueryRuns() {
    Type queryType = problem.query.type.getElementType();
    auto runType = VectorType::get({shape.laneRun}, queryType);
    // A run starts at a multiple of laneRun elements of a head row, and the
    // buffer at a multiple of 256 bytes (docs/model-library.md): one vector
    // load per aligned piece, where LLVM would otherwise load each element.
    int64_t elementBytes = queryType.getIntOrFloatBitWidth() / 8;
    uint64_t queryAlignment = std::min<uint64_t>(
        target.vectorBytes(), llvm::MinAlign(shape.laneRun * elementBytes,
                                             shape.headDim * elementBytes));
    Value zero = arith::ConstantOp::create(b, runType, b.getZeroAttr(runType));
    int64_t runs = shape.headDim / shape.runDims;
    SmallVector<SmallVector<Value>> queryRuns; // [k run][A row]
    for (int64_t run = 0; run < runs; ++run) {
      Value d = runStart(run);
      SmallVector<Value> rows;
      for (Value row : laneHeads) {
        auto [head, valid] = queryHead(row);
        Value q = vector::LoadOp::create(
            b, runType, args[Query], ValueRange{sequence, head, d},
            /*nontemporal=*/false, llvm::MaybeAlign(queryAlignment));
        Value masked = e.select(valid, q, zero);
        if (shape.int4) {
          SmallVector<int64_t> order;
          for (int64_t i = 0; i < shape.laneRun; ++i)
            order.push_back(int4DecodedDim(i, shape.laneRun / 8));
          masked = vector::ShuffleOp::create(b, masked, masked, order);
        }
        rows.push_back(masked);
      }
      queryRuns.push_back(std::move(rows));
    }
    return queryRuns;
  }

  /// With fragment loads: per MMA of S (k head dims), per head the lane
  /// holds, the dims of its k slots in slot order (slotOffsets, the k index
  /// of each slot; runs of aFragmentSlotRun consecutive dims load at once).
  SmallVector<SmallVector<Value>> loadQueryInSlotOrder() {
    Type queryType = problem.query.type.getElementType();
    int64_t slotRun = target.aFragmentSlotRun(layout);
    auto pieceType = VectorType::get({slotRun}, queryType);
    int64_t elementBytes = queryType.getIntOrFloatBitWidth() / 8;
    uint64_t alignment = std::min<uint64_t>(
        target.vectorBytes(),
        llvm::MinAlign(slotRun * elementBytes, shape.headDim * elementBytes));
    Value zero =
        arith::ConstantOp::create(b, pieceType, b.getZeroAttr(pieceType));
    SmallVector<SmallVector<Value>> queryRuns; // [MMA][A row]
    for (int64_t mma = 0; mma < shape.headDim / layout.k(); ++mma) {
      SmallVector<Value> rows;
      for (Value row : laneHeads) {
        auto [head, valid] = queryHead(row);
        SmallVector<Value> pieces;
        for (int64_t s = 0; s < layout.kPerLane; s += slotRun) {
          Value d = addI(b, slotOffsets[s], e.index(mma * layout.k()));
          Value q = vector::LoadOp::create(
              b, pieceType, args[Query], ValueRange{sequence, head, d},
              /*nontemporal=*/false, llvm::MaybeAlign(alignment));
          pieces.push_back(e.select(valid, q, zero));
        }
        rows.push_back(e.concatVectors(pieces));
      }
      queryRuns.push_back(std::move(rows));
    }
    return queryRuns;
  }

  /// Scales the query runs (widened to f32) by 2^-k, k = max(0, e - 14) for
  /// the largest |q| of the group in [2^e, 2^(e+1)), and sets scoreScale
  /// to scale * 2^k. Every subgroup holds the whole group's query.
  void rescaleQuery(SmallVector<SmallVector<Value>> &queryRuns) {
    auto runType = cast<VectorType>(queryRuns.front().front().getType());
    auto wideType = VectorType::get(runType.getShape(), b.getF32Type());
    Value largest = e.f32(0);
    for (SmallVector<Value> &rows : queryRuns)
      for (Value &run : rows) {
        if (run.getType() != wideType)
          run = arith::ExtFOp::create(b, wideType, run);
        Value magnitude = math::AbsFOp::create(b, run);
        Value runMax = vector::ReductionOp::create(
            b, vector::CombiningKind::MAXIMUMF, magnitude);
        largest = arith::MaximumFOp::create(b, largest, runMax);
      }
    largest = e.subgroupMax(largest);
    Type i32 = b.getI32Type();
    auto constant = [&](int64_t value) {
      return arith::ConstantIntOp::create(b, i32, value);
    };
    Value bits = arith::BitcastOp::create(b, i32, largest);
    Value exponentField = arith::ShRUIOp::create(b, bits, constant(23));
    Value biased = arith::AndIOp::create(b, exponentField, constant(255));
    // k = max(0, (biased - 127) - 14), at most 114: 2^-k stays normal.
    Value excess = arith::SubIOp::create(b, biased, constant(127 + 14));
    Value k = arith::MaxSIOp::create(b, excess, constant(0));
    auto powerOfTwo = [&](Value exponent) {
      Value field = arith::AddIOp::create(b, exponent, constant(127));
      Value shifted = arith::ShLIOp::create(b, field, constant(23));
      return arith::BitcastOp::create(b, b.getF32Type(), shifted);
    };
    Value down = powerOfTwo(arith::SubIOp::create(b, constant(0), k));
    Value up = powerOfTwo(k);
    Value factor = vector::BroadcastOp::create(b, wideType, down);
    for (SmallVector<Value> &rows : queryRuns)
      for (Value &run : rows)
        run = arith::MulFOp::create(b, run, factor);
    scoreScale = e.mul(scoreScale, up);
  }

  /// The cache row of `position` of K (kv = 0) or V (kv = 1).
  SmallVector<Value> cacheRow(int64_t kv, Value position) {
    Value kvIndex = e.index(kv);
    return {slot, layerIndex, kvIndex, kvHead, position};
  }

  /// Where a step's rows are read: the cache, or the stage of shared memory
  /// they were copied to (stageRows, the memref, and the stage's index).
  struct RowSource {
    Value rows;
    Value stage;
  };
  RowSource cacheSource() const { return {args[Cache], Value()}; }

  /// The indices of row `offset` (a position's offset in the step from
  /// `base`) of K (kv = 0) or V (kv = 1) in `source`: the cache row, whose
  /// position is clamped with `clamp`, or the stage's row.
  SmallVector<Value> stepRow(const RowSource &source, int64_t kv, Value base,
                             Value offset, bool clamp) {
    if (source.stage)
      return {stageRow(source.stage, e.index(kv), offset)};
    Value position = addI(b, base, offset);
    return cacheRow(kv, clamp ? minU(position, lastReadable) : position);
  }

  /// The row of stageRows that holds row `offset` of K or V (`kv`) of
  /// stage `stage` of this subgroup.
  Value stageRow(Value stage, Value kv, Value offset) {
    Value subgroupStage =
        addI(b, mulI(b, stage, e.index(config.subgroups)), subgroup);
    Value kvRows = addI(b, mulI(b, subgroupStage, e.index(2)), kv);
    return addI(b, mulI(b, kvRows, e.index(shape.stepPositions)), offset);
  }

  /// Copies the cache rows (K and V) of the step from `base` to stage
  /// `stage`, in vector pieces spread over the subgroup's lanes, if the
  /// step starts inside the split (a subgroup runs no step past it): by the
  /// copy plan (copyPlannedStep), the rows of positions past the last
  /// readable one zeroed where the step has any; without a plan, each
  /// position clamped to the last readable row (copyStepRows). Commits them
  /// as one group either way.
  void copyStep(Value base, Value stage) {
    Value inside = e.cmpi(CmpIPredicate::ult, base, end);
    e.ifThenElse(inside, [&] {
      if (!copyPlan) {
        copyStepRows(base, stage);
        return;
      }
      Value last = addI(b, base, e.index(shape.stepPositions - 1));
      Value readable = e.cmpi(CmpIPredicate::ule, last, lastReadable);
      e.ifThenElse(
          readable, [&] { copyPlannedStep(base, stage, /*masked=*/false); },
          [&] { copyPlannedStep(base, stage, /*masked=*/true); });
    });
    target.commitCopies(b);
  }

  /// How the lanes copy a step (planned before the loop by
  /// planStepCopies). Lane l's piece j is piece p = l +
  /// lanes * j of the step's K rows, then its V rows, in vector pieces (a
  /// step's positions are consecutive rows of the cache, and of the
  /// stage). Its source is the step's first K row plus p pieces, plus, for
  /// a V piece, the distance from the K rows to the V rows less the K
  /// pieces: a constant past one loop-invariant lane offset, with that
  /// distance where lane l's piece j is V (from `firstValueLane`, selected
  /// in the step where only some lanes' are). Its place in the stage is the
  /// stage's first row plus one of a few loop-invariant lane offsets
  /// (`stageClasses`: the swizzle moves the pieces of each row) plus a
  /// constant: a piece shares the class of an earlier one where its place
  /// differs from that one's by the same constant in every lane (found by
  /// evaluating every lane's places here). The steps add constants, which the
  /// target folds into the copies' addresses, where copyStepRows computes
  /// each piece's indices.
  struct StepCopyPlan {
    struct Piece {
      /// lanes * j: lane l's piece is p = l + firstPiece.
      int64_t firstPiece;
      int64_t sourceConstant;
      /// The lanes from which the piece is of the V rows (0: every lane;
      /// lanes: none).
      int64_t firstValueLane;
      int64_t stageClass, stageConstant;
    };
    SmallVector<Piece> pieces;
    SmallVector<Value> stageClasses;
    /// The cache and the stages as flat memrefs of their elements.
    Value cache, stages;
    /// The lane's first element of the block's K rows of position 0:
    /// (slot, layer, K, kvHead, 0, 0) plus the lane's pieces.
    Value laneKeyElement;
    /// The V rows' elements less the K rows' of a step.
    Value valueShift;
    int64_t rowElements, pieceElements;
  };

  /// Plans the copies of readable steps (StepCopyPlan), where the cache
  /// is laid out densely and the stage swizzle repeats within a step's
  /// rows; else none (every step clamps its positions).
  void planStepCopies() {
    auto cacheType = cast<MemRefType>(args[Cache].getType());
    RowXorSwizzle swizzle = stageSwizzle();
    if (!cacheType.getLayout().isIdentity() ||
        shape.stepPositions % swizzle.period != 0)
      return;
    int64_t lanes = target.subgroupSize();
    int64_t elementBits = cacheType.getElementType().getIntOrFloatBitWidth();
    int64_t pieceElements = target.vectorBytes() * 8 / elementBits;
    int64_t rowElements = shape.rowBytes() * 8 / elementBits;
    int64_t rowPieces = rowElements / pieceElements;
    int64_t kvPieces = shape.stepPositions * rowPieces;
    int64_t perLane = 2 * kvPieces / lanes;
    // Lane l's piece j's place from the stage's first row.
    auto placed = [&](int64_t l, int64_t j) {
      int64_t p = l + lanes * j;
      int64_t row = p / rowPieces;
      return row * rowElements +
             swizzle.pieceOf(p % rowPieces, row) * pieceElements;
    };
    // The constant by which piece j's places exceed piece r's in every
    // lane, if there is one.
    auto stageShift = [&](int64_t j, int64_t r) -> std::optional<int64_t> {
      int64_t shift = placed(0, j) - placed(0, r);
      for (int64_t l = 0; l < lanes; ++l)
        if (placed(l, j) - placed(l, r) != shift)
          return std::nullopt;
      return shift;
    };
    StepCopyPlan plan;
    plan.rowElements = rowElements;
    plan.pieceElements = pieceElements;
    // The cache's strides (dense: suffix products of its sizes).
    int64_t rank = cacheType.getRank();
    SmallVector<Value> strides(rank);
    Value stride = e.index(1);
    for (int64_t d = rank - 1; d >= 0; --d) {
      strides[d] = stride;
      Value size = cacheType.isDynamicDim(d)
                       ? memref::DimOp::create(b, args[Cache], d).getResult()
                       : e.index(cacheType.getDimSize(d));
      stride = mulI(b, stride, size);
    }
    Attribute space = cacheType.getMemorySpace();
    auto flatType =
        MemRefType::get({ShapedType::kDynamic}, cacheType.getElementType(),
                        MemRefLayoutAttrInterface(), space);
    plan.cache = memref::ReinterpretCastOp::create(
        b, flatType, args[Cache], b.getIndexAttr(0), {OpFoldResult(stride)},
        {b.getIndexAttr(1)});
    auto stagesType = cast<MemRefType>(stageRows.getType());
    auto flatStagesType = MemRefType::get(
        {stagesType.getNumElements()}, stagesType.getElementType(),
        MemRefLayoutAttrInterface(), stagesType.getMemorySpace());
    plan.stages = memref::ReinterpretCastOp::create(
        b, flatStagesType, stageRows, /*offset=*/0,
        ArrayRef<int64_t>{stagesType.getNumElements()}, ArrayRef<int64_t>{1});
    // (slot, layer, K, kvHead, 0, 0); [2] is K or V, [4] the position.
    Value slotStart = mulI(b, slot, strides[0]);
    Value layerStart = mulI(b, layerIndex, strides[1]);
    Value headStart = mulI(b, kvHead, strides[3]);
    Value slotLayer = addI(b, slotStart, layerStart);
    Value firstKeyElement = addI(b, slotLayer, headStart);
    Value laneElement = mulI(b, lane, e.index(pieceElements));
    plan.laneKeyElement = addI(b, firstKeyElement, laneElement);
    Value keyElements = e.index(kvPieces * pieceElements);
    plan.valueShift = arith::SubIOp::create(b, strides[2], keyElements);
    SmallVector<int64_t> stageFirst; // each stage class's piece
    for (int64_t j = 0; j < perLane; ++j) {
      StepCopyPlan::Piece piece{};
      piece.firstPiece = lanes * j;
      // Lanes [firstValueLane, lanes) take V pieces.
      int64_t firstValueLane =
          std::clamp<int64_t>(kvPieces - lanes * j, 0, lanes);
      piece.sourceConstant = lanes * j * pieceElements;
      piece.firstValueLane = firstValueLane;
      if (swizzle.isIdentity()) {
        // p pieces from the stage's first row: the lane's plus a constant.
        piece.stageClass = 0;
        piece.stageConstant = lanes * j * pieceElements;
        if (plan.stageClasses.empty())
          plan.stageClasses.push_back(laneElement);
        plan.pieces.push_back(piece);
        continue;
      }
      bool found = false;
      for (auto [c, r] : llvm::enumerate(stageFirst))
        if (std::optional<int64_t> shift = stageShift(j, r)) {
          piece.stageClass = c;
          piece.stageConstant = *shift;
          found = true;
          break;
        }
      if (!found) {
        // row * rowElements + its swizzled piece's first element.
        piece.stageClass = stageFirst.size();
        stageFirst.push_back(j);
        Value p = addI(b, lane, e.index(lanes * j));
        Value row = arith::DivUIOp::create(b, p, e.index(rowPieces));
        Value column = arith::RemUIOp::create(b, p, e.index(rowPieces));
        Value first = mulI(b, column, e.index(pieceElements));
        Value rowStart = mulI(b, row, e.index(rowElements));
        Value element = swizzledStageElement(row, first);
        plan.stageClasses.push_back(addI(b, rowStart, element));
      }
      plan.pieces.push_back(piece);
    }
    copyPlan = std::move(plan);
  }

  /// The copies of the step from `base` to stage `stage`, by the copy
  /// plan. Without `masked` every position of the step must be readable;
  /// with, the pieces of positions past the last readable one are zeros
  /// (their weights are 0: a position past the last readable one is past
  /// the split's end), read from the step's first row (readable: the step
  /// starts inside the split) where the target's copy reads its source
  /// all the same.
  void copyPlannedStep(Value base, Value stage, bool masked) {
    const StepCopyPlan &plan = *copyPlan;
    int64_t rowPieces = plan.rowElements / plan.pieceElements;
    int64_t kvPieces = shape.stepPositions * rowPieces;
    // Piece p % kvPieces of the K or V rows is readable where it is below
    // (lastReadable - base + 1) rows of pieces.
    Value readablePieces;
    if (masked) {
      Value readableRows = arith::SubIOp::create(b, lastReadable, base);
      Value rows = addI(b, readableRows, e.index(1));
      readablePieces = mulI(b, rows, e.index(rowPieces));
    }
    Value rowStart = mulI(b, base, e.index(plan.rowElements));
    Value keySource = addI(b, plan.laneKeyElement, rowStart);
    Value valueSource;
    // (One op-creating call per argument list: the IR must not depend on
    // the C++ compiler's order of evaluation.)
    Value zero = e.index(0);
    Value stageFirstRow = stageRow(stage, zero, zero);
    Value stageStart = mulI(b, stageFirstRow, e.index(plan.rowElements));
    // Each class's base, made where a piece first takes it.
    SmallVector<Value> places(plan.stageClasses.size());
    // A masked piece's source: the step's first row (the lane's piece may
    // lie past it).
    Value firstRow;
    if (masked) {
      Value laneElement = mulI(b, lane, e.index(plan.pieceElements));
      firstRow = arith::SubIOp::create(b, keySource, laneElement);
    }
    Value always = arith::ConstantIntOp::create(b, b.getI1Type(), 1);
    int64_t lanes = target.subgroupSize();
    for (const StepCopyPlan::Piece &piece : plan.pieces) {
      Value source = keySource;
      bool mixed = piece.firstValueLane > 0 && piece.firstValueLane < lanes;
      Value isValue;
      if (piece.firstValueLane < lanes) {
        if (!valueSource)
          valueSource = addI(b, keySource, plan.valueShift);
        source = valueSource;
      }
      if (mixed) {
        // (Selected in the step: a loop-invariant shift would hold
        // registers across the loop.)
        isValue =
            e.cmpi(CmpIPredicate::uge, lane, e.index(piece.firstValueLane));
        source = e.select(isValue, valueSource, keySource);
      }
      Value &placeBase = places[piece.stageClass];
      if (!placeBase)
        placeBase = addI(b, stageStart, plan.stageClasses[piece.stageClass]);
      Value from = addI(b, source, e.index(piece.sourceConstant));
      Value to = addI(b, placeBase, e.index(piece.stageConstant));
      Value valid = always;
      if (masked) {
        // The piece's index in its K or V rows: p, or p - kvPieces for V.
        Value inKeys = addI(b, lane, e.index(piece.firstPiece));
        Value inValues = addI(b, lane, e.index(piece.firstPiece - kvPieces));
        Value inRows = inKeys;
        if (mixed)
          inRows = e.select(isValue, inValues, inKeys);
        else if (piece.firstValueLane == 0)
          inRows = inValues;
        valid = e.cmpi(CmpIPredicate::ult, inRows, readablePieces);
        from = e.select(valid, from, firstRow);
      }
      target.copyToShared(b, plan.stages, ValueRange{to}, plan.cache,
                          ValueRange{from}, valid);
    }
  }

  void copyStepRows(Value base, Value stage) {
    int64_t pieceBytes = target.vectorBytes();
    int64_t elementBytes = cast<MemRefType>(args[Cache].getType())
                               .getElementType()
                               .getIntOrFloatBitWidth() /
                           8;
    int64_t rowPieces = shape.rowBytes() / pieceBytes;
    int64_t pieces = 2 * shape.stepPositions * rowPieces;
    for (int64_t j = 0; j < pieces / target.subgroupSize(); ++j) {
      Value piece = addI(b, lane, e.index(j * target.subgroupSize()));
      Value kvRow = arith::DivUIOp::create(b, piece, e.index(rowPieces));
      Value column = arith::RemUIOp::create(b, piece, e.index(rowPieces));
      Value firstElement = mulI(b, column, e.index(pieceBytes / elementBytes));
      Value kv = arith::DivUIOp::create(b, kvRow, e.index(shape.stepPositions));
      Value offset =
          arith::RemUIOp::create(b, kvRow, e.index(shape.stepPositions));
      Value position = minU(addI(b, base, offset), lastReadable);
      SmallVector<Value> source{slot,   layerIndex, kv,
                                kvHead, position,   firstElement};
      Value row = stageRow(stage, kv, offset);
      Value valid = arith::ConstantIntOp::create(b, b.getI1Type(), 1);
      Value stageElement = swizzledStageElement(row, firstElement);
      target.copyToShared(b, stageRows, ValueRange{row, stageElement},
                          args[Cache], source, valid);
    }
  }

  /// `count` cache elements from `dim` of `row` of `rows` (the cache or
  /// stageRows), in vector loads of at most pieceLanes elements (aligned:
  /// callers keep `dim` a multiple of count).
  Value loadCacheRun(Value rows, ArrayRef<Value> row, Value dim,
                     int64_t count) {
    int64_t pieceLanes = std::min(count, shape.pieceLanes);
    auto pieceType = VectorType::get({pieceLanes}, element);
    int64_t bytes = pieceLanes * element.getIntOrFloatBitWidth() / 8;
    SmallVector<Value> pieces;
    for (int64_t p = 0; p < count / pieceLanes; ++p) {
      SmallVector<Value> indices(row);
      Value element = addI(b, dim, e.index(p * pieceLanes));
      if (rows == stageRows)
        element = swizzledStageElement(row.front(), element);
      indices.push_back(element);
      pieces.push_back(vector::LoadOp::create(b, pieceType, rows, indices,
                                              /*nontemporal=*/false,
                                              llvm::MaybeAlign(bytes)));
    }
    return e.concatVectors(pieces);
  }

  /// The loads of `count` dims from `dim` of `row`, appended to `loads`:
  /// one vector of cache elements, or an INT4 run's words and pairs.
  void loadRun(Value rows, ArrayRef<Value> row, Value dim, int64_t count,
               SmallVectorImpl<Value> &loads) {
    if (shape.int4)
      loadInt4Run(e, rows, *shape.int4, row, dim, count).appendValues(loads);
    else
      loads.push_back(loadCacheRun(rows, row, dim, count));
  }

  /// Where element `element` of stage row `row` lies: a bf16 or f16 row's
  /// vector pieces (the target's vectorBytes) XOR-ed with the row mod the
  /// swizzle's period (GqaAttentionShape::stageSwizzle, from the target's
  /// banks), so that the lanes that read the same piece of consecutive rows
  /// hit different banks, where rows of 2^k bytes would put them all on the
  /// same ones. INT4 rows (their words and (scale, min)
  /// pairs read apart) are not swizzled.
  Value swizzledStageElement(Value row, Value element) {
    RowXorSwizzle swizzle = stageSwizzle();
    if (swizzle.isIdentity())
      return element;
    Type rowElement = cast<MemRefType>(stageRows.getType()).getElementType();
    int64_t pieceElements =
        target.vectorBytes() * 8 / rowElement.getIntOrFloatBitWidth();
    Value piece = arith::DivUIOp::create(b, element, e.index(pieceElements));
    Value within = arith::RemUIOp::create(b, element, e.index(pieceElements));
    Value mask = swizzle.rowMask(b, row);
    Value swizzled = RowXorSwizzle::apply(b, piece, mask);
    Value start = mulI(b, swizzled, e.index(pieceElements));
    return addI(b, start, within);
  }

  /// The stages' swizzle (GqaAttentionShape::stageSwizzle) on the target's
  /// banks.
  RowXorSwizzle stageSwizzle() const {
    int64_t bankRowBytes =
        target.sharedMemoryBanks() * target.sharedMemoryBankBytes();
    return shape.stageSwizzle(target.vectorBytes(), bankRowBytes);
  }

  /// The values loadRun appends for `count` dims.
  int64_t runValues(int64_t count) const {
    return shape.int4 ? Int4Run::valueCount(*shape.int4, count) : 1;
  }

  /// Every cache load of the step from `base`, in a fixed order: per key
  /// position (keyOffsets) and k run a lane's key run, then per k slot its
  /// value runs. With `clamp`, a position past the split reads the last
  /// readable one, which costs each row a clamp and an address of its own;
  /// without, the step must lie inside the split. From a stage (`source`),
  /// the rows copied there.
  SmallVector<Value> loadStep(Value base, bool clamp, const RowSource &source) {
    SmallVector<Value> loads;
    int64_t runs = shape.headDim / shape.runDims;
    for (Value keyOffset : keyOffsets()) {
      SmallVector<Value> row = stepRow(source, 0, base, keyOffset, clamp);
      for (int64_t run = 0; run < runs; ++run)
        loadRun(source.rows, row, runStart(run), shape.laneRun, loads);
    }
    // A lane's V dims: its B column's (heads as A rows) or its A rows'.
    SmallVector<Value> valueDims;
    for (Value valueRow :
         shape.headsAsB ? ArrayRef<Value>(aRows) : ArrayRef<Value>(column))
      valueDims.push_back(mulI(b, valueRow, e.index(shape.valueRun)));
    for (int64_t s = 0; s < layout.kPerLane; ++s) {
      SmallVector<Value> row = stepRow(source, 1, base, slotOffsets[s], clamp);
      for (Value valueDim : valueDims)
        loadRun(source.rows, row, valueDim, shape.valueRun, loads);
    }
    return loads;
  }

  /// With fragment loads: the step's K and V from its stage as the MMA's A
  /// operand (loadAFragment's A rows), per MMA of S the step's positions by
  /// its k head dims, then per output tile V's positions transposed, its m
  /// head dims by the positions (whose k slots then hold the positions
  /// slotOffsets names).
  SmallVector<Value> loadStepFragments(Value stage) {
    SmallVector<Value> loads;
    auto loadTile = [&](int64_t kv, std::pair<Value, Value> piece,
                        int64_t firstDim, bool transposed) {
      Value row = stageRow(stage, e.index(kv), piece.first);
      Value dim = addI(b, piece.second, e.index(firstDim));
      Value element = swizzledStageElement(row, dim);
      llvm::append_range(loads, target.loadAFragment(b, layout, stageRows,
                                                     ValueRange{row, element},
                                                     transposed));
    };
    for (int64_t mma = 0; mma < shape.headDim / layout.k(); ++mma)
      loadTile(/*kv=*/0, keyPiece, mma * layout.k(), /*transposed=*/false);
    for (int64_t t = 0; t < shape.outputTiles; ++t)
      loadTile(/*kv=*/1, valuePiece, t * layout.m(), /*transposed=*/true);
    return loads;
  }

  /// The offsets in a step of the positions a lane loads keys for: one
  /// per score tile at its B column, or with headsAsB its A rows.
  SmallVector<Value> keyOffsets() {
    if (shape.headsAsB)
      return aRows;
    SmallVector<Value> offsets;
    for (int64_t t = 0; t < shape.scoreTiles; ++t)
      offsets.push_back(addI(b, column, e.index(t * layout.n())));
    return offsets;
  }

  /// The MMA operand run of the loads `values` (one run's): the cache
  /// elements, or the INT4 run dequantised to `type` in decoded order.
  Value operandRun(ArrayRef<Value> values, Type type) {
    if (shape.int4)
      return dequantizeInt4Run(e, *shape.int4, Int4Run::fromValues(values),
                               type);
    return values.front();
  }

  Value slice(Value run, int64_t s) { return e.mmaSlice(run, layout, s); }

  Value sharedAt(Value base, Value offset) {
    Value at = addI(b, base, offset);
    return memref::LoadOp::create(b, shared, ValueRange{at});
  }

  /// One step of T positions from `base` on the step's cache loads
  /// `loads` (loadStep's): scores, softmax, P V. `carried`: the output
  /// tiles, then the head row's (max or flag, sum).
  SmallVector<Value> step(Value base, ArrayRef<Value> loads,
                          ValueRange carried) {
    StepOperands operands =
        config.fragmentLoads ? takeFragments(loads) : takeRuns(loads);
    int64_t runs = shape.headDim / shape.runDims;
    int64_t mmasPerRun = config.fragmentLoads ? 1 : shape.mmasPerRun;
    if (config.fragmentLoads)
      runs = shape.headDim / layout.k();

    // S = Q Kᵀ: the accumulators of each score tile.
    SmallVector<Value> scoreTiles;
    for (int64_t t = 0; t < shape.scoreTiles; ++t) {
      // Two chains of MMAs over alternate k slices, added at the end: half
      // the dependent MMA latency on the step's critical path.
      Value zero =
          arith::ConstantOp::create(b, accType, b.getZeroAttr(accType));
      Value chains[2] = {zero, zero};
      int64_t slices = 0;
      for (int64_t run = 0; run < runs; ++run)
        for (int64_t s = 0; s < mmasPerRun; ++s, ++slices) {
          ArrayRef<Value> q = query[run * mmasPerRun + s];
          Value &chain = chains[slices % 2];
          SmallVector<Value> keys = keyOperand(operands, t, run, s);
          if (shape.headsAsB)
            // A: the keys of the lane's A rows (positions); B: Q.
            chain = target.mma(b, shape.keyLayout, keys, q.front(), chain);
          else
            chain = target.mma(b, shape.keyLayout, q, keys.front(), chain);
        }
      scoreTiles.push_back(slices > 1
                               ? arith::AddFOp::create(b, chains[0], chains[1])
                               : chains[0]);
    }

    // P = softmax(S), and O = O · correction.
    SmallVector<Value> acc(carried.begin(),
                           carried.begin() + shape.outputTiles);
    ValueRange rowState = carried.drop_front(shape.outputTiles);
    SmallVector<Value> weightsHi, weightsLo, newRowState;
    if (config.registerSoftmax && shape.headsAsB)
      newRowState = softmaxInLanes(base, scoreTiles.front(), rowState, acc,
                                   weightsHi, weightsLo);
    else if (config.registerSoftmax)
      newRowState = softmaxInRegisters(base, scoreTiles, rowState, acc,
                                       weightsHi, weightsLo);
    else
      newRowState = softmaxInShared(base, scoreTiles, rowState, acc, weightsHi,
                                    weightsLo);

    // O += P V.
    for (int64_t t = 0; t < shape.outputTiles; ++t) {
      SmallVector<Value> valueSlots = valueOperand(operands, t);
      auto update = [&](ArrayRef<Value> weights, Value tile) {
        if (shape.headsAsB)
          return target.mma(b, layout, valueSlots, weights.front(), tile);
        return target.mma(b, layout, weights, valueSlots.front(), tile);
      };
      acc[t] = update(weightsHi, acc[t]);
      if (config.f32Operands)
        acc[t] = update(weightsLo, acc[t]);
    }
    if (weightsInShared())
      target.subgroupBarrier(b); // the scores are rewritten by the next step
    acc.append(newRowState);
    return acc;
  }

  /// A step's cache loads as the MMAs take them: per key position and k
  /// run a lane's key run, per k slot its V runs (loadStep); or, with
  /// fragment loads, per MMA of S and per output tile the A rows of K and
  /// of V (loadStepFragments).
  struct StepOperands {
    SmallVector<SmallVector<Value>> keyRuns;    // [key position][k run]
    SmallVector<SmallVector<Value>> valueRuns;  // [k slot][V run]
    SmallVector<SmallVector<Value>> keyTiles;   // [MMA of S][A row]
    SmallVector<SmallVector<Value>> valueTiles; // [output tile][A row]
    /// INT4 V runs of k slots 2p and 2p + 1 dequantised together
    /// (pairsValueSlots): [p][V run].
    SmallVector<SmallVector<Value>> valuePairs;
  };

  /// loadStep's loads as StepOperands (INT4 runs dequantised).
  StepOperands takeRuns(ArrayRef<Value> loads) {
    StepOperands operands;
    int64_t runs = shape.headDim / shape.runDims;
    ArrayRef<Value> rest = loads;
    auto nextRun = [&](int64_t count, Type type) {
      int64_t n = runValues(count);
      Value run = operandRun(rest.take_front(n), type);
      rest = rest.drop_front(n);
      return run;
    };
    for (int64_t i = 0; i < shape.laneKeys(); ++i) {
      SmallVector<Value> positionKeys;
      for (int64_t run = 0; run < runs; ++run)
        positionKeys.push_back(nextRun(shape.laneRun, keyElement));
      operands.keyRuns.push_back(std::move(positionKeys));
    }
    if (pairsValueSlots()) {
      SmallVector<SmallVector<Int4Run>> loaded; // [k slot][V run]
      int64_t n = runValues(shape.valueRun);
      for (int64_t s = 0; s < layout.kPerLane; ++s) {
        SmallVector<Int4Run> runsOfSlot;
        for (int64_t i = 0; i < shape.laneValueRuns(); ++i) {
          runsOfSlot.push_back(Int4Run::fromValues(rest.take_front(n)));
          rest = rest.drop_front(n);
        }
        loaded.push_back(std::move(runsOfSlot));
      }
      for (int64_t s = 0; s < layout.kPerLane; s += 2) {
        SmallVector<Value> pairRuns;
        for (int64_t i = 0; i < shape.laneValueRuns(); ++i)
          pairRuns.push_back(dequantizeInt4RunPair(e, *shape.int4, loaded[s][i],
                                                   loaded[s + 1][i], element));
        operands.valuePairs.push_back(std::move(pairRuns));
      }
      return operands;
    }
    for (int64_t s = 0; s < layout.kPerLane; ++s) {
      SmallVector<Value> runsOfSlot;
      for (int64_t i = 0; i < shape.laneValueRuns(); ++i)
        runsOfSlot.push_back(nextRun(shape.valueRun, element));
      operands.valueRuns.push_back(std::move(runsOfSlot));
    }
    return operands;
  }

  /// Whether an INT4 cache's V runs of k slots 2p and 2p + 1 are
  /// dequantised together (dequantizeInt4RunPair), so that the two values
  /// of a dim an MMA operand register takes come out in one register: for
  /// bf16 values (unified max). (sm_90, MQA, SASS per step: 471 -> 447
  /// instructions, byte permutes 32 -> 8; f16 values, whose pieces take
  /// the words and the words shifted a byte, went from 32 to 59 permutes
  /// and 197 to 232 registers.)
  bool pairsValueSlots() const {
    return shape.int4 && element.isBF16() && layout.kPerLane % 2 == 0;
  }

  /// loadStepFragments' loads as StepOperands.
  StepOperands takeFragments(ArrayRef<Value> loads) {
    StepOperands operands;
    ArrayRef<Value> rest = loads;
    auto nextTile = [&] {
      SmallVector<Value> rows(rest.take_front(layout.aRowsPerLane));
      rest = rest.drop_front(layout.aRowsPerLane);
      return rows;
    };
    for (int64_t mma = 0; mma < shape.headDim / layout.k(); ++mma)
      operands.keyTiles.push_back(nextTile());
    for (int64_t t = 0; t < shape.outputTiles; ++t)
      operands.valueTiles.push_back(nextTile());
    return operands;
  }

  /// The keys' operand of MMA `s` of k run `run` of score tile `t`: the
  /// lane's A rows (heads as B columns), else its B column.
  SmallVector<Value> keyOperand(const StepOperands &operands, int64_t t,
                                int64_t run, int64_t s) {
    if (config.fragmentLoads)
      return operands.keyTiles[run];
    if (!shape.headsAsB)
      return {slice(operands.keyRuns[t][run], s)};
    SmallVector<Value> keyRows;
    for (ArrayRef<Value> positionKeys : operands.keyRuns)
      keyRows.push_back(slice(positionKeys[run], s));
    return keyRows;
  }

  /// The values' operand of output tile `t`: dim t of each V run, over the
  /// lane's k slots: the A rows (heads as B) or B (heads as A rows).
  SmallVector<Value> valueOperand(const StepOperands &operands, int64_t t) {
    if (config.fragmentLoads)
      return operands.valueTiles[t];
    if (pairsValueSlots()) {
      int64_t at = int4PairedIndex(t, shape.valueRun / 8);
      SmallVector<Value> valueSlots;
      for (int64_t i = 0; i < shape.laneValueRuns(); ++i) {
        SmallVector<Value> pairs;
        for (ArrayRef<Value> pairRuns : operands.valuePairs)
          pairs.push_back(vector::ExtractStridedSliceOp::create(
              b, pairRuns[i], ArrayRef<int64_t>{at}, ArrayRef<int64_t>{2},
              ArrayRef<int64_t>{1}));
        valueSlots.push_back(e.concatVectors(pairs));
      }
      return valueSlots;
    }
    auto valueType = VectorType::get({layout.kPerLane}, element);
    int64_t slotIndex =
        shape.int4 ? int4DecodedIndex(t, shape.valueRun / 8) : t;
    SmallVector<Value> valueSlots;
    for (int64_t i = 0; i < shape.laneValueRuns(); ++i) {
      SmallVector<Value> slotValues;
      for (ArrayRef<Value> runsOfSlot : operands.valueRuns)
        slotValues.push_back(e.extract(runsOfSlot[i], slotIndex));
      valueSlots.push_back(
          vector::FromElementsOp::create(b, valueType, slotValues));
    }
    return valueSlots;
  }

  /// The score of position offset `offset` in the step from `base` (a dot
  /// product of accumulator tile), scaled; -inf past the split.
  Value maskedScore(Value base, Value offset, Value dot) {
    Value position = addI(b, base, offset);
    Value valid = e.cmpi(CmpIPredicate::ult, position, end);
    Value score = e.mul(dot, scoreScale);
    return e.select(valid, score, e.f32(-INFINITY));
  }

  /// The softmax through shared memory: the scores go to the subgroup's
  /// rows, the owner lane of each head row turns them into weights (and,
  /// online, the row's correction), and each lane loads its slots of P.
  /// Rescales `acc` (online) and returns the head row's (max or flag, sum).
  SmallVector<Value> softmaxInShared(Value base, ArrayRef<Value> scoreTiles,
                                     ValueRange rowState,
                                     SmallVectorImpl<Value> &acc,
                                     SmallVectorImpl<Value> &weightsHi,
                                     SmallVectorImpl<Value> &weightsLo) {
    for (auto [t, tile] : llvm::enumerate(scoreTiles))
      for (int64_t j = 0; j < layout.accPerLane; ++j) {
        // Accumulator j: (head, position offset in the tile).
        Value offset = addI(b, accOthers[j], e.index(t * layout.n()));
        Value dot = e.extract(tile, j);
        Value masked = maskedScore(base, offset, dot);
        memref::StoreOp::create(b, masked, shared,
                                ValueRange{scoreIndex(accHeads[j], offset)});
      }
    target.subgroupBarrier(b);
    SmallVector<Value> newRowState = applySoftmax(rowState[0], rowState[1]);
    target.subgroupBarrier(b);

    if (!problem.unified()) {
      SmallVector<Value> factors;
      for (Value head : accHeads)
        factors.push_back(sharedAt(corrections, head));
      rescale(acc, factors);
    }
    loadWeights(weightsHi, weightsLo);
    return newRowState;
  }

  /// Where score (or weight) `offset` of the step of head row `row` lies in
  /// the subgroup's rows of shared memory.
  Value scoreIndex(Value row, Value offset) {
    Value rowBase = mulI(b, row, e.index(shape.scoreStride));
    return addI(b, scores, addI(b, rowBase, offset));
  }

  /// Each lane's k slots of P from the subgroup's rows of weights in shared
  /// memory, as the MMA's operand type (hi, and lo with f32 operands).
  void loadWeights(SmallVectorImpl<Value> &weightsHi,
                   SmallVectorImpl<Value> &weightsLo) {
    // The slots' positions in runs of consecutive ones: all of them, or,
    // with fragment loads, runs of aFragmentSlotRun.
    int64_t slotRun = config.fragmentLoads ? target.aFragmentSlotRun(layout)
                                           : layout.kPerLane;
    auto weightType = VectorType::get({slotRun}, b.getF32Type());
    int64_t weightAlignment = std::min(target.vectorBytes(), slotRun * 4);
    for (Value row : laneHeads) {
      SmallVector<Value> runs;
      for (int64_t s = 0; s < layout.kPerLane; s += slotRun) {
        Value at = scoreIndex(row, slotOffsets[s]);
        runs.push_back(vector::LoadOp::create(
            b, weightType, shared, ValueRange{at}, /*nontemporal=*/false,
            llvm::MaybeAlign(weightAlignment)));
      }
      Value weights = e.concatVectors(runs);
      auto [hi, lo] = splitOperand(weights);
      weightsHi.push_back(hi);
      weightsLo.push_back(lo);
    }
  }

  /// `kind` of `value` over the lanes that hold the same score columns
  /// (heads) as this one (a butterfly over AccumulatorColumns' masks).
  Value reduceOverColumn(Value value, ReduceKind kind) {
    for (int64_t mask : shape.accumulatorColumns->laneMasks) {
      Value other = target.shuffleXor(b, value, mask);
      value = kind == ReduceKind::Max
                  ? arith::MaximumFOp::create(b, value, other).getResult()
                  : e.add(value, other);
    }
    return value;
  }

  /// The softmax in every lane, with the heads as B columns: each lane turns
  /// the scores of its score accumulators into weights, per head column it
  /// holds (the lanes of a column agreeing on the step's max, online), and
  /// stores them to the subgroup's rows of shared memory, from which each
  /// lane loads its slots of P (loadWeights). Rescales `acc` (online) with
  /// the corrections of its columns and returns each column's (max or
  /// flag, sum): a lane's sum is its part of the column's (added up after
  /// the loop).
  SmallVector<Value> softmaxInLanes(Value base, Value scoreTile,
                                    ValueRange rowState,
                                    SmallVectorImpl<Value> &acc,
                                    SmallVectorImpl<Value> &weightsHi,
                                    SmallVectorImpl<Value> &weightsLo) {
    const AccumulatorColumns &columns = *shape.accumulatorColumns;
    SmallVector<SmallVector<Value>> columnScores(columns.columns);
    for (int64_t j = 0; j < layout.accPerLane; ++j) {
      Value dot = e.extract(scoreTile, j);
      columnScores[columns.columnOf[j]].push_back(
          maskedScore(base, accOthers[j], dot));
    }
    SmallVector<Value> newRowState, columnCorrections;
    SmallVector<SmallVector<Value>> columnWeights(columns.columns);
    auto agreeMax = [&](Value max) {
      return reduceOverColumn(max, ReduceKind::Max);
    };
    for (int64_t c = 0; c < columns.columns; ++c) {
      Value max = rowState[2 * c], sum = rowState[2 * c + 1];
      Value correction =
          softmaxStep(columnScores[c], agreeMax, max, sum, columnWeights[c]);
      columnCorrections.push_back(correction);
      newRowState.push_back(max);
      newRowState.push_back(sum);
    }
    // Weight j at (head accHeads[j], position accOthers[j]), as the scores
    // of the shared softmax lie.
    SmallVector<int64_t> taken(columns.columns, 0);
    for (int64_t j = 0; j < layout.accPerLane; ++j) {
      int64_t c = columns.columnOf[j];
      Value weight = columnWeights[c][taken[c]++];
      memref::StoreOp::create(
          b, weight, shared, ValueRange{scoreIndex(accHeads[j], accOthers[j])});
    }
    target.subgroupBarrier(b);
    if (!problem.unified()) {
      SmallVector<Value> factors;
      for (int64_t j = 0; j < layout.accPerLane; ++j)
        factors.push_back(columnCorrections[columns.columnOf[j]]);
      rescale(acc, factors);
    }
    loadWeights(weightsHi, weightsLo);
    return newRowState;
  }

  /// The softmax in registers (the heads as A rows, the score tiles'
  /// accumulators P's A operand): each of the lane's A rows takes its
  /// kPerLane scores, online with the row's max over the lanes that share
  /// the row; a lane's sum is its part of the row's (added up after the
  /// loop). Rescales `acc` (online) and returns each row's (max or flag,
  /// sum).
  SmallVector<Value> softmaxInRegisters(Value base, ArrayRef<Value> scoreTiles,
                                        ValueRange rowState,
                                        SmallVectorImpl<Value> &acc,
                                        SmallVectorImpl<Value> &weightsHi,
                                        SmallVectorImpl<Value> &weightsLo) {
    const AccumulatorOperandMap &map = *shape.accumulatorAsA;
    auto weightType = VectorType::get({layout.kPerLane}, b.getF32Type());
    SmallVector<Value> newRowState, rowCorrections;
    for (int64_t r = 0; r < shape.laneHeads(); ++r) {
      SmallVector<Value> row;
      for (int64_t s = 0; s < layout.kPerLane; ++s) {
        AccumulatorOperandMap::Slot slot = map.at(layout, r, s);
        Value dot = e.extract(scoreTiles[slot.tile], slot.accumulator);
        row.push_back(maskedScore(base, slotOffsets[s], dot));
      }
      Value max = rowState[2 * r], sum = rowState[2 * r + 1];
      SmallVector<Value> weights;
      if (Value correction = softmaxStep(row, map.rowLanes, max, sum, weights))
        rowCorrections.push_back(correction);
      newRowState.push_back(max);
      newRowState.push_back(sum);
      Value packed = vector::FromElementsOp::create(b, weightType, weights);
      auto [hi, lo] = splitOperand(packed);
      weightsHi.push_back(hi);
      weightsLo.push_back(lo);
    }
    if (!problem.unified()) {
      SmallVector<Value> factors;
      for (int64_t row : rowOfAccumulator)
        factors.push_back(rowCorrections[row]);
      rescale(acc, factors);
    }
    return newRowState;
  }

  /// One step of a head row's softmax over `scores`, the lane's part of the
  /// row (`rowLanes` lanes of a subgroup share it; 1: the lane has it all):
  /// appends their weights to `weights` and updates the row's `max` (unified
  /// max: its flag) and `sum`. Online, the weights are against the row's new
  /// max and the returned correction rescales the row's accumulators;
  /// unified max returns null.
  Value softmaxStep(ArrayRef<Value> scores, int64_t rowLanes, Value &max,
                    Value &sum, SmallVectorImpl<Value> &weights) {
    auto agreeMax = [&](Value stepMax) {
      if (rowLanes == 1)
        return stepMax;
      return target.subgroupReduce(b, stepMax, ReduceKind::Max, rowLanes);
    };
    return softmaxStep(scores, agreeMax, max, sum, weights);
  }
  /// softmaxStep with the row's lanes agreeing on the step's max by
  /// `agreeMax`.
  Value softmaxStep(ArrayRef<Value> scores, function_ref<Value(Value)> agreeMax,
                    Value &max, Value &sum, SmallVectorImpl<Value> &weights) {
    auto add = [&](Value x, Value y) { return e.add(x, y); };
    if (problem.unified()) {
      Value flagged = unifiedWeights(scores, weights);
      max = e.select(flagged, e.f32(1), max);
      sum = e.add(sum, treeReduce(weights, add));
      return Value();
    }
    Value stepMax = agreeMax(treeReduce(scores, [&](Value x, Value y) {
      return arith::MaximumFOp::create(b, x, y);
    }));
    Value newMax = arith::MaximumFOp::create(b, max, stepMax);
    // exp(x - newMax) as 2^(x log2(e) - newMax log2(e)): one fma and one
    // exponential per score. A row with no valid score yet (newMax -inf)
    // subtracts 0, so that a masked score's (-inf) weight, and the
    // correction of a max that was -inf, are 0, not NaN.
    Value log2e = e.f32(llvm::numbers::log2e);
    Value empty = e.cmpf(CmpFPredicate::OEQ, newMax, e.f32(-INFINITY));
    Value scaledMax = e.mul(newMax, log2e);
    Value negated = arith::NegFOp::create(b, scaledMax);
    Value offset = e.select(empty, e.f32(0), negated);
    auto contract = arith::FastMathFlags::contract;
    auto weightOf = [&](Value x) {
      Value scaled = arith::MulFOp::create(b, x, log2e, contract);
      Value exponent = arith::AddFOp::create(b, scaled, offset, contract);
      return target.exp2(b, exponent);
    };
    Value correction = weightOf(max);
    for (Value score : scores)
      weights.push_back(weightOf(score));
    Value stepSum = treeReduce(weights, add);
    sum = e.add(e.mul(sum, correction), stepSum);
    max = newMax;
    return correction;
  }

  /// Unified max's weights exp(x - phi) of `scores` (0 for -inf), appended
  /// to `weights`; returns whether a valid score lies outside [lo, hi].
  Value unifiedWeights(ArrayRef<Value> scores,
                       SmallVectorImpl<Value> &weights) {
    decode::SoftmaxAttr softmax = problem.softmax;
    Value phi = e.f32(softmax.getPhi().getValueAsDouble());
    Value lo = e.f32(softmax.getLo().getValueAsDouble());
    Value hi = e.f32(softmax.getHi().getValueAsDouble());
    SmallVector<Value> flags;
    for (Value score : scores) {
      Value valid = e.cmpf(CmpFPredicate::ONE, score, e.f32(-INFINITY));
      Value x = e.sub(score, phi);
      Value below = e.cmpf(CmpFPredicate::OLT, x, lo);
      Value above = e.cmpf(CmpFPredicate::OGT, x, hi);
      Value outside = arith::OrIOp::create(b, below, above);
      flags.push_back(arith::AndIOp::create(b, valid, outside));
      // (exp(-inf) is 0: a masked score needs no select.)
      weights.push_back(attentionExp(e, x));
    }
    return treeReduce(
        flags, [&](Value x, Value y) { return arith::OrIOp::create(b, x, y); });
  }

  /// `values` combined pairwise, in a tree of log2(size) levels (the
  /// softmax's chains are on the step's critical path).
  Value treeReduce(ArrayRef<Value> values,
                   function_ref<Value(Value, Value)> combine) {
    SmallVector<Value> level(values);
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(combine(level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = std::move(next);
    }
    return level.front();
  }

  /// Multiplies the output tiles `acc` by the corrections `factors` of
  /// their rows, where some row's max moved this step: the subgroup agrees
  /// to skip the multiplies when none did (most steps, once the maxima
  /// settle).
  void rescale(SmallVectorImpl<Value> &acc, ArrayRef<Value> factors) {
    // (One op-creating call per argument list: the IR must not depend on
    // the C++ compiler's order of evaluation.)
    Value zero = e.f32(0), one = e.f32(1);
    Value moved = zero;
    for (Value factor : factors) {
      Value changed = e.cmpf(CmpFPredicate::UNE, factor, one);
      Value flag = e.select(changed, one, zero);
      moved = arith::MaximumFOp::create(b, moved, flag);
    }
    Value anyMoved = e.subgroupMax(moved);
    Value any = e.cmpf(CmpFPredicate::OGT, anyMoved, e.f32(0.5));
    SmallVector<Type> types(acc.size(), accType);
    auto branch = scf::IfOp::create(b, types, any, /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(branch.thenBlock());
      Value correction = vector::FromElementsOp::create(b, accType, factors);
      SmallVector<Value> scaled;
      for (Value tile : acc)
        scaled.push_back(arith::MulFOp::create(b, tile, correction));
      scf::YieldOp::create(b, scaled);
      b.setInsertionPointToStart(branch.elseBlock());
      scf::YieldOp::create(b, acc);
    }
    acc.assign(branch.getResults().begin(), branch.getResults().end());
  }

  /// The owner lanes of each head row (rowLanes of them, each a part of the
  /// row's T scores) turn the scores into weights in place and update the
  /// row's (max or flag, sum): the max of the step agreed over the row's
  /// lanes, each lane's part of the sum (and unified max's flag) its own
  /// until writeSubgroupResult combines them. Online, the row's first lane
  /// also stores the accumulators' correction. Returns the lane's new (max or
  /// flag, sum) (meaningful in owner lanes).
  SmallVector<Value> applySoftmax(Value runningMax, Value runningSum) {
    int64_t partScores = shape.stepPositions / rowLanes;
    Value rowBase = mulI(b, ownerRow, e.index(shape.scoreStride));
    Value partBase = mulI(b, ownerPart, e.index(partScores));
    Value partAt = addI(b, scores, addI(b, rowBase, partBase));
    int64_t lanes = shape.scoreLanes;
    auto pieceType = VectorType::get({lanes}, b.getF32Type());
    SmallVector<Value> part;
    for (int64_t c = 0; c < partScores; c += lanes) {
      Value at = addI(b, partAt, e.index(c));
      Value piece = vector::LoadOp::create(
          b, pieceType, shared, ValueRange{at},
          /*nontemporal=*/false, llvm::MaybeAlign(target.vectorBytes()));
      for (int64_t i = 0; i < lanes; ++i)
        part.push_back(e.extract(piece, i));
    }
    SmallVector<Value> weights;
    Value max = runningMax, sum = runningSum;
    Value correction = softmaxStep(part, rowLanes, max, sum, weights);
    e.ifThenElse(isOwner, [&] {
      for (int64_t c = 0; c < partScores; c += lanes) {
        Value piece = vector::FromElementsOp::create(
            b, pieceType, ArrayRef<Value>(weights).slice(c, lanes));
        Value at = addI(b, partAt, e.index(c));
        vector::StoreOp::create(b, piece, shared, ValueRange{at},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(target.vectorBytes()));
      }
    });
    if (correction) {
      e.ifThenElse(isFirstOwner, [&] {
        Value at = addI(b, corrections, ownerRow);
        memref::StoreOp::create(b, correction, shared, ValueRange{at});
      });
    }
    return {max, sum};
  }

  /// The subgroup's accumulators of the group's heads, and each head's
  /// (max or flag, sum), to its rows of shared memory.
  void writeSubgroupResult(ArrayRef<Value> state) {
    int64_t rowFloats = problem.partialRowFloats();
    Value subgroupRows = mulI(b, subgroup, e.index(shape.group));
    // Accumulator row (column with the heads as A rows) r of output tile t
    // is head dim r * valueRun + t; with fragment loads, t * m + r.
    int64_t dimsPerOther = config.fragmentLoads ? 1 : shape.valueRun;
    int64_t dimsPerTile = config.fragmentLoads ? layout.m() : 1;
    for (int64_t j = 0; j < layout.accPerLane; ++j) {
      Value isHead =
          e.cmpi(CmpIPredicate::ult, accHeads[j], e.index(shape.group));
      e.ifThenElse(isHead, [&] {
        Value headRow = addI(b, subgroupRows, accHeads[j]);
        Value rowBase = mulI(b, headRow, e.index(rowFloats));
        Value dimBase = mulI(b, accOthers[j], e.index(dimsPerOther));
        Value at = addI(b, rowBase, dimBase);
        for (int64_t t = 0; t < shape.outputTiles; ++t) {
          Value element = e.extract(state[t], j);
          Value dim = addI(b, at, e.index(t * dimsPerTile));
          memref::StoreOp::create(b, element, shared, ValueRange{dim});
        }
      });
    }
    auto storeRowState = [&](Value head, Value max, Value sum) {
      Value headRow = addI(b, subgroupRows, head);
      Value rowBase = mulI(b, headRow, e.index(rowFloats));
      Value maxAt = addI(b, rowBase, e.index(problem.headDim()));
      memref::StoreOp::create(b, max, shared, ValueRange{maxAt});
      Value sumAt = addI(b, rowBase, e.index(problem.headDim() + 1));
      memref::StoreOp::create(b, sum, shared, ValueRange{sumAt});
    };
    if (!config.registerSoftmax) {
      // The row's lanes combine their parts of the sum (and flags); its
      // first lane stores them.
      Value max = state[shape.outputTiles];
      Value sum = state[shape.outputTiles + 1];
      if (rowLanes > 1) {
        max = target.subgroupReduce(b, max, ReduceKind::Max, rowLanes);
        sum = target.subgroupReduce(b, sum, ReduceKind::Sum, rowLanes);
      }
      Value isHead = e.cmpi(CmpIPredicate::ult, ownerRow, e.index(shape.group));
      Value stores = arith::AndIOp::create(b, isHead, isFirstOwner);
      e.ifThenElse(stores, [&] { storeRowState(ownerRow, max, sum); });
      return;
    }
    if (shape.headsAsB) {
      // Each lane holds its part of its columns' sums (and unified max's
      // flags): combined over the lanes of a column, then stored by the
      // first of them.
      const AccumulatorColumns &columns = *shape.accumulatorColumns;
      int64_t maskBits = 0;
      for (int64_t mask : columns.laneMasks)
        maskBits |= mask;
      Value laneBits = arith::AndIOp::create(b, lane, e.index(maskBits));
      Value firstOfColumn = e.cmpi(CmpIPredicate::eq, laneBits, e.index(0));
      for (int64_t c = 0; c < columns.columns; ++c) {
        const int64_t *j = llvm::find(columns.columnOf, c);
        Value head = accHeads[j - columns.columnOf.begin()];
        Value laneMax = state[shape.outputTiles + 2 * c];
        Value laneSum = state[shape.outputTiles + 2 * c + 1];
        Value max = reduceOverColumn(laneMax, ReduceKind::Max);
        Value sum = reduceOverColumn(laneSum, ReduceKind::Sum);
        Value isHead = e.cmpi(CmpIPredicate::ult, head, e.index(shape.group));
        Value stores = arith::AndIOp::create(b, isHead, firstOfColumn);
        e.ifThenElse(stores, [&] { storeRowState(head, max, sum); });
      }
      return;
    }
    // Each lane holds its part of its rows' sums (and unified max's flags):
    // combined over the lanes of a row, then stored by the first of them.
    int64_t rowLanes = shape.accumulatorAsA->rowLanes;
    Value laneInRow = arith::RemUIOp::create(b, lane, e.index(rowLanes));
    Value firstOfRow = e.cmpi(CmpIPredicate::eq, laneInRow, e.index(0));
    for (int64_t r = 0; r < shape.laneHeads(); ++r) {
      Value head = aRows[r];
      Value laneMax = state[shape.outputTiles + 2 * r];
      Value laneSum = state[shape.outputTiles + 2 * r + 1];
      Value max = target.subgroupReduce(b, laneMax, ReduceKind::Max, rowLanes);
      Value sum = target.subgroupReduce(b, laneSum, ReduceKind::Sum, rowLanes);
      Value isHead = e.cmpi(CmpIPredicate::ult, head, e.index(shape.group));
      Value stores = arith::AndIOp::create(b, isHead, firstOfRow);
      e.ifThenElse(stores, [&] { storeRowState(head, max, sum); });
    }
  }

  /// Combines the subgroups: thread x writes element x of the group's
  /// partial rows (to the scratch; with output Cluster, to the block's own
  /// rows in shared memory, which addSplitsInCluster adds), or, where
  /// `output` says a launch of one split, whose rows are the result (the
  /// host launches no attention_reduce), dim x of a head: its combined
  /// accumulator over its combined sum (unified max: unless the row is
  /// flagged or its sum out of range, when the thread recomputes it, as the
  /// reduce would).
  void writePartials() {
    int64_t rowFloats = problem.partialRowFloats();
    int64_t d = problem.headDim();
    Value thread = e.threadId();
    Value elements = e.index(shape.group * rowFloats);
    Value blockThreads = e.index(config.subgroups * e.subgroupSize());
    Value numSplits = idx(b, args[NumSplits]);
    Value groupBase = mulI(b, kvHead, e.index(shape.group));
    Value maxOffset = e.index(d);
    Value sumOffset = e.index(d + 1);
    Value single;
    if (output == GqaAttentionOutput::ByLaunch)
      single = e.cmpi(CmpIPredicate::eq, numSplits, e.index(1));
    e.loop(thread, elements, blockThreads, [&](Value x) {
      Value head = arith::DivUIOp::create(b, x, e.index(rowFloats));
      Value offset = arith::RemUIOp::create(b, x, e.index(rowFloats));
      auto rowOf = [&](int64_t w) {
        Value headRow = addI(b, e.index(w * shape.group), head);
        return mulI(b, headRow, e.index(rowFloats));
      };
      auto at = [&](int64_t w, Value offsetInRow) {
        return sharedAt(rowOf(w), offsetInRow);
      };
      Value globalMax = e.f32(problem.unified() ? 0.0 : -INFINITY);
      for (int64_t w = 0; w < config.subgroups; ++w)
        globalMax = arith::MaximumFOp::create(b, globalMax, at(w, maxOffset));
      // acc and sum: the weighted sum over subgroups; max: the global one.
      auto combined = [&](Value offsetInRow) {
        Value total = e.f32(0);
        for (int64_t w = 0; w < config.subgroups; ++w) {
          Value weight =
              problem.unified()
                  ? e.f32(1)
                  : attentionScaleFactor(e, at(w, maxOffset), globalMax);
          total = e.add(total, e.mul(at(w, offsetInRow), weight));
        }
        return total;
      };
      Value total = combined(offset);
      Value queryHead = addI(b, groupBase, head);
      auto writePartial = [&] {
        Value isMax = e.cmpi(CmpIPredicate::eq, offset, maxOffset);
        Value result = e.select(isMax, globalMax, total);
        Value sequenceRow = mulI(b, sequence, e.index(problem.queryHeads()));
        Value rowIndex = addI(b, sequenceRow, queryHead);
        Value splitRow = addI(b, mulI(b, rowIndex, numSplits), split);
        Value out = addI(b, mulI(b, splitRow, e.index(rowFloats)), offset);
        memref::StoreOp::create(b, result, args[Partials], ValueRange{out});
      };
      auto keepPartial = [&] {
        // The block's partial row, in its shared memory for the cluster.
        Value isMax = e.cmpi(CmpIPredicate::eq, offset, maxOffset);
        Value result = e.select(isMax, globalMax, total);
        Value at = addI(b, e.index(clusterRows), x);
        memref::StoreOp::create(b, result, shared, ValueRange{at});
      };
      auto writeResult = [&] {
        Value isDim = e.cmpi(CmpIPredicate::ult, offset, maxOffset);
        e.ifThenElse(isDim, [&] {
          Value sum = combined(sumOffset);
          if (problem.unified()) {
            storeUnifiedAttentionResult(
                e, problem,
                {args, args[Out], layerIndex, sequence, queryHead, offset},
                globalMax, sum, total);
            return;
          }
          Value value = e.div(total, sum);
          e.store(value, args[Out], {sequence, queryHead, offset});
        });
      };
      switch (output) {
      case GqaAttentionOutput::PartialRows:
        writePartial();
        return;
      case GqaAttentionOutput::Result:
        writeResult();
        return;
      case GqaAttentionOutput::ByLaunch:
        e.ifThenElse(single, writeResult, writePartial);
        return;
      case GqaAttentionOutput::Cluster:
        keepPartial();
        return;
      }
    });
  }

  /// The output from the partial rows of the cluster's blocks, one per
  /// split (the launch's splits form one cluster): after a cluster barrier
  /// that makes every block's rows visible, split s's thread t takes the
  /// output elements s * threads + t, (s + splits) * threads + t, ... of
  /// the group's heads, loads its row's (max or flag, sum, acc) from every
  /// block's shared memory (all in flight together) and combines them as
  /// attention_reduce does: online, rescaled to the largest max; unified
  /// max, added, the element recomputed from the cache where a split
  /// flagged its row (storeUnifiedAttentionResult). A second cluster
  /// barrier keeps every block's shared memory until the others have
  /// read it. No scratch, no second kernel.
  void addSplitsInCluster() {
    // The launch's grid is one cluster wide in x (its splits), so a block's
    // split is its rank in the cluster.
    target.clusterBarrier(b);
    int64_t d = problem.headDim();
    int64_t rowFloats = problem.partialRowFloats();
    int64_t threads = config.subgroups * e.subgroupSize();
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, shared);
    Value rowsStart = addI(b, pointer, e.index(clusterRows * 4));
    Value base = arith::IndexCastOp::create(b, b.getI64Type(), rowsStart);
    auto load = [&](Value floatIndex, int64_t rank) {
      Value bytes = mulI(b, floatIndex, e.index(4));
      Value offset = arith::IndexCastOp::create(b, b.getI64Type(), bytes);
      Value address = arith::AddIOp::create(b, base, offset);
      return target.loadClusterShared(b, address, e.i32(rank), b.getF32Type());
    };
    Value firstOfSplit = mulI(b, split, e.index(threads));
    Value first = addI(b, firstOfSplit, e.threadId());
    Value elements = e.index(shape.group * d);
    Value stride = e.index(clusterSplits * threads);
    Value groupBase = mulI(b, kvHead, e.index(shape.group));
    e.loop(first, elements, stride, [&](Value x) {
      Value head = arith::DivUIOp::create(b, x, e.index(d));
      Value dim = arith::RemUIOp::create(b, x, e.index(d));
      Value rowBase = mulI(b, head, e.index(rowFloats));
      Value maxAt = addI(b, rowBase, e.index(d));
      Value sumAt = addI(b, rowBase, e.index(d + 1));
      Value accAt = addI(b, rowBase, dim);
      SmallVector<SplitState> states;
      for (int64_t s = 0; s < clusterSplits; ++s) {
        Value max = load(maxAt, s);
        Value sum = load(sumAt, s);
        Value acc = load(accAt, s);
        states.push_back({max, sum, acc});
      }
      auto [max, sum, acc] = mergeSplitStates(e, problem, states);
      Value queryHead = addI(b, groupBase, head);
      if (problem.unified()) {
        storeUnifiedAttentionResult(
            e, problem, {args, args[Out], layerIndex, sequence, queryHead, dim},
            max, sum, acc);
        return;
      }
      Value value = e.div(acc, sum);
      e.store(value, args[Out], {sequence, queryHead, dim});
    });
    // Every load of another block's rows has been used above.
    target.clusterExecutionBarrier(b);
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const GpuPrimitives &target;
  const AttentionProblem &problem;
  const GqaAttentionConfig &config;
  const GqaAttentionShape &shape;
  const MmaLayout &layout;
  GqaAttentionOutput output;
  int64_t clusterSplits;
  /// With output Cluster: where the block's partial rows start in `shared`.
  int64_t clusterRows = 0;
  /// The operand type of P and V (element), and of Q and K (keyElement).
  Type element, keyElement;
  VectorType accType;

  ArrayRef<Value> args;
  Value shared, layerIndex, split, kvHead, sequence, lane, subgroup, slot;
  Value start, end, lastReadable;
  /// With stages: every subgroup's stages of cache rows in shared memory
  /// ([stage][subgroup][K, V][step position] rows of the cache's row).
  Value stageRows;
  /// The scores' factor: the op's scale, times 2^k for a rescaled query.
  Value scoreScale;
  /// The softmax through shared memory: the lane's head row and part of it,
  /// whether it owns one (and is the row's first lane), and the lanes of a
  /// row (config.softmaxLanes, as the shape allows).
  Value column, kGroup, scores, corrections, ownerRow, ownerPart, isOwner,
      isFirstOwner;
  int64_t rowLanes = 1;
  SmallVector<Value> aRows;
  /// The heads whose query (and weights) the lane holds as MMA operands.
  SmallVector<Value> laneHeads;
  /// The step offset of the position in each k slot of P and V.
  SmallVector<Value> slotOffsets;
  /// With stages: how the lanes copy a readable step, if planned.
  std::optional<StepCopyPlan> copyPlan;
  /// With fragment loads: the (row, first column) of the pieces of a K tile
  /// and of a (transposed) V tile the lane names.
  std::pair<Value, Value> keyPiece, valuePiece;
  /// With the softmax in registers: the A row of each accumulator.
  SmallVector<int64_t> rowOfAccumulator;
  /// Per accumulator: its head, and its position offset (scores) or V run
  /// (output tiles).
  SmallVector<Value> accHeads, accOthers;
  /// Q's A operands: [k run * mmasPerRun + mma][A row].
  SmallVector<SmallVector<Value>> query;
};

/// The scratch bytes of the partial rows, per sequence and fixed. Splits
/// the op fixes take a row per (sequence, query head, split). Automatic
/// ones (whole waves) keep the blocks, (sequence, KV head, split), within
/// the waves' count, or take min_splits: at most a group's rows per block
/// of the waves and min_splits query heads' rows per sequence, however
/// many splits a small batch takes.
std::pair<int64_t, int64_t> getPartialsBytes(const AttentionProblem &problem,
                                             const GqaAttentionConfig &config,
                                             int64_t units) {
  int64_t rowBytes = problem.partialRowFloats() * 4;
  if (problem.splits > 0) {
    int64_t splits = std::min(problem.splits, config.splits.maxSplits);
    return {problem.queryHeads() * splits * rowBytes, 0};
  }
  int64_t waveBlocks = config.splits.wavesPerUnit * units;
  return {config.splits.minSplits * problem.queryHeads() * rowBytes,
          waveBlocks * problem.group() * rowBytes};
}

class GqaAttentionFamily : public KernelFamily {
public:
  StringRef getName() const override { return "gqa_attention"; }
  bool canLower(Operation *op) const override {
    auto attention = dyn_cast<decode::AttentionOp>(op);
    if (!attention)
      return false;
    Type element = attention.getCache().getType().getElementType();
    return element.isBF16() || element.isF16() ||
           isa<decode::Int4Type>(element);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    // P as a hi + lo pair where the registers allow.
    std::optional<GqaAttentionShape> shape =
        getDefaultShape(cast<decode::AttentionOp>(op), target);
    // (INT4: the dequantised values are rounded to f16 already, so lo
    // would add no accuracy.)
    bool f32Operands = shape && !shape->int4 &&
                       shape->registersPerLane(true) <= kRegisterBudget;
    // A step's loads issued one step ahead where their registers fit (INT4,
    // and bf16 with the heads as B columns): an INT4 step reads a fifth of
    // a bf16 step's bytes, so that loads at the step would not keep enough
    // bytes in flight (H100: 1.27x at B = 32). Two or three steps ahead
    // measured no faster.
    bool prefetch = shape && shape->registersPerLane(f32Operands) +
                                     shape->loadRegisters() <=
                                 kRegisterBudget;
    // The softmax through shared memory: in registers (heads as A rows)
    // measured no faster on the H100, for bf16 nor INT4 caches (INT4 GQA,
    // B = 32: 28.6 against 27.8 us): the rows it needs double the MMAs and
    // accumulators of the heads as B columns, which the steps, bound by
    // their instructions, feel more than the trip through shared memory.
    bool registerSoftmax = false;
    // The softmax's head rows shared by as many lanes as fit (a shorter
    // chain of dependent instructions per step: bf16 MQA at B = 1, S =
    // 32768, unified max: 13.5 against 14.1 us with a lane per row), but
    // one lane per row for INT4, whose steps, bound by their instructions,
    // lose more to the shuffles of the shared max than the lanes save (B =
    // 64: 45.4 against 43.2 us; H100, 2026-11-26).
    int64_t softmaxLanes = shape && shape->int4 ? 1 : 64;
    // Splits for whole waves of two blocks per unit (as many as the
    // registers of a 4-subgroup block let a unit hold; three since bf16's
    // staged steps take fragment loads, see above): a block per
    // (sequence, KV head, split) leaves few blocks per split. At most 128
    // (bf16 MQA, B = 1, unified max: with 64, 64 blocks leave half the
    // H100's SMs idle; S = 32768 11.2 against 12.6 us, S = 16384 8.2
    // against 8.6), but 64 for INT4, whose short steps make a 64-position
    // split mostly prologue (B = 2: 7.9 against 9.1 us with 128; B = 1 7.5
    // against 7.0). Each pair measured in one process.
    int64_t maxSplits = shape && shape->int4 ? 64 : 128;
    // An INT4 cache under unified max (bf16 MMAs, no max to agree on): every
    // lane turns its own scores into weights, and the steps' rows stream
    // through two shared-memory stages per subgroup (asynchronous copies a
    // step ahead), which hold no registers: the block fits 128 registers a
    // lane, four blocks a unit. H100, Hq 8 / Hkv 1, S = 8192, B = 1 / 8 /
    // 32 / 64 / 128 / 256, four waves of them: 5.2 / 10.4 / 21.4 / 35.8 /
    // 63.8 / 140.0 us, where the loads a step ahead in registers (168
    // registers, three blocks and waves) took 5.5 / 10.4 / 22.1 / 36.9 /
    // 75.1 / 149.9 (2026-12-06, one process; docs/perf.md). Splits for two
    // waves, at least four: of 2, 3, 4, 6 and 8 waves no count was best at
    // every B, but each B's best took as many splits as two waves or four,
    // whichever is more (2 waves 5.22 / 9.60 / 20.67 / 35.31 / 74.71 /
    // 140.91 us, 4 waves 5.23 / 10.28 / 21.64 / 35.82 / 63.84 / 139.35, 8
    // waves 122.37 at B = 256: 4 splits).
    int64_t subgroups = 4, stages = 0, wavesPerUnit = 2, blocksPerUnit = 0,
            minSplits = 1;
    bool unified = cast<decode::AttentionOp>(op).getSoftmax().getScheme() ==
                   decode::SoftmaxScheme::unified_max;
    if (shape && shape->int4 && unified && shape->headsAsB &&
        shape->allowsRegisterSoftmax() &&
        shape->allowsStages(target.vectorBytes(), target.subgroupSize())) {
      registerSoftmax = true;
      prefetch = false;
      stages = 2;
      blocksPerUnit = 4;
      minSplits = 4;
    } else if (shape && !shape->int4 && target.copiesAsynchronously() &&
               shape->allowsStages(target.vectorBytes(),
                                   target.subgroupSize()) &&
               shape->sharedBytes(subgroups, 2, /*clustered=*/false) <=
                   target.target().getSharedMemory()) {
      // A bf16 or f16 cache's steps stream through two shared-memory
      // stages per subgroup (asynchronous copies a step ahead, swizzled:
      // swizzledStageElement) instead of loads a step ahead in registers,
      // where the target's copies are asynchronous (on AMD they go through
      // registers, and the loads a step ahead stay). H100, one process,
      // replays interleaved, 2026-12-07 11:00: faster on all 18 rows
      // measured, online / unified max, us: 32/32 B = 1 S = 2048 15.88 /
      // 15.59 -> 15.40 / 15.13, 32/8 B = 1 S = 8192 16.87 / 16.40 -> 16.84
      // / 15.91, MQA B = 1 S = 32768 12.39 / 11.15 -> 11.42 / 10.47, MQA B
      // = 32 S = 4096 28.85 / 27.95 -> 28.46 / 27.69; again at 14:30,
      // faster on 16 of 18 by 0.3-8.0 %, 0.2 and 0.3 % slower on two (32/8
      // B = 1 S = 8192 and 16384, online); three stages, three waves and
      // three blocks a unit no faster (docs/perf.md).
      prefetch = false;
      stages = 2;
    }
    // With stages, K and V reach the MMAs by fragment loads where the
    // target has them (NVIDIA's ldmatrix: one instruction per 16 x 16 tile
    // of the step, where each lane's runs took 16-byte loads and the
    // register moves that put V's dims in k slots). H100, 2026-12-08, with
    // the planned copies, against both without in one call: 1.004x in
    // geomean over the suite's 166 attention points, up to 5 % on small
    // batches, but 32/8 at B = 64 0.9-6.3 % slower: the kernel's 166
    // registers let three blocks share a unit where two did, and 512
    // blocks of one split then leave a tail (docs/perf.md).
    bool fragmentLoads = stages > 0 && shape->allowsFragmentLoads(target);
    // Two splits of a (KV head, sequence) add their partial rows in a
    // cluster of their two blocks where the target has clusters, instead of
    // attention_reduce, whose launch after the partial kernel took 1.5-2.6
    // us on the H100 however few the splits (kDefaultClusterSplits).
    // (None where the block's own rows would not fit beside the rest.)
    int64_t clusterSplits =
        target.target().canCluster(kDefaultClusterSplits) && shape &&
                shape->sharedBytes(subgroups, stages, /*clustered=*/true) <=
                    target.target().getSharedMemory()
            ? kDefaultClusterSplits
            : 0;
    return makeConfig(op->getContext(),
                      {{"subgroups", subgroups},
                       {"cluster_splits", clusterSplits},
                       {"max_splits", maxSplits},
                       {"waves_per_unit", wavesPerUnit},
                       {"min_splits", minSplits},
                       {"min_split_length", 64},
                       {"f32_operands", f32Operands},
                       {"prefetch", prefetch},
                       {"stages", stages},
                       {"heads_as_b", shape && shape->headsAsB},
                       {"register_softmax", registerSoftmax},
                       {"softmax_lanes", softmaxLanes},
                       {"blocks_per_unit", blocksPerUnit},
                       {"fragment_loads", fragmentLoads}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    int64_t maxSubgroups = target.maxSubgroups();
    if (failed(checkRange(op, config, "subgroups", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "max_splits", 1, 1024)) ||
        failed(checkRange(op, config, "waves_per_unit", 1, 64)) ||
        failed(checkRange(op, config, "min_splits", 1, 1024)) ||
        failed(checkRange(op, config, "min_split_length", 1, 1 << 20)) ||
        failed(checkRange(op, config, "f32_operands", 0, 1)) ||
        failed(checkRange(op, config, "prefetch", 0, 1)) ||
        failed(checkRange(op, config, "stages", 0, 8)) ||
        failed(checkRange(op, config, "heads_as_b", 0, 1)) ||
        failed(checkRange(op, config, "register_softmax", 0, 1)) ||
        failed(checkRange(op, config, "softmax_lanes", 1, 64)) ||
        failed(checkRange(op, config, "blocks_per_unit", 0, 64)) ||
        failed(checkRange(op, config, "fragment_loads", 0, 1)))
      return failure();
    // The most splits in a cluster: the target's cluster_workgroups.
    int64_t clusterSplits = config.get("cluster_splits");
    int64_t clusterWorkgroups = target.target().getClusterWorkgroups();
    StringRef arch = target.target().getArch().getValue();
    if (clusterSplits > 0 && clusterWorkgroups < 2)
      return op->emitOpError()
             << "kernel config cluster_splits = " << clusterSplits << " needs "
             << "clusters of workgroups, which " << arch
             << " does not have: 0 (the splits go to attention_reduce)";
    if (failed(checkRange(op, config, "cluster_splits", 0, clusterWorkgroups)))
      return failure();
    if (clusterSplits > 0 && (!llvm::isPowerOf2_64(clusterSplits) ||
                              !target.target().canCluster(clusterSplits)))
      return op->emitOpError()
             << "kernel config cluster_splits = " << clusterSplits
             << " needs a power of two from 2 to the "
             << target.target().getClusterWorkgroups()
             << " workgroups a cluster of " << arch << " holds, or 0 (none)";
    auto attention = cast<decode::AttentionOp>(op);
    bool headsAsB = config.get("heads_as_b") != 0;
    std::optional<GqaAttentionShape> shape =
        GqaAttentionShape::get(attention, target, headsAsB);
    if (!shape) {
      decode::KVCacheType cache = attention.getCache().getType();
      return op->emitOpError()
             << "kernel family 'gqa_attention' needs an MMA of "
             << target.target().getArch().getValue() << " on the cache's "
             << cache.getElementType()
             << " (f16: online softmax only) with at "
                "least the group's "
             << attention.getQuery().getType().getDimSize(1) /
                    cache.getKvHeads()
             << " query heads as "
             << (headsAsB ? "columns (heads_as_b = 1)"
                          : "rows (heads_as_b = 0)")
             << ", and head_dim " << cache.getHeadDim()
             << " a multiple of its k runs and columns";
    }
    int64_t stages = config.get("stages");
    if (stages > 0) {
      // The step's rows in whole vector pieces, the same count per lane.
      if (stages == 1 || config.get("prefetch") != 0 ||
          !shape->allowsStages(target.vectorBytes(), target.subgroupSize()))
        return op->emitOpError()
               << "kernel config stages = " << stages
               << " needs at least 2 stages, prefetch = 0, and cache rows of "
               << shape->rowBytes() << " bytes that a step's "
               << shape->stepPositions << " positions copy in "
               << target.vectorBytes() << "-byte pieces, as many per lane";
    }
    int64_t bytes =
        shape->sharedBytes(config.get("subgroups"), stages, clusterSplits > 1);
    if (bytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel config subgroups = " << config.get("subgroups")
             << (stages > 0 ? ", stages = " + std::to_string(stages) : "")
             << (clusterSplits > 1
                     ? ", cluster_splits = " + std::to_string(clusterSplits)
                     : "")
             << " needs " << bytes << " bytes of shared memory, more than the "
             << target.target().getSharedMemory() << " of "
             << target.target().getArch().getValue();
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &kernelConfig,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto attention = cast<decode::AttentionOp>(op);
    GqaAttentionConfig config(kernelConfig);
    GqaAttentionShape shape =
        *GqaAttentionShape::get(attention, ctx.primitives, config.headsAsB);
    config.registerSoftmax =
        config.registerSoftmax && shape.allowsRegisterSoftmax();
    config.fragmentLoads = config.fragmentLoads && config.stages > 0 &&
                           shape.allowsFragmentLoads(ctx.primitives);
    AttentionProblem problem = AttentionProblem::get(attention, buffers);
    Builder builder(op->getContext());
    auto [perSequence, fixed] =
        getPartialsBytes(problem, config, ctx.primitives.units());
    Buffer partials = buffers.scratch(
        MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()),
        perSequence, fixed);

    ImplicitLocOpBuilder &host = ctx.host;
    Value blocksPerSplit =
        arith::MulIOp::create(host, ctx.batch, ctx.hostI64(problem.kvHeads()));
    Value numSplits =
        getAttentionSplits(ctx, problem, config.splits, blocksPerSplit);
    // The layer is an argument (the last one), so one kernel serves every
    // layer.
    Value layer = ctx.hostI64(problem.layer);
    int64_t threads = config.subgroups * ctx.subgroupSize();
    // A kernel of `splits` splits (host i64) writing `output`; with output
    // Cluster, `clusterSplits` of them, one cluster of blocks per (KV head,
    // sequence).
    auto launch = [&](StringRef name, GqaAttentionOutput output, Value splits,
                      int64_t clusterSplits = 1) {
      bool clustered = output == GqaAttentionOutput::Cluster;
      Value chunk = ctx.ceilDiv(ctx.maxContext, splits);
      SmallVector<KernelArg> args = getAttentionArgs(problem, partials, splits);
      args.append({KernelArg::scalar(chunk), KernelArg::buffer(problem.out),
                   KernelArg::scalar(layer)});
      KernelContext::Workgroup workgroup(threads, config.blocksPerUnit);
      workgroup.cluster = {clusterSplits, 1, 1};
      ctx.launch(
          name, args,
          {ctx.toIndex(splits), ctx.hostIndex(problem.kvHeads()),
           ctx.toIndex(ctx.batch)},
          workgroup,
          config.stages > 0
              ? KernelContext::SharedMemory{shape.sharedBytes(config.subgroups,
                                                              config.stages,
                                                              clustered),
                                            builder.getI8Type()}
              : KernelContext::SharedMemory{shape.sharedFloats(config.subgroups,
                                                               clustered),
                                            builder.getF32Type()},
          [&](GpuEmitter &e, ArrayRef<Value> v) {
            GqaAttentionBuilder(e, problem, config, shape, output,
                                clusterSplits)
                .build(v);
          });
    };
    // Splits in clusters: the chosen count, if it is at most
    // cluster_splits, rounded down to a power of two (a kernel per cluster
    // size; whole waves stay whole); splits the op fixes only as they are
    // (one kernel).
    // (No larger than the most splits the config takes.)
    int64_t largestCluster =
        std::min<int64_t>(config.clusterSplits,
                          llvm::bit_floor<uint64_t>(config.splits.maxSplits));
    int64_t smallestCluster = 2;
    if (problem.splits > 0) {
      int64_t fixed = std::min(problem.splits, config.splits.maxSplits);
      largestCluster =
          llvm::isPowerOf2_64(fixed) && fixed <= largestCluster ? fixed : 0;
      smallestCluster = largestCluster;
    }
    auto launchClusters = [&] {
      HostBranches sizes(host);
      for (int64_t size = largestCluster; size >= smallestCluster; size /= 2) {
        auto launchSize = [&] {
          launch("gqa_attention_cluster", GqaAttentionOutput::Cluster,
                 ctx.hostI64(size), size);
          return success();
        };
        if (size == smallestCluster) {
          if (failed(sizes.otherwise(launchSize)))
            return failure();
          break;
        }
        Value fits = arith::CmpIOp::create(host, CmpIPredicate::sge, numSplits,
                                           ctx.hostI64(size));
        if (failed(sizes.when(fits, launchSize)))
          return failure();
      }
      sizes.end();
      return success();
    };
    Value one = ctx.hostI64(1);
    HostBranches branches(host);
    // Unified max: one split gets a kernel of its own, which writes the
    // output and recomputes a flagged row, so that the kernel of several
    // splits keeps the code of the partial rows alone. (With both in one
    // kernel, its registers went from 213 to 221 and bf16 MQA at B = 1 to
    // 32, several splits, ran 0.4-0.5 us slower a launch: H100, two suite
    // runs.)
    if (problem.unified()) {
      Value single =
          arith::CmpIOp::create(host, CmpIPredicate::eq, numSplits, one);
      if (failed(branches.when(single, [&] {
            launch("gqa_attention_single_split", GqaAttentionOutput::Result,
                   numSplits);
            return success();
          })))
        return failure();
    }
    if (largestCluster >= 2) {
      Value several =
          arith::CmpIOp::create(host, CmpIPredicate::sgt, numSplits, one);
      Value few = arith::CmpIOp::create(host, CmpIPredicate::sle, numSplits,
                                        ctx.hostI64(largestCluster));
      Value clustered = arith::AndIOp::create(host, several, few);
      if (failed(branches.when(clustered, launchClusters)))
        return failure();
    }
    if (failed(branches.otherwise([&] {
          // Online: one split writes the output itself (writePartials);
          // the reduce runs for more.
          if (problem.unified()) {
            launch("gqa_attention_partial", GqaAttentionOutput::PartialRows,
                   numSplits);
            launchAttentionReduce(ctx, problem, partials, numSplits);
            return success();
          }
          launch("gqa_attention_partial", GqaAttentionOutput::ByLaunch,
                 numSplits);
          Value several =
              arith::CmpIOp::create(host, CmpIPredicate::ne, numSplits, one);
          HostBranches reduce(host);
          if (failed(reduce.when(several, [&] {
                launchAttentionReduce(ctx, problem, partials, numSplits);
                return success();
              })))
            return failure();
          reduce.end();
          return success();
        })))
      return failure();
    return success();
  }
};
} // namespace

std::optional<decode::KernelAttr>
fdc::gpu::getDefaultAttentionKernel(decode::AttentionOp op,
                                    const GpuPrimitives &target) {
  std::optional<GqaAttentionShape> shape = getDefaultShape(op, target);
  if (!shape || shape->registersPerLane(false) > kRegisterBudget)
    return std::nullopt;
  // An f32 query on an INT4 cache stays exact with split_kv_attention; the
  // f16 or bf16 MMAs would round it.
  if (shape->int4 && op.getQuery().getType().getElementType().isF32())
    return std::nullopt;
  MLIRContext *context = op->getContext();
  // A probe: a config the target refuses (shared memory) means no default,
  // not an error.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  auto kernel = decode::KernelAttr::get(
      context, StringAttr::get(context, "gqa_attention"),
      DictionaryAttr::get(context, {}));
  FailureOr<decode::KernelAttr> complete = completeKernel(op, kernel, target);
  if (failed(complete))
    return std::nullopt;
  return *complete;
}

std::unique_ptr<KernelFamily> fdc::gpu::createGqaAttentionFamily() {
  return std::make_unique<GqaAttentionFamily>();
}
