//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//

#include "CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

std::string DriverApi::describe(CUresult result) const {
  const char *name = nullptr;
  const char *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string out = name ? name : concat("CUDA error ", int(result));
  if (text)
    out += concat(": ", text);
  return out;
}

Error DriverApi::fail(const std::string &call, CUresult result) const {
  return createError(call, " failed: ", describe(result));
}

namespace {

struct LoadedDriver {
  DriverApi api;
  /// Set when dlopen or dlsym failed; never retried (the outcome would not
  /// change within a process).
  std::string error;
};

Expected<const DriverApi *> load(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LoadedDriver>> drivers;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<LoadedDriver> &slot = drivers[path];
  if (!slot) {
    slot = std::make_unique<LoadedDriver>();
    DriverApi &api = slot->api;
    api.path = path;
    ::dlerror();
    // Never dlclose()d: the driver keeps process-wide state.
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *reason = ::dlerror();
      slot->error = concat("cannot load the CUDA driver ", path, ": ",
                           reason ? reason : "unknown dlopen error",
                           " (is the NVIDIA driver installed and a GPU "
                           "visible?)");
    }
#define FDC_CUDA_RESOLVE(name)                                                 \
  if (slot->error.empty()) {                                                   \
    api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name));   \
    if (!api.name)                                                             \
      slot->error = concat("the CUDA driver ", path, " lacks " #name,          \
                           " (driver too old?)");                              \
  }
    FDC_CUDA_DRIVER_FUNCTIONS(FDC_CUDA_RESOLVE)
#undef FDC_CUDA_RESOLVE
#define FDC_CUDA_RESOLVE_OPTIONAL(name)                                        \
  if (slot->error.empty())                                                     \
    api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name));
    FDC_CUDA_OPTIONAL_FUNCTIONS(FDC_CUDA_RESOLVE_OPTIONAL)
#undef FDC_CUDA_RESOLVE_OPTIONAL
  }
  if (!slot->error.empty())
    return createError(slot->error);
  // Cheap once it succeeded; not cached, so a failure is not sticky.
  CUresult result = slot->api.cuInit(0);
  if (result != CUDA_SUCCESS)
    return createError("cuInit failed: ", slot->api.describe(result),
                       " (CUDA driver ", path, ")");
  return &slot->api;
}

} // namespace

Expected<const DriverApi *> fdc::runtime::cuda::loadDriver() {
  const char *overridePath = std::getenv("FDC_CUDA_DRIVER");
  return load(overridePath && *overridePath ? overridePath : "libcuda.so.1");
}
