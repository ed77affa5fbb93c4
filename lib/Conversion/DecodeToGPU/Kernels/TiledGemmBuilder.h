//===- TiledGemmBuilder.h - MMA tiles staged through shared memory -*- C++
//-*-===//
//
// The body of a tiled GEMM kernel (Kernels/TiledGemm.cpp describes it): its
// config and geometry, the copies of a stage into shared memory, the MMAs of
// a stage, and the epilogue. Flash-LLM's SpMM (Kernels/FlashSpmm.cpp) reuses
// it with its own weight stage (sparse loads scattered into the tile) and
// pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDGEMMBUILDER_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDGEMMBUILDER_H

#include "../KernelRegistry.h"
#include "ClusterSplitSums.h"
#include "LinearArgs.h"
#include "RowXorSwizzle.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace fdc::gpu {
namespace arith = mlir::arith;
namespace vector = mlir::vector;
using mlir::ArrayRef;
using mlir::ImplicitLocOpBuilder;
using mlir::SmallVector;
using mlir::Type;
using mlir::Value;
using mlir::ValueRange;
using mlir::VectorType;
using mlir::gpu::Dimension;
using CmpIPredicate = mlir::arith::CmpIPredicate;

/// How a stage row's 16-byte chunks are permuted in shared memory, so that
/// the lanes of a fragment load read distinct banks.
enum class StageSwizzle {
  /// Odd rows XOR the chunk with a step's chunks (the tiled GEMM's): a
  /// step's lanes read chunks 0..3 of even rows, 4..7 of odd ones.
  OddRows,
  /// Row r XORs the chunk with r mod 8, the group MMA's 128-byte swizzle
  /// (GroupGemmBuilder.h), so that a Tiled-CSL tile's words fall into the
  /// same banks in both Flash-LLM kernels and one packed order
  /// (docs/model-library.md) serves both. A step's lanes then read
  /// interleaved chunks: a lane's k group g reads chunk 8 (s / 2) + 2 g +
  /// s % 2 of super-step s, so the 8 lanes of a load phase (two rows, k
  /// groups 0..3) cover the 8 chunks of a 128-byte row, as with OddRows.
  RowMod8,
};

/// The config of one tiled GEMM kernel.
struct TiledGemmConfig {
  int64_t warpsN, warpsM, rowTiles, batchTiles, kTile, stages, splitK;
  StageSwizzle swizzle = StageSwizzle::OddRows;
  int64_t subgroups() const { return warpsN * warpsM; }
};

/// The sizes that follow from a config, an MMA layout and the problem.
struct TiledGemmGeometry {
  TiledGemmGeometry(const TiledGemmConfig &config, const MmaLayout &layout,
                    const GpuPrimitives &target, Type element, bool gateUp) {
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    pieceLanes = target.vectorBytes() / elementBytes;
    laneRun = std::max(layout.kPerLane, pieceLanes);
    pieces = laneRun / pieceLanes;
    mmasPerStep = laneRun / layout.kPerLane;
    stepK = mmasPerStep * layout.k();
    halves = getWeightHalves(gateUp);
    blockRows = config.warpsN * config.rowTiles * layout.m();
    blockBatch = config.warpsM * config.batchTiles * layout.n();
    weightRows = halves * blockRows;
    stageRows = weightRows + blockBatch;
    chunksPerRow = config.kTile / pieceLanes;
    int64_t chunksPerStep = layout.kGroups() * pieces;
    // An XOR with a power of two whose double divides the row's chunk
    // count permutes the row's chunks.
    swizzleChunks = llvm::isPowerOf2_64(chunksPerStep) &&
                            chunksPerRow % (2 * chunksPerStep) == 0
                        ? chunksPerStep
                        : 0;
    // RowMod8 where a step reads four chunks of one 16-byte piece each and
    // rows are whole 128-byte groups of 8 chunks; else OddRows' rule.
    rowMod8 = config.swizzle == StageSwizzle::RowMod8 && chunksPerStep == 4 &&
              pieces == 1 && chunksPerRow % 8 == 0;
    stageElements = stageRows * config.kTile;
    sharedElements = config.stages * stageElements;
    sharedBytes = sharedElements * elementBytes;
    accumulators =
        halves * config.rowTiles * config.batchTiles * layout.accPerLane;
    clusterSumBytes = ClusterSplitSums::getBytes(blockRows, blockBatch, halves,
                                                 target.target());
  }

