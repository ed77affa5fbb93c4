//===- LinearDispatch.cpp - the default kernel table of decode.linear -----===//
//
// FlashDecoding++'s heuristic dataflow (§5) without measurements: which
// linear kernel runs is a function of the step's batch M. GEMV reads each
// weight row once per activation row and wins only at M = 1, and only where
// N's row tiles fill the units; above it (or from M = 1 where they leave
// units idle), flat GEMM tiles of the MMA's narrow side n (one B tile up to
// n rows, two up to 2n), then, by batch size and by how many blocks a tile
// gives the units, the flat GEMM's widest tile or tiled GEMMs staging K through
// shared memory.
//
// Every value comes from the target description: the MMA shape, the
// workgroup size (16 subgroups split K inside a block where it holds them:
// on the H100 that was the best of 4, 8 and 16 on every benchmark shape at
// M = 2..16, 0.93-1.11x cuBLAS), and a register budget for the loads
// unrolled per iteration.
//
// `fdc tune` measures real tables; this one is the fallback.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"
#include "LinearArgs.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

int64_t fdc::gpu::getFlatGemmUnroll(decode::LinearOp op,
                                    const GpuPrimitives &target,
                                    const MmaLayout &layout, int64_t rowTiles,
                                    int64_t batchTiles, int64_t maxUnroll) {
  constexpr int64_t kRegisterBudget = 128;
  int64_t halves = getWeightHalves(op.getActivation());
  int64_t runRegisters =
      std::max<int64_t>(layout.kPerLane, target.vectorBytes() / 2) / 2;
  int64_t loads =
      (halves * rowTiles * layout.aRowsPerLane + batchTiles) * runRegisters;
  int64_t accumulators = halves * rowTiles * batchTiles * layout.accPerLane;
  return std::clamp<int64_t>((kRegisterBudget - accumulators) / loads, 1,
                             maxUnroll);
}

