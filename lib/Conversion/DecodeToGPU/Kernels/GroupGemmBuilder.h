//===- GroupGemmBuilder.h - group MMA tiles through shared memory -*- C++
//-*-===//
//
// The body of a group GEMM kernel (Kernels/GroupGemm.cpp describes it): its
// config and geometry, the copies of a stage into shared memory in the
// group MMA's layout, the MMAs of a stage, and the epilogue. Flash-LLM's
// SpMM on the group MMA (Kernels/GroupSpmm.cpp) reuses it with its own
// weight stage (sparse loads scattered into the tile) and pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_GROUPGEMMBUILDER_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_GROUPGEMMBUILDER_H

#include "../KernelRegistry.h"
#include "ClusterSplitSums.h"
#include "LinearArgs.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/DenseMap.h"

namespace fdc::gpu {
namespace arith = mlir::arith;
namespace memref = mlir::memref;
using mlir::ArrayRef;
using mlir::ImplicitLocOpBuilder;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;
using mlir::gpu::Dimension;
using CmpIPredicate = mlir::arith::CmpIPredicate;

struct GroupGemmConfig {
  int64_t groups, rowTiles, batch, stages, splitK;

  static GroupGemmConfig get(const KernelConfig &config) {
    return {config.get("groups"), config.get("row_tiles"), config.get("batch"),
            config.get("stages"), config.get("split_k")};
  }
};

/// The sizes that follow from a config, the group MMA and the problem.
struct GroupGemmGeometry {
  /// The most f32 accumulators a thread may hold.
  static constexpr int64_t kMaxAccumulators = 128;
  /// The registers a thread holds besides its accumulators (addresses, loop
  /// state, copy plan): ptxas fits 5 groups at 64 accumulators and 3 at 128 in
  /// the H100's 64 Ki registers per block, not 6 and 4.
  static constexpr int64_t kOtherRegisters = 32;

  GroupGemmGeometry(const GroupGemmConfig &config, const GroupMmaLayout &layout,
                    const GpuPrimitives &target, Type element, bool gateUp) {
    elementBytes = element.getIntOrFloatBitWidth() / 8;
    rowBytes = layout.rowBytes();
    kTile = rowBytes / elementBytes;
    kSteps = kTile / layout.k();
    halves = getWeightHalves(gateUp);
    groupRows = config.rowTiles * layout.m();
    blockRows = config.groups * groupRows;
    weightRows = halves * blockRows;
    groupThreads = layout.subgroups() * target.subgroupSize();
    threads = config.groups * groupThreads;
    stageBytes = llvm::alignTo((weightRows + config.batch) * rowBytes,
                               layout.tileAlignment);
    // The base of shared memory is aligned up to a tile in the kernel.
    sharedBytes = config.stages * stageBytes + layout.tileAlignment;
    accumulators = halves * config.rowTiles * layout.accPerThread;
    clusterSumBytes = ClusterSplitSums::getBytes(blockRows, config.batch,
                                                 halves, target.target());
  }

  static int64_t getTiles(int64_t kTile, int64_t k) {
    return llvm::divideCeil(k, kTile);
  }
  static int64_t getTilesPerSplit(int64_t kTile, int64_t splitK, int64_t k) {
    return (getTiles(kTile, k) + splitK - 1) / splitK;
  }

  int64_t elementBytes, rowBytes, kTile, kSteps, halves;
  int64_t groupRows, blockRows, weightRows, groupThreads, threads;
  int64_t stageBytes, sharedBytes, accumulators;
  /// The block's f32 sums (weight rows x batch), held in the stage buffers
  /// by a split reduced in its cluster.
  int64_t clusterSumBytes;

