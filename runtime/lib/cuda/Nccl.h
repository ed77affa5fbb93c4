//===- Nccl.h - NCCL, loaded at run time ------------------------*- C++ -*-===//
//
// The collectives of a tensor-parallel model on CUDA devices. Like the driver
// (CudaDriver.h), NCCL is never linked: libnccl.so.2 (or $FDC_NCCL_LIBRARY)
// is dlopen()ed when the first tensor-parallel CUDA model loads, and the few
// types and entry points used are declared here (no NCCL header is needed),
// as nccl.h of NCCL 2 defines them.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_CUDA_NCCL_H
#define FDC_RUNTIME_LIB_CUDA_NCCL_H

#include "fdc/runtime/Collective.h"
#include "fdc/runtime/Error.h"

#include <cuda.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace fdc::runtime::cuda {

class CudaDevice;

namespace nccl {
/// nccl.h's types: an opaque communicator and int-sized enums.
using Comm = struct ncclComm *;
using Window = struct ncclWindow *;
using Result = int;
using DataType = int;
using RedOp = int;

constexpr Result kSuccess = 0;
constexpr Result kInProgress = 7;
constexpr DataType kFloat16 = 6;
constexpr DataType kFloat32 = 7;
constexpr DataType kBfloat16 = 9;
constexpr RedOp kSum = 0;
/// NCCL_WIN_COLL_SYMMETRIC: a window the ranks register at equal offsets,
/// on which NCCL runs its symmetric-memory collective kernels.
constexpr int kWindowCollSymmetric = 0x01;
} // namespace nccl

/// The resolved entry points of one NCCL library.
struct NcclApi {
  /// What was dlopen()ed: "libnccl.so.2" or $FDC_NCCL_LIBRARY.
  std::string path;
  /// ncclGetVersion's: 22703 for 2.27.3.
  int version = 0;

  nccl::Result (*ncclGetVersion)(int *version) = nullptr;
  nccl::Result (*ncclCommInitAll)(nccl::Comm *comms, int count,
                                  const int *devices) = nullptr;
  nccl::Result (*ncclAllReduce)(const void *send, void *receive, size_t count,
                                nccl::DataType type, nccl::RedOp op,
                                nccl::Comm comm, CUstream stream) = nullptr;
  nccl::Result (*ncclAllGather)(const void *send, void *receive,
                                size_t sendCount, nccl::DataType type,
                                nccl::Comm comm, CUstream stream) = nullptr;
  nccl::Result (*ncclCommAbort)(nccl::Comm comm) = nullptr;
  nccl::Result (*ncclCommDestroy)(nccl::Comm comm) = nullptr;
  const char *(*ncclGetErrorString)(nccl::Result result) = nullptr;
  nccl::Result (*ncclCommGetAsyncError)(nccl::Comm comm,
                                        nccl::Result *error) = nullptr;
  nccl::Result (*ncclGroupStart)() = nullptr;
  nccl::Result (*ncclGroupEnd)() = nullptr;
  /// Optional (NCCL 2.13+): the last error's details.
  const char *(*ncclGetLastError)(nccl::Comm comm) = nullptr;
  /// Optional (NCCL 2.27+): memory for symmetric windows and the windows.
  nccl::Result (*ncclMemAlloc)(void **pointer, size_t bytes) = nullptr;
  nccl::Result (*ncclMemFree)(void *pointer) = nullptr;
  nccl::Result (*ncclCommWindowRegister)(nccl::Comm comm, void *buffer,
                                         size_t bytes, nccl::Window *window,
                                         int flags) = nullptr;
  nccl::Result (*ncclCommWindowDeregister)(nccl::Comm comm,
                                           nccl::Window window) = nullptr;

  /// Whether the symmetric-window entry points are all there.
  bool hasWindows() const {
    return ncclMemAlloc && ncclMemFree && ncclCommWindowRegister &&
           ncclCommWindowDeregister;
  }

  /// "unhandled cuda error (run with NCCL_DEBUG=INFO for details)", with
  /// ncclGetLastError's text when there is one.
  std::string describe(nccl::Result result, nccl::Comm comm = nullptr) const;
};

/// The library NCCL is loaded from: $FDC_NCCL_LIBRARY when set, else
/// "libnccl.so.2".
std::string ncclLibraryPath();

/// Loads (once per path, for the life of the process) and resolves NCCL.
/// Fails naming the path tried and how to install NCCL, or the entry point
/// that is missing.
Expected<const NcclApi *> loadNccl();

/// The NCCL group of `devices` (distinct CUDA devices; rank r is
/// devices[r]): ncclCommInitAll over their ordinals, then one all-reduce and
/// one all-gather of every rank from this thread (grouped), so that NCCL
/// connects the ranks now rather than in the first step (where a rank's
/// first collective would wait on the host for the others). The
/// collectives are enqueued on each device's stream.
Expected<std::unique_ptr<CollectiveGroup>>
createNcclCollectiveGroup(const std::vector<CudaDevice *> &devices);

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_LIB_CUDA_NCCL_H
