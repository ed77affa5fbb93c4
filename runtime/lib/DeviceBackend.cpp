//===- DeviceBackend.cpp - Where a GPU model library's step runs ----------===//

#include "fdc/runtime/DeviceBackend.h"

#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/cuda/CudaTarget.h"
#include "fdc/runtime/hip/HipBackend.h"
#include "fdc/runtime/hip/HipTarget.h"

using namespace fdc::runtime;

DeviceBackend::~DeviceBackend() = default;

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
