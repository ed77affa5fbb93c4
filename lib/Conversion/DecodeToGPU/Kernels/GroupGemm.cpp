//===- GroupGemm.cpp - kernel family "group_gemm" -------------------------===//
//
// decode.linear on the target's group MMA (#decode.group_mma: sm_90a's
// wgmma), the flat GEMM's operand swap on the largest MMA there is: the
// weight is the wide operand A (the MMA's m rows, 64 for wgmma) and the
// batch, padded to the MMA's n step (8 for wgmma), is the narrow operand B,
// `batch` columns per block. Both operands are read by the MMA unit itself from
// shared memory, so no thread spends registers or issue slots on operand
// fragments; the block's threads only copy.
//
//   - A block has `groups` groups of subgroups (warpgroups); each group
//     computes row_tiles MMA tiles of m weight rows (both halves for
//     SiLU-gate-up) by the block's `batch` columns, so the block covers
//     groups * row_tiles * m rows by `batch` batch rows.
//   - K streams through `stages` shared-memory buffers of one tile row width
//     (the MMA's row_bytes: 64 16-bit elements for wgmma), in the K-major
//     layout the MMA reads (the vendor's swizzle, getGroupMmaChunkOffset), with
//     the target's vector-wide asynchronous copies (cp.async): at iteration k
//     the block waits for tile k, fences it for the MMA unit, synchronises,
//     starts the copies of tile k + stages - 1 into the buffer tile k - 1
//     used, then issues tile k's MMAs and waits for them.
//   - With the target's dependent launch, a block may start while the
//     kernel before it on the stream ends: where the weight is the model's
//     (which no kernel of the step writes), the block copies its first
//     tiles' weight rows (up to kEarlyWeightBytes) before it waits for that
//     kernel, and the batch rows after. Where the step's next kernel is a
//     linear's (KernelContext::releasesDependents), a block lets it launch
//     once it has issued its last copies, so that its blocks take the units
//     this one's leave and start their weight copies there. A block of a
//     wide batch tile (kWideBatchTile) does neither where the batch has
//     several tiles.
//   - Grid x walks the batch tiles, grid y the weight tiles, grid z the
//     splits of K (split_k). Where the target groups split_k workgroups
//     into a cluster (#decode.gpu_target's cluster_workgroups: sm_90) and
//     split_k is 2 (ClusterSplitSums::kMaxSplits), the splits of a tile
//     form one: each stores its f32 sums in its own shared
//     memory, and after a cluster barrier split s adds, for its share of
//     the tile's outputs, the sums of splits 0 .. split_k - 1 in that order
//     from their shared memory and applies the epilogue; no workspace, no
//     second kernel. Otherwise, as the tiled GEMM: f32 sums into the
//     workspace, then linear_epilogue adds them in a fixed order.
//
// Rows past N, batch rows past M and k past K are zero-filled in shared
// memory (the copies read nothing there) and not stored; the epilogue (bias,
// SiLU-gate-up, residual) is the shared one.
//
//===----------------------------------------------------------------------===//

#include "GroupGemmBuilder.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
/// The threads of a block of the split-K epilogue.
constexpr int64_t kEpilogueThreads = 256;

/// The group MMA of `op` at width `batch`: f16 / bf16 input and weight of
/// one type and K a multiple of the vector width (as the flat GEMM needs),
/// and a target group MMA for them.
std::optional<GroupMmaLayout>
getLayout(decode::LinearOp op, const GpuPrimitives &target, int64_t batch) {
  if (!getFlatGemmLayout(op, target))
    return std::nullopt;
  Type element = op.getInput().getType().getElementType();
  return target.getGroupMmaLayout(element, batch);
}