  /// Whether the splits of K add their sums inside a cluster
  /// (ClusterSplitSums::reducesInCluster) in the stage buffers.
  bool reducesInCluster(const GroupGemmConfig &config,
                        decode::GpuTargetAttr target) const {
    return ClusterSplitSums::reducesInCluster(config.splitK, target) &&
           clusterSumBytes <= config.stages * stageBytes;
  }
};

/// One thread's copy of a stage row chunk: where it comes from and where it
/// goes in a stage.
struct GroupStageCopy {
  Value memref;
  /// The source row (clamped in bounds where the blocks do not tile the
  /// rows exactly) and whether it is a real row.
  Value sourceRow, inBounds;
  /// The element offset of the chunk in a stage: its thread base +
  /// `destinationOffset` (a constant), and its k in a tile. The thread base
  /// is the stage's base + `destination`, or, where `baseCopy` is set, that
  /// copy's (and `destination` is null).
  Value destination, k;
  int64_t destinationOffset = 0;
  /// Null, or the copy (an index in the builder's copies) whose thread base
  /// this one, of a later full round, shares: its region's first round, also
  /// full, so issued before it, in the same block (outside any partial
  /// round's branch).
  std::optional<size_t> baseCopy;
  /// Null, or whether this thread has the copy (a partial last round).
  Value active;
  /// A copy of the weight (else of the batch).
  bool ofWeight = false;
};

/// Which of a stage's copies copyTile issues.
enum class StageCopies { All, Weight, Batch };

/// Builds the kernel body; one instance per kernel.
class GroupGemmBuilder {
public:
  /// The weight bytes a block copies before it waits for the kernel before
  /// it, at most (one tile's at least). Its first MMAs wait for all of them,
  /// and with more the step lost (H100, 7B-wide at B = 8 / 32: 471.3 / 544.7
  /// us with 32 KiB, 475.5 / 547.2 with none, 478.5 / 555.6 with every tile
  /// copied ahead and nothing early for a batch of several tiles), though a
  /// linear after a linear gained alone (o [4096, 4096] at M = 2 … 16: 12.4
  /// against 12.7 – 13.0 us).
  static constexpr int64_t kEarlyWeightBytes = 32 * 1024;
  /// Batch tiles from which a block copies early and lets the next kernel
  /// launch early only where the batch is one tile: where blocks of wide
  /// batch tiles share a weight tile, they lost (H100, o [4096, 4096] at M =
  /// 128, two batch tiles of 64: 16.8 against 16.2 us).
  static constexpr int64_t kWideBatchTile = 64;
  /// The stages from which a split of K keeps a tile's MMAs in flight while
  /// it copies (see accumulate()): with 9 or more the overlap gained, with 6
  /// it lost (H100, o [4096, 4096] M = 128, batch 128, split 2: 15.7 against
  /// 16.6 us with 9 stages; M = 64, batch 64: 15.2 against 14.4 with 6, 14.0
  /// against 14.3 with 14; ffn2 [4096, 11008] M = 16, batch 16, 16 stages:
  /// 32.4 against 33.2). 7 and 8 stages were not measured apart; 8 leaves 6
  /// tiles copied ahead.
  static constexpr int64_t kSplitOverlapStages = 8;

  virtual ~GroupGemmBuilder() = default;
  GroupGemmBuilder(GpuEmitter &e, const GroupMmaLayout &layout,
                   const GroupGemmConfig &config, const GroupGemmGeometry &g,
                   const LinearProblem &problem, bool releasesDependents)
      : e(e), b(e.builder()), target(e.target()), layout(layout),
        config(config), g(g), problem(problem),
        releasesDependents(releasesDependents) {}

