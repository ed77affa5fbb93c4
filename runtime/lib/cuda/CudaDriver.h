//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime never links libcuda or cudart: it dlopen()s libcuda.so.1 (or
// $FDC_CUDA_DRIVER, a test hook) on first use and resolves the entry points
// below by their exported names (the `_v2` ones where cuda.h maps to them).
// Only the types and enums of cuda.h are used at build time.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_CUDA_CUDADRIVER_H
#define FDC_RUNTIME_LIB_CUDA_CUDADRIVER_H

#include "fdc/runtime/Error.h"

#include <cuda.h>

#include <string>

namespace fdc::runtime::cuda {

// X(name): every entry point the backend uses, by its exported name.
#define FDC_CUDA_DRIVER_FUNCTIONS(X)                                           \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetName)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxSetCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemcpyHtoDAsync_v2)                                                      \
  X(cuMemcpyDtoHAsync_v2)                                                      \
  X(cuMemsetD8Async)                                                           \
  X(cuMemcpy2DAsync_v2)                                                        \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)

// X(name): entry points of the step graphs and of fdc tune (graphs,
// events), of pinned staging, of overlapped steps and of dependent launches;
// a driver without them still runs models (every step eagerly, staged in
// pageable memory, one after another, each kernel after the one before it),
// and the timing calls say so.
#define FDC_CUDA_OPTIONAL_FUNCTIONS(X)                                         \
  X(cuStreamBeginCapture_v2)                                                   \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuMemHostAlloc)                                                            \
  X(cuMemFreeHost)                                                             \
  X(cuStreamWaitEvent)                                                         \
  X(cuLaunchKernelEx)

/// The resolved entry points of one driver library.
struct DriverApi {
  /// What was dlopen()ed: "libcuda.so.1" or $FDC_CUDA_DRIVER.
  std::string path;
#define FDC_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  FDC_CUDA_DRIVER_FUNCTIONS(FDC_CUDA_DECLARE)
  FDC_CUDA_OPTIONAL_FUNCTIONS(FDC_CUDA_DECLARE)
#undef FDC_CUDA_DECLARE

  /// "CUDA_ERROR_INVALID_VALUE: invalid argument".
  std::string describe(CUresult result) const;
  /// "<call> failed: <describe(result)>".
  Error fail(const std::string &call, CUresult result) const;
};

/// Loads (once per path, for the life of the process: libcuda must not be
/// unloaded) and resolves the driver, then calls cuInit(0). Fails with a
/// message naming the library and the reason: not installed, a missing entry
/// point, or cuInit's error (e.g. no GPU).
Expected<const DriverApi *> loadDriver();

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_LIB_CUDA_CUDADRIVER_H
