//===- CudaTarget.h - cuda:sm_XX targets, pure helpers ----------*- C++ -*-===//
//
// Everything about a `cuda:...` model library that needs no GPU: parsing the
// target string and which kernel images to try for a device (the buffer
// sizes are DeviceBuffers.h's). Built into every runtime, with or without the
// CUDA backend.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_CUDA_CUDATARGET_H
#define FDC_RUNTIME_CUDA_CUDATARGET_H

#include "fdc/runtime/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime::cuda {

/// One architecture of a cuda target: "sm_90" is {90, ""}, "sm_90a" is
/// {90, "a"}.
struct CudaArch {
  /// major * 10 + minor of the compute capability.
  int smVersion = 0;
  /// "", "a" or "f" (architecture- or family-specific cubins).
  std::string suffix;

  std::string name() const;
  bool operator==(const CudaArch &other) const {
    return smVersion == other.smVersion && suffix == other.suffix;
  }
};

struct CudaTarget {
  /// In the order the target lists them.
  std::vector<CudaArch> archs;
};

/// True when `target` starts with "cuda:" (well-formed or not).
bool isCudaTarget(std::string_view target);

/// Parses "cuda:sm_90" or "cuda:sm_90,sm_80": "cuda:" then a comma-separated,
/// non-empty list of distinct `sm_<digits>[a|f]` with no spaces.
Expected<CudaTarget> parseCudaTarget(std::string_view target);

/// The device's architecture name, "sm_<major*10+minor>".
std::string deviceArchName(int ccMajor, int ccMinor);

/// One kernel image a library may hold for a device.
struct KernelImageCandidate {
  enum Kind { Cubin, Ptx } kind = Cubin;
  /// The symbol to look up: "fdc_cubin_sm_90" or "fdc_ptx".
  std::string symbol;
  /// For a cubin, the symbol of its size: "fdc_cubin_sm_90_size".
  std::string sizeSymbol;
};

/// The images to try, in order, on a device of compute capability
/// ccMajor.ccMinor: the cubins of the target's archs whose version equals the
/// device's (in the target's order; an "a"/"f" cubin first only when the
/// target lists it first), then fdc_cubin_sm_<cc> if the target does not
/// list that arch, then the PTX.
std::vector<KernelImageCandidate>
kernelImageCandidates(const CudaTarget &target, int ccMajor, int ccMinor);

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_CUDA_CUDATARGET_H