  void build(ArrayRef<Value> v, size_t implicitStart, int64_t workspaceIndex) {
    input = v[0];
    weight = v[1];
    Value out = v[2];
    if (workspaceIndex >= 0)
      workspace = v[workspaceIndex];
    Value batch64 = v[implicitStart];
    shared = v.back();
    batchRows = arith::IndexCastOp::create(b, b.getIndexType(), batch64);
    epilogue = problem.optional.operands(v, out);
    // The kernel waits for the one before it in accumulate() where the
    // weight is the model's, else before anything.
    if (!problem.weightIsModelWeight)
      target.beginKernel(b);

    thread = e.threadId();
    Value groupIndex =
        arith::DivUIOp::create(b, thread, e.index(g.groupThreads));
    groupThread = arith::RemUIOp::create(b, thread, e.index(g.groupThreads));
    groupRowBase = arith::MulIOp::create(b, groupIndex, e.index(g.groupRows));
    // One op-creating call per argument list: the order of a call's
    // arguments is the C++ compiler's (see scripts/check-determinism.sh).
    Value blockX = e.blockId(Dimension::x);
    columnBase = arith::MulIOp::create(b, blockX, e.index(config.batch));
    Value blockY = e.blockId(Dimension::y);
    rowBase = arith::MulIOp::create(b, blockY, e.index(g.blockRows));
    if (config.batch >= kWideBatchTile)
      oneBatchTile =
          e.cmpi(CmpIPredicate::ule, batchRows, e.index(config.batch));

    planShared();
    planK();
    planCopies();
    SmallVector<Value> acc = accumulate();
    if (g.reducesInCluster(config, target.target()))
      reduceInCluster(acc);
    else if (workspace)
      storePartials(acc);
    else
      storeAccumulators(acc);
  }

protected:
  /// The shared-memory byte address of the first stage: the allocation's
  /// base rounded up to the MMA's tile alignment (the allocation has that
  /// much to spare).
  void planShared() {
    Value pointer = memref::ExtractAlignedPointerAsIndexOp::create(b, shared);
    Value base = arith::IndexCastOp::create(b, b.getI64Type(), pointer);
    Value alignment = e.i64(layout.tileAlignment);
    Value misaligned = arith::RemUIOp::create(b, base, alignment);
    Value shortBy = arith::SubIOp::create(b, alignment, misaligned);
    Value pad64 = arith::RemUIOp::create(b, shortBy, alignment);
    stagesAddress = arith::AddIOp::create(b, base, pad64);
    Value padBytes = arith::IndexCastOp::create(b, b.getIndexType(), pad64);
    padElements = arith::DivUIOp::create(b, padBytes, e.index(g.elementBytes));
  }

  /// The block's run of K's tiles: all of them, or its split's.
  void planK() {
    KTileRun run = planKTileRun(
        e, GroupGemmGeometry::getTiles(g.kTile, problem.k), config.splitK);
    split = run.split;
    firstTile = run.firstTile;
    tileCount = run.tileCount;
  }

