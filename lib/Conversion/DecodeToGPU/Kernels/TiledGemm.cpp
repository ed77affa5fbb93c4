//===- TiledGemm.cpp - kernel family "tiled_gemm" -------------------------===//
//
// decode.linear for batches above the flat GEMM's range (the wide-tile
// variant of FlashDecoding++ §4-5): a block computes a tile of
// block_rows = warps_n * row_tiles * m output features by
// block_batch = warps_m * batch_tiles * n batch rows, on the target's MMA with
// the weight as the wide operand A and the batch as B, as the flat GEMM does.
//
// Where the flat GEMM loads every operand straight into a subgroup's
// registers (each subgroup's batch rows are its own), here the block stages
// K in tiles of k_tile through shared memory, so each weight element and
// each batch element crosses to the SM once per block and is read by every
// subgroup that needs it:
//
//   - the block's threads copy a stage (the weight rows, both halves for
//     SiLU-gate-up, then the batch rows, k_tile wide) with the target's
//     vector-wide copies (cp.async on NVIDIA, so the copies of tile k+stages-1
//     fly while tile k is multiplied);
//   - `stages` buffers rotate: at iteration k the block waits for tile k,
//     synchronises, starts the copies of tile k + stages - 1 into the buffer
//     tile k - 1 used, and multiplies tile k;
//   - each subgroup (warps_n x warps_m of them) reads its A rows and B rows
//     of the stage from shared memory in vector-wide runs of k, in the same
//     lane order as the flat GEMM, and accumulates in registers;
//   - each row of a stage is k_tile elements; when a row holds an even
//     number of super-steps of runs, odd rows swap the super-steps of each
//     pair (an XOR of the run index), so the two rows a quarter-warp reads
//     hit different banks.
//
// Grid x walks the batch tiles and grid y the weight tiles, so the blocks of
// one weight tile run together and share its HBM read through L2. Rows past
// N, batch rows past M and k past K are zero-filled in shared memory (on
// NVIDIA the copies then read nothing) and not stored. The epilogue (bias,
// SiLU-gate-up, residual) is the shared one, applied from the accumulators.
//
// Split-K (split_k > 1), for shapes whose tiles leave units idle: grid z
// splits K's tiles into split_k runs; each block stores its f32 sums into
// the op's workspace, [M][split_k * halves * N], and a second kernel,
// linear_epilogue, adds the splits and applies the epilogue. The sum is in a
// fixed order, so the result does not depend on which block ran first.
//
//===----------------------------------------------------------------------===//

#include "TiledGemmBuilder.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
TiledGemmConfig getTiledConfig(const KernelConfig &config) {
  return {config.get("warps_n"),   config.get("warps_m"),
          config.get("row_tiles"), config.get("batch_tiles"),
          config.get("k_tile"),    config.get("stages"),
          config.get("split_k")};
}

/// The threads of a block of the split-K epilogue.
constexpr int64_t kEpilogueThreads = 256;

