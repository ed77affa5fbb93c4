//===- AMDGPUSerializer.h - AMD kernels, code objects -----------*- C++ -*-===//
//
// `rocm:` targets: for every listed arch the gpu.module is lowered through
// ROCDL (subgroup reductions as DPP where the chip has it), compiled by the
// AMDGPU back end with the ROCm device libraries (ocml, ockl) linked in, and
// linked by ld.lld into an HSA code object. The library embeds
// `fdc_hsaco_<arch>` / `fdc_hsaco_<arch>_size`; the runtime's HIP backend
// loads the one of the device's arch.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_AMDGPU_AMDGPUSERIALIZER_H
#define FDC_TARGET_AMDGPU_AMDGPUSERIALIZER_H

#include "fdc/Target/GpuSerializer.h"

#include "mlir/Pass/PassManager.h"

namespace fdc::target::amdgpu {

/// Accepts the AMD archs of the known-targets table (gfx90a, gfx942,
/// gfx1100, ...); the error names the arch and the known AMD archs.
mlir::LogicalResult
checkArch(llvm::StringRef arch,
          llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The ROCDL kernel pipeline for `chip`, on a gpu.module: subgroup
/// reductions to DPP (shuffles where DPP does not apply) over
/// `subgroupSize` lanes, SCF to CF, GPU to ROCDL (64-bit indices), vector to
/// LLVM, canonicalize, CSE, reconcile casts.
void buildKernelPipeline(mlir::OpPassManager &pm, llvm::StringRef chip,
                         unsigned subgroupSize);

/// Registers `fdc-rocdl-kernels{chip=gfx942 subgroup-size=64}`
/// (buildKernelPipeline).
void registerKernelPipeline();

/// The serialiser of `rocm:` targets; the device libraries are in
/// `options.rocmDeviceLibsPath`.
std::unique_ptr<GpuSerializer>
createSerializer(const GpuToolchainOptions &options);

} // namespace fdc::target::amdgpu

#endif // FDC_TARGET_AMDGPU_AMDGPUSERIALIZER_H