  /// Whether the splits of K add their sums inside a cluster
  /// (ClusterSplitSums::reducesInCluster) in the stage buffers.
  bool reducesInCluster(const TiledGemmConfig &config,
                        decode::GpuTargetAttr target) const {
    return ClusterSplitSums::reducesInCluster(config.splitK, target) &&
           clusterSumBytes <= sharedBytes;
  }

  /// K's tiles, and the tiles of a split (the last may have fewer).
  static int64_t getTiles(const TiledGemmConfig &config, int64_t k) {
    return (k + config.kTile - 1) / config.kTile;
  }
  static int64_t getTilesPerSplit(const TiledGemmConfig &config, int64_t k) {
    return (getTiles(config, k) + config.splitK - 1) / config.splitK;
  }

  int64_t pieceLanes, laneRun, pieces, mmasPerStep, stepK, halves;
  int64_t blockRows, blockBatch, weightRows, stageRows, chunksPerRow;
  int64_t swizzleChunks, stageElements, sharedElements, sharedBytes;
  int64_t accumulators, clusterSumBytes;
  /// Whether rows XOR their chunks with row mod 8 (StageSwizzle::RowMod8).
  bool rowMod8;

  /// The XOR of a stage row's chunks: row mod 8 (RowMod8), swizzleChunks on
  /// odd rows (OddRows where a step's chunks allow), or none.
  RowXorSwizzle rowSwizzle() const {
    if (rowMod8)
      return RowXorSwizzle::rowMod(8);
    if (swizzleChunks > 0)
      return RowXorSwizzle::oddRows(swizzleChunks);
    return RowXorSwizzle();
  }
};

/// One thread's share of a stage's copies: the source row (clamped in
/// bounds), the element offset of its destination in a stage, and its k
/// offset in the tile.
struct StageCopy {
  Value memref, sourceRow, destination, k;
  /// Whether the source row exists (rows past N or M are zero-filled, not
  /// read: many threads reading one clamped row would serialise).
  Value inBounds;
  /// Whether the thread has this copy (null: always).
  Value active;
};

/// A stage row's source: its row of the operand, clamped in bounds, and
/// whether it is in bounds.
struct SourceRow {
  Value row, inBounds;
};

/// Builds the kernel body; one instance per kernel.
class TiledGemmBuilder {
public:
  virtual ~TiledGemmBuilder() = default;
  TiledGemmBuilder(GpuEmitter &e, const MmaLayout &layout,
                   const TiledGemmConfig &config,
                   const TiledGemmGeometry &geometry,
                   const LinearProblem &problem,
                   const LinearOptionalArgs &optional)
      : e(e), b(e.builder()), target(e.target()), layout(layout),
        config(config), g(geometry), problem(problem), optional(optional) {
    pieceType = VectorType::get({g.pieceLanes}, problem.element);
    accType = VectorType::get({layout.accPerLane}, b.getF32Type());
  }

  /// The kernel: v are its arguments (inputs, output, optional operands,
  /// the implicit batch, then the shared memory).
  void build(ArrayRef<Value> v, int64_t implicitStart, int64_t workspaceIndex) {
    input = v[0];
    weight = v[1];
    out = v[2];
    shared = v.back();
    if (workspaceIndex >= 0)
      workspace = v[workspaceIndex];
    Value batch64 = v[implicitStart];
    batch = arith::IndexCastOp::create(b, b.getIndexType(), batch64);
    epilogue = optional.operands(v, out);

    lane = e.laneId();
    Value subgroup = e.subgroupId();
    warpN = arith::RemUIOp::create(b, subgroup, e.index(config.warpsN));
    warpM = arith::DivUIOp::create(b, subgroup, e.index(config.warpsN));
    // One op-creating call per argument list: the order of a call's
    // arguments is the C++ compiler's (see scripts/check-determinism.sh).
    Value blockX = e.blockId(Dimension::x);
    columnBase = arith::MulIOp::create(b, blockX, e.index(g.blockBatch));
    Value blockY = e.blockId(Dimension::y);
    rowBase = arith::MulIOp::create(b, blockY, e.index(g.blockRows));

    planK();
    planCopies();
    planFragments();
    SmallVector<Value> acc = accumulate();
    if (g.reducesInCluster(config, target.target()))
      reduceInCluster(acc);
    else if (workspace)
      storePartials(acc);
    else
      storeAccumulators(acc);
  }

protected:
  /// The block's run of K's tiles: all of them, or its split's.
  void planK() {
    KTileRun run = planKTileRun(
        e, TiledGemmGeometry::getTiles(config, problem.k), config.splitK);
    split = run.split;
    firstTile = run.firstTile;
    tileCount = run.tileCount;
  }