  /// The thread's copies of `rows` stage rows from `first` on; `source`
  /// maps a row of the region to its source row and whether it is real.
  void planRegion(Value memref, bool ofWeight, int64_t first, int64_t rows,
                  llvm::function_ref<std::pair<Value, Value>(Value)> source) {
    int64_t chunksPerRow = g.rowBytes / target.vectorBytes();
    int64_t chunks = rows * chunksPerRow;
    // A round of g.threads chunks spans whole rows; where it also spans
    // whole periods of the layout (tileAlignment bytes), a thread's chunks
    // of every full round lie a constant apart in the stage, so they share
    // the first one's offset.
    int64_t roundRows = g.threads / chunksPerRow;
    bool periodic = g.threads % chunksPerRow == 0 &&
                    (roundRows * g.rowBytes) % layout.tileAlignment == 0;
    // The region's first round, where it is full: its copy (an index in
    // `copies`). Only a last round is partial, so a first full round is the
    // first round, and a later round `start` chunks on lies start /
    // chunksPerRow rows after it.
    std::optional<size_t> firstFull;
    for (int64_t start = 0; start < chunks; start += g.threads) {
      Value chunk = arith::AddIOp::create(b, thread, e.index(start));
      GroupStageCopy copy;
      copy.memref = memref;
      copy.ofWeight = ofWeight;
      if (start + g.threads > chunks) {
        copy.active = e.cmpi(CmpIPredicate::ult, chunk, e.index(chunks));
        chunk = e.select(copy.active, chunk, e.index(0));
      }
      Value regionRow = arith::DivUIOp::create(b, chunk, e.index(chunksPerRow));
      Value column = arith::RemUIOp::create(b, chunk, e.index(chunksPerRow));
      auto [sourceRow, inBounds] = source(regionRow);
      copy.sourceRow = sourceRow;
      copy.inBounds = inBounds;
      if (periodic && !copy.active && firstFull) {
        copy.baseCopy = firstFull;
        copy.k = copies[*firstFull].k;
        copy.destinationOffset =
            start / chunksPerRow * g.rowBytes / g.elementBytes;
        copies.push_back(copy);
        continue;
      }
      Value row = arith::AddIOp::create(b, regionRow, e.index(first));
      Value offset = target.getGroupMmaChunkOffset(b, layout, row, column);
      copy.destination =
          arith::DivUIOp::create(b, offset, e.index(g.elementBytes));
      copy.k = arith::MulIOp::create(
          b, column, e.index(target.vectorBytes() / g.elementBytes));
      if (!copy.active && start == 0)
        firstFull = copies.size();
      copies.push_back(copy);
    }
  }

  /// Every thread's copies: the weight rows (both halves), then the batch.
  virtual void planCopies() {
    planWeightCopies();
    planBatchCopies();
  }
  void planWeightCopies() {
    // Where the blocks tile N exactly, every weight row is real.
    Value real = arith::ConstantOp::create(b, b.getBoolAttr(true));
    planRegion(weight, /*ofWeight=*/true, 0, g.weightRows, [&](Value row) {
      Value half = arith::DivUIOp::create(b, row, e.index(g.blockRows));
      Value inHalf = arith::RemUIOp::create(b, row, e.index(g.blockRows));
      Value global = arith::AddIOp::create(b, rowBase, inHalf);
      Value halfBase = arith::MulIOp::create(b, half, e.index(problem.n));
      if (problem.n % g.blockRows == 0) {
        Value source = arith::AddIOp::create(b, global, halfBase);
        return std::make_pair(source, real);
      }
      Value inBounds = e.cmpi(CmpIPredicate::ult, global, e.index(problem.n));
      Value clamped = arith::MinUIOp::create(b, global, e.index(problem.n - 1));
      Value source = arith::AddIOp::create(b, clamped, halfBase);
      return std::make_pair(source, inBounds);
    });
  }
  void planBatchCopies() {
    Value lastColumn = arith::SubIOp::create(b, batchRows, e.index(1));
    planRegion(input, /*ofWeight=*/false, g.weightRows, config.batch,
               [&](Value row) {
                 Value global = arith::AddIOp::create(b, columnBase, row);
                 Value inBounds = e.cmpi(CmpIPredicate::ult, global, batchRows);
                 Value source = arith::MinUIOp::create(b, global, lastColumn);
                 return std::make_pair(source, inBounds);
               });
  }