class GroupGemmFamily : public KernelFamily {
public:
  StringRef getName() const override { return "group_gemm"; }
  bool canLower(Operation *op) const override {
    return isa<decode::LinearOp>(op);
  }
  bool readsReleasesDependents() const override { return true; }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(op->getContext(), {{"groups", 2},
                                         {"row_tiles", 1},
                                         {"batch", 64},
                                         {"stages", 4},
                                         {"split_k", 1}});
  }
  /// A split-K kernel that reduces in its cluster takes none.
  int64_t getWorkspaceBytesPerRow(Operation *op, const KernelConfig &config,
                                  const GpuPrimitives &target) const override {
    auto linear = cast<decode::LinearOp>(op);
    GroupGemmConfig group = GroupGemmConfig::get(config);
    if (std::optional<GroupMmaLayout> layout =
            getLayout(linear, target, group.batch)) {
      GroupGemmGeometry geometry(
          group, *layout, target, linear.getInput().getType().getElementType(),
          linear.getActivation() == decode::Activation::silu_gate_up);
      if (geometry.reducesInCluster(group, target.target()))
        return 0;
    }
    return getSplitKWorkspaceBytesPerRow(linear, group.splitK);
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    auto linear = cast<decode::LinearOp>(op);
    GroupGemmConfig group = GroupGemmConfig::get(config);
    std::optional<GroupMmaLayout> layout =
        getLayout(linear, target, group.batch);
    if (!layout)
      return op->emitOpError()
             << "cannot use kernel 'group_gemm' with batch " << group.batch
             << ": it needs f16 or bf16 input and weight, K a multiple of the "
                "target's vector width, and a group MMA of the target "
                "(#decode.gpu_target's group_mma) of that width";
    int64_t groupThreads = layout->subgroups() * target.subgroupSize();
    int64_t maxGroups = target.target().getMaxWorkgroupSize() / groupThreads;
    if (failed(checkRange(op, config, "groups", 1, maxGroups)) ||
        failed(checkRange(op, config, "row_tiles", 1, 4)) ||
        failed(checkRange(op, config, "stages", 2, kMaxGroupGemmStages)) ||
        failed(checkRange(op, config, "split_k", 1, 16)))
      return failure();
    Type element = linear.getInput().getType().getElementType();
    bool gateUp = linear.getActivation() == decode::Activation::silu_gate_up;
    GroupGemmGeometry geometry(group, *layout, target, element, gateUp);
    int64_t k = linear.getInput().getType().getDimSize(1);
    int64_t tiles = GroupGemmGeometry::getTiles(geometry.kTile, k);
    if ((group.splitK - 1) * GroupGemmGeometry::getTilesPerSplit(
                                 geometry.kTile, group.splitK, k) >=
        tiles)
      return op->emitOpError()
             << "kernel 'group_gemm': split_k " << group.splitK
             << " leaves a split without k tiles (K = " << k << " has " << tiles
             << " tiles of " << geometry.kTile << ")";
    if (geometry.sharedBytes > target.target().getSharedMemory())
      return op->emitOpError()
             << "kernel 'group_gemm': " << group.stages << " stages of "
             << geometry.stageBytes << " bytes take " << geometry.sharedBytes
             << " bytes of shared memory with the alignment, more than the "
             << target.target().getSharedMemory()
             << " a workgroup may use on the target";
    if (geometry.accumulators > GroupGemmGeometry::kMaxAccumulators)
      return op->emitOpError()
             << "kernel 'group_gemm': a thread would hold "
             << geometry.accumulators << " f32 accumulators (at most "
             << GroupGemmGeometry::kMaxAccumulators << ")";
    int64_t registers = target.registersPerWorkgroup();
    if (registers > 0 &&
        geometry.threads *
                (geometry.accumulators + GroupGemmGeometry::kOtherRegisters) >
            registers)
      return op->emitOpError()
             << "kernel 'group_gemm': " << geometry.threads << " threads of "
             << geometry.accumulators << " accumulators and "
             << GroupGemmGeometry::kOtherRegisters
             << " other registers exceed the target's " << registers
             << " registers per workgroup";
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto linear = cast<decode::LinearOp>(op);
    GroupGemmConfig group = GroupGemmConfig::get(config);
    GroupMmaLayout layout = *getLayout(linear, ctx.primitives, group.batch);
    LinearProblem problem(linear, buffers);
    GroupGemmGeometry geometry(group, layout, ctx.primitives, problem.element,
                               problem.gateUp);

    launchGroupGemmKernel(op, "linear", group, geometry, problem, buffers, ctx,
                          [&](GpuEmitter &e, ArrayRef<Value> v,
                              size_t implicitStart, int64_t workspaceIndex) {
                            GroupGemmBuilder(e, layout, group, geometry,
                                             problem, ctx.releasesDependents)
                                .build(v, implicitStart, workspaceIndex);
                          });
    return success();
  }
};
} // namespace