namespace {
/// On a target with a group MMA (#decode.group_mma, sm_90a's wgmma), group
/// GEMMs take the batches where they measured fastest (H100 fdc tune
/// sweeps of the benchmark shapes, 2026-11-25, 2026-11-27 and 2026-11-28),
/// in place of the entries of `entries` for those batches: batch tiles of
/// 2n, 4n, 8n and 16n columns (16, 32, 64, 128 on NVIDIA).
///   - Where N / m row tiles leave units idle but fill at least a quarter of
///     them (N = 4096 on the H100), up to 2n rows: one row tile per block,
///     K split to fill the units (about units / tiles ways), the deepest
///     pipeline (kMaxGroupGemmStages), a batch tile of 2n (2026-11-28, M =
///     1 / 16: o [4096, 4096] 12.6 / 12.9 us against 12.8 for GEMV / 13.5
///     with K whole; ffn2 [4096, 11008] 31.6 / 32.2 against 32.9 / 35.2).
///     The M = 1 kernel (GEMV, or the flat GEMM where GEMV's blocks are too
///     few) stays where a residual is added (the 7B-wide step at B = 1:
///     443.7 against 438.8 us; its o_proj 12.78 us for GEMV against 13.04).
///   - Above 2n rows where the rows are not long (below): one row tile per
///     block, K whole, the deepest pipeline shared memory holds, with the
///     narrowest batch tile whose blocks fit one wave. A block with 15 tiles
///     of K in flight streams its rows without help, where 6 stages needed
///     K split two ways and the sums added after (o at M = 32 / 64 / 128:
///     13.2 / 13.4 / 16.3 us against 14.6 / 15.4 / 17.0). Where that tile
///     would be 8n columns or more but not the whole batch, batch tiles of
///     16n columns (the whole batch up to 16n rows) with K split as above:
///     blocks of several batch tiles read each weight tile again (o at M =
///     128: 15.6 us with batch 128 and split 2, 16.1 with two batch tiles
///     of 64; above 128 rows not measured against the tuned split 1).
///   - Where they leave units idle otherwise: one row tile per block, K
///     split as above, the deepest pipeline, from 2n + 1 rows; and from 2
///     rows where K is at least twice N and its tiles and k tiles together
///     exceed the units, long rows that the flat GEMM streams with too few
///     blocks (ffn2 at M = 2 / 8 / 32, split 2: 32.8 / 33.3 / 34.1 us at 16
///     stages against 33.5 / 33.8 / 34.5 at 6).
///   - Elsewhere, from 2 rows, two row tiles of weight per block (one per
///     half for SiLU-gate-up: gate and up), K whole, up to 6 stages, a
///     batch tile of at least 4n (2026-11-28, M = 2 / 16: ffn1 [11008,
///     4096] 31.8 / 32.4 us against 32.3 / 33.0 for the flat and tiled
///     GEMMs; gate_up [28672, 4096] 78.7 / 79.8 against 80.2 / 81.7; the
///     7B-wide SiLU-gate-up [2 x 14336, 4096] 80.5 / 81.4 against 85.8 /
///     86.8 with two row tiles a half); GEMV keeps M = 1 but for
///     SiLU-gate-up (80.3 against 82.9 us).
void useGroupGemm(decode::LinearOp op, const GpuPrimitives &target,
                  SmallVectorImpl<std::pair<int64_t, Attribute>> &entries) {
  Type element = op.getInput().getType().getElementType();
  std::optional<GroupMmaLayout> group;
  for (decode::GroupMmaShapeAttr shape : target.target().getGroupMmaShapes())
    if (shape.getA() == element)
      if ((group = target.getGroupMmaLayout(element, 2 * shape.getNStep())))
        break;
  if (!group)
    return;
  int64_t step = group->shape.getNStep();
  int64_t features = op.getResult().getType().getDimSize(1);
  int64_t reduction = op.getInput().getType().getDimSize(1);
  int64_t halves = getWeightHalves(op.getActivation());
  int64_t tiles = llvm::divideCeil(features, group->m());
  int64_t kTiles = llvm::divideCeil(
      reduction * element.getIntOrFloatBitWidth() / 8, group->rowBytes());
  bool idle = tiles < target.units();
  // Long rows with enough k tiles to spread over the units.
  bool longRows = reduction >= 2 * features && tiles * kTiles >= target.units();
  // Idle units, but a quarter of them or more filled by the row tiles; and
  // of those, the short rows.
  bool quarter = idle && 4 * tiles >= target.units();
  bool deepWhole = quarter && !longRows;
  int64_t splitK =
      std::clamp<int64_t>((target.units() + tiles / 2) / tiles, 1, 16);
  // Fewer row tiles where the accumulators do not fit (SiLU-gate-up holds
  // both halves), fewer splits where K's tiles leave a split empty.
  auto groupGemm = [&](int64_t batch, int64_t rowTiles, int64_t split,
                       int64_t maxStages) -> Attribute {
    for (int64_t ways = std::min<int64_t>(split, 16); ways >= 1; --ways)
      for (int64_t perGroup = rowTiles; perGroup >= 1; --perGroup)
        if (std::optional<decode::KernelAttr> kernel = getGroupGemmKernel(
                op, target, {/*groups=*/1, perGroup, batch, maxStages, ways}))
          return *kernel;
    return {};
  };
  // The batch bounds of entries: 1, n, 2n, then the two tiled ones
  // (smallBatch, 2 * smallBatch), then the last.
  for (auto &[bound, kernel] : entries) {
    int64_t rows = bound == 0 ? 16 * step : std::max(bound, 2 * step);
    int64_t batch = std::min<int64_t>(llvm::PowerOf2Ceil(rows), 16 * step);
    Attribute chosen;
    if (bound == 1) {
      if (quarter && !op.getResidual())
        chosen = groupGemm(batch, 1, splitK, kMaxGroupGemmStages);
      else if (!idle && halves == 2)
        chosen = groupGemm(4 * step, 1, 1, /*maxStages=*/6);
    } else if (deepWhole && rows > 2 * step) {
      // The narrowest batch tile whose blocks fit one wave.
      int64_t narrow = 2 * step;
      while (narrow < batch &&
             tiles * static_cast<int64_t>(llvm::divideCeil(rows, narrow)) >
                 target.units())
        narrow *= 2;
      if (narrow >= 8 * step && narrow < batch)
        chosen = groupGemm(batch, 1, splitK, kMaxGroupGemmStages);
      else
        chosen = groupGemm(narrow, 1, 1, kMaxGroupGemmStages);
    } else if (idle && (rows > 2 * step || longRows || deepWhole)) {
      chosen = groupGemm(batch, 1, splitK, kMaxGroupGemmStages);
    } else if (!idle) {
      chosen = groupGemm(std::max(batch, 4 * step), 2 / halves, 1,
                         /*maxStages=*/6);
    }
    if (chosen)
      kernel = chosen;
  }
}
} // namespace

