//===- GpuDevice.cpp - The few device calls a GPU vendor provides ---------===//

#include "GpuDevice.h"

#include "fdc/runtime/Collective.h"
#include "fdc/runtime/DeviceBackend.h"
#include "fdc/runtime/ModelLibrary.h"

#include <cstdlib>
#include <cstring>

using namespace fdc::runtime;

GpuDevice::~GpuDevice() = default;

Error GpuDevice::fail(std::string_view call, DeviceStatus status) const {
  if (status == kNotSupported)
    return createError(call, " is not supported by the ", vendor().name,
                       " backend");
  return createError(call, " failed: ", describe(status));
}

DeviceStatus GpuDevice::allocatePinned(void *&pointer, uint64_t) {
  pointer = nullptr;
  return kNotSupported;
}
void GpuDevice::freePinned(void *) {}
bool GpuDevice::canOverlapSteps() const { return false; }
DeviceStatus GpuDevice::enableDependentLaunch() { return kNotSupported; }
DeviceStatus GpuDevice::openCopyStreams() { return kNotSupported; }
DeviceStatus GpuDevice::copyToDeviceOn(Stream, DeviceAddress, const void *,
                                       uint64_t) {
  return kNotSupported;
}
DeviceStatus GpuDevice::copyToHostOn(Stream, void *, DeviceAddress, uint64_t) {
  return kNotSupported;
}
DeviceStatus GpuDevice::recordEventOn(Stream, EventHandle) {
  return kNotSupported;
}
DeviceStatus GpuDevice::waitOn(Stream, EventHandle) { return kNotSupported; }
DeviceStatus GpuDevice::waitForEvent(EventHandle) { return kNotSupported; }
DeviceStatus GpuDevice::cacheBytes(uint64_t &) { return kNotSupported; }
DeviceStatus GpuDevice::beginCapture() { return kNotSupported; }
DeviceStatus GpuDevice::endCapture(GraphHandle &) { return kNotSupported; }
DeviceStatus GpuDevice::replay(GraphHandle) { return kNotSupported; }
void GpuDevice::destroyGraph(GraphHandle) {}
DeviceStatus GpuDevice::createEvent(EventHandle &, EventUse) {
  return kNotSupported;
}
void GpuDevice::destroyEvent(EventHandle) {}
DeviceStatus GpuDevice::recordEvent(EventHandle) { return kNotSupported; }
DeviceStatus GpuDevice::elapsedMilliseconds(EventHandle, EventHandle, float &) {
  return kNotSupported;
}

Expected<std::unique_ptr<CollectiveGroup>>
GpuDevice::createCollectiveGroup(const std::vector<GpuDevice *> &) {
  return createError("tensor parallelism on ", vendor().name,
                     " devices is not supported yet");
}

Expected<OpenedGpuDevice>
fdc::runtime::openGpuDevice(const ModelLibrary &library, int device) {
  if (library.isCuda())
    return cuda::openCudaDevice(library, device);
  return createError("model library ", library.path(), " targets '",
                     library.target(),
                     "': fdc tune runs CUDA libraries only (the HIP backend "
                     "does not time kernels yet)");
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
