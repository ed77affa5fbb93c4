//===- HipBackend.h - Running a rocm:gfxXXX model library -------*- C++ -*-===//
//
// The DeviceBackend of a model whose library targets "rocm:...": one AMD
// GPU, a stream, the code object of the device's arch (fdc_hsaco_<arch>)
// loaded from the library with every manifest kernel resolved, and the
// device buffers. HIP is reached only through libamdhip64, dlopen()ed at run
// time (libamdhip64.so, then libamdhip64.so.7, .6, .5); a runtime built
// without hip_runtime_api.h has a stub whose createHipBackend() explains
// that. The buffers and the step are the vendor-neutral GPU backend's (see
// DeviceBackend.h).
//
// Environment:
//   FDC_HIP_DEVICE=N           device ordinal (default 0)
//   FDC_HIP_SYNC_LAUNCHES=1    synchronize after every launch, so that an
//                              asynchronous fault names its kernel (slow)
//   FDC_HIP_POISON=1           fill logits, next_tokens and the scratch with
//                              0xFF bytes before every step (tests)
//   FDC_HIP_RUNTIME=path       dlopen this instead of libamdhip64.so (tests)
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_HIP_HIPBACKEND_H
#define FDC_RUNTIME_HIP_HIPBACKEND_H

#include "fdc/runtime/DeviceBackend.h"

#include <memory>

namespace fdc::runtime::hip {

/// True when this runtime was built with the HIP backend.
bool backendAvailable();

/// Loads the HIP runtime, selects `device` (-1: $FDC_HIP_DEVICE, else 0),
/// reads its arch (gcnArchName), creates the stream, loads the library's
/// code object for that arch and resolves every kernel of its manifest.
/// `library` must outlive the backend. Use createDeviceBackend() unless the
/// target is known to be "rocm:...".
Expected<std::unique_ptr<DeviceBackend>>
createHipBackend(const ModelLibrary &library, int device = -1);

} // namespace fdc::runtime::hip

#endif // FDC_RUNTIME_HIP_HIPBACKEND_H
