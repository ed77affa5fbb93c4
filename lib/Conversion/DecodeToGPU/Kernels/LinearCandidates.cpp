//===- LinearCandidates.cpp - the kernels fdc tune times per linear -------===//
//
// The configs worth timing for one decode.linear on one target: GEMV with
// its defaults, and, where a flat GEMM can lower the op, every flat GEMM of
// row_tiles {1, 2} x batch_tiles {1, 2, 4} x subgroups {4, 8, 16} (capped
// by the target's workgroup), k_unroll from the default table's register
// budget, 32 subgroups with up to 8 super-steps in flight, and ten tiled
// GEMMs: five tiles in static shared memory, a larger one in dynamic shared
// memory whole and split in K two to four ways, and one split four ways;
// on targets with a group MMA, group GEMMs (addGroupGemm).
// Each candidate is completed and checked by its family's verifier; one
// that fails is not listed. A family adds its candidates with one generator
// and one line in kGenerators.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
using Entries = SmallVector<std::pair<StringRef, int64_t>>;
using CandidateList = SmallVectorImpl<std::pair<StringRef, Entries>>;

/// A complete kernel's config as candidate entries.
Entries entriesOf(decode::KernelAttr kernel) {
  Entries entries;
  for (NamedAttribute entry : kernel.getConfig())
    entries.push_back({entry.getName().strref(),
                       cast<IntegerAttr>(entry.getValue()).getInt()});
  return entries;
}

/// 2, 4 and 8 rows a block where the workgroup holds them (which wins
/// varies with the shape and the epilogue; the default is one of them).
/// Weights no flat GEMM takes (f32, INT4) keep the default alone: nothing to
/// tune.
void addGemv(decode::LinearOp op, const GpuPrimitives &target,
             CandidateList &out) {
  if (!getFlatGemmLayout(op, target)) {
    out.push_back({"gemv", {}});
    return;
  }
  int64_t maxRows = target.maxSubgroups();
  for (int64_t rows : {2, 4, 8})
    if (rows <= maxRows)
      out.push_back({"gemv", {{"rows_per_block", rows}}});
}

void addFlatGemm(decode::LinearOp op, const GpuPrimitives &target,
                 CandidateList &out) {
  std::optional<MmaLayout> layout = getFlatGemmLayout(op, target);
  if (!layout)
    return;
  int64_t maxSubgroups = target.maxSubgroups();
  for (int64_t rowTiles : {1, 2})
    for (int64_t batchTiles : {1, 2, 4})
      for (int64_t subgroups : {4, 8, 16}) {
        if (subgroups > maxSubgroups)
          continue;
        // As the default table: 4 loads in flight with one B tile, 2 above.
        int64_t unroll = getFlatGemmUnroll(op, target, *layout, rowTiles,
                                           batchTiles, batchTiles == 1 ? 4 : 2);
        out.push_back({"flat_gemm",
                       {{"row_tiles", rowTiles},
                        {"batch_tiles", batchTiles},
                        {"subgroups", subgroups},
                        {"k_unroll", unroll}}});
      }
  // The most loads in flight: 32 subgroups, up to 8 super-steps each (on
  // the H100 the best at M <= 8 for K = 11008 by 5-7 %, not for K = 14336).
  if (maxSubgroups >= 32)
    for (int64_t batchTiles : {1, 2})
      out.push_back({"flat_gemm",
                     {{"row_tiles", 1},
                      {"batch_tiles", batchTiles},
                      {"subgroups", 32},
                      {"k_unroll", getFlatGemmUnroll(op, target, *layout, 1,
                                                     batchTiles, 8)}}});
}

