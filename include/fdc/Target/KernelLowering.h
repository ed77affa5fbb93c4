//===- KernelLowering.h - shared kernel pipeline pieces ---------*- C++ -*-===//
//
// The vendors' kernel pipelines (lib/Target/NVPTX, lib/Target/AMDGPU) lower a
// `gpu.module` to the NVVM or ROCDL dialect. Kernel generators use the GPU
// dialect's target-neutral ops; what each vendor lowers differently (a
// `gpu.subgroup_reduce` becomes shuffles on NVIDIA, DPP on AMD) is a pattern
// set handed to the shared pass below.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_KERNELLOWERING_H
#define FDC_TARGET_KERNELLOWERING_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <functional>

namespace fdc::target {

/// How one vendor lowers `gpu.subgroup_reduce`.
struct SubgroupReduceLowering {
  /// Adds the rewrite patterns.
  std::function<void(mlir::RewritePatternSet &)> populatePatterns;
  /// Registers the dialects whose ops the patterns create.
  std::function<void(mlir::DialectRegistry &)> registerDialects;
};

/// A pass on a `gpu.module` that rewrites every `gpu.subgroup_reduce` with
/// `lowering`'s patterns and fails, naming the op, if one is left. A module
/// without one is not touched at all (no folding either), so the pass can sit
/// in every pipeline without changing kernels that do not reduce.
std::unique_ptr<mlir::Pass>
createLowerSubgroupReducesPass(SubgroupReduceLowering lowering);

/// A pass on a lowered `gpu.module` that gives the zero-length workgroup
/// globals that gpu.dynamic_shared_memory lowers to external linkage, so
/// the backend emits the launch-sized (dynamic) shared memory region.
std::unique_ptr<mlir::Pass> createExternDynamicSharedMemoryPass();

} // namespace fdc::target

#endif // FDC_TARGET_KERNELLOWERING_H