class TiledGemmFamily : public KernelFamily {
public:
  StringRef getName() const override { return "tiled_gemm"; }
  bool canLower(Operation *op) const override {
    return isa<decode::LinearOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(op->getContext(), {{"warps_n", 2},
                                         {"warps_m", 2},
                                         {"row_tiles", 2},
                                         {"batch_tiles", 4},
                                         {"k_tile", 32},
                                         {"stages", 4},
                                         {"split_k", 1}});
  }
  /// A split-K kernel that reduces in its cluster takes none.
  int64_t getWorkspaceBytesPerRow(Operation *op, const KernelConfig &config,
                                  const GpuPrimitives &target) const override {
    auto linear = cast<decode::LinearOp>(op);
    TiledGemmConfig tiled = getTiledConfig(config);
    if (std::optional<MmaLayout> layout = getFlatGemmLayout(linear, target)) {
      TiledGemmGeometry geometry(
          tiled, *layout, target, linear.getInput().getType().getElementType(),
          linear.getActivation() == decode::Activation::silu_gate_up);
      if (geometry.reducesInCluster(tiled, target.target()))
        return 0;
    }
    return getSplitKWorkspaceBytesPerRow(linear, tiled.splitK);
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    auto linear = cast<decode::LinearOp>(op);
    std::optional<MmaLayout> layout = getFlatGemmLayout(linear, target);
    if (!layout)
      return op->emitOpError()
             << "cannot use kernel 'tiled_gemm': it needs f16 or bf16 input "
                "and weight, K a multiple of the target's vector width, and "
                "a target with a matrix multiply-accumulate for them";
    int64_t maxSubgroups = target.maxSubgroups();
    if (failed(checkRange(op, config, "warps_n", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "warps_m", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "row_tiles", 1, 4)) ||
        failed(checkRange(op, config, "batch_tiles", 1, 8)) ||
        failed(checkRange(op, config, "k_tile", 1, 256)) ||
        failed(checkRange(op, config, "stages", 2, 8)) ||
        failed(checkRange(op, config, "split_k", 1, 16)))
      return failure();
    TiledGemmConfig tiled = getTiledConfig(config);
    int64_t k =
        cast<RankedTensorType>(linear.getInput().getType()).getDimSize(1);
    int64_t tiles = TiledGemmGeometry::getTiles(tiled, k);
    if ((tiled.splitK - 1) * TiledGemmGeometry::getTilesPerSplit(tiled, k) >=
        tiles)
      return op->emitOpError()
             << "kernel 'tiled_gemm': split_k " << tiled.splitK
             << " leaves a split without k tiles (K = " << k << " has " << tiles
             << " tiles of " << tiled.kTile << ")";
    if (tiled.subgroups() > maxSubgroups)
      return op->emitOpError()
             << "kernel 'tiled_gemm': warps_n * warps_m = " << tiled.subgroups()
             << " subgroups exceed the target's " << maxSubgroups
             << " per workgroup";
    bool gateUp = linear.getActivation() == decode::Activation::silu_gate_up;
    Type element =
        cast<RankedTensorType>(linear.getWeight().getType()).getElementType();
    TiledGemmGeometry geometry(tiled, *layout, target, element, gateUp);
    if (tiled.kTile % geometry.stepK != 0)
      return op->emitOpError()
             << "kernel 'tiled_gemm': k_tile " << tiled.kTile
             << " must be a multiple of " << geometry.stepK
             << " (one vector-wide run of k per lane of the MMA)";
    if (geometry.sharedBytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel 'tiled_gemm': " << tiled.stages << " stages of "
             << geometry.stageRows << " x " << tiled.kTile << " elements take "
             << geometry.sharedBytes << " bytes of shared memory, more than "
             << "the " << target.target().getSharedMemory()
             << " a workgroup may use on the target";
    constexpr int64_t kMaxAccumulators = 128;
    if (geometry.accumulators > kMaxAccumulators)
      return op->emitOpError()
             << "kernel 'tiled_gemm': a lane would hold "
             << geometry.accumulators << " f32 accumulators (at most "
             << kMaxAccumulators << ")";
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto linear = cast<decode::LinearOp>(op);
    MmaLayout layout = *getFlatGemmLayout(linear, ctx.primitives);
    TiledGemmConfig tiled = getTiledConfig(config);
    LinearProblem problem(linear, buffers);
    Type element = problem.weight.type.getElementType();
    TiledGemmGeometry geometry(tiled, layout, ctx.primitives, element,
                               problem.gateUp);

    SmallVector<KernelArg> args = problem.args;
    const LinearOptionalArgs &optional = problem.optional;
    // Split-K: the splits add their sums in a cluster where the target has
    // them, else the sums go to the workspace, [M][split_k * halves * N].
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
    ctx.launch("linear", args, {gridX, gridY, ctx.hostIndex(tiled.splitK)},
               workgroup,
               KernelContext::SharedMemory{geometry.sharedElements, element},
               [&](GpuEmitter &e, ArrayRef<Value> v) {
                 TiledGemmBuilder(e, layout, tiled, geometry, problem, optional)
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

std::optional<decode::KernelAttr>
fdc::gpu::getTiledGemmKernel(decode::LinearOp op, const GpuPrimitives &target,
                             const TiledGemmShape &shape) {
  MLIRContext *context = op.getContext();
  Builder b(context);
  std::optional<MmaLayout> layout = getFlatGemmLayout(op, target);
  if (!layout)
    return std::nullopt;
  Type element =
      cast<RankedTensorType>(op.getWeight().getType()).getElementType();
  bool gateUp = op.getActivation() == decode::Activation::silu_gate_up;
  // A config the family refuses is not an error here: fewer stages are
  // tried, then none is returned.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  for (int64_t stages = shape.maxStages; stages >= 2; --stages) {
    TiledGemmConfig config{shape.warpsN,     shape.warpsM, shape.rowTiles,
                           shape.batchTiles, shape.kTile,  stages,
                           shape.splitK};
    TiledGemmGeometry geometry(config, *layout, target, element, gateUp);
    if (shape.maxSharedBytes > 0 && geometry.sharedBytes > shape.maxSharedBytes)
      continue;
    SmallVector<NamedAttribute> entries = {
        b.getNamedAttr("warps_n", b.getI64IntegerAttr(shape.warpsN)),
        b.getNamedAttr("warps_m", b.getI64IntegerAttr(shape.warpsM)),
        b.getNamedAttr("row_tiles", b.getI64IntegerAttr(shape.rowTiles)),
        b.getNamedAttr("batch_tiles", b.getI64IntegerAttr(shape.batchTiles)),
        b.getNamedAttr("k_tile", b.getI64IntegerAttr(shape.kTile)),
        b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
        b.getNamedAttr("split_k", b.getI64IntegerAttr(shape.splitK))};
    auto kernel = decode::KernelAttr::get(
        context, b.getStringAttr("tiled_gemm"), b.getDictionaryAttr(entries));
    FailureOr<decode::KernelAttr> complete = completeKernel(op, kernel, target);
    if (succeeded(complete))
      return *complete;
  }
  return std::nullopt;
}

std::unique_ptr<KernelFamily> fdc::gpu::createTiledGemmFamily() {
  return std::make_unique<TiledGemmFamily>();
}
