//===- Nccl.cpp - NCCL, loaded at run time --------------------------------===//

#include "Nccl.h"

#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <mutex>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

std::string NcclApi::describe(nccl::Result result, nccl::Comm comm) const {
  const char *text = ncclGetErrorString ? ncclGetErrorString(result) : nullptr;
  std::string out = text ? concat(text, " (ncclResult_t ", result, ")")
                         : concat("ncclResult_t ", result);
  if (ncclGetLastError) {
    const char *last = ncclGetLastError(comm);
    if (last && *last)
      out += concat(": ", last);
  }
  return out;
}

std::string fdc::runtime::cuda::ncclLibraryPath() {
  const char *overridePath = std::getenv("FDC_NCCL_LIBRARY");
  return overridePath && *overridePath ? overridePath : "libnccl.so.2";
}

namespace {

struct LoadedNccl {
  NcclApi api;
  /// Set when dlopen or dlsym failed; never retried.
  std::string error;
};

template <typename Function>
bool resolve(void *handle, const char *name, Function &function) {
  function = reinterpret_cast<Function>(::dlsym(handle, name));
  return function != nullptr;
}

} // namespace

Expected<const NcclApi *> fdc::runtime::cuda::loadNccl() {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LoadedNccl>> libraries;
  std::string path = ncclLibraryPath();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<LoadedNccl> &slot = libraries[path];
  if (!slot) {
    slot = std::make_unique<LoadedNccl>();
    NcclApi &api = slot->api;
    api.path = path;
    ::dlerror();
    // Never dlclose()d, like the driver.
    void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *reason = ::dlerror();
      slot->error = concat(
          "cannot load NCCL ", path, ": ",
          reason ? reason : "unknown dlopen error",
          " (tensor parallelism on CUDA devices needs NCCL 2: install it "
          "with `pip install nvidia-nccl-cu13` (or the distribution's "
          "libnccl2) and set FDC_NCCL_LIBRARY to its libnccl.so.2, e.g. "
          ".../site-packages/nvidia/nccl/lib/libnccl.so.2)");
    } else {
      const char *missing = nullptr;
#define FDC_NCCL_RESOLVE(name)                                                 \
  if (!missing && !resolve(handle, #name, api.name))                           \
    missing = #name;
      FDC_NCCL_RESOLVE(ncclGetVersion)
      FDC_NCCL_RESOLVE(ncclCommInitAll)
      FDC_NCCL_RESOLVE(ncclAllReduce)
      FDC_NCCL_RESOLVE(ncclAllGather)
      FDC_NCCL_RESOLVE(ncclCommAbort)
      FDC_NCCL_RESOLVE(ncclCommDestroy)
      FDC_NCCL_RESOLVE(ncclGetErrorString)
      FDC_NCCL_RESOLVE(ncclCommGetAsyncError)
      FDC_NCCL_RESOLVE(ncclGroupStart)
      FDC_NCCL_RESOLVE(ncclGroupEnd)
#undef FDC_NCCL_RESOLVE
      resolve(handle, "ncclGetLastError", api.ncclGetLastError);
      resolve(handle, "ncclMemAlloc", api.ncclMemAlloc);
      resolve(handle, "ncclMemFree", api.ncclMemFree);
      resolve(handle, "ncclCommWindowRegister", api.ncclCommWindowRegister);
      resolve(handle, "ncclCommWindowDeregister", api.ncclCommWindowDeregister);
      if (missing)
        slot->error = concat("NCCL ", path, " lacks ", missing,
                             " (NCCL 2.4 or newer is needed)");
      else if (nccl::Result r = api.ncclGetVersion(&api.version))
        slot->error =
            concat("NCCL ", path, ": ncclGetVersion failed: ", api.describe(r));
    }
  }
  if (!slot->error.empty())
    return createError(slot->error);
  return &slot->api;
}
