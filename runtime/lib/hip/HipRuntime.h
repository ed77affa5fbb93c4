//===- HipRuntime.h - The HIP runtime API, loaded at run time ---*- C++ -*-===//
//
// The runtime never links ROCm: it dlopen()s libamdhip64 on first use
// ($FDC_HIP_RUNTIME, a test hook, else libamdhip64.so, libamdhip64.so.7,
// .so.6, .so.5 in that order) and resolves the entry points below by their
// exported names. Only the types and enums of hip_runtime_api.h are used at
// build time; the signatures are spelled out here, so that the C++ overloads
// some ROCm headers add (template hipMalloc, ...) do not matter.
//
// The device properties: hipDeviceProp_t's layout changed in ROCm 6 (the
// header maps hipGetDeviceProperties to hipGetDevicePropertiesR0600 and
// hipDeviceProp_t to hipDeviceProp_tR0600), so the runtime uses neither the
// header's struct nor its macro. It calls hipGetDevicePropertiesR0600 when
// the library exports it (ROCm 6 and later), else hipGetDeviceProperties
// (ROCm 5), into a zeroed buffer far larger than either layout, and finds
// gcnArchName in it by its shape (hip::findGcnArchName).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_HIP_HIPRUNTIME_H
#define FDC_RUNTIME_LIB_HIP_HIPRUNTIME_H

#include "fdc/runtime/Error.h"

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <string>

namespace fdc::runtime::hip {

// X(name, parameter types): every entry point the backend needs, by its
// exported name; each returns hipError_t.
#define FDC_HIP_RUNTIME_FUNCTIONS(X)                                           \
  X(hipInit, unsigned)                                                         \
  X(hipGetDeviceCount, int *)                                                  \
  X(hipDeviceGet, hipDevice_t *, int)                                          \
  X(hipDeviceGetName, char *, int, hipDevice_t)                                \
  X(hipSetDevice, int)                                                         \
  X(hipModuleLoadData, hipModule_t *, const void *)                            \
  X(hipModuleUnload, hipModule_t)                                              \
  X(hipModuleGetFunction, hipFunction_t *, hipModule_t, const char *)          \
  X(hipModuleLaunchKernel, hipFunction_t, unsigned, unsigned, unsigned,        \
    unsigned, unsigned, unsigned, unsigned, hipStream_t, void **, void **)     \
  X(hipMalloc, void **, size_t)                                                \
  X(hipFree, void *)                                                           \
  X(hipMemcpyHtoDAsync, hipDeviceptr_t, void *, size_t, hipStream_t)           \
  X(hipMemcpyDtoHAsync, void *, hipDeviceptr_t, size_t, hipStream_t)           \
  X(hipMemsetD8Async, hipDeviceptr_t, unsigned char, size_t, hipStream_t)      \
  X(hipStreamCreateWithFlags, hipStream_t *, unsigned)                         \
  X(hipStreamDestroy, hipStream_t)                                             \
  X(hipStreamSynchronize, hipStream_t)

// X(name, parameter types): entry points of the step graphs; a runtime
// without one of them runs every step eagerly (HipDevice::beginCapture
// returns kNotSupported).
#define FDC_HIP_OPTIONAL_FUNCTIONS(X)                                          \
  X(hipStreamBeginCapture, hipStream_t, hipStreamCaptureMode)                  \
  X(hipStreamEndCapture, hipStream_t, hipGraph_t *)                            \
  X(hipGraphInstantiateWithFlags, hipGraphExec_t *, hipGraph_t,                \
    unsigned long long)                                                        \
  X(hipGraphLaunch, hipGraphExec_t, hipStream_t)                               \
  X(hipGraphExecDestroy, hipGraphExec_t)                                       \
  X(hipGraphDestroy, hipGraph_t)

// X(name, parameter types): page-locked host memory for the step's staging;
// a runtime without them stages in pageable memory
// (HipDevice::allocatePinned returns kNotSupported).
#define FDC_HIP_PINNED_FUNCTIONS(X)                                            \
  X(hipHostMalloc, void **, size_t, unsigned)                                  \
  X(hipHostFree, void *)

// X(name, parameter types): overlapped steps (copies on a second stream,
// ordered by events); a runtime without them runs steps one after another
// (HipDevice::canOverlapSteps).
#define FDC_HIP_OVERLAP_FUNCTIONS(X)                                           \
  X(hipStreamWaitEvent, hipStream_t, hipEvent_t, unsigned)                     \
  X(hipEventCreateWithFlags, hipEvent_t *, unsigned)                           \
  X(hipEventDestroy, hipEvent_t)                                               \
  X(hipEventRecord, hipEvent_t, hipStream_t)                                   \
  X(hipEventSynchronize, hipEvent_t)

/// hipGetDeviceProperties / hipGetDevicePropertiesR0600, layout unknown.
using GetDevicePropertiesFn = hipError_t (*)(void *properties, int device);

/// The resolved entry points of one HIP runtime library.
struct RuntimeApi {
  /// What was dlopen()ed: "libamdhip64.so" or $FDC_HIP_RUNTIME.
  std::string path;
#define FDC_HIP_DECLARE(name, ...) hipError_t (*name)(__VA_ARGS__) = nullptr;
  FDC_HIP_RUNTIME_FUNCTIONS(FDC_HIP_DECLARE)
  FDC_HIP_OPTIONAL_FUNCTIONS(FDC_HIP_DECLARE)
  FDC_HIP_PINNED_FUNCTIONS(FDC_HIP_DECLARE)
  FDC_HIP_OVERLAP_FUNCTIONS(FDC_HIP_DECLARE)
#undef FDC_HIP_DECLARE
  const char *(*hipGetErrorName)(hipError_t) = nullptr;
  const char *(*hipGetErrorString)(hipError_t) = nullptr;
  /// hipGetDevicePropertiesR0600 when exported, else hipGetDeviceProperties.
  GetDevicePropertiesFn getDeviceProperties = nullptr;
  /// The name of the one above, for messages.
  const char *getDevicePropertiesName = nullptr;

  /// Whether every entry point of FDC_HIP_OPTIONAL_FUNCTIONS was found.
  bool hasGraphs() const;
  /// Whether every entry point of FDC_HIP_OVERLAP_FUNCTIONS was found.
  bool hasOverlap() const;

  /// "hipErrorInvalidValue: invalid argument" (the name alone when the
  /// runtime's text is the name again).
  std::string describe(hipError_t error) const;
  /// "<call> failed: <describe(error)>".
  Error fail(const std::string &call, hipError_t error) const;
};

/// Loads (once per path, for the life of the process: the HIP runtime must
/// not be unloaded) and resolves the runtime, then calls hipInit(0). Fails
/// with a message naming the library and the reason: not installed, a
/// missing entry point, or hipInit's error (e.g. no GPU).
Expected<const RuntimeApi *> loadRuntime();

} // namespace fdc::runtime::hip

#endif // FDC_RUNTIME_LIB_HIP_HIPRUNTIME_H