  int64_t accIndex(int64_t h, int64_t r, int64_t t) const {
    return (h * config.rowTiles + r) * config.batchTiles + t;
  }

  /// Chunk `chunk` of stage row `row` as an element offset in the stage:
  /// the chunk XOR the row's swizzle (rowSwizzleOf).
  Value chunkOffset(Value rowOffset, Value rowSwizzle, Value chunk) {
    if (rowSwizzle)
      chunk = RowXorSwizzle::apply(b, chunk, rowSwizzle);
    Value elements = arith::MulIOp::create(b, chunk, e.index(g.pieceLanes));
    return arith::AddIOp::create(b, rowOffset, elements);
  }
  /// The XOR of stage row `row`'s chunks (null without swizzling):
  /// TiledGemmGeometry::rowSwizzle's mask.
  Value rowSwizzleOf(Value row) {
    RowXorSwizzle swizzle = g.rowSwizzle();
    return swizzle.isIdentity() ? Value() : swizzle.rowMask(b, row);
  }

  /// The thread's copies of `rows` stage rows from `first` on; `source`
  /// maps a row of the region to its source row.
  void planRegion(Value memref, int64_t first, int64_t rows,
                  llvm::function_ref<SourceRow(Value)> source) {
    int64_t threads = config.subgroups() * target.subgroupSize();
    int64_t chunks = rows * g.chunksPerRow;
    Value thread = e.threadId();
    for (int64_t start = 0; start < chunks; start += threads) {
      Value chunk = arith::AddIOp::create(b, thread, e.index(start));
      StageCopy copy;
      copy.memref = memref;
      if (start + threads > chunks) {
        copy.active = e.cmpi(CmpIPredicate::ult, chunk, e.index(chunks));
        chunk = e.select(copy.active, chunk, e.index(0));
      }
      Value regionRow =
          arith::DivUIOp::create(b, chunk, e.index(g.chunksPerRow));
      Value column = arith::RemUIOp::create(b, chunk, e.index(g.chunksPerRow));
      SourceRow sourceRow = source(regionRow);
      copy.sourceRow = sourceRow.row;
      copy.inBounds = sourceRow.inBounds;
      Value row = arith::AddIOp::create(b, regionRow, e.index(first));
      Value rowOffset = arith::MulIOp::create(b, row, e.index(config.kTile));
      Value swizzle = rowSwizzleOf(row);
      copy.destination = chunkOffset(rowOffset, swizzle, column);
      copy.k = arith::MulIOp::create(b, column, e.index(g.pieceLanes));
      copies.push_back(copy);
    }
  }

  /// Every thread's copies: the weight rows (both halves), then the batch.
  virtual void planCopies() {
    planWeightCopies();
    planInputCopies();
  }
  void planWeightCopies() {
    planRegion(weight, 0, g.weightRows, [&](Value row) {
      Value half = arith::DivUIOp::create(b, row, e.index(g.blockRows));
      Value inHalf = arith::RemUIOp::create(b, row, e.index(g.blockRows));
      Value global = arith::AddIOp::create(b, rowBase, inHalf);
      Value inBounds = e.cmpi(CmpIPredicate::ult, global, e.index(problem.n));
      Value clamped = arith::MinUIOp::create(b, global, e.index(problem.n - 1));
      Value halfBase = arith::MulIOp::create(b, half, e.index(problem.n));
      Value source = arith::AddIOp::create(b, clamped, halfBase);
      return SourceRow{source, inBounds};
    });
  }
  /// The batch rows' copies.
  void planInputCopies() {
    Value lastColumn = arith::SubIOp::create(b, batch, e.index(1));
    planRegion(input, g.weightRows, g.blockBatch, [&](Value row) {
      Value global = arith::AddIOp::create(b, columnBase, row);
      Value inBounds = e.cmpi(CmpIPredicate::ult, global, batch);
      Value source = arith::MinUIOp::create(b, global, lastColumn);
      return SourceRow{source, inBounds};
    });
  }

