//===- HipRuntime.cpp - The HIP runtime API, loaded at run time -----------===//

#include "HipRuntime.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

using namespace fdc::runtime;
using namespace fdc::runtime::hip;

std::string RuntimeApi::describe(hipError_t error) const {
  const char *name = hipGetErrorName(error);
  const char *text = hipGetErrorString(error);
  std::string out = name && *name ? name : concat("HIP error ", int(error));
  if (text && *text && out != text)
    out += concat(": ", text);
  return out;
}

bool RuntimeApi::hasGraphs() const {
#define FDC_HIP_FOUND(name, ...) name &&
  return FDC_HIP_OPTIONAL_FUNCTIONS(FDC_HIP_FOUND) true;
#undef FDC_HIP_FOUND
}

bool RuntimeApi::hasOverlap() const {
#define FDC_HIP_FOUND(name, ...) name &&
  return FDC_HIP_OVERLAP_FUNCTIONS(FDC_HIP_FOUND) true;
#undef FDC_HIP_FOUND
}

Error RuntimeApi::fail(const std::string &call, hipError_t error) const {
  return createError(call, " failed: ", describe(error));
}

namespace {

struct LoadedRuntime {
  RuntimeApi api;
  /// Set when dlopen or dlsym failed; never retried (the outcome would not
  /// change within a process).
  std::string error;
};

/// The library names tried, in order, without $FDC_HIP_RUNTIME.
const std::vector<std::string> &defaultNames() {
  static const std::vector<std::string> names = {
      "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
      "libamdhip64.so.5"};
  return names;
}

/// dlopen()s the first of `names` that loads; else sets `error`.
void *openFirst(const std::vector<std::string> &names, std::string &path,
                std::string &error) {
  std::string firstReason;
  for (const std::string &name : names) {
    ::dlerror();
    // Never dlclose()d: the runtime keeps process-wide state.
    if (void *handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = name;
      return handle;
    }
    if (firstReason.empty()) {
      const char *reason = ::dlerror();
      firstReason = reason ? reason : "unknown dlopen error";
    }
  }
  std::string others;
  for (size_t i = 1; i < names.size(); ++i)
    others += concat(i == 1 ? "also tried " : ", ", names[i],
                     i + 1 == names.size() ? "; " : "");
  error =
      concat("cannot load the HIP runtime ", names[0], ": ", firstReason, " (",
             others, "is ROCm installed and a GPU visible?",
             names.size() > 1 ? " FDC_HIP_RUNTIME names the library" : "", ")");
  return nullptr;
}

/// Resolves every entry point of `api` in `handle`; the first one missing
/// sets `error`.
void resolve(void *handle, RuntimeApi &api, std::string &error) {
  auto lookup = [&](auto &function, const char *name) {
    if (!error.empty())
      return;
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(
        ::dlsym(handle, name));
    if (!function)
      error = concat("the HIP runtime ", api.path, " lacks ", name,
                     " (ROCm too old?)");
  };
#define FDC_HIP_RESOLVE(name, ...) lookup(api.name, #name);
  FDC_HIP_RUNTIME_FUNCTIONS(FDC_HIP_RESOLVE)
#undef FDC_HIP_RESOLVE
  lookup(api.hipGetErrorName, "hipGetErrorName");
  lookup(api.hipGetErrorString, "hipGetErrorString");
  if (!error.empty())
    return;
  // Optional: left null when missing.
#define FDC_HIP_RESOLVE_OPTIONAL(name, ...)                                    \
  api.name = reinterpret_cast<decltype(api.name)>(::dlsym(handle, #name));
  FDC_HIP_OPTIONAL_FUNCTIONS(FDC_HIP_RESOLVE_OPTIONAL)
  FDC_HIP_PINNED_FUNCTIONS(FDC_HIP_RESOLVE_OPTIONAL)
  FDC_HIP_OVERLAP_FUNCTIONS(FDC_HIP_RESOLVE_OPTIONAL)
#undef FDC_HIP_RESOLVE_OPTIONAL
  for (const char *name :
       {"hipGetDevicePropertiesR0600", "hipGetDeviceProperties"}) {
    if (void *function = ::dlsym(handle, name)) {
      api.getDeviceProperties =
          reinterpret_cast<GetDevicePropertiesFn>(function);
      api.getDevicePropertiesName = name;
      return;
    }
  }
  error = concat("the HIP runtime ", api.path,
                 " lacks hipGetDeviceProperties (ROCm too old?)");
}

Expected<const RuntimeApi *> load(const std::vector<std::string> &names) {
  static std::mutex mutex;
  static std::map<std::vector<std::string>, std::unique_ptr<LoadedRuntime>>
      runtimes;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<LoadedRuntime> &slot = runtimes[names];
  if (!slot) {
    slot = std::make_unique<LoadedRuntime>();
    if (void *handle = openFirst(names, slot->api.path, slot->error))
      resolve(handle, slot->api, slot->error);
  }
  if (!slot->error.empty())
    return createError(slot->error);
  // Cheap once it succeeded; not cached, so a failure is not sticky.
  hipError_t result = slot->api.hipInit(0);
  if (result != hipSuccess)
    return createError("hipInit failed: ", slot->api.describe(result),
                       " (HIP runtime ", slot->api.path,
                       "; is an AMD GPU visible?)");
  return &slot->api;
}

} // namespace

Expected<const RuntimeApi *> fdc::runtime::hip::loadRuntime() {
  const char *overridePath = std::getenv("FDC_HIP_RUNTIME");
  if (overridePath && *overridePath)
    return load({overridePath});
  return load(defaultNames());
}
