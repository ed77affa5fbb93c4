//===- CodeObjectEmitter.h - a ROCDL gpu.module to an object ----*- C++ -*-===//

#ifndef FDC_LIB_TARGET_AMDGPU_CODEOBJECTEMITTER_H
#define FDC_LIB_TARGET_AMDGPU_CODEOBJECTEMITTER_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVM/ROCDL/Utils.h"

#include <string>

namespace fdc::target::amdgpu {

/// The AMDGPU back end on one gpu.module lowered to ROCDL, through MLIR's
/// ROCDL serialiser: LLVM IR, the ROCm device libraries the kernels call
/// (ocml, ockl) linked from one directory, the oclc control variables for the
/// target attribute's chip and wave size, optimisation, then AMDGPU assembly
/// and its relocatable object. ld.lld makes the object a code object.
class CodeObjectEmitter : public mlir::ROCDL::SerializeGPUModuleBase {
public:
  CodeObjectEmitter(mlir::gpu::GPUModuleOp module,
                    mlir::ROCDL::ROCDLTargetAttr target,
                    llvm::StringRef deviceLibsPath);

  /// Fails, naming the file and the option, if `deviceLibsPath` lacks a
  /// device library the emitter links.
  static mlir::LogicalResult
  checkDeviceLibs(llvm::StringRef deviceLibsPath,
                  llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

  struct Output {
    std::string assembly;
    llvm::SmallVector<char, 0> object;
  };
  mlir::FailureOr<Output> emit();

protected:
  std::optional<llvm::SmallVector<std::unique_ptr<llvm::Module>>>
  loadBitcodeFiles(llvm::Module &module) override;
  mlir::FailureOr<llvm::SmallVector<char, 0>>
  moduleToObject(llvm::Module &llvmModule) override;

private:
  std::string deviceLibsPath;
  std::string assembly;
};

} // namespace fdc::target::amdgpu

#endif // FDC_LIB_TARGET_AMDGPU_CODEOBJECTEMITTER_H
