//===- FlashSpmm.cpp - kernel family "flash_spmm" -------------------------===//
//
// decode.sparse_linear as Flash-LLM's SpMM: load as sparse, compute as
// dense. A block computes one Tiled-CSL tile row (TN weight rows, both
// halves for SiLU-gate-up) by block_batch = batch_tiles * n batch rows, over
// K's tiles (TK wide) or its split of them, on the target's MMA with the
// weight as the wide operand A, as the tiled GEMM does
// (Kernels/TiledGemmBuilder.h). Per k tile:
//
//   - load as sparse: each thread holds `vectors` 16-byte vectors of the
//     tile's words (value | location) in registers, loaded `prefetch` tiles
//     ahead (their loads are the first thing an iteration issues), so only
//     the non-zeros cross HBM; words past what the registers hold are
//     loaded while the tile is scattered;
//   - expand: the block's threads store each word's value at its location
//     in a zeroed dense tile in shared memory (the layout's AOT order keeps
//     the 32 stores of a warp instruction in distinct banks where the banks
//     allow, on the 32 banks of 4 bytes it was made for, a format constant:
//     TiledCSLWords::keepsOrderBanks; other banks cost speed, not
//     correctness);
//   - compute as dense: the tiled GEMM's MMAs multiply the dense tile by the
//     batch rows, which cp.async (NVIDIA) copies into the same stage.
//
// Three stage buffers rotate so that one barrier per tile suffices: at
// iteration k the block issues the word loads of tile k+prefetch, starts
// the batch copies of tile k+1, zeroes buffer k+1 (whose MMAs, of tile k-2,
// every thread finished before the previous barrier), scatters tile k's
// words into buffer k, waits for tile k's batch copies, and after the
// barrier multiplies buffer k. Global->register loads of the next tiles
// thus overlap the scatter and MMAs of tile k (Flash-LLM's two-level
// overlap). Tile offsets are loaded one tile ahead of their words.
//
// Measured on the H100 (docs/perf.md): zeroing the whole buffer beats
// storing zeros at the previous tile's words (fewer, wider stores), and
// words two tiles ahead (prefetch = 2) gain nothing over one.
//
// Split-K and the epilogues are the tiled GEMM's: with split_k 2 the splits
// of a tile row add their f32 sums in a cluster where the target has them
// (sm_90; ClusterSplitSums.h), else they store them into the workspace and
// linear_epilogue adds them.
//
//===----------------------------------------------------------------------===//

#include "TiledCSLWords.h"
#include "TiledGemmBuilder.h"

#include "mlir/IR/Diagnostics.h"

#include <limits>

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
/// Stage buffers of the pipeline (see the file comment).
constexpr int64_t kStages = 3;
/// The threads of a block of the split-K epilogue.
constexpr int64_t kEpilogueThreads = 256;

/// The config of one Flash-LLM SpMM kernel.
struct FlashSpmmConfig {
  int64_t warpsN, rowTiles, batchTiles, splitK, vectors, prefetch;

  explicit FlashSpmmConfig(const KernelConfig &config)
      : warpsN(config.get("warps_n")), rowTiles(config.get("row_tiles")),
        batchTiles(config.get("batch_tiles")), splitK(config.get("split_k")),
        vectors(config.get("vectors")), prefetch(config.get("prefetch")) {}

  /// The tiled GEMM of the dense compute: one tile row by TK per stage, its
  /// rows swizzled as group_spmm's (StageSwizzle::RowMod8), for which the
  /// packed words are ordered.
  TiledGemmConfig getTiled(decode::TiledCSLType type) const {
    TiledGemmConfig tiled{warpsN,     /*warpsM=*/1,      rowTiles,
                          batchTiles, type.getTile()[1], kStages,
                          splitK};
    tiled.swizzle = StageSwizzle::RowMod8;
    return tiled;
  }
};

/// The MMA of a sparse linear: f16 or bf16 input, K a whole number of the
/// target's vector loads (the batch rows are copied in them), and an MMA
/// the target lists for the type.
std::optional<MmaLayout> getSpmmLayout(decode::SparseLinearOp op,
                                       const GpuPrimitives &target) {
  if (!isSpmmInput(op, target))
    return std::nullopt;
  return target.getMmaLayout(op.getInput().getType().getElementType());
}

