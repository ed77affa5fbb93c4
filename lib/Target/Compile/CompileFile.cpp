//===- CompileFile.cpp - compile a model IR file --------------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Target/Compile.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace fdc;

void target::registerCompileDialects(DialectRegistry &registry) {
  registry.insert<decode::DecodeDialect, arith::ArithDialect, func::FuncDialect,
                  tensor::TensorDialect, LLVM::LLVMDialect, gpu::GPUDialect>();
  // The ConvertToLLVM interfaces that GPU-to-NVVM / -ROCDL collect
  // patterns from.
  registerAllExtensions(registry);
}

LogicalResult target::compileModelLibraryFile(MLIRContext &context,
                                              const CompileOptions &options) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto buffer = openInputFile(options.inputPath, &error);
  if (!buffer)
    return emitError(UnknownLoc::get(&context)) << error;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();
  return compileModelLibrary(*module, options);
}
