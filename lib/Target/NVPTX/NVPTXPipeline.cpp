//===- NVPTXPipeline.cpp - a gpu.module to the NVVM dialect ---------------===//

#include "fdc/Target/KernelLowering.h"
#include "fdc/Target/NVPTX/NVPTXSerializer.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace fdc::target;

namespace {
struct KernelPipelineOptions
    : public PassPipelineOptions<KernelPipelineOptions> {
  Option<unsigned> subgroupSize{*this, "subgroup-size",
                                llvm::cl::desc("Lanes of a warp"),
                                llvm::cl::init(32)};
};

SubgroupReduceLowering shuffleLowering(unsigned subgroupSize) {
  SubgroupReduceLowering lowering;
  lowering.populatePatterns = [subgroupSize](RewritePatternSet &patterns) {
    populateGpuBreakDownSubgroupReducePatterns(
        patterns, /*maxShuffleBitwidth=*/32, /*benefit=*/2);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, subgroupSize,
                                                    /*shuffleBitwidth=*/32);
    populateGpuLowerClusteredSubgroupReduceToShufflePatterns(
        patterns, subgroupSize, /*shuffleBitwidth=*/32);
  };
  lowering.registerDialects = [](DialectRegistry &registry) {
    registry
        .insert<arith::ArithDialect, gpu::GPUDialect, vector::VectorDialect>();
  };
  return lowering;
}
} // namespace

void nvptx::buildKernelPipeline(OpPassManager &pm, unsigned subgroupSize) {
  pm.addPass(createLowerSubgroupReducesPass(shuffleLowering(subgroupSize)));
  pm.addPass(createSCFToControlFlowPass());
  // cp.async copies (nvgpu.device_async_copy) to nvvm.cp.async.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createConvertGpuOpsToNVVMOps());
  pm.addPass(createExternDynamicSharedMemoryPass());
  pm.addPass(createConvertVectorToLLVMPass());
  // NVVM ops that PTX expresses and LLVM has no intrinsic for (wgmma) to
  // inline PTX.
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void nvptx::registerKernelPipeline() {
  PassPipelineRegistration<KernelPipelineOptions>(
      "fdc-nvvm-kernels",
      "fdc's NVVM kernel pipeline on a gpu.module (what fdc compile runs "
      "for cuda targets before serialising)",
      [](OpPassManager &pm, const KernelPipelineOptions &options) {
        buildKernelPipeline(pm, options.subgroupSize);
      });
}
