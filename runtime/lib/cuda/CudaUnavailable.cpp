//===- CudaUnavailable.cpp - The CUDA backend of a runtime without it -----===//
//
// Built instead of CudaBackend.cpp / CudaDriver.cpp when cuda.h was not found
// at configure time (or FDC_RUNTIME_CUDA=OFF). ModelLibrary::open already
// refuses cuda libraries then; create() says why if it is reached anyway.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/cuda/CudaBackend.h"

#include "fdc/runtime/ModelLibrary.h"

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

bool fdc::runtime::cuda::backendAvailable() { return false; }

struct CudaBackend::Impl {
  std::string none;
};

Expected<std::unique_ptr<CudaBackend>>
CudaBackend::create(const ModelLibrary &library, int) {
  return createError("model library ", library.path(), " targets '",
                     library.target(),
                     "' but this runtime was built without the CUDA backend "
                     "(cuda.h was not found at configure time, or "
                     "FDC_RUNTIME_CUDA=OFF)");
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
CudaBackend::~CudaBackend() = default;

static Error unavailable() {
  return createError("this runtime was built without the CUDA backend");
}

Error CudaBackend::uploadWeights(const HostBuffer &) { return unavailable(); }
Error CudaBackend::allocateState(uint64_t, int64_t, int64_t) {
  return unavailable();
}
Error CudaBackend::step(const FdcStepArgs &) { return unavailable(); }
const std::string &CudaBackend::deviceDescription() const { return impl->none; }
const std::string &CudaBackend::kernelImage() const { return impl->none; }
uint64_t CudaBackend::weightsAddress() const { return 0; }
uint64_t CudaBackend::kvCacheAddress() const { return 0; }