  /// Starts the copies of the block's k tile `tile` (counted from its
  /// first) into stage buffer `buffer`: all of them, or those of the weight
  /// or the batch alone.
  void copyTile(Value tile, Value buffer,
                StageCopies which = StageCopies::All) {
    Value global = arith::AddIOp::create(b, firstTile, tile);
    Value tileK = arith::MulIOp::create(b, global, e.index(g.kTile));
    Value stageOffset = arith::MulIOp::create(
        b, buffer, e.index(g.stageBytes / g.elementBytes));
    Value base = arith::AddIOp::create(b, padElements, stageOffset);
    bool kTail = problem.k % g.kTile != 0;
    // The copies' thread bases, by index in `copies`, each made once where
    // its copy is issued; a copy with a baseCopy reads that one's.
    SmallVector<Value> threadBases(copies.size());
    for (size_t index = 0; index < copies.size(); ++index) {
      const GroupStageCopy &copy = copies[index];
      if ((which == StageCopies::Weight && !copy.ofWeight) ||
          (which == StageCopies::Batch && copy.ofWeight))
        continue;
      auto issue = [&] {
        Value k = arith::AddIOp::create(b, tileK, copy.k);
        Value valid = copy.inBounds;
        if (kTail) {
          Value inK = e.cmpi(CmpIPredicate::ult, k, e.index(problem.k));
          k = e.select(inK, k, e.index(0));
          valid = arith::AndIOp::create(b, valid, inK);
        }
        Value threadBase;
        if (copy.baseCopy) {
          assert(!copy.active && threadBases[*copy.baseCopy] &&
                 "a base copy is issued before the copies that share it");
          threadBase = threadBases[*copy.baseCopy];
        } else {
          Value offset = arith::AddIOp::create(b, base, copy.destination);
          threadBase = e.addressBase(offset);
        }
        threadBases[index] = threadBase;
        Value destination = threadBase;
        if (copy.destinationOffset != 0)
          destination = arith::AddIOp::create(b, threadBase,
                                              e.index(copy.destinationOffset));
        target.copyToShared(b, shared, ValueRange{destination}, copy.memref,
                            ValueRange{copy.sourceRow, k}, valid);
      };
      if (copy.active)
        e.ifThenElse(copy.active, issue);
      else
        issue();
    }
  }

  /// The tiles, of the `ahead` copied before the loop, whose weight part
  /// is copied before the kernel waits: kEarlyWeightBytes of them, at least
  /// one. The first tile's wait completes them all.
  int64_t earlyTiles(int64_t ahead) const {
    int64_t tileBytes = g.weightRows * g.rowBytes;
    return std::clamp<int64_t>(kEarlyWeightBytes / tileBytes, 1, ahead);
  }

  /// `then` where the block copies weights early and lets the next kernel
  /// launch early, else `otherwise`: always, but for a batch tile of
  /// kWideBatchTile columns or more when the batch has several tiles.
  void whereEarly(llvm::function_ref<void()> then,
                  llvm::function_ref<void()> otherwise = nullptr) {
    if (!oneBatchTile) {
      then();
      return;
    }
    e.ifThenElse(oneBatchTile, then, otherwise);
  }

  int64_t accIndex(int64_t h, int64_t r) const {
    return h * config.rowTiles + r;
  }

  /// Issues the MMAs of the stage in buffer `buffer` into `acc` (empty: the
  /// first stage, whose first k step starts the sums), and waits until at
  /// most `inFlight` stages' MMAs run.
  SmallVector<Value> multiplyStage(Value buffer, ValueRange acc,
                                   int64_t inFlight) {
    SmallVector<Value> result = issueStage(buffer, acc);
    target.waitGroupMmas(b, inFlight);
    return result;
  }

