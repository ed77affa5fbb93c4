//===- fdc-opt.cpp - the fdc optimizer driver -----------------------------===//
//
// mlir-opt with the decode dialect and fdc's passes registered beside every
// upstream dialect and pass, for lit tests and pipeline debugging.
//
//===----------------------------------------------------------------------===//

#include "fdc/Conversion/Passes.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/Transforms/Passes.h"
#include "fdc/Target/GpuSerializer.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  fdc::decode::registerDecodePasses();
  fdc::registerConversionPasses();
  fdc::registerHostToLLVMPipeline();
  fdc::target::registerGpuKernelPipelines();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  mlir::ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  registry.insert<fdc::decode::DecodeDialect>();

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "fdc optimizer driver\n", registry));
}