/// Builds the kernel body; one instance per kernel.
class FlashSpmmBuilder : public TiledGemmBuilder {
public:
  FlashSpmmBuilder(GpuEmitter &e, const MmaLayout &layout,
                   const TiledGemmConfig &config,
                   const TiledGemmGeometry &geometry,
                   const LinearProblem &problem,
                   const LinearOptionalArgs &optional,
                   decode::TiledCSLType type, int64_t vectors, int64_t prefetch)
      : TiledGemmBuilder(e, layout, config, geometry, problem, optional),
        type(type), vectors(vectors), prefetch(prefetch),
        threads(config.subgroups() * e.target().subgroupSize()) {}

protected:
  /// Only the batch rows are copied; the weight is scattered.
  void planCopies() override { planInputCopies(); }

  SmallVector<Value> accumulate() override {
    words.emplace(e, weight, type, problem.element, threads, vectors,
                  tileCount);
    words->planOffsets(g.halves, problem.n, firstTile);
    // Prologue: buffer 0's weight rows zeroed, tile 0's batch rows in
    // flight, the offsets of tiles 0 .. prefetch + 1 and the words of tiles
    // 0 .. prefetch - 1 loaded.
    Value tileZero = e.index(0);
    zeroRows(tileZero, 0, g.weightRows);
    copyTile(tileZero, tileZero);
    target.commitCopies(b);
    SmallVector<Value> init;
    Value zero = arith::ConstantOp::create(b, accType, b.getZeroAttr(accType));
    int64_t accumulators = g.halves * config.rowTiles * config.batchTiles;
    init.append(accumulators, zero);
    int64_t offsetsPerHalf = prefetch + 2;
    SmallVector<Value> offsets;
    for (int64_t h = 0; h < g.halves; ++h)
      for (int64_t j = 0; j < offsetsPerHalf; ++j)
        offsets.push_back(words->loadOffset(h, e.index(j)));
    for (int64_t ahead = 0; ahead < prefetch; ++ahead)
      for (int64_t h = 0; h < g.halves; ++h) {
        int64_t first = h * offsetsPerHalf + ahead;
        SmallVector<Value> loaded =
            words->loadWords(offsets[first], offsets[first + 1]);
        init.append(loaded);
      }
    init.append(offsets);
    // Every thread's zeroes of buffer 0 before any thread's scatter.
    e.barrier();

    Value lower = e.index(0);
    Value one = e.index(1);
    int64_t wordValues = prefetch * g.halves * vectors;
    SmallVector<Value> results = e.reduce(
        lower, tileCount, one, init, [&](Value tile, ValueRange carried) {
          ValueRange acc = carried.take_front(accumulators);
          ValueRange tileWords = carried.slice(accumulators, wordValues);
          ValueRange carriedOffsets =
              carried.drop_front(accumulators + wordValues);
          return step(tile, acc, tileWords, carriedOffsets);
        });
    results.resize(accumulators);
    // With a workspace, linear_epilogue adds the splits' sums after this
    // kernel: once a block's MMAs are done it lets that kernel launch (its
    // blocks wait for this kernel's end before they read the sums), so that
    // its launch overlaps the last blocks' stores. H100, the benchmark's 45
    // sparse cases in one process: 0.5 % faster in geomean at 90 % (0.4 at
    // 80 %), where signalling at the block's start gained 0.2 %.
    if (workspace)
      target.releaseDependents(b);
    return results;
  }

private:
  /// One iteration of the pipeline: returns the next carried values (the
  /// accumulators, the words of tiles k+1 .. k+prefetch, and per half the
  /// offsets of tiles k+1 .. k+prefetch+2). `registers` holds those of tiles
  /// k .. k+prefetch-1 (per tile, per half), `offsets` per half those of
  /// tiles k .. k+prefetch+1.
  SmallVector<Value> step(Value tile, ValueRange acc, ValueRange registers,
                          ValueRange offsets) {
    int64_t offsetsPerHalf = prefetch + 2;
    int64_t tileWords = g.halves * vectors;
    // Tile k+prefetch's words first: they fly during the work of tiles
    // k .. k+prefetch-1.
    SmallVector<Value> nextWords;
    for (int64_t h = 0; h < g.halves; ++h) {
      int64_t first = h * offsetsPerHalf + prefetch;
      SmallVector<Value> loaded =
          words->loadWords(offsets[first], offsets[first + 1]);
      nextWords.append(loaded);
    }
    Value next = arith::AddIOp::create(b, tile, e.index(1));
    Value stages = e.index(kStages);
    Value nextBuffer = arith::RemUIOp::create(b, next, stages);
    Value buffer = arith::RemUIOp::create(b, tile, stages);
    // The batch rows of tile k+1, into the buffer tile k-2 used.
    Value hasNext = e.cmpi(CmpIPredicate::ult, next, tileCount);
    e.ifThenElse(hasNext, [&] { copyTile(next, nextBuffer); });
    target.commitCopies(b);
    // The offsets one tile ahead of the words loaded above.
    Value ahead = arith::AddIOp::create(b, tile, e.index(prefetch + 2));
    SmallVector<Value> newOffsets;
    for (int64_t h = 0; h < g.halves; ++h)
      newOffsets.push_back(words->loadOffset(h, ahead));
    // Tile k-2's buffer back to zeros for tile k+1: every thread finished
    // its MMAs before the previous barrier.
    zeroRows(nextBuffer, 0, g.weightRows);
    // Expand tile k: the words in registers, then any beyond them.
    for (int64_t h = 0; h < g.halves; ++h) {
      Value halfBase = halfBaseOf(buffer, h);
      Value begin = offsets[h * offsetsPerHalf];
      Value end = offsets[h * offsetsPerHalf + 1];
      words->forEachVector(registers.slice(h * vectors, vectors), begin, end,
                           [&](Value vector) { scatter(vector, halfBase); });
    }
    // Tile k's batch rows have landed (this thread's copies), and after the
    // barrier every thread's copies and scatters are visible.
    target.waitCopies(b, 1);
    e.barrier();
    SmallVector<Value> result = multiplyStage(buffer, acc);
    result.append(registers.begin() + tileWords, registers.end());
    result.append(nextWords);
    for (int64_t h = 0; h < g.halves; ++h) {
      auto first = offsets.begin() + h * offsetsPerHalf;
      result.append(first + 1, first + offsetsPerHalf);
      result.push_back(newOffsets[h]);
    }
    return result;
  }