  /// Issues and commits the MMAs of the stage in buffer `buffer` into `acc`
  /// (as multiplyStage), without waiting for them.
  SmallVector<Value> issueStage(Value buffer, ValueRange acc) {
    Value bufferIndex = arith::IndexCastOp::create(b, b.getI64Type(), buffer);
    Value stageOffset =
        arith::MulIOp::create(b, bufferIndex, e.i64(g.stageBytes));
    Value stage = arith::AddIOp::create(b, stagesAddress, stageOffset);
    Value groupRows64 =
        arith::IndexCastOp::create(b, b.getI64Type(), groupRowBase);
    Value groupBytes = arith::MulIOp::create(b, groupRows64, e.i64(g.rowBytes));
    Value groupStage = arith::AddIOp::create(b, stage, groupBytes);
    SmallVector<Value> aTiles;
    for (int64_t h = 0; h < g.halves; ++h)
      for (int64_t r = 0; r < config.rowTiles; ++r) {
        Value aAddress = arith::AddIOp::create(
            b, groupStage,
            e.i64((h * g.blockRows + r * layout.m()) * g.rowBytes));
        aTiles.push_back(target.groupMmaTile(b, layout, aAddress));
      }
    Value bAddress =
        arith::AddIOp::create(b, stage, e.i64(g.weightRows * g.rowBytes));
    Value bTile = target.groupMmaTile(b, layout, bAddress);
    SmallVector<Value> result(acc.begin(), acc.end());
    result.resize(g.halves * config.rowTiles);
    target.beginGroupMmas(b);
    for (int64_t step = 0; step < g.kSteps; ++step)
      for (int64_t h = 0; h < g.halves; ++h)
        for (int64_t r = 0; r < config.rowTiles; ++r) {
          Value &slot = result[accIndex(h, r)];
          slot = target.groupMma(b, layout, aTiles[accIndex(h, r)], bTile, step,
                                 slot);
        }
    target.commitGroupMmas(b);
    return result;
  }

  /// The pipeline over K's tiles. With three stages or more
  /// (kSplitOverlapStages with split-K), a tile's MMAs run on while the next
  /// iteration waits for its copies and starts more (the MMA unit and the
  /// copies overlap), so a buffer is free only two iterations after its
  /// tile: stages - 2 tiles are copied ahead. Otherwise each iteration waits
  /// for its MMAs and stages - 1 tiles are copied ahead: a split's few tiles
  /// need the deeper prefetch more than the overlap where the pipeline is
  /// short (H100, bf16, 6 stages: qkv [12288, 4096] M = 64 / 128 37.8 / 40.5
  /// us with the overlap against 39.5 / 43.9 without; o [4096, 4096], split
  /// 2, 14.7 / 15.7 against 14.3 / 15.4).
  ///
  /// Where the weight is the model's, the weight part of the first
  /// earlyTiles() tiles is copied before the kernel waits for the one before
  /// it (beginKernel), which may then still be running (the target's
  /// dependent launch), as one group; their batch parts, then the whole of
  /// the other tiles copied ahead, follow a group each, so that tile t's
  /// copies are complete once groups 0 .. t + 1 are, and the loop waits as
  /// it does with a group per tile. With releasesDependents, a block lets
  /// the next kernel launch once it has issued its last copies. Both only
  /// whereEarly().
  virtual SmallVector<Value> accumulate() {
    int64_t overlapStages = config.splitK == 1 ? 3 : kSplitOverlapStages;
    int64_t inFlight = config.stages >= overlapStages ? 1 : 0;
    int64_t ahead = config.stages - 1 - inFlight;
    int64_t tiles = GroupGemmGeometry::getTiles(g.kTile, problem.k);
    int64_t perSplit =
        GroupGemmGeometry::getTilesPerSplit(g.kTile, config.splitK, problem.k);
    int64_t fewest =
        config.splitK == 1 ? tiles : tiles - (config.splitK - 1) * perSplit;
    auto copyAhead = [&](int64_t s, StageCopies which) {
      // Tile s goes to buffer s; a split's last run may have fewer tiles.
      Value tile = e.index(s);
      if (s < fewest)
        copyTile(tile, tile, which);
      else if (config.splitK > 1 && s < perSplit)
        e.ifThenElse(e.cmpi(CmpIPredicate::ult, tile, tileCount),
                     [&] { copyTile(tile, tile, which); });
    };
    int64_t early = problem.weightIsModelWeight ? earlyTiles(ahead) : 0;
    if (early > 0) {
      whereEarly([&] {
        for (int64_t s = 0; s < early; ++s)
          copyAhead(s, StageCopies::Weight);
      });
      target.commitCopies(b);
      target.beginKernel(b);
    }
    for (int64_t s = 0; s < ahead; ++s) {
      if (s < early)
        whereEarly([&] { copyAhead(s, StageCopies::Batch); },
                   [&] { copyAhead(s, StageCopies::All); });
      else
        copyAhead(s, StageCopies::All);
      target.commitCopies(b);
    }
    // Tile `tile` has landed (this thread's copies) and is visible to the
    // MMA unit; after the barrier every thread's copies are, and every group
    // is past the MMAs of tile - 1 - inFlight, whose buffer the next copies
    // reuse.
    auto iteration = [&](Value tile, ValueRange carried) {
      target.waitCopies(b, ahead - 1);
      target.fenceSharedForGroupMma(b);
      e.barrier();
      Value next = arith::AddIOp::create(b, tile, e.index(ahead));
      Value hasNext = e.cmpi(CmpIPredicate::ult, next, tileCount);
      auto copyNext = [&] {
        Value buffer = arith::RemUIOp::create(b, next, e.index(config.stages));
        copyTile(next, buffer);
      };
      if (releasesDependents)
        e.ifThenElse(hasNext, copyNext,
                     [&] { whereEarly([&] { target.releaseDependents(b); }); });
      else
        e.ifThenElse(hasNext, copyNext);
      target.commitCopies(b);
      Value buffer = arith::RemUIOp::create(b, tile, e.index(config.stages));
      return multiplyStage(buffer, carried, inFlight);
    };
    // The first tile (every split has one) outside the loop: its MMAs start
    // the sums, so no instruction but an MMA defines the accumulators (ptxas
    // serialises MMAs whose registers others define while MMAs are in
    // flight).
    SmallVector<Value> first = iteration(e.index(0), {});
    SmallVector<Value> result =
        e.reduce(e.index(1), tileCount, first, iteration);
    if (inFlight > 0)
      target.waitGroupMmas(b, 0);
    return result;
  }

