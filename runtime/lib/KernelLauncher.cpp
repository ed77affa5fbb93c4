//===- KernelLauncher.cpp - How a GPU library's step launches -------------===//

#include "KernelLauncher.h"

#include "fdc/runtime/ModelLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

using namespace fdc::runtime;

namespace {
int launchThunk(void *context, const char *name, uint32_t gridX, uint32_t gridY,
                uint32_t gridZ, uint32_t blockX, uint32_t blockY,
                uint32_t blockZ, uint32_t sharedBytes, void **params) {
  LaunchShape shape = {
      {gridX, gridY, gridZ}, {blockX, blockY, blockZ}, sharedBytes};
  return static_cast<KernelLauncher *>(context)->launch(name, shape, params);
}
} // namespace

KernelLauncher::KernelLauncher(GpuDevice &device, bool syncLaunches)
    : device(device), syncLaunches(syncLaunches) {
  api.context = this;
  api.launch = launchThunk;
}

Error KernelLauncher::resolveKernels(const ModelLibrary &library,
                                     const std::string &image) {
  const Manifest &manifest = library.manifest();
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const std::string &name = manifest.kernels[i].name;
    if (name.empty())
      return createError("model library ", library.path(), ": kernels[", i,
                         "] has no name");
    if (kernels.count(name))
      continue;
    KernelHandle handle = nullptr;
    if (DeviceStatus status = device.getKernel(name.c_str(), handle))
      return createError("model library ", library.path(), ": kernel '", name,
                         "' of the manifest is not in ", image, ": ",
                         device.vendor().getKernelCall, "(", name,
                         ") failed: ", device.describe(status));
    names.push_back(name);
    kernels.emplace(names.back(),
                    Kernel{handle, device.vendor().defaultSharedLimit});
  }
  // Kernels that wait for the one before them at their start may launch
  // before it ends (unless FDC_DEPENDENT_LAUNCH=0); a device that cannot
  // launches them one after another, which is also right.
  const char *setting = std::getenv("FDC_DEPENDENT_LAUNCH");
  if (manifest.dependentLaunch &&
      !(setting && std::string_view(setting) == "0"))
    device.enableDependentLaunch(); // kNotSupported: ordinary launches
  return Error::success();
}

void KernelLauncher::beginStep() {
  error.clear();
  launched.clear();
}

std::string KernelLauncher::launchedList() const {
  std::vector<std::string_view> distinct;
  for (const char *name : launched)
    if (std::find(distinct.begin(), distinct.end(), name) == distinct.end())
      distinct.push_back(name);
  std::string list;
  for (size_t i = 0; i < distinct.size() && i < 8; ++i)
    list += concat(i ? ", " : "", distinct[i]);
  if (distinct.size() > 8)
    list += concat(" and ", distinct.size() - 8, " more");
  return list.empty() ? "none" : list;
}

std::string KernelLauncher::launchFailure(const char *name,
                                          const LaunchShape &shape,
                                          DeviceStatus status) const {
  return concat(device.launchCall(), "(", name,
                ") failed: ", device.describe(status), " (grid ", shape.grid[0],
                "x", shape.grid[1], "x", shape.grid[2], ", block ",
                shape.block[0], "x", shape.block[1], "x", shape.block[2], ", ",
                shape.sharedBytes, " bytes of shared memory)");
}

int KernelLauncher::launch(const char *name, const LaunchShape &shape,
                           void **params) noexcept {
  try {
    if (!error.empty())
      return 1; // An earlier launch of this step failed.
    auto it = name ? kernels.find(std::string_view(name)) : kernels.end();
    if (it == kernels.end()) {
      error = concat("the model step launched kernel '", name ? name : "(null)",
                     "', which the manifest's \"kernels\" does not list");
      return 1;
    }
    const GpuVendor &vendor = device.vendor();
    Kernel &kernel = it->second;
    if (shape.sharedBytes > kernel.sharedLimit) {
      if (DeviceStatus status =
              device.setSharedLimit(kernel.handle, shape.sharedBytes)) {
        error = concat(vendor.setSharedLimitCall, "(", name,
                       ", MAX_DYNAMIC_SHARED_SIZE_BYTES = ", shape.sharedBytes,
                       ") failed: ", device.describe(status));
        return 1;
      }
      kernel.sharedLimit = shape.sharedBytes;
    }
    if (DeviceStatus status = device.launch(kernel.handle, shape, params)) {
      error = launchFailure(name, shape, status);
      return 1;
    }
    launched.push_back(it->first.data());
    if (syncLaunches) {
      if (DeviceStatus status = device.synchronize()) {
        error = concat("kernel ", name, " failed: ", device.describe(status),
                       " (found by ", vendor.synchronizeCall, " after it, ",
                       vendor.syncLaunchesVariable, " is set)");
        return 1;
      }
    }
    return 0;
  } catch (...) {
    if (error.empty())
      error = "out of memory while launching a kernel";
    return 1;
  }
}
