//===- CudaBackend.h - Running a cuda:sm_XX model library -------*- C++ -*-===//
//
// The DeviceBackend of a model whose library targets "cuda:...": the primary
// context of one GPU, a stream, the kernel image loaded from the library
// (the cubin for the device's arch, else the PTX) with every manifest kernel
// resolved, and the device buffers. CUDA is reached only through the driver
// API, dlopen()ed at run time; a runtime built without cuda.h has a stub
// whose createCudaBackend() explains that. The buffers and the step are the
// vendor-neutral GPU backend's (see DeviceBackend.h).
//
// Environment:
//   FDC_CUDA_DEVICE=N          device ordinal (default 0)
//   FDC_CUDA_SYNC_LAUNCHES=1   synchronize after every launch, so that an
//                              asynchronous fault names its kernel (slow)
//   FDC_CUDA_POISON=1          fill logits, next_tokens and the scratch with
//                              0xFF bytes before every step (tests)
//   FDC_CUDA_DRIVER=path       dlopen this instead of libcuda.so.1 (tests)
//   FDC_NCCL_LIBRARY=path      dlopen this instead of libnccl.so.2 (the NCCL
//                              of a tensor-parallel model's ranks)
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_CUDA_CUDABACKEND_H
#define FDC_RUNTIME_CUDA_CUDABACKEND_H

#include "fdc/runtime/DeviceBackend.h"

#include <memory>

namespace fdc::runtime::cuda {

/// True when this runtime was built with the CUDA backend.
bool backendAvailable();

/// Loads the driver, retains the primary context of `device` (-1:
/// $FDC_CUDA_DEVICE, else 0), creates the stream, loads the library's kernel
/// image and resolves every kernel of its manifest. `library` must outlive
/// the backend. Use createDeviceBackend() unless the target is known to be
/// "cuda:...".
Expected<std::unique_ptr<DeviceBackend>>
createCudaBackend(const ModelLibrary &library, int device = -1);

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_CUDA_CUDABACKEND_H
