//===- HipUnavailable.cpp - The HIP backend of a runtime without it -------===//
//
// Built instead of HipBackend.cpp / HipDevice.cpp / HipRuntime.cpp when
// hip/hip_runtime_api.h was not found at configure time (or
// FDC_RUNTIME_HIP=OFF). ModelLibrary::open already refuses rocm libraries
// then; createHipBackend() says why if it is reached anyway.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/hip/HipBackend.h"

#include "fdc/runtime/ModelLibrary.h"

using namespace fdc::runtime;

bool fdc::runtime::hip::backendAvailable() { return false; }

Expected<std::unique_ptr<DeviceBackend>>
fdc::runtime::hip::createHipBackend(const ModelLibrary &library, int) {
  return createError("model library ", library.path(), " targets '",
                     library.target(),
                     "' but this runtime was built without the HIP backend "
                     "(hip/hip_runtime_api.h was not found at configure time, "
                     "or FDC_RUNTIME_HIP=OFF)");
}
