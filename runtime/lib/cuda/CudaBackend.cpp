//===- CudaBackend.cpp - Opening the GPU of a cuda:sm_XX library ----------===//
//
// Loads the driver, opens the device and loads the kernel image the device
// can run (a cubin of its arch, else the PTX); GpuBackend does the rest.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/cuda/CudaBackend.h"

#include "../GpuBackend.h"
#include "CudaDevice.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaTarget.h"

#include <cstring>
#include <vector>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

bool fdc::runtime::cuda::backendAvailable() { return true; }

namespace {

/// The device's compute capability and "NAME (device N, sm_XX)".
struct DeviceInfo {
  CUdevice device = 0;
  int ccMajor = 0;
  int ccMinor = 0;
  std::string description;
};

Expected<DeviceInfo> queryDevice(const DriverApi &cu, int ordinal) {
  int count = 0;
  if (CUresult r = cu.cuDeviceGetCount(&count))
    return cu.fail("cuDeviceGetCount", r);
  if (Error err = checkDeviceOrdinal(ordinal, count, kCudaVendor))
    return err;
  DeviceInfo info;
  if (CUresult r = cu.cuDeviceGet(&info.device, ordinal))
    return cu.fail(concat("cuDeviceGet(", ordinal, ")"), r);
  if (CUresult r = cu.cuDeviceGetAttribute(
          &info.ccMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
          info.device))
    return cu.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r);
  if (CUresult r = cu.cuDeviceGetAttribute(
          &info.ccMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
          info.device))
    return cu.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r);
  char name[256] = {};
  if (cu.cuDeviceGetName(name, sizeof(name) - 1, info.device) != CUDA_SUCCESS)
    std::strcpy(name, "CUDA device");
  info.description = concat(name, " (device ", ordinal, ", ",
                            deviceArchName(info.ccMajor, info.ccMinor), ")");
  return info;
}

/// Loads the first image of kernelImageCandidates() that the library holds
/// and the driver accepts; returns its symbol name.
Expected<std::string> loadImage(CudaDevice &device, const ModelLibrary &library,
                                const CudaTarget &target,
                                const DeviceInfo &info) {
  std::vector<std::string> tried;
  for (const KernelImageCandidate &candidate :
       kernelImageCandidates(target, info.ccMajor, info.ccMinor)) {
    const void *data = library.symbol(candidate.symbol.c_str());
    if (!data) {
      tried.push_back("no " + candidate.symbol);
      continue;
    }
    if (candidate.kind == KernelImageCandidate::Cubin) {
      Expected<ModelLibrary::KernelImage> cubin =
          library.kernelImage(candidate.symbol, kElfMachineCUDA);
      if (!cubin) {
        tried.push_back(cubin.takeError().message());
        continue;
      }
    }
    std::string log;
    CUresult r = device.loadModule(data, log);
    if (r == CUDA_SUCCESS)
      return candidate.symbol;
    tried.push_back(concat("cuModuleLoadDataEx(", candidate.symbol,
                           ") failed: ", device.driver().describe(r),
                           log.empty() ? "" : "; JIT log: ", log));
  }
  std::string reasons;
  for (const std::string &reason : tried)
    reasons += (reasons.empty() ? "" : "; ") + reason;
  return createError(
      "model library ", library.path(),
      " has no kernel image this GPU can load: ", info.description, " is ",
      deviceArchName(info.ccMajor, info.ccMinor), ", the library targets '",
      library.target(), "' (", reasons, ")");
}

} // namespace

Expected<OpenedGpuDevice>
fdc::runtime::cuda::openCudaDevice(const ModelLibrary &library, int device) {
  Expected<CudaTarget> target = parseCudaTarget(library.target());
  if (!target)
    return createError("model library ", library.path(), ": ",
                       target.error().message());
  Expected<const DriverApi *> api = loadDriver();
  if (!api)
    return createError("model library ", library.path(), " targets '",
                       library.target(), "': ", api.error().message());
  Expected<int> ordinal = requestedDeviceOrdinal(device, kCudaVendor);
  if (!ordinal)
    return ordinal.takeError();
  Expected<DeviceInfo> info = queryDevice(**api, *ordinal);
  if (!info)
    return info.takeError();
  Expected<std::unique_ptr<CudaDevice>> opened =
      CudaDevice::open(**api, info->device);
  if (!opened)
    return opened.takeError();
  Expected<std::string> image = loadImage(**opened, library, *target, *info);
  if (!image)
    return image.takeError();
  OpenedGpuDevice result;
  result.device = std::move(*opened);
  result.description = std::move(info->description);
  result.arch = deviceArchName(info->ccMajor, info->ccMinor);
  result.image = std::move(*image);
  return result;
}

Expected<std::unique_ptr<DeviceBackend>>
fdc::runtime::cuda::createCudaBackend(const ModelLibrary &library, int device) {
  Expected<OpenedGpuDevice> opened = openCudaDevice(library, device);
  if (!opened)
    return opened.takeError();
  return GpuBackend::create(library, std::move(opened->device),
                            std::move(opened->description),
                            std::move(opened->image));
}