  /// Starts the copies of the block's k tile `tile` (counted from its
  /// first) into stage buffer `buffer`.
  void copyTile(Value tile, Value buffer) {
    Value global = arith::AddIOp::create(b, firstTile, tile);
    Value tileK = arith::MulIOp::create(b, global, e.index(config.kTile));
    Value base = arith::MulIOp::create(b, buffer, e.index(g.stageElements));
    bool kTail = problem.k % config.kTile != 0;
    for (const StageCopy &copy : copies) {
      auto issue = [&] {
        Value k = arith::AddIOp::create(b, tileK, copy.k);
        Value valid = copy.inBounds;
        if (kTail) {
          Value inK = e.cmpi(CmpIPredicate::ult, k, e.index(problem.k));
          k = e.select(inK, k, e.index(0));
          valid = arith::AndIOp::create(b, valid, inK);
        }
        Value destination = arith::AddIOp::create(b, base, copy.destination);
        target.copyToShared(b, shared, ValueRange{destination}, copy.memref,
                            ValueRange{copy.sourceRow, k}, valid);
      };
      if (copy.active)
        e.ifThenElse(copy.active, issue);
      else
        issue();
    }
  }

  /// The stage rows and swizzles of this lane's A rows and B rows, and its
  /// first chunk of a super-step.
  void planFragments() {
    Value kGroup = target.getMmaKGroup(b, layout, lane);
    // RowMod8: k group g starts at chunk 2 g (see StageSwizzle).
    laneChunk =
        arith::MulIOp::create(b, kGroup, e.index(g.rowMod8 ? 2 : g.pieces));
    Value warpRows =
        arith::MulIOp::create(b, warpN, e.index(config.rowTiles * layout.m()));
    for (int64_t h = 0; h < g.halves; ++h)
      for (int64_t r = 0; r < config.rowTiles; ++r)
        for (int64_t j = 0; j < layout.aRowsPerLane; ++j) {
          Value laneRow = target.getMmaARow(b, layout, lane, j);
          Value tileRow = arith::AddIOp::create(
              b, laneRow, e.index(h * g.blockRows + r * layout.m()));
          Value row = arith::AddIOp::create(b, warpRows, tileRow);
          fragmentRows.push_back(row);
        }
    Value warpColumns = arith::MulIOp::create(
        b, warpM, e.index(config.batchTiles * layout.n()));
    for (int64_t t = 0; t < config.batchTiles; ++t) {
      Value laneColumn = target.getMmaBColumn(b, layout, lane);
      Value tileColumn = arith::AddIOp::create(
          b, laneColumn, e.index(g.weightRows + t * layout.n()));
      fragmentRows.push_back(arith::AddIOp::create(b, warpColumns, tileColumn));
    }
    for (Value row : fragmentRows) {
      fragmentOffsets.push_back(
          arith::MulIOp::create(b, row, e.index(config.kTile)));
      fragmentSwizzles.push_back(rowSwizzleOf(row));
    }
  }

  /// Fragment row `f`'s run of super-step `step` in the stage at `base`.
  Value loadRun(Value base, int64_t f, int64_t step) {
    SmallVector<Value> parts;
    for (int64_t p = 0; p < g.pieces; ++p) {
      int64_t first = g.rowMod8 ? 8 * (step / 2) + step % 2
                                : step * layout.kGroups() * g.pieces + p;
      Value chunk = arith::AddIOp::create(b, laneChunk, e.index(first));
      Value offset =
          chunkOffset(fragmentOffsets[f], fragmentSwizzles[f], chunk);
      Value index = arith::AddIOp::create(b, base, offset);
      parts.push_back(vector::LoadOp::create(
          b, pieceType, shared, ValueRange{index}, /*nontemporal=*/false,
          llvm::MaybeAlign(target.vectorBytes())));
    }
    return e.concatVectors(parts);
  }

  Value slice(Value run, int64_t s) { return e.mmaSlice(run, layout, s); }