  /// The element offset of half `h`'s weight rows in stage buffer `buffer`.
  Value halfBaseOf(Value buffer, int64_t h) {
    Value base = arith::MulIOp::create(b, buffer, e.index(g.stageElements));
    return arith::AddIOp::create(b, base,
                                 e.index(h * g.blockRows * config.kTile));
  }

  /// Stores the four words of `vector` into the dense tile of a half at
  /// `halfBase`: location r * TK + c goes to row r's chunk c / pieceLanes,
  /// XOR the row's swizzle, as the MMAs read it.
  void scatter(Value vector, Value halfBase) {
    RowXorSwizzle swizzle = g.rowSwizzle();
    for (int64_t j = 0; j < 4; ++j) {
      TiledCSLWord word = words->unpack(vector, j);
      Value element = word.location;
      if (!swizzle.isIdentity()) {
        Value row =
            arith::DivUIOp::create(b, word.location, e.i32(config.kTile));
        // The chunk XOR of rowSwizzleOf, in elements.
        Value mask = swizzle.rowMask(b, row, g.pieceLanes);
        element = RowXorSwizzle::apply(b, word.location, mask);
      }
      Value offset = arith::IndexCastUIOp::create(b, b.getIndexType(), element);
      Value position = arith::AddIOp::create(b, halfBase, offset);
      memref::StoreOp::create(b, word.value, shared, ValueRange{position});
    }
  }

  /// Zeroes `rows` weight rows of stage buffer `buffer` from `firstRow`.
  void zeroRows(Value buffer, int64_t firstRow, int64_t rows) {
    Value bufferBase =
        arith::MulIOp::create(b, buffer, e.index(g.stageElements));
    Value base =
        arith::AddIOp::create(b, bufferBase, e.index(firstRow * config.kTile));
    zeroShared(e, shared, base, rows * config.kTile, problem.element, threads);
  }

