//===- GroupSpmm.cpp - kernel family "group_spmm" -------------------------===//
//
// decode.sparse_linear as Flash-LLM's SpMM (load as sparse, compute as
// dense; Kernels/FlashSpmm.cpp) on the target's group MMA (sm_90a's wgmma),
// as the group GEMM runs a dense linear (Kernels/GroupGemmBuilder.h): the
// weight tile is the MMA's wide operand A, the batch (`batch` columns per
// block) the narrow operand B, both read by the MMA unit from shared memory
// in its swizzled K-major layout. A block is `groups` warpgroups of
// row_tiles MMA tiles each, one Tiled-CSL tile row (both halves for
// SiLU-gate-up) over K's tiles or its split of them; a tile's TK columns
// are one row of the layout (TK * element bytes = its row bytes).
//
// Against flash_spmm on the MMA, no thread reads operand fragments from
// shared memory (there, four warps each read the batch tile and the weight
// fragments per k tile; with M = 32 that was half of the block's shared
// memory instructions, H100 ncu), and a tile's MMAs run on while the block
// expands the next tile. Per k tile:
//
//   - load as sparse: each thread holds `vectors` 16-byte vectors of a
//     tile's words (TiledCSLWords) in registers, loaded one tile ahead of
//     their scatter; words past what the registers hold are loaded while
//     the tile is scattered;
//   - expand: the block's threads store each word's value at its location
//     in a zeroed stage, at the place the layout gives its (row, chunk)
//     (the packed order spreads a warp instruction's stores over the banks
//     of its 128-byte swizzle where the target's banks are the order's:
//     TiledCSLWords::keepsOrderBanks);
//   - compute as dense: the group MMAs of the stage, whose batch rows the
//     target's asynchronous copies brought in.
//
// Three stage buffers rotate with one barrier per tile. After the barrier
// of iteration k the block issues tile k's MMAs, then loads the words of
// tile k + 2, starts the batch copies of tile k + 1, zeroes the buffer of
// tile k + 2 (tile k - 1's, whose MMAs every thread waited for before the
// barrier), scatters tile k + 1 (into the buffer zeroed one iteration
// before), waits for its copies, fences its stores for the MMA unit, and
// waits for tile k's MMAs: the MMAs of tile k overlap the expansion of
// tile k + 1, and the word loads of tile k + 2 both.
//
// The default from 9 batch rows on (getDefaultSparseLinearDispatch;
// docs/perf.md): on the H100, in one process against flash_spmm, it was
// slower at M = 8, where the zeroing and the scatter bound a block and the
// one extra wait (tile k's MMAs before tile k + 1's barrier) is not
// hidden, and faster at M = 16 and 32 on most shapes and sparsities, where
// flash_spmm's MMAs and four warps' batch-fragment reads cost more.
//
// Split-K and the epilogues are the group GEMM's: with split_k 2 the
// splits of a tile row add their f32 sums in a cluster where the target has
// them (sm_90; ClusterSplitSums.h), else they store them into the workspace
// and linear_epilogue adds them (launched early: a block lets it launch once
// its MMAs are done).
//
//===----------------------------------------------------------------------===//

#include "GroupGemmBuilder.h"
#include "TiledCSLWords.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
/// Stage buffers of the pipeline (see the file comment).
constexpr int64_t kStages = 3;

/// The config of one group SpMM kernel.
struct GroupSpmmConfig {
  int64_t groups, rowTiles, batch, splitK, vectors;

  explicit GroupSpmmConfig(const KernelConfig &config)
      : groups(config.get("groups")), rowTiles(config.get("row_tiles")),
        batch(config.get("batch")), splitK(config.get("split_k")),
        vectors(config.get("vectors")) {}

  /// The group GEMM of the dense compute.
  GroupGemmConfig getGroup() const {
    return {groups, rowTiles, batch, kStages, splitK};
  }
};

/// The group MMA of a sparse linear at width `batch`: f16 or bf16 input, K
/// a whole number of the target's vector loads (the batch rows are copied
/// in them), and a group MMA the target lists for the type and width.
std::optional<GroupMmaLayout> getLayout(decode::SparseLinearOp op,
                                        const GpuPrimitives &target,
                                        int64_t batch) {
  if (!isSpmmInput(op, target))
    return std::nullopt;
  return target.getGroupMmaLayout(op.getInput().getType().getElementType(),
                                  batch);
}

