//===- HostToLLVM.cpp - host step to the LLVM dialect ---------------------===//

#include "fdc/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void fdc::buildHostToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  // bf16 conversions as integer arithmetic: no libgcc helper needed.
  arith::ArithExpandOpsPassOptions expandOptions;
  expandOptions.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expandOptions));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void fdc::registerHostToLLVMPipeline() {
  PassPipelineRegistration<>(
      "fdc-host-to-llvm",
      "Lower the output of convert-decode-to-host to the LLVM dialect",
      buildHostToLLVMPipeline);
}
