//===- DeviceBackend.cpp - Where a GPU model library's step runs ----------===//

#include "fdc/runtime/DeviceBackend.h"

#include "GpuDevice.h"
#include "fdc/runtime/Collective.h"
#include "fdc/runtime/Manifest.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/cuda/CudaTarget.h"
#include "fdc/runtime/hip/HipBackend.h"
#include "fdc/runtime/hip/HipTarget.h"

using namespace fdc::runtime;

DeviceRange DeviceBackend::scratchRange() const { return {}; }

DeviceBackend::~DeviceBackend() = default;

Error DeviceBackend::launchStep(const FdcStepArgs &, int64_t) {
  return createError("this device backend does not overlap steps");
}

Error DeviceBackend::finishStep(const FdcStepArgs &) {
  return createError("this device backend does not overlap steps");
}

bool fdc::runtime::isDeviceTarget(std::string_view target) {
  return cuda::isCudaTarget(target) || hip::isHipTarget(target);
}

Expected<std::unique_ptr<DeviceBackend>>
fdc::runtime::createDeviceBackend(const ModelLibrary &library, int device) {
  const std::string &target = library.target();
  if (cuda::isCudaTarget(target))
    return cuda::createCudaBackend(library, device);
  if (hip::isHipTarget(target))
    return hip::createHipBackend(library, device);
  return createError("model library ", library.path(), " targets '", target,
                     "', which runs on no device backend");
}

Expected<std::unique_ptr<CollectiveGroup>>
fdc::runtime::createDeviceCollectiveGroup(
    const std::vector<DeviceBackend *> &backends) {
  if (backends.empty() ||
      backends.size() > static_cast<size_t>(kMaxTensorParallel))
    return createError("a tensor-parallel group has 1 to ", kMaxTensorParallel,
                       " ranks, not ", backends.size());
  std::vector<GpuDevice *> devices;
  for (size_t r = 0; r < backends.size(); ++r) {
    GpuDevice *device = backends[r] ? backends[r]->gpuDevice() : nullptr;
    if (!device)
      return createError("tensor-parallel rank ", r,
                         " has no GPU backend of this runtime");
    devices.push_back(device);
  }
  const GpuVendor &vendor = devices[0]->vendor();
  for (size_t r = 0; r < devices.size(); ++r) {
    if (&devices[r]->vendor() != &vendor)
      return createError("tensor-parallel ranks 0 and ", r,
                         " are on devices of different vendors (", vendor.name,
                         ", ", devices[r]->vendor().name, ")");
    for (size_t s = 0; s < r; ++s)
      if (devices[s]->deviceOrdinal() == devices[r]->deviceOrdinal())
        return createError("tensor-parallel ranks ", s, " and ", r,
                           " are both on ", vendor.name, " device ",
                           devices[r]->deviceOrdinal(),
                           " (each rank needs a device of its own)");
  }
  return devices[0]->createCollectiveGroup(devices);
}

Expected<int> fdc::runtime::parseDeviceOrdinal(std::string_view text,
                                               std::string_view variable) {
  auto fail = [&] {
    return createError(variable, "='", text,
                       "' is not a device ordinal (0, 1, ...)");
  };
  if (text.empty() || text.size() > 6)
    return fail();
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return fail();
    value = value * 10 + (c - '0');
  }
  return value;
}