/// Builds the kernel body; one instance per kernel.
class GroupSpmmBuilder : public GroupGemmBuilder {
public:
  GroupSpmmBuilder(GpuEmitter &e, const GroupMmaLayout &layout,
                   const GroupGemmConfig &config, const GroupGemmGeometry &g,
                   const LinearProblem &problem, decode::TiledCSLType type,
                   int64_t vectors)
      : GroupGemmBuilder(e, layout, config, g, problem,
                         /*releasesDependents=*/false),
        type(type), vectors(vectors) {}

protected:
  /// Only the batch rows are copied; the weight is scattered.
  void planCopies() override { planBatchCopies(); }

  SmallVector<Value> accumulate() override {
    words.emplace(e, weight, type, problem.element, g.threads, vectors,
                  tileCount);
    words->planOffsets(g.halves, problem.n, firstTile);
    // Prologue: the offsets of tiles 0 .. 3 and the words of tiles 0 and 1
    // (the model's weight: loaded before the kernel waits for the one
    // before it), buffers 0 and 1 zeroed, tile 0's batch rows copied and
    // its words scattered.
    SmallVector<Value> offsets;
    for (int64_t h = 0; h < g.halves; ++h)
      for (int64_t j = 0; j < kCarriedOffsets + 1; ++j)
        offsets.push_back(words->loadOffset(h, e.index(j)));
    SmallVector<Value> first, second;
    for (int64_t h = 0; h < g.halves; ++h) {
      int64_t base = h * (kCarriedOffsets + 1);
      SmallVector<Value> tile0 =
          words->loadWords(offsets[base], offsets[base + 1]);
      first.append(tile0);
    }
    for (int64_t h = 0; h < g.halves; ++h) {
      int64_t base = h * (kCarriedOffsets + 1);
      SmallVector<Value> tile1 =
          words->loadWords(offsets[base + 1], offsets[base + 2]);
      second.append(tile1);
    }
    if (problem.weightIsModelWeight)
      target.beginKernel(b);
    Value tileZero = e.index(0);
    zeroWeight(tileZero);
    zeroWeight(e.index(1));
    copyTile(tileZero, tileZero, StageCopies::Batch);
    target.commitCopies(b);
    // Every thread's zeroes before any thread's scatter.
    e.barrier();
    for (int64_t h = 0; h < g.halves; ++h) {
      int64_t base = h * (kCarriedOffsets + 1);
      scatterTile(tileZero, h, ValueRange(first).slice(h * vectors, vectors),
                  offsets[base], offsets[base + 1]);
    }
    target.waitCopies(b, 0);
    target.fenceSharedForGroupMma(b);

    SmallVector<Value> carried = second;
    for (int64_t h = 0; h < g.halves; ++h) {
      auto begin = offsets.begin() + h * (kCarriedOffsets + 1) + 1;
      carried.append(begin, begin + kCarriedOffsets);
    }
    int64_t accumulators = g.halves * config.rowTiles;
    int64_t wordValues = g.halves * vectors;
    auto iteration = [&](Value tile, ValueRange acc, ValueRange rest) {
      return step(tile, acc, rest.take_front(wordValues),
                  rest.drop_front(wordValues));
    };
    // The first tile outside the loop: its MMAs start the sums, so no
    // instruction but an MMA defines the accumulators (GroupGemmBuilder).
    SmallVector<Value> peeled = iteration(tileZero, {}, carried);
    SmallVector<Value> results = e.reduce(
        e.index(1), tileCount, peeled, [&](Value tile, ValueRange values) {
          return iteration(tile, values.take_front(accumulators),
                           values.drop_front(accumulators));
        });
    results.resize(accumulators);
    // With a workspace, linear_epilogue adds the splits' sums after this
    // kernel: once a block's MMAs are done it lets that kernel launch (as
    // flash_spmm does).
    if (workspace)
      target.releaseDependents(b);
    return results;
  }

private:
  /// Per half, the offsets an iteration carries: those of tiles k + 1 ..
  /// k + 3 at iteration k.
  static constexpr int64_t kCarriedOffsets = 3;

