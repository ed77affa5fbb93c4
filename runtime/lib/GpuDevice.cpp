//===- GpuDevice.cpp - The few device calls a GPU vendor provides ---------===//

#include "GpuDevice.h"

#include "fdc/runtime/DeviceBackend.h"

#include <cstdlib>
#include <cstring>

using namespace fdc::runtime;

GpuDevice::~GpuDevice() = default;

Error GpuDevice::fail(std::string_view call, DeviceStatus status) const {
  return createError(call, " failed: ", describe(status));
}

Expected<int> fdc::runtime::requestedDeviceOrdinal(int requested,
                                                   const GpuVendor &vendor) {
  if (requested >= 0)
    return requested;
  const char *text = std::getenv(vendor.deviceVariable);
  if (!text || !*text)
    return 0;
  return parseDeviceOrdinal(text, vendor.deviceVariable);
}

Error fdc::runtime::checkDeviceOrdinal(int ordinal, int count,
                                       const GpuVendor &vendor) {
  if (ordinal < count)
    return Error::success();
  return createError(vendor.name, " device ", ordinal,
                     " does not exist: the machine has ", count, " ",
                     vendor.name, " device", count == 1 ? "" : "s", " (",
                     vendor.deviceVariable, " chooses one)");
}

bool fdc::runtime::envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}