  /// The MMAs of the stage in buffer `buffer` into `acc`.
  SmallVector<Value> multiplyStage(Value buffer, ValueRange acc) {
    Value base = arith::MulIOp::create(b, buffer, e.index(g.stageElements));
    int64_t aFragments = g.halves * config.rowTiles * layout.aRowsPerLane;
    SmallVector<Value> result(acc.begin(), acc.end());
    for (int64_t step = 0; step < config.kTile / g.stepK; ++step) {
      SmallVector<Value> runs;
      for (int64_t f = 0; f < static_cast<int64_t>(fragmentRows.size()); ++f)
        runs.push_back(loadRun(base, f, step));
      for (int64_t s = 0; s < g.mmasPerStep; ++s)
        for (int64_t h = 0; h < g.halves; ++h)
          for (int64_t r = 0; r < config.rowTiles; ++r) {
            SmallVector<Value> aRows;
            for (int64_t j = 0; j < layout.aRowsPerLane; ++j)
              aRows.push_back(slice(
                  runs[(h * config.rowTiles + r) * layout.aRowsPerLane + j],
                  s));
            for (int64_t t = 0; t < config.batchTiles; ++t) {
              Value &slot = result[accIndex(h, r, t)];
              slot = target.mma(b, layout, aRows,
                                slice(runs[aFragments + t], s), slot);
            }
          }
    }
    return result;
  }

  /// The pipeline over K's tiles: stages - 1 tiles in flight before the
  /// loop, one more started by each iteration.
  virtual SmallVector<Value> accumulate() {
    int64_t tiles = TiledGemmGeometry::getTiles(config, problem.k);
    int64_t fewest =
        config.splitK == 1
            ? tiles
            : tiles - (config.splitK - 1) * TiledGemmGeometry::getTilesPerSplit(
                                                config, problem.k);
    for (int64_t s = 0; s + 1 < config.stages; ++s) {
      // Tile s goes to buffer s; a split's last run may have fewer tiles.
      Value tile = e.index(s);
      if (s < fewest)
        copyTile(tile, tile);
      else if (config.splitK > 1 && s < tiles)
        e.ifThenElse(e.cmpi(CmpIPredicate::ult, tile, tileCount),
                     [&] { copyTile(tile, tile); });
      target.commitCopies(b);
    }
    Value zero = arith::ConstantOp::create(b, accType, b.getZeroAttr(accType));
    SmallVector<Value> acc(g.halves * config.rowTiles * config.batchTiles,
                           zero);
    Value lower = e.index(0);
    Value upper = tileCount;
    Value one = e.index(1);
    return e.reduce(
        lower, upper, one, acc, [&](Value tile, ValueRange carried) {
          // Tile `tile` has landed (this thread's copies), and every thread is
          // past the MMAs of tile - 1, whose buffer the next copies reuse.
          target.waitCopies(b, config.stages - 2);
          e.barrier();
          Value next =
              arith::AddIOp::create(b, tile, e.index(config.stages - 1));
          Value inK = e.cmpi(CmpIPredicate::ult, next, tileCount);
          e.ifThenElse(inK, [&] {
            Value buffer =
                arith::RemUIOp::create(b, next, e.index(config.stages));
            copyTile(next, buffer);
          });
          target.commitCopies(b);
          Value buffer =
              arith::RemUIOp::create(b, tile, e.index(config.stages));
          return multiplyStage(buffer, carried);
        });
  }

  /// For every element j of this lane's accumulators of row tile r and
  /// batch tile t: emits `body(r, t, j, row, column)` with its weight row and
  /// batch column counted from `rowOrigin` and `columnOrigin` (the block's
  /// first row and column, or null: from the block's own corner).
  void forEachAccumulator(
      Value rowOrigin, Value columnOrigin,
      llvm::function_ref<void(int64_t, int64_t, int64_t, Value, Value)> body) {
    Value warpRows =
        arith::MulIOp::create(b, warpN, e.index(config.rowTiles * layout.m()));
    if (rowOrigin)
      warpRows = arith::AddIOp::create(b, rowOrigin, warpRows);
    Value warpColumns = arith::MulIOp::create(
        b, warpM, e.index(config.batchTiles * layout.n()));
    if (columnOrigin)
      warpColumns = arith::AddIOp::create(b, columnOrigin, warpColumns);
    for (int64_t r = 0; r < config.rowTiles; ++r)
      for (int64_t t = 0; t < config.batchTiles; ++t)
        for (int64_t j = 0; j < layout.accPerLane; ++j) {
          auto [row, column] =
              target.getMmaAccumulator(b, layout, lane, e.index(j));
          Value tileRow =
              arith::AddIOp::create(b, row, e.index(r * layout.m()));
          Value weightRow = arith::AddIOp::create(b, warpRows, tileRow);
          Value tileColumn =
              arith::AddIOp::create(b, column, e.index(t * layout.n()));
          Value batchColumn = arith::AddIOp::create(b, warpColumns, tileColumn);
          body(r, t, j, weightRow, batchColumn);
        }
  }