void fdc::gpu::launchGroupGemmKernel(Operation *op, StringRef name,
                                     const GroupGemmConfig &group,
                                     const GroupGemmGeometry &geometry,
                                     const LinearProblem &problem,
                                     StepBuffers &buffers, KernelContext &ctx,
                                     GroupGemmBody body) {
  SmallVector<KernelArg> args = problem.args;
  Buffer partials;
  int64_t workspaceIndex = -1;
  bool inCluster = geometry.reducesInCluster(group, ctx.primitives.target());
  if (group.splitK > 1 && !inCluster) {
    int64_t perRow = group.splitK * geometry.halves * problem.n;
    partials = buffers.workspace(MemRefType::get({ShapedType::kDynamic, perRow},
                                                 Builder(op).getF32Type()));
    workspaceIndex = args.size();
    args.push_back(KernelArg::buffer(partials));
  }
  Value gridX = ctx.toIndex(ctx.ceilDiv(ctx.batch, ctx.hostI64(group.batch)));
  Value gridY =
      ctx.hostIndex((problem.n + geometry.blockRows - 1) / geometry.blockRows);
  size_t implicitStart = args.size();
  KernelContext::Workgroup workgroup(geometry.threads);
  if (inCluster)
    workgroup =
        KernelContext::Workgroup(geometry.threads, {1, 1, group.splitK});
  workgroup.waitsInBody = true;
  ctx.launch(name, args, {gridX, gridY, ctx.hostIndex(group.splitK)}, workgroup,
             KernelContext::SharedMemory{
                 geometry.sharedBytes / geometry.elementBytes, problem.element},
             [&](GpuEmitter &e, ArrayRef<Value> v) {
               body(e, v, implicitStart, workspaceIndex);
             });
  if (group.splitK > 1 && !inCluster)
    launchLinearEpilogue(ctx, kEpilogueThreads, partials, group.splitK,
                         problem.out, problem.bias, problem.residual,
                         problem.activation);
}

std::optional<decode::KernelAttr>
fdc::gpu::getGroupGemmKernel(decode::LinearOp op, const GpuPrimitives &target,
                             const GroupGemmShape &shape) {
  MLIRContext *context = op.getContext();
  Builder b(context);
  // A config the family refuses is not an error here: fewer stages are
  // tried, then none is returned.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  std::optional<GroupMmaLayout> layout = getLayout(op, target, shape.batch);
  if (!layout || shape.maxStages < 2)
    return std::nullopt;
  // No more stages than a split's tiles fill (the prologue copies
  // stages - 1 of them).
  int64_t elementBytes =
      op.getInput().getType().getElementType().getIntOrFloatBitWidth() / 8;
  int64_t perSplit = GroupGemmGeometry::getTilesPerSplit(
      layout->rowBytes() / elementBytes, shape.splitK,
      op.getInput().getType().getDimSize(1));
  int64_t maxStages = std::clamp<int64_t>(perSplit + 1, 2, shape.maxStages);
  for (int64_t stages = maxStages; stages >= 2; --stages) {
    SmallVector<NamedAttribute> entries = {
        b.getNamedAttr("groups", b.getI64IntegerAttr(shape.groups)),
        b.getNamedAttr("row_tiles", b.getI64IntegerAttr(shape.rowTiles)),
        b.getNamedAttr("batch", b.getI64IntegerAttr(shape.batch)),
        b.getNamedAttr("stages", b.getI64IntegerAttr(stages)),
        b.getNamedAttr("split_k", b.getI64IntegerAttr(shape.splitK))};
    auto kernel = decode::KernelAttr::get(
        context, b.getStringAttr("group_gemm"), b.getDictionaryAttr(entries));
    FailureOr<decode::KernelAttr> complete = completeKernel(op, kernel, target);
    if (succeeded(complete))
      return *complete;
  }
  return std::nullopt;
}

std::unique_ptr<KernelFamily> fdc::gpu::createGroupGemmFamily() {
  return std::make_unique<GroupGemmFamily>();
}