std::optional<decode::KernelDispatchAttr>
fdc::gpu::getDefaultLinearDispatch(decode::LinearOp op,
                                   const GpuPrimitives &target) {
  const KernelRegistry &registry = KernelRegistry::get();
  const KernelFamily *flat = registry.lookup("flat_gemm");
  const KernelFamily *gemv = registry.lookup("gemv");
  std::optional<MmaLayout> layout = getFlatGemmLayout(op, target);
  if (!flat || !gemv || !layout)
    return std::nullopt;

  MLIRContext *context = op.getContext();
  Builder b(context);
  // 16 subgroups split K in a block (fewer where a workgroup cannot hold
  // them): the most loads in flight measured best on every shape.
  int64_t subgroups = std::min<int64_t>(16, target.maxSubgroups());
  auto kernel = [&](StringRef family,
                    ArrayRef<std::pair<StringRef, int64_t>> entries) {
    SmallVector<NamedAttribute> attrs;
    for (auto [name, value] : entries)
      attrs.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
    return decode::KernelAttr::get(context, b.getStringAttr(family),
                                   b.getDictionaryAttr(attrs));
  };
  int64_t n = layout->n();
  int64_t halves = getWeightHalves(op.getActivation());
  // k_unroll within a register budget: each unrolled super-step holds a
  // lane's loaded runs (weight rows and batch rows, 32-bit registers) on top
  // of the accumulators.
  auto flatGemm = [&](int64_t rowTiles, int64_t batchTiles,
                      int64_t subgroupCount, int64_t maxUnroll) {
    int64_t unroll =
        getFlatGemmUnroll(op, target, *layout, rowTiles, batchTiles, maxUnroll);
    return kernel("flat_gemm", {{"row_tiles", rowTiles},
                                {"batch_tiles", batchTiles},
                                {"subgroups", subgroupCount},
                                {"k_unroll", unroll}});
  };
  // Above 2n rows, four tiles, chosen by batch size and by how many blocks
  // they give the GPU's units (from H100 fdc tune runs of the benchmark
  // shapes, docs/perf/tuning):
  //   - the flat GEMM's widest tile: 32 batch rows per block, two A tiles
  //     sharing each batch row's loads where the accumulators stay within 32
  //     registers and a lane's k values of a row fit one vector load;
  //   - a small tiled GEMM (2 x 2 subgroups, 32 weight rows by 32 batch rows
  //     on NVIDIA, k tiles of four super-steps): from M = n + 1 to 32 where
  //     N / 32 blocks fill the units (measured on the H100 only, at M = 16:
  //     1.03-1.04x the flat GEMM on N = 11008, 12288, 28672; the same rule
  //     holds for every target), and from 33 to 64 where N / 64 do not;
  //   - a large tiled GEMM (4 subgroups over N, 64 weight rows by 32 batch
  //     rows, k tiles of two super-steps): from 33 to 64 where N / 64 blocks
  //     fill the units;
  //   - a wide tiled GEMM (2 x 2 subgroups of 4 x 4 MMA tiles, 128 weight
  //     rows by 64 batch rows on NVIDIA, k tiles of two super-steps in
  //     dynamic shared memory), K split ceil(4 units / (3 N / 128)) ways, at
  //     most 4 (4 for N = 4096 on the H100, 3 for 11008, 1 for 28672, as
  //     fdc tune chose): above 64 rows, and from 17 where N / 64 blocks
  //     leave units idle and 4 ways give at least half a block per unit.
  // A super-step is a lane's vector-wide run of k for each MMA it feeds.
  // WMMA lanes hold whole rows of 16 k (runs wider than a vector load): the
  // tiled GEMM spills there (gfx1100), so those targets keep the flat GEMM.
  int64_t wideBatchTiles = std::max<int64_t>(1, 32 / n);
  bool narrowRuns = layout->kPerLane * 2 <= target.vectorBytes();
  int64_t wideRowTiles =
      narrowRuns && halves * 2 * wideBatchTiles * layout->accPerLane <= 32 ? 2
                                                                           : 1;
  Attribute flatWide = flatGemm(wideRowTiles, wideBatchTiles, subgroups, 2);
  int64_t laneRun =
      std::max<int64_t>(layout->kPerLane, target.vectorBytes() / 2);
  int64_t stepK = (laneRun / layout->kPerLane) * layout->k();
  int64_t smallBatchTiles = std::max<int64_t>(1, 16 / n);
  std::optional<decode::KernelAttr> small, large;
  if (narrowRuns) {
    // Within static shared memory (as measured).
    int64_t sharedBytes = target.staticSharedBytes();
    small = getTiledGemmKernel(op, target,
                               {/*warpsN=*/2, /*warpsM=*/2, /*rowTiles=*/1,
                                smallBatchTiles, 4 * stepK,
                                /*maxStages=*/4, /*splitK=*/1, sharedBytes});
    large = getTiledGemmKernel(op, target,
                               {/*warpsN=*/4, /*warpsM=*/1, /*rowTiles=*/1,
                                wideBatchTiles, 2 * stepK,
                                /*maxStages=*/4, /*splitK=*/1, sharedBytes});
  }
  int64_t features = op.getResult().getType().getDimSize(1);
  auto tilesOf = [&](int64_t blockRows) {
    return (features + blockRows - 1) / blockRows;
  };
  auto fillsUnits = [&](int64_t blockRows) {
    return tilesOf(blockRows) >= target.units();
  };
  std::optional<decode::KernelAttr> wide;
  int64_t wideTiles = tilesOf(8 * layout->m());
  if (narrowRuns) {
    int64_t splitK = std::clamp<int64_t>(
        (4 * target.units() + 3 * wideTiles - 1) / (3 * wideTiles), 1, 4);
    wide = getTiledGemmKernel(op, target,
                              {/*warpsN=*/2, /*warpsM=*/2, /*rowTiles=*/4,
                               /*batchTiles=*/std::max<int64_t>(1, 32 / n),
                               2 * stepK, /*maxStages=*/4, splitK});
  }
  // The wide tile for 17..64 rows too, where N / 64 leaves units idle.
  std::optional<decode::KernelAttr> wideWhenIdle;
  if (wide && 2 * 4 * wideTiles >= target.units())
    wideWhenIdle = wide;
  Attribute smallOrFlat = small ? Attribute(*small) : flatWide;
  Attribute largeOrSmall = large ? Attribute(*large) : smallOrFlat;
  int64_t smallBatch = 2 * smallBatchTiles * n;
  // Where N / m row tiles leave units idle, GEMV's few blocks keep too few
  // loads in flight: from M = 1 to n the flat GEMM's single tile with a
  // workgroup's most subgroups splitting K, each unrolled up to 8 steps
  // (H100 fdc tune, 2026-11-27 tuning files: [1024, 4096] 5.2 against 6.0
  // us for GEMV at M = 1 and 6.4 for 16 subgroups at M = 8; [128, 4096]
  // 3.9 against 5.1 and 5.5).
  Attribute smallest = kernel("gemv", {}),
            narrow = flatGemm(1, 1, subgroups, 4);
  if (!fillsUnits(layout->m())) {
    int64_t most = target.maxSubgroups();
    smallest = narrow = flatGemm(1, 1, most, 8);
  }
  SmallVector<std::pair<int64_t, Attribute>> entries = {
      {1, smallest},
      {n, narrow},
      {2 * n, fillsUnits(2 * layout->m()) && small
                  ? Attribute(*small)
                  : flatGemm(1, 2, subgroups, 2)},
      {smallBatch, fillsUnits(2 * layout->m()) ? smallOrFlat
                   : wideWhenIdle              ? Attribute(*wideWhenIdle)
                                               : flatWide},
      {2 * smallBatch, fillsUnits(4 * layout->m()) ? largeOrSmall
                       : wideWhenIdle              ? Attribute(*wideWhenIdle)
                                                   : smallOrFlat},
      {0, wide ? Attribute(*wide) : largeOrSmall}};
  useGroupGemm(op, target, entries);
  // Bounds that do not grow (n = 16 makes 2n the small tile's batch) and
  // neighbours with one kernel merge.
  SmallVector<int64_t> bounds;
  SmallVector<Attribute> kernels;
  for (auto [bound, chosen] : entries) {
    bool last = bound == 0;
    if (!last && !bounds.empty() && bound <= bounds.back())
      continue;
    if (!kernels.empty() && kernels.back() == chosen) {
      if (!last)
        bounds.back() = bound;
      else
        bounds.pop_back();
      continue;
    }
    if (!last)
      bounds.push_back(bound);
    kernels.push_back(chosen);
  }
  return decode::KernelDispatchAttr::get(
      context, b.getDenseI64ArrayAttr(bounds), b.getArrayAttr(kernels));
}