  /// For every element j of this lane's accumulators of row tile r and
  /// batch tile t whose output (batch row m, feature n) is in bounds: emits
  /// `body(r, t, j, m, n)` under that condition.
  void forEachOutput(
      llvm::function_ref<void(int64_t, int64_t, int64_t, Value, Value)> body) {
    forEachAccumulator(
        rowBase, columnBase,
        [&](int64_t r, int64_t t, int64_t j, Value n, Value m) {
          Value inRows = e.cmpi(CmpIPredicate::ult, n, e.index(problem.n));
          Value inBatch = e.cmpi(CmpIPredicate::ult, m, batch);
          e.ifThenElse(arith::AndIOp::create(b, inRows, inBatch),
                       [&] { body(r, t, j, m, n); });
        });
  }

  /// Split-K: the block's sums into workspace[m][(split * halves + h) * N +
  /// n].
  void storePartials(ArrayRef<Value> acc) {
    Value splitBase =
        arith::MulIOp::create(b, split, e.index(g.halves * problem.n));
    forEachOutput([&](int64_t r, int64_t t, int64_t j, Value m, Value n) {
      for (int64_t h = 0; h < g.halves; ++h) {
        Value value = e.extract(acc[accIndex(h, r, t)], j);
        Value half =
            arith::AddIOp::create(b, splitBase, e.index(h * problem.n));
        Value column = arith::AddIOp::create(b, half, n);
        e.store(value, workspace, {m, column});
      }
    });
  }

  /// Split-K in a cluster of the split_k workgroups of a tile (grid z; see
  /// ClusterSplitSums.h): the block's sums in its stage buffers. No
  /// workspace, no second kernel.
  void reduceInCluster(ArrayRef<Value> acc) {
    // Every subgroup is past its MMAs before the stage buffers are reused.
    e.barrier();
    Value pointer =
        mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, shared);
    Value base = arith::IndexCastOp::create(b, b.getI64Type(), pointer);
    int64_t threads = config.subgroups() * target.subgroupSize();
    ClusterSplitSums sums(e, base, g.blockRows, g.blockBatch, g.halves,
                          config.splitK, threads);
    forEachAccumulator(Value(), Value(),
                       [&](int64_t r, int64_t t, int64_t j, Value blockRow,
                           Value blockColumn) {
                         for (int64_t h = 0; h < g.halves; ++h)
                           sums.store(h, blockColumn, blockRow,
                                      e.extract(acc[accIndex(h, r, t)], j));
                       });
    sums.reduce(split, e.threadId(), rowBase, columnBase, problem.n, batch,
                epilogue, problem.gateUp);
  }

  /// The epilogue of this lane's outputs, from its accumulators.
  void storeAccumulators(ArrayRef<Value> acc) {
    forEachOutput([&](int64_t r, int64_t t, int64_t j, Value m, Value n) {
      Value value = e.extract(acc[accIndex(0, r, t)], j);
      Value up =
          problem.gateUp ? e.extract(acc[accIndex(1, r, t)], j) : Value();
      emitLinearOutput(e, epilogue, m, n, value, up);
    });
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const GpuPrimitives &target;
  const MmaLayout &layout;
  const TiledGemmConfig &config;
  const TiledGemmGeometry &g;
  const LinearProblem &problem;
  const LinearOptionalArgs &optional;

  VectorType pieceType, accType;
  Value input, weight, out, batch, shared, workspace;
  /// The block's split of K (null without split-K), its first k tile and
  /// its number of k tiles.
  Value split, firstTile, tileCount;
  LinearEpilogueOperands epilogue;
  Value lane, warpN, warpM, rowBase, columnBase, laneChunk;
  SmallVector<StageCopy> copies;
  /// Per (half, row tile, A row slot), then per batch tile: the stage row
  /// this lane reads, its element offset and its swizzle.
  SmallVector<Value> fragmentRows, fragmentOffsets, fragmentSwizzles;
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDGEMMBUILDER_H
