//===- Ptxas.h - the CUDA toolkit's PTX assembler ---------------*- C++ -*-===//

#ifndef FDC_LIB_TARGET_NVPTX_PTXAS_H
#define FDC_LIB_TARGET_NVPTX_PTXAS_H

#include "mlir/IR/Location.h"
#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace fdc::target::nvptx {

/// Runs ptxas to make cubins from one PTX text.
class Ptxas {
public:
  /// The toolkit's bin/ptxas, else the first ptxas on PATH; nullopt if there
  /// is none (the library then embeds PTX only, which the runtime JITs).
  static std::optional<Ptxas> find(llvm::StringRef cudaPath);

  /// `ptxas -O3 -arch=ARCH`; an error names the arch and ptxas's status.
  mlir::FailureOr<std::string>
  compile(llvm::StringRef ptx, llvm::StringRef arch, mlir::Location loc) const;

private:
  explicit Ptxas(std::string path) : path(std::move(path)) {}
  std::string path;
};

} // namespace fdc::target::nvptx

#endif // FDC_LIB_TARGET_NVPTX_PTXAS_H
