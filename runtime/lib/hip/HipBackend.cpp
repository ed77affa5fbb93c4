//===- HipBackend.cpp - Opening the GPU of a rocm:gfxXXX library ----------===//
//
// Loads the HIP runtime, opens the device, reads its arch and loads the
// library's code object for that arch; GpuBackend does the rest.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/hip/HipBackend.h"

#include "../GpuBackend.h"
#include "HipDevice.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/hip/HipTarget.h"

#include <cstdio>
#include <optional>
#include <vector>

using namespace fdc::runtime;
using namespace fdc::runtime::hip;

bool fdc::runtime::hip::backendAvailable() { return true; }

namespace {

/// Larger than any hipDeviceProp_t layout (about 1.5 KiB in ROCm 6).
constexpr size_t kPropertiesBufferBytes = 64 * 1024;

/// The device's arch and "NAME (device N, gfx90a:sramecc+:xnack-)".
struct DeviceInfo {
  std::string gcnArchName;
  std::string arch;
  std::string description;
};

Expected<std::string> queryGcnArchName(const RuntimeApi &api, int ordinal) {
  std::vector<char> properties(kPropertiesBufferBytes, 0);
  if (hipError_t r = api.getDeviceProperties(properties.data(), ordinal))
    return api.fail(concat(api.getDevicePropertiesName, "(", ordinal, ")"), r);
  std::string name = findGcnArchName(properties.data(), properties.size());
  if (name.empty())
    return createError(api.getDevicePropertiesName, "(", ordinal,
                       ") of the HIP runtime ", api.path,
                       " returned no gcnArchName (like gfx90a:xnack-)");
  return name;
}

Expected<DeviceInfo> queryDevice(const RuntimeApi &api, int ordinal) {
  int count = 0;
  if (hipError_t r = api.hipGetDeviceCount(&count))
    return api.fail("hipGetDeviceCount", r);
  if (Error err = checkDeviceOrdinal(ordinal, count, kHipVendor))
    return err;
  hipDevice_t device = 0;
  if (hipError_t r = api.hipDeviceGet(&device, ordinal))
    return api.fail(concat("hipDeviceGet(", ordinal, ")"), r);
  Expected<std::string> gcnArchName = queryGcnArchName(api, ordinal);
  if (!gcnArchName)
    return gcnArchName.takeError();
  char name[256] = {};
  if (api.hipDeviceGetName(name, sizeof(name) - 1, device) != hipSuccess ||
      !name[0])
    std::snprintf(name, sizeof(name), "HIP device");
  DeviceInfo info;
  info.gcnArchName = *gcnArchName;
  info.arch = archOfGcnArchName(info.gcnArchName);
  info.description =
      concat(name, " (device ", ordinal, ", ", info.gcnArchName, ")");
  return info;
}

std::string joinArchs(const HipTarget &target) {
  std::string joined;
  for (const std::string &arch : target.archs)
    joined += (joined.empty() ? "" : ", ") + arch;
  return joined;
}

/// Loads the code object of the device's arch; returns its symbol name.
Expected<std::string> loadImage(HipDevice &device, const ModelLibrary &library,
                                const HipTarget &target,
                                const DeviceInfo &info) {
  std::optional<std::string> symbol = hsacoSymbolFor(target, info.arch);
  if (!symbol)
    return createError(
        "model library ", library.path(),
        " has no code object for this GPU: ", info.description, " is ",
        info.arch, ", the library targets '", library.target(),
        "' (code objects for ", joinArchs(target),
        "; compile it with --target=", library.target(), ",", info.arch, ")");
  Expected<ModelLibrary::KernelImage> image =
      library.kernelImage(*symbol, kElfMachineAMDGPU);
  if (!image)
    return image.takeError();
  if (hipError_t r = device.loadModule(image->data))
    return createError("model library ", library.path(), ": hipModuleLoadData(",
                       *symbol, ") failed: ", device.runtime().describe(r),
                       " (", info.description, ")");
  return *symbol;
}

} // namespace

Expected<std::unique_ptr<DeviceBackend>>
fdc::runtime::hip::createHipBackend(const ModelLibrary &library, int device) {
  Expected<HipTarget> target = parseHipTarget(library.target());
  if (!target)
    return createError("model library ", library.path(), ": ",
                       target.error().message());
  Expected<const RuntimeApi *> api = loadRuntime();
  if (!api)
    return createError("model library ", library.path(), " targets '",
                       library.target(),
                       "' and needs the HIP runtime: ", api.error().message());
  Expected<int> ordinal = requestedDeviceOrdinal(device, kHipVendor);
  if (!ordinal)
    return ordinal.takeError();
  Expected<DeviceInfo> info = queryDevice(**api, *ordinal);
  if (!info)
    return info.takeError();
  Expected<std::unique_ptr<HipDevice>> opened =
      HipDevice::open(**api, *ordinal);
  if (!opened)
    return opened.takeError();
  Expected<std::string> image = loadImage(**opened, library, *target, *info);
  if (!image)
    return image.takeError();
  return GpuBackend::create(library, std::move(*opened),
                            std::move(info->description), std::move(*image));
}