  /// For every accumulator j of this thread's row tile r: emits `body(r, j,
  /// row, column)` with its weight row counted from `rowOrigin` (the group's
  /// first row in the block or in the whole weight) and its batch column
  /// from `columnOrigin` (the block's first column, or null: the block's
  /// own).
  void forEachAccumulator(
      Value rowOrigin, Value columnOrigin,
      llvm::function_ref<void(int64_t, int64_t, Value, Value)> body) {
    for (int64_t r = 0; r < config.rowTiles; ++r)
      for (int64_t j = 0; j < layout.accPerThread; ++j) {
        auto [row, column] =
            target.getGroupMmaAccumulator(b, layout, groupThread, j);
        Value tileRow = arith::AddIOp::create(b, row, e.index(r * layout.m()));
        Value weightRow = arith::AddIOp::create(b, rowOrigin, tileRow);
        Value batchColumn = columnOrigin
                                ? arith::AddIOp::create(b, columnOrigin, column)
                                : column;
        body(r, j, weightRow, batchColumn);
      }
  }

  /// For every accumulator j of this thread's row tile r whose output
  /// (batch row m, feature n) is in bounds: emits `body(r, j, m, n)` under
  /// that condition.
  void
  forEachOutput(llvm::function_ref<void(int64_t, int64_t, Value, Value)> body) {
    Value groupFirstRow = arith::AddIOp::create(b, rowBase, groupRowBase);
    forEachAccumulator(
        groupFirstRow, columnBase, [&](int64_t r, int64_t j, Value n, Value m) {
          Value inRows = e.cmpi(CmpIPredicate::ult, n, e.index(problem.n));
          Value inBatch = e.cmpi(CmpIPredicate::ult, m, batchRows);
          e.ifThenElse(arith::AndIOp::create(b, inRows, inBatch),
                       [&] { body(r, j, m, n); });
        });
  }

