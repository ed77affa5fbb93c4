//===- CodeObjectLinker.h - ld.lld for AMDGPU code objects ------*- C++ -*-===//

#ifndef FDC_LIB_TARGET_AMDGPU_CODEOBJECTLINKER_H
#define FDC_LIB_TARGET_AMDGPU_CODEOBJECTLINKER_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace fdc::target::amdgpu {

/// Links a relocatable AMDGPU object into an HSA code object (a shared
/// ELF, `ld.lld -shared --no-undefined`), as the HIP runtime loads it.
class CodeObjectLinker {
public:
  /// The ld.lld to use: $FDC_LLD, else the one of the LLVM fdc was built
  /// with, else ld.lld-22 or ld.lld on PATH; an error says how to get one.
  static mlir::FailureOr<CodeObjectLinker>
  find(llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

  /// The code object; an error names the arch, ld.lld and its message.
  mlir::FailureOr<std::string>
  link(llvm::ArrayRef<char> object, llvm::StringRef arch,
       llvm::function_ref<mlir::InFlightDiagnostic()> emitError) const;

private:
  explicit CodeObjectLinker(std::string path) : path(std::move(path)) {}
  std::string path;
};

} // namespace fdc::target::amdgpu

#endif // FDC_LIB_TARGET_AMDGPU_CODEOBJECTLINKER_H
