//===- CudaArch.h - one arch of a cuda: target ------------------*- C++ -*-===//

#ifndef FDC_LIB_TARGET_NVPTX_CUDAARCH_H
#define FDC_LIB_TARGET_NVPTX_CUDAARCH_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace fdc::target::nvptx {

/// sm_90 is {90, false}, sm_90a {90, true}.
struct CudaArch {
  unsigned version = 0;
  /// An architecture-specific ("a") target: PTX and cubins for exactly this
  /// compute capability.
  bool archSpecific = false;

  /// sm_XX with XX >= 70, or sm_XXa with XX >= 90; nullopt otherwise.
  static std::optional<CudaArch> parse(llvm::StringRef name);

  /// "sm_90" or "sm_90a".
  std::string name() const {
    return "sm_" + std::to_string(version) + (archSpecific ? "a" : "");
  }
};

} // namespace fdc::target::nvptx

#endif // FDC_LIB_TARGET_NVPTX_CUDAARCH_H
