//===- AMDGPUPipeline.cpp - a gpu.module to the ROCDL dialect -------------===//

#include "XorShuffleRewrite.h"

#include "fdc/Target/AMDGPU/AMDGPUSerializer.h"
#include "fdc/Target/KernelLowering.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/AMDGPU/Utils/Chipset.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace fdc;
using target::SubgroupReduceLowering;

namespace {
struct KernelPipelineOptions
    : public PassPipelineOptions<KernelPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("AMDGPU chip, e.g. gfx942"),
                           llvm::cl::init("gfx942")};
  Option<unsigned> subgroupSize{*this, "subgroup-size",
                                llvm::cl::desc("Lanes of a wave: 32 or 64"),
                                llvm::cl::init(64)};
};

/// DPP (row shifts and broadcasts, permlane on RDNA) for the reductions over
/// contiguous lanes the chip supports, butterfly shuffles (ds_bpermute) for
/// the rest; vector reductions wider than 32 bits are split first.
SubgroupReduceLowering dppLowering(StringRef chip, unsigned subgroupSize) {
  FailureOr<mlir::amdgpu::Chipset> chipset = mlir::amdgpu::Chipset::parse(chip);
  SubgroupReduceLowering lowering;
  lowering.populatePatterns = [chipset,
                               subgroupSize](RewritePatternSet &patterns) {
    populateGpuBreakDownSubgroupReducePatterns(
        patterns, /*maxShuffleBitwidth=*/32, /*benefit=*/3);
    if (succeeded(chipset)) {
      populateGpuLowerSubgroupReduceToDPPPatterns(patterns, subgroupSize,
                                                  *chipset, /*benefit=*/2);
      populateGpuLowerClusteredSubgroupReduceToDPPPatterns(
          patterns, subgroupSize, *chipset, /*benefit=*/2);
    }
    populateGpuLowerSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, /*shuffleBitwidth=*/32, /*benefit=*/1);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, /*shuffleBitwidth=*/32, /*benefit=*/1);
  };
  lowering.registerDialects = [](DialectRegistry &registry) {
    registry
        .insert<arith::ArithDialect, mlir::amdgpu::AMDGPUDialect,
                gpu::GPUDialect, ROCDL::ROCDLDialect, vector::VectorDialect>();
  };
  return lowering;
}
} // namespace

void target::amdgpu::buildKernelPipeline(OpPassManager &pm, StringRef chip,
                                         unsigned subgroupSize) {
  pm.addPass(
      target::createLowerSubgroupReducesPass(dppLowering(chip, subgroupSize)));
  FailureOr<mlir::amdgpu::Chipset> chipset = mlir::amdgpu::Chipset::parse(chip);
  if (succeeded(chipset) && chipset->majorVersion >= 10 && subgroupSize == 64)
    pm.addPass(target::amdgpu::createRewriteXorShufflesPass(chip, *chipset));
  pm.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToROCDLOpsOptions rocdl;
  rocdl.chipset = chip.str();
  // Kernel arguments and host-computed sizes are 64-bit.
  rocdl.indexBitwidth = 64;
  rocdl.runtime = gpu::amd::Runtime::HIP;
  pm.addPass(createConvertGpuOpsToROCDLOps(rocdl));
  pm.addPass(target::createExternDynamicSharedMemoryPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void target::amdgpu::registerKernelPipeline() {
  PassPipelineRegistration<KernelPipelineOptions>(
      "fdc-rocdl-kernels",
      "fdc's ROCDL kernel pipeline on a gpu.module (what fdc compile runs "
      "for each arch of a rocm target before serialising)",
      [](OpPassManager &pm, const KernelPipelineOptions &options) {
        buildKernelPipeline(pm, options.chip, options.subgroupSize);
      });
}
