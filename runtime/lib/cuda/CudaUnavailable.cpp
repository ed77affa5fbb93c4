//===- CudaUnavailable.cpp - The CUDA backend of a runtime without it -----===//
//
// Built instead of CudaBackend.cpp / CudaDevice.cpp / CudaDriver.cpp when
// cuda.h was not found at configure time (or FDC_RUNTIME_CUDA=OFF).
// ModelLibrary::open already refuses cuda libraries then;
// createCudaBackend() says why if it is reached anyway.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/cuda/CudaBackend.h"

#include "../GpuDevice.h"
#include "fdc/runtime/ModelLibrary.h"

using namespace fdc::runtime;

bool fdc::runtime::cuda::backendAvailable() { return false; }

Expected<std::unique_ptr<DeviceBackend>>
fdc::runtime::cuda::createCudaBackend(const ModelLibrary &library, int) {
  return createError("model library ", library.path(), " targets '",
                     library.target(),
                     "' but this runtime was built without the CUDA backend "
                     "(cuda.h was not found at configure time, or "
                     "FDC_RUNTIME_CUDA=OFF)");
}

Expected<OpenedGpuDevice>
fdc::runtime::cuda::openCudaDevice(const ModelLibrary &library, int) {
  return createError("model library ", library.path(), " targets '",
                     library.target(),
                     "' but this runtime was built without the CUDA backend "
                     "(cuda.h was not found at configure time, or "
                     "FDC_RUNTIME_CUDA=OFF)");
}