  /// Split-K: the block's sums into workspace[m][(split * halves + h) * N +
  /// n].
  void storePartials(ArrayRef<Value> acc) {
    Value splitBase =
        arith::MulIOp::create(b, split, e.index(g.halves * problem.n));
    forEachOutput([&](int64_t r, int64_t j, Value m, Value n) {
      for (int64_t h = 0; h < g.halves; ++h) {
        Value value = target.groupMmaExtract(b, layout, acc[accIndex(h, r)], j);
        Value half =
            arith::AddIOp::create(b, splitBase, e.index(h * problem.n));
        Value column = arith::AddIOp::create(b, half, n);
        e.store(value, workspace, {m, column});
      }
    });
  }

  /// Split-K in a cluster (see the file comment and ClusterSplitSums.h):
  /// the block's sums in its stage buffers.
  void reduceInCluster(ArrayRef<Value> acc) {
    // Every group is past its MMAs before the stage buffers are reused.
    e.barrier();
    ClusterSplitSums sums(e, stagesAddress, g.blockRows, config.batch, g.halves,
                          config.splitK, g.threads);
    forEachAccumulator(
        groupRowBase, Value(),
        [&](int64_t r, int64_t j, Value blockRow, Value blockColumn) {
          for (int64_t h = 0; h < g.halves; ++h)
            sums.store(
                h, blockColumn, blockRow,
                target.groupMmaExtract(b, layout, acc[accIndex(h, r)], j));
        });
    sums.reduce(split, thread, rowBase, columnBase, problem.n, batchRows,
                epilogue, problem.gateUp);
  }

  /// The epilogue of this thread's outputs, from its accumulators.
  void storeAccumulators(ArrayRef<Value> acc) {
    forEachOutput([&](int64_t r, int64_t j, Value m, Value n) {
      Value value = target.groupMmaExtract(b, layout, acc[accIndex(0, r)], j);
      Value up = problem.gateUp
                     ? target.groupMmaExtract(b, layout, acc[accIndex(1, r)], j)
                     : Value();
      emitLinearOutput(e, epilogue, m, n, value, up);
    });
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const GpuPrimitives &target;
  const GroupMmaLayout &layout;
  const GroupGemmConfig &config;
  const GroupGemmGeometry &g;
  const LinearProblem &problem;
  bool releasesDependents;

  /// batchRows: the step's M (config.batch is the block's columns).
  Value input, weight, batchRows, shared, workspace;
  LinearEpilogueOperands epilogue;
  Value thread, groupThread, groupRowBase, rowBase, columnBase;
  /// With a batch tile of kWideBatchTile columns or more: the batch is one
  /// tile (grid x is 1); else null.
  Value oneBatchTile;
  /// The shared byte address of stage 0 (i64) and its element offset in
  /// the allocation.
  Value stagesAddress, padElements;
  /// The block's split of K (null without split-K), its first k tile and
  /// its number of k tiles.
  Value split, firstTile, tileCount;
  SmallVector<GroupStageCopy> copies;
};
/// Builds a group GEMM kernel's body: `v` are its arguments (as
/// GroupGemmBuilder::build takes them), `implicitStart` the first implicit
/// one, `workspaceIndex` the split-K workspace's (-1: none).
using GroupGemmBody =
    llvm::function_ref<void(GpuEmitter &e, ArrayRef<Value> v,
                            size_t implicitStart, int64_t workspaceIndex)>;

/// Launches the group GEMM kernel `name` of `op` (group_gemm, group_spmm):
/// the problem's arguments and, where split_k splits add their sums through
/// the workspace rather than in a cluster, the workspace, over a grid of
/// batch tiles x row tiles x splits, `body` building it; then the
/// linear_epilogue of that workspace.
void launchGroupGemmKernel(mlir::Operation *op, llvm::StringRef name,
                           const GroupGemmConfig &group,
                           const GroupGemmGeometry &geometry,
                           const LinearProblem &problem, StepBuffers &buffers,
                           KernelContext &ctx, GroupGemmBody body);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_GROUPGEMMBUILDER_H