  /// One iteration of the pipeline (see the file comment): `registers`
  /// holds the words of tile k + 1 (per half), `offsets` per half those of
  /// tiles k + 1 .. k + 3. Returns the accumulators, the words of tile
  /// k + 2 and per half the offsets of tiles k + 2 .. k + 4.
  SmallVector<Value> step(Value tile, ValueRange acc, ValueRange registers,
                          ValueRange offsets) {
    // Tile k's batch rows and words are visible to the MMA unit (every
    // thread fenced them), and every thread is past tile k - 1's MMAs.
    e.barrier();
    Value stages = e.index(kStages);
    Value buffer = arith::RemUIOp::create(b, tile, stages);
    SmallVector<Value> result = issueStage(buffer, acc);
    // Tile k + 2's words fly while tile k + 1 is expanded.
    for (int64_t h = 0; h < g.halves; ++h) {
      auto first = offsets.begin() + h * kCarriedOffsets;
      SmallVector<Value> loaded = words->loadWords(first[1], first[2]);
      result.append(loaded);
    }
    Value ahead = arith::AddIOp::create(b, tile, e.index(kCarriedOffsets + 1));
    SmallVector<Value> newOffsets;
    for (int64_t h = 0; h < g.halves; ++h)
      newOffsets.push_back(words->loadOffset(h, ahead));
    Value next = arith::AddIOp::create(b, tile, e.index(1));
    Value nextBuffer = arith::RemUIOp::create(b, next, stages);
    Value hasNext = e.cmpi(CmpIPredicate::ult, next, tileCount);
    e.ifThenElse(hasNext,
                 [&] { copyTile(next, nextBuffer, StageCopies::Batch); });
    target.commitCopies(b);
    // Tile k - 1's buffer back to zeros for tile k + 2.
    Value afterNext = arith::AddIOp::create(b, tile, e.index(2));
    Value hasAfterNext = e.cmpi(CmpIPredicate::ult, afterNext, tileCount);
    e.ifThenElse(hasAfterNext, [&] {
      zeroWeight(arith::RemUIOp::create(b, afterNext, stages));
    });
    // Expand tile k + 1 (a tile past the block's has an empty run).
    for (int64_t h = 0; h < g.halves; ++h) {
      auto first = offsets.begin() + h * kCarriedOffsets;
      scatterTile(nextBuffer, h, registers.slice(h * vectors, vectors),
                  first[0], first[1]);
    }
    target.waitCopies(b, 0);
    target.fenceSharedForGroupMma(b);
    target.waitGroupMmas(b, 0);
    for (int64_t h = 0; h < g.halves; ++h) {
      auto first = offsets.begin() + h * kCarriedOffsets;
      result.append(first + 1, first + kCarriedOffsets);
      result.push_back(newOffsets[h]);
    }
    return result;
  }

  /// The element offset of stage buffer `buffer` in the shared allocation.
  Value stageBase(Value buffer) {
    Value offset = arith::MulIOp::create(
        b, buffer, e.index(g.stageBytes / g.elementBytes));
    return arith::AddIOp::create(b, padElements, offset);
  }

  /// Stores the words of the run [begin, end) of half `h` (this thread's
  /// `registers`, then the rest) into stage buffer `buffer`: location
  /// r * TK + c goes to column c of row r of the half's weight rows, in the
  /// group MMA's layout.
  void scatterTile(Value buffer, int64_t h, ValueRange registers, Value begin,
                   Value end) {
    Value base = stageBase(buffer);
    Value halfBase = arith::AddIOp::create(
        b, base, e.index(h * g.blockRows * g.rowBytes / g.elementBytes));
    int64_t chunkElements = target.vectorBytes() / g.elementBytes;
    words->forEachVector(registers, begin, end, [&](Value vector) {
      for (int64_t j = 0; j < decode::TiledCSLType::kWordsPerVector; ++j) {
        TiledCSLWord word = words->unpack(vector, j);
        Value location =
            arith::IndexCastUIOp::create(b, b.getIndexType(), word.location);
        Value row = arith::DivUIOp::create(b, location, e.index(g.kTile));
        Value column = arith::RemUIOp::create(b, location, e.index(g.kTile));
        Value chunk = arith::DivUIOp::create(b, column, e.index(chunkElements));
        Value inChunk =
            arith::RemUIOp::create(b, column, e.index(chunkElements));
        Value chunkBytes = target.getGroupMmaChunkOffset(b, layout, row, chunk);
        Value chunkStart =
            arith::DivUIOp::create(b, chunkBytes, e.index(g.elementBytes));
        Value inHalf = arith::AddIOp::create(b, chunkStart, inChunk);
        Value position = arith::AddIOp::create(b, halfBase, inHalf);
        memref::StoreOp::create(b, word.value, shared, ValueRange{position});
      }
    });
  }

  /// Zeroes the weight rows of stage buffer `buffer`.
  void zeroWeight(Value buffer) {
    zeroShared(e, shared, stageBase(buffer),
               g.weightRows * g.rowBytes / g.elementBytes, problem.element,
               g.threads);
  }

  decode::TiledCSLType type;
  /// Register vectors of words per thread and tile.
  int64_t vectors;
  /// The weight's words (made once the kernel's arguments are known).
  std::optional<TiledCSLWords> words;
};