  decode::TiledCSLType type;
  /// Register vectors of words per thread and tile, and the tiles whose
  /// words are in flight.
  int64_t vectors, prefetch, threads;
  /// The weight's words (made once the kernel's arguments are known).
  std::optional<TiledCSLWords> words;
};

class FlashSpmmFamily : public KernelFamily {
public:
  StringRef getName() const override { return "flash_spmm"; }
  bool scattersTiledCSLWords() const override { return true; }
  bool canLower(Operation *op) const override {
    return isa<decode::SparseLinearOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    int64_t tileRows = sparse.getWeight().getType().getTile()[0];
    std::optional<MmaLayout> layout = getSpmmLayout(sparse, target);
    int64_t m = layout ? layout->m() : 16;
    // Four subgroups over the tile row where it holds them.
    int64_t warpsN = std::clamp<int64_t>(tileRows / m, 1, 4);
    int64_t rowTiles = std::max<int64_t>(1, tileRows / (m * warpsN));
    int64_t threads = warpsN * target.subgroupSize();
    int64_t vectors =
        TiledCSLWords::getDefaultVectors(sparse.getWeight().getType(), threads);
    return makeConfig(op->getContext(), {{"warps_n", warpsN},
                                         {"row_tiles", rowTiles},
                                         {"batch_tiles", 1},
                                         {"split_k", 1},
                                         {"vectors", vectors},
                                         {"prefetch", 1}});
  }
  /// A split-K kernel that reduces in its cluster takes none.
  int64_t getWorkspaceBytesPerRow(Operation *op, const KernelConfig &config,
                                  const GpuPrimitives &target) const override {
    int64_t splitK = config.get("split_k");
    if (splitK == 1)
      return 0;
    auto sparse = cast<decode::SparseLinearOp>(op);
    decode::TiledCSLType type = sparse.getWeight().getType();
    bool gateUp = sparse.getActivation() == decode::Activation::silu_gate_up;
    if (std::optional<MmaLayout> layout = getSpmmLayout(sparse, target)) {
      TiledGemmConfig tiled = FlashSpmmConfig(config).getTiled(type);
      TiledGemmGeometry geometry(tiled, *layout, target,
                                 sparse.getInput().getType().getElementType(),
                                 gateUp);
      if (geometry.reducesInCluster(tiled, target.target()))
        return 0;
    }
    int64_t n = sparse.getResult().getType().getDimSize(1);
    return splitK * getWeightHalves(gateUp) * n * 4;
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    std::optional<MmaLayout> layout = getSpmmLayout(sparse, target);
    if (!layout)
      return op->emitOpError()
             << "cannot use kernel 'flash_spmm': it needs f16 or bf16 input, "
                "K a multiple of the target's vector width, and a target "
                "with a matrix multiply-accumulate for them";
    int64_t maxSubgroups = target.maxSubgroups();
    if (failed(checkRange(op, config, "warps_n", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "row_tiles", 1, 4)) ||
        failed(checkRange(op, config, "batch_tiles", 1, 8)) ||
        failed(checkRange(op, config, "split_k", 1, 16)) ||
        failed(checkRange(op, config, "vectors", 0,
                          TiledCSLWords::kMaxRegisterVectors)) ||
        failed(checkRange(op, config, "prefetch", 1, 4)))
      return failure();
    FlashSpmmConfig spmm(config);
    decode::TiledCSLType type = sparse.getWeight().getType();
    int64_t tileRows = type.getTile()[0], tileCols = type.getTile()[1];
    int64_t blockRows = spmm.warpsN * spmm.rowTiles * layout->m();
    if (blockRows != tileRows)
      return op->emitOpError()
             << "kernel 'flash_spmm': warps_n * row_tiles * " << layout->m()
             << " = " << blockRows << " rows per block must be the tile's "
             << tileRows << " rows";
    int64_t n = sparse.getResult().getType().getDimSize(1);
    bool gateUp = sparse.getActivation() == decode::Activation::silu_gate_up;
    if (gateUp && n % tileRows != 0)
      return op->emitOpError()
             << "kernel 'flash_spmm': silu_gate_up needs the tile's "
             << tileRows << " rows to divide N = " << n
             << " (a tile would hold gate and up rows)";
    TiledGemmConfig tiled = spmm.getTiled(type);
    int64_t k = type.getShape()[1];
    int64_t tiles = TiledGemmGeometry::getTiles(tiled, k);
    if ((tiled.splitK - 1) * TiledGemmGeometry::getTilesPerSplit(tiled, k) >=
        tiles)
      return op->emitOpError()
             << "kernel 'flash_spmm': split_k " << tiled.splitK
             << " leaves a split without k tiles (K = " << k << " has " << tiles
             << " tiles of " << tileCols << ")";
    TiledGemmGeometry geometry(tiled, *layout, target,
                               sparse.getInput().getType().getElementType(),
                               gateUp);
    if (tileCols % geometry.stepK != 0)
      return op->emitOpError()
             << "kernel 'flash_spmm': the tile's " << tileCols
             << " columns must be a multiple of " << geometry.stepK
             << " (one vector-wide run of k per lane of the MMA)";
    if (geometry.sharedBytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel 'flash_spmm': " << kStages << " stages of "
             << geometry.stageRows << " x " << tileCols << " elements take "
             << geometry.sharedBytes << " bytes of shared memory, more than "
             << "the " << target.target().getSharedMemory()
             << " a workgroup may use on the target";
    constexpr int64_t kMaxAccumulators = 128;
    if (geometry.accumulators > kMaxAccumulators)
      return op->emitOpError()
             << "kernel 'flash_spmm': a lane would hold "
             << geometry.accumulators << " f32 accumulators (at most "
             << kMaxAccumulators << ")";
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto sparse = cast<decode::SparseLinearOp>(op);
    MmaLayout layout = *getSpmmLayout(sparse, ctx.primitives);
    decode::TiledCSLType type = sparse.getWeight().getType();
    FlashSpmmConfig spmm(config);
    TiledGemmConfig tiled = spmm.getTiled(type);
    LinearProblem problem(sparse, buffers);
    TiledGemmGeometry geometry(tiled, layout, ctx.primitives, problem.element,
                               problem.gateUp);

    SmallVector<KernelArg> args = problem.args;
    Buffer partials;
    int64_t workspaceIndex = -1;
    bool inCluster = geometry.reducesInCluster(tiled, ctx.primitives.target());
    if (tiled.splitK > 1 && !inCluster) {
      int64_t perRow = tiled.splitK * geometry.halves * problem.n;
      partials = buffers.workspace(MemRefType::get(
          {ShapedType::kDynamic, perRow}, Builder(op).getF32Type()));
      workspaceIndex = args.size();
      args.push_back(KernelArg::buffer(partials));
    }

    Value gridX =
        ctx.toIndex(ctx.ceilDiv(ctx.batch, ctx.hostI64(geometry.blockBatch)));
    Value gridY = ctx.hostIndex((problem.n + geometry.blockRows - 1) /
                                geometry.blockRows);
    size_t implicitStart = args.size();
    int64_t threads = tiled.subgroups() * ctx.subgroupSize();
    KernelContext::Workgroup workgroup(threads);
    if (inCluster)
      workgroup = KernelContext::Workgroup(threads, {1, 1, tiled.splitK});
    ctx.launch(
        "sparse_linear", args, {gridX, gridY, ctx.hostIndex(tiled.splitK)},
        workgroup,
        KernelContext::SharedMemory{geometry.sharedElements, problem.element},
        [&](GpuEmitter &e, ArrayRef<Value> v) {
          FlashSpmmBuilder(e, layout, tiled, geometry, problem,
                           problem.optional, type, spmm.vectors, spmm.prefetch)
              .build(v, implicitStart, workspaceIndex);
        });
    if (tiled.splitK > 1 && !inCluster)
      launchLinearEpilogue(ctx, kEpilogueThreads, partials, tiled.splitK,
                           problem.out, problem.bias, problem.residual,
                           problem.activation);
    return success();
  }
};
} // namespace