/// Tiled GEMMs: the tiles that led H100 sweeps of the benchmark shapes at
/// M = 32..128, with as many stages (up to 4) as their shared memory holds
/// (static, or the target's whole shared memory). Each is spelled out
/// complete, so the verifier keeps its stages.
void addTiledGemm(decode::LinearOp op, const GpuPrimitives &target,
                  CandidateList &out) {
  int64_t sharedBytes = target.staticSharedBytes();
  for (TiledGemmShape tile :
       {TiledGemmShape{4, 1, 1, 4, 64, 4, 1, sharedBytes},
        TiledGemmShape{1, 4, 2, 2, 64, 4, 1, sharedBytes},
        TiledGemmShape{4, 2, 1, 4, 64, 4, 1, sharedBytes},
        TiledGemmShape{2, 2, 1, 4, 128, 4, 1, sharedBytes},
        TiledGemmShape{2, 2, 1, 2, 128, 4, 1, sharedBytes},
        // 128 x 64 tiles (on NVIDIA), k 64 wide, in dynamic shared memory,
        // whole and split in K (for N too small to fill the units: an H100
        // sweep's best at M = 32..128 with N = 4096).
        TiledGemmShape{2, 2, 4, 4, 64, 4, 1},
        TiledGemmShape{2, 2, 4, 4, 64, 4, 2},
        TiledGemmShape{2, 2, 4, 4, 64, 4, 3},
        TiledGemmShape{2, 2, 4, 4, 64, 4, 4},
        // 64 x 64 tiles split in four.
        TiledGemmShape{2, 2, 2, 4, 32, 4, 4, sharedBytes}}) {
    std::optional<decode::KernelAttr> kernel =
        getTiledGemmKernel(op, target, tile);
    if (kernel)
      out.push_back({"tiled_gemm", entriesOf(*kernel)});
  }
}

/// Group GEMMs (targets with a group MMA): batch tiles of 2, 4, 8 and 16
/// times the MMA's n step (16 to 128 columns for wgmma), one or two row
/// tiles per group and one or two groups, K whole or split two or four
/// ways, each with the most stages its shared memory holds up to 6 (two
/// or three blocks a unit) and up to kMaxGroupGemmStages (one block a unit,
/// the deepest pipeline; where they differ). Two
/// groups of two row tiles never led the H100 sweep of the benchmark shapes
/// and are left out.
void addGroupGemm(decode::LinearOp op, const GpuPrimitives &target,
                  CandidateList &out) {
  Type element = op.getInput().getType().getElementType();
  int64_t step = 0;
  for (decode::GroupMmaShapeAttr shape : target.target().getGroupMmaShapes())
    if (shape.getA() == element)
      step = shape.getNStep();
  if (step == 0)
    return;
  for (int64_t batch : {2 * step, 4 * step, 8 * step, 16 * step})
    for (auto [groups, rowTiles] :
         {std::pair<int64_t, int64_t>{1, 1}, {1, 2}, {2, 1}})
      for (int64_t splitK : {1, 2, 4})
        for (int64_t maxStages : {int64_t(6), kMaxGroupGemmStages}) {
          std::optional<decode::KernelAttr> kernel = getGroupGemmKernel(
              op, target, {groups, rowTiles, batch, maxStages, splitK});
          if (kernel)
            out.push_back({"group_gemm", entriesOf(*kernel)});
        }
}

using Generator = void (*)(decode::LinearOp, const GpuPrimitives &,
                           CandidateList &);
/// One line per family, in the order the candidates are listed.
constexpr Generator kGenerators[] = {
    addGemv,
    addFlatGemm,
    addTiledGemm,
    addGroupGemm,
};
} // namespace

SmallVector<decode::KernelAttr>
fdc::gpu::getLinearCandidates(decode::LinearOp op,
                              const GpuPrimitives &target) {
  SmallVector<std::pair<StringRef, Entries>> raw;
  for (Generator generate : kGenerators)
    generate(op, target, raw);
  MLIRContext *context = op.getContext();
  Builder b(context);
  SmallVector<decode::KernelAttr> candidates;
  // A candidate the family refuses is dropped silently.
  ScopedDiagnosticHandler quiet(context,
                                [](Diagnostic &) { return success(); });
  for (const auto &[family, entries] : raw) {
    SmallVector<NamedAttribute> attrs;
    for (auto [name, value] : entries)
      attrs.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
    auto kernel = decode::KernelAttr::get(context, b.getStringAttr(family),
                                          b.getDictionaryAttr(attrs));
    FailureOr<decode::KernelAttr> complete = completeKernel(op, kernel, target);
    if (succeeded(complete) && !llvm::is_contained(candidates, *complete))
      candidates.push_back(*complete);
  }
  return candidates;
}