class GroupSpmmFamily : public KernelFamily {
public:
  StringRef getName() const override { return "group_spmm"; }
  bool scattersTiledCSLWords() const override { return true; }
  bool canLower(Operation *op) const override {
    return isa<decode::SparseLinearOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    decode::TiledCSLType type = sparse.getWeight().getType();
    int64_t tileRows = type.getTile()[0];
    std::optional<GroupMmaLayout> layout = getLayout(sparse, target, 8);
    int64_t m = layout ? layout->m() : 64;
    int64_t groupThreads =
        (layout ? layout->subgroups() : 4) * target.subgroupSize();
    // One group over the tile row where it holds it (as flash_spmm's four
    // subgroups), and the registers for a tile's words at 70 % sparsity, as
    // flash_spmm has them.
    int64_t rowTiles = std::clamp<int64_t>(tileRows / m, 1, 4);
    int64_t groups = std::max<int64_t>(1, tileRows / (m * rowTiles));
    int64_t vectors =
        TiledCSLWords::getDefaultVectors(type, groups * groupThreads);
    return makeConfig(op->getContext(), {{"groups", groups},
                                         {"row_tiles", rowTiles},
                                         {"batch", 8},
                                         {"split_k", 1},
                                         {"vectors", vectors}});
  }
  /// A split-K kernel that reduces in its cluster takes none.
  int64_t getWorkspaceBytesPerRow(Operation *op, const KernelConfig &config,
                                  const GpuPrimitives &target) const override {
    GroupSpmmConfig spmm(config);
    if (spmm.splitK == 1)
      return 0;
    auto sparse = cast<decode::SparseLinearOp>(op);
    bool gateUp = sparse.getActivation() == decode::Activation::silu_gate_up;
    if (std::optional<GroupMmaLayout> layout =
            getLayout(sparse, target, spmm.batch)) {
      GroupGemmGeometry geometry(spmm.getGroup(), *layout, target,
                                 sparse.getInput().getType().getElementType(),
                                 gateUp);
      if (geometry.reducesInCluster(spmm.getGroup(), target.target()))
        return 0;
    }
    int64_t n = sparse.getResult().getType().getDimSize(1);
    return spmm.splitK * getWeightHalves(gateUp) * n * 4;
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    GroupSpmmConfig spmm(config);
    std::optional<GroupMmaLayout> layout =
        getLayout(sparse, target, spmm.batch);
    if (!layout)
      return op->emitOpError()
             << "cannot use kernel 'group_spmm' with batch " << spmm.batch
             << ": it needs f16 or bf16 input, K a multiple of the target's "
                "vector width, and a group MMA of the target "
                "(#decode.gpu_target's group_mma) of that width";
    int64_t groupThreads = layout->subgroups() * target.subgroupSize();
    int64_t maxGroups = target.target().getMaxWorkgroupSize() / groupThreads;
    if (failed(checkRange(op, config, "groups", 1, maxGroups)) ||
        failed(checkRange(op, config, "row_tiles", 1, 4)) ||
        failed(checkRange(op, config, "split_k", 1, 16)) ||
        failed(checkRange(op, config, "vectors", 0,
                          TiledCSLWords::kMaxRegisterVectors)))
      return failure();
    decode::TiledCSLType type = sparse.getWeight().getType();
    int64_t tileRows = type.getTile()[0], tileCols = type.getTile()[1];
    int64_t blockRows = spmm.groups * spmm.rowTiles * layout->m();
    if (blockRows != tileRows)
      return op->emitOpError()
             << "kernel 'group_spmm': groups * row_tiles * " << layout->m()
             << " = " << blockRows << " rows per block must be the tile's "
             << tileRows << " rows";
    Type element = sparse.getInput().getType().getElementType();
    bool gateUp = sparse.getActivation() == decode::Activation::silu_gate_up;
    GroupGemmConfig group = spmm.getGroup();
    GroupGemmGeometry geometry(group, *layout, target, element, gateUp);
    if (tileCols != geometry.kTile)
      return op->emitOpError()
             << "kernel 'group_spmm': the tile's " << tileCols
             << " columns must be one row of the group MMA's layout ("
             << geometry.kTile << " elements)";
    int64_t n = sparse.getResult().getType().getDimSize(1);
    if (gateUp && n % tileRows != 0)
      return op->emitOpError()
             << "kernel 'group_spmm': silu_gate_up needs the tile's "
             << tileRows << " rows to divide N = " << n
             << " (a tile would hold gate and up rows)";
    int64_t k = type.getShape()[1];
    int64_t tiles = GroupGemmGeometry::getTiles(geometry.kTile, k);
    if ((spmm.splitK - 1) * GroupGemmGeometry::getTilesPerSplit(
                                geometry.kTile, spmm.splitK, k) >=
        tiles)
      return op->emitOpError()
             << "kernel 'group_spmm': split_k " << spmm.splitK
             << " leaves a split without k tiles (K = " << k << " has " << tiles
             << " tiles of " << tileCols << ")";
    if (geometry.sharedBytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel 'group_spmm': " << kStages << " stages of "
             << geometry.stageBytes << " bytes take " << geometry.sharedBytes
             << " bytes of shared memory with the alignment, more than the "
             << target.target().getSharedMemory()
             << " a workgroup may use on the target";
    if (geometry.accumulators > GroupGemmGeometry::kMaxAccumulators)
      return op->emitOpError()
             << "kernel 'group_spmm': a thread would hold "
             << geometry.accumulators << " f32 accumulators (at most "
             << GroupGemmGeometry::kMaxAccumulators << ")";
    // A thread holds two tiles' words (one scattered, one in flight).
    int64_t wordRegisters = 2 * geometry.halves * spmm.vectors *
                            decode::TiledCSLType::kWordsPerVector;
    int64_t perThread = geometry.accumulators + wordRegisters +
                        GroupGemmGeometry::kOtherRegisters;
    int64_t registers = target.registersPerWorkgroup();
    if (registers > 0 && geometry.threads * perThread > registers)
      return op->emitOpError()
             << "kernel 'group_spmm': " << geometry.threads << " threads of "
             << geometry.accumulators << " accumulators, " << wordRegisters
             << " word registers and " << GroupGemmGeometry::kOtherRegisters
             << " others exceed the target's " << registers
             << " registers per workgroup";
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    GroupSpmmConfig spmm(config);
    GroupGemmConfig group = spmm.getGroup();
    GroupMmaLayout layout = *getLayout(sparse, ctx.primitives, spmm.batch);
    decode::TiledCSLType type = sparse.getWeight().getType();
    LinearProblem problem(sparse, buffers);
    GroupGemmGeometry geometry(group, layout, ctx.primitives, problem.element,
                               problem.gateUp);

    launchGroupGemmKernel(op, "sparse_linear", group, geometry, problem,
                          buffers, ctx,
                          [&](GpuEmitter &e, ArrayRef<Value> v,
                              size_t implicitStart, int64_t workspaceIndex) {
                            GroupSpmmBuilder(e, layout, group, geometry,
                                             problem, type, spmm.vectors)
                                .build(v, implicitStart, workspaceIndex);
                          });
    return success();
  }
};
} // namespace

