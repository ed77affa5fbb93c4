//===- CudaBackend.h - Running a cuda:sm_XX model library -------*- C++ -*-===//
//
// The device side of a model whose library targets "cuda:...": a context on
// one GPU, a stream, the kernel image loaded from the library (the cubin for
// the device's arch, else the PTX) with every manifest kernel resolved, and
// the device buffers: weight arena, KV cache, scratch, the per-sequence
// input arrays, logits and next_tokens. CUDA is reached only through the
// driver API, dlopen()ed at run time; a runtime built without cuda.h has a
// stub whose create() explains that.
//
// Environment:
//   FDC_CUDA_DEVICE=N          device ordinal (default 0)
//   FDC_CUDA_SYNC_LAUNCHES=1   synchronize after every launch, so that an
//                              asynchronous fault names its kernel (slow)
//   FDC_CUDA_DRIVER=path       dlopen this instead of libcuda.so.1 (tests)
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_CUDA_CUDABACKEND_H
#define FDC_RUNTIME_CUDA_CUDABACKEND_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc_model_abi.h"

#include <memory>
#include <string>

namespace fdc::runtime {
class ModelLibrary;
} // namespace fdc::runtime

namespace fdc::runtime::cuda {

/// True when this runtime was built with the CUDA backend.
bool backendAvailable();

class CudaBackend {
public:
  /// Loads the driver, creates the context and stream on `device` (-1:
  /// $FDC_CUDA_DEVICE, else 0), loads the library's kernel image and resolves
  /// every kernel of its manifest. `library` must outlive the backend.
  static Expected<std::unique_ptr<CudaBackend>>
  create(const ModelLibrary &library, int device = -1);
  ~CudaBackend();
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  /// Allocates the weight arena and copies `arena` (the packed host arena
  /// the weight loader built) into it.
  Error uploadWeights(const HostBuffer &arena);

  /// Allocates the zeroed KV cache of `kvCacheBytes`, the scratch of the
  /// manifest for `maxBatch` sequences, and the per-sequence arrays, logits
  /// ([maxBatch][vocabSize] f32) and next_tokens for `maxBatch` sequences.
  Error allocateState(uint64_t kvCacheBytes, int64_t maxBatch,
                      int64_t vocabSize);

  /// Runs one step. `args` is the engine's: host arrays for the inputs and
  /// outputs, num_slots and max_context filled in. Copies the inputs to the
  /// device, calls the library's step with device pointers, scratch and the
  /// launch API, copies logits and next_tokens back and synchronizes. A
  /// failed launch is reported with its kernel's name.
  Error step(const FdcStepArgs &args);

  /// "NVIDIA H100 80GB HBM3 (device 0, sm_90)".
  const std::string &deviceDescription() const;
  /// The image that was loaded: "fdc_cubin_sm_90" or "fdc_ptx".
  const std::string &kernelImage() const;
  /// Device addresses of the weight arena and the KV cache (0 before they
  /// are allocated), for tracing.
  uint64_t weightsAddress() const;
  uint64_t kvCacheAddress() const;

  struct Impl;

private:
  explicit CudaBackend(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_CUDA_CUDABACKEND_H