std::optional<decode::KernelDispatchAttr>
fdc::gpu::getDefaultSparseLinearDispatch(decode::SparseLinearOp op,
                                         const GpuPrimitives &target) {
  const KernelFamily *family = KernelRegistry::get().lookup("flash_spmm");
  std::optional<MmaLayout> layout = getSpmmLayout(op, target);
  if (!family || !layout)
    return std::nullopt;
  MLIRContext *context = op.getContext();
  Builder b(context);
  decode::TiledCSLType type = op.getWeight().getType();
  int64_t tileRows = type.getTile()[0];
  int64_t blocks =
      (op.getResult().getType().getDimSize(1) + tileRows - 1) / tileRows;
  int64_t tiles = type.getTilesPerRow();
  DictionaryAttr defaults = family->getDefaultConfig(op, target);
  // One batch tile per block up to the MMA's narrow side, then two, then
  // four (grid x covers larger batches); K split as chooseSplitK says.
  FlashSpmmConfig base{KernelConfig(defaults)};
  auto element =
      cast<RankedTensorType>(op.getInput().getType()).getElementType();
  bool gateUp = op.getActivation() == decode::Activation::silu_gate_up;
  auto splitFor = [&](int64_t batchTiles) {
    FlashSpmmConfig config = base;
    config.batchTiles = batchTiles;
    TiledGemmGeometry geometry(config.getTiled(type), *layout, target, element,
                               gateUp);
    int64_t resident = std::max<int64_t>(1, target.target().getSharedMemory() /
                                                geometry.sharedBytes);
    return chooseSpmmSplitK(blocks, tiles, resident * target.units());
  };
  auto kernel = [&](int64_t batchTiles) -> FailureOr<decode::KernelAttr> {
    // The family's defaults but these two (completeKernel fills them in).
    DictionaryAttr config = b.getDictionaryAttr(
        {b.getNamedAttr("batch_tiles", b.getI64IntegerAttr(batchTiles)),
         b.getNamedAttr("split_k", b.getI64IntegerAttr(splitFor(batchTiles)))});
    auto attr =
        decode::KernelAttr::get(context, b.getStringAttr("flash_spmm"), config);
    // A default the family refuses (shared memory, a gate-up tile straddling
    // the halves) leaves the op to sparse_row_scan, quietly.
    ScopedDiagnosticHandler quiet(context,
                                  [](Diagnostic &) { return success(); });
    return completeKernel(op, attr, target);
  };
  int64_t n = layout->n();
  SmallVector<int64_t> bounds;
  SmallVector<Attribute> kernels;
  for (int64_t wanted : {1, 2, 4}) {
    // From 9 rows on group_spmm's blocks of 16 and 32 where the target has
    // its group MMA. On the H100 in one process (docs/perf.md, 2026-12-06
    // 18:05-19:10 UTC) against flash_spmm: at M = 32 it gained 2-8 % at 80
    // % sparsity and 12-16 % at 90 % and lost up to 3 % at 70 %; at M = 16
    // it gained 1-4 % at 70 % and 2-8 % at 90 %, and between -1.5 and +3.8
    // % at 80 %. At M = 8 flash_spmm stays: there group_spmm lost at every
    // sparsity (16:35-16:50 UTC, up to 4 % at 80 %, the words in an order
    // for its swizzle's banks).
    FailureOr<decode::KernelAttr> chosen = failure();
    if (wanted >= 2)
      chosen = getDefaultGroupSpmmKernel(op, target, wanted * n);
    // Else the widest flash_spmm batch tile up to `wanted` whose stages fit
    // the target's shared memory.
    for (int64_t batchTiles = wanted; batchTiles >= 1 && failed(chosen);
         batchTiles /= 2)
      chosen = kernel(batchTiles);
    if (failed(chosen))
      return std::nullopt;
    if (!kernels.empty() && kernels.back() == *chosen) {
      if (wanted < 4)
        bounds.back() = wanted * n;
      else
        bounds.pop_back();
      continue;
    }
    if (wanted < 4)
      bounds.push_back(wanted * n);
    kernels.push_back(*chosen);
  }
  return decode::KernelDispatchAttr::get(
      context, b.getDenseI64ArrayAttr(bounds), b.getArrayAttr(kernels));
}

std::unique_ptr<KernelFamily> fdc::gpu::createFlashSpmmFamily() {
  return std::make_unique<FlashSpmmFamily>();
}