FailureOr<decode::KernelAttr> fdc::gpu::getDefaultGroupSpmmKernel(
    decode::SparseLinearOp op, const GpuPrimitives &target, int64_t batch) {
  const KernelFamily *family = KernelRegistry::get().lookup("group_spmm");
  std::optional<GroupMmaLayout> layout = getLayout(op, target, batch);
  if (!family || !layout)
    return failure();
  MLIRContext *context = op.getContext();
  Builder b(context);
  DictionaryAttr defaults = family->getDefaultConfig(op, target);
  GroupSpmmConfig config{KernelConfig(defaults)};
  config.batch = batch;
  GroupGemmGeometry geometry(config.getGroup(), *layout, target,
                             op.getInput().getType().getElementType(),
                             op.getActivation() ==
                                 decode::Activation::silu_gate_up);
  decode::TiledCSLType type = op.getWeight().getType();
  int64_t tileRows = type.getTile()[0];
  int64_t blocks =
      (op.getResult().getType().getDimSize(1) + tileRows - 1) / tileRows;
  int64_t resident = std::max<int64_t>(1, target.target().getSharedMemory() /
                                              geometry.sharedBytes);
  int64_t splitK = chooseSpmmSplitK(blocks, type.getTilesPerRow(),
                                    resident * target.units());
  // The family's defaults but these two (completeKernel fills them in).
  DictionaryAttr overrides = b.getDictionaryAttr(
      {b.getNamedAttr("batch", b.getI64IntegerAttr(batch)),
       b.getNamedAttr("split_k", b.getI64IntegerAttr(splitK))});
  auto attr = decode::KernelAttr::get(context, b.getStringAttr("group_spmm"),
                                      overrides);
  // A default the family refuses (shared memory, registers, a gate-up tile
  // straddling the halves) leaves the batch to flash_spmm, quietly.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  return completeKernel(op, attr, target);
}

std::unique_ptr<KernelFamily> fdc::gpu::createGroupSpmmFamily() {
  return std::make_unique<GroupSpmmFamily>();
}
