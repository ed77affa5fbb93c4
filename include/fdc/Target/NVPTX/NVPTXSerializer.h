//===- NVPTXSerializer.h - NVIDIA kernels: PTX and cubins -------*- C++ -*-===//
//
// `cuda:` targets: the gpu.module is lowered through NVVM, serialised to PTX
// for the oldest listed arch by MLIR's NVPTX back end (libdevice linked), and
// ptxas makes one cubin per arch. The library embeds `fdc_ptx` (the JIT
// fallback) and `fdc_cubin_sm_XX[a]` / `fdc_cubin_sm_XX[a]_size`.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_NVPTX_NVPTXSERIALIZER_H
#define FDC_TARGET_NVPTX_NVPTXSERIALIZER_H

#include "fdc/Target/GpuSerializer.h"

#include "mlir/Pass/PassManager.h"

namespace fdc::target::nvptx {

/// Accepts sm_XX with XX >= 70 and the architecture-specific sm_XXa with
/// XX >= 90.
mlir::LogicalResult
checkArch(llvm::StringRef arch,
          llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// The NVVM kernel pipeline, on a gpu.module: subgroup reductions to
/// shuffles over `subgroupSize` lanes, SCF to CF, GPU to NVVM, vector to
/// LLVM, canonicalize, CSE, reconcile casts.
void buildKernelPipeline(mlir::OpPassManager &pm, unsigned subgroupSize);

/// Registers `fdc-nvvm-kernels{subgroup-size=32}` (buildKernelPipeline).
void registerKernelPipeline();

/// The serialiser of `cuda:` targets; the toolkit is `options.cudaPath`.
std::unique_ptr<GpuSerializer>
createSerializer(const GpuToolchainOptions &options);

} // namespace fdc::target::nvptx

#endif // FDC_TARGET_NVPTX_NVPTXSERIALIZER_H
