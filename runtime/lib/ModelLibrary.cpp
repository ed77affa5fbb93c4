//===- ModelLibrary.cpp - Loading a compiled model library ----------------===//

#include "fdc/runtime/ModelLibrary.h"

#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/cuda/CudaTarget.h"

#include <cstring>
#include <dlfcn.h>

using namespace fdc::runtime;

const std::vector<std::string> &fdc::runtime::supportedTargets() {
  static const std::vector<std::string> targets = [] {
    std::vector<std::string> list = {"host"};
    if (cuda::backendAvailable())
      list.push_back("cuda:sm_XX[,sm_YY...]");
    return list;
  }();
  return targets;
}

bool fdc::runtime::isSupportedTarget(const std::string &target) {
  if (target == "host")
    return true;
  return cuda::backendAvailable() && cuda::isCudaTarget(target) &&
         static_cast<bool>(cuda::parseCudaTarget(target));
}

bool ModelLibrary::isCuda() const { return cuda::isCudaTarget(targetName); }

const void *ModelLibrary::symbol(const char *name) const {
  ::dlerror();
  void *address = ::dlsym(handle, name);
  if (::dlerror())
    return nullptr;
  return address;
}

namespace {
std::string joinTargets() {
  std::string joined;
  for (const std::string &target : supportedTargets())
    joined += (joined.empty() ? "" : ", ") + target;
  return joined;
}

/// A bounded strlen: a target name longer than this is garbage.
constexpr size_t kMaxTargetLength = 256;
} // namespace

Expected<std::unique_ptr<ModelLibrary>>
ModelLibrary::open(const std::string &path) {
  std::unique_ptr<ModelLibrary> library(new ModelLibrary());
  library->libraryPath = path;
  // Without a '/', dlopen would search the library path instead of the file.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  library->handle = ::dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library->handle) {
    const char *reason = ::dlerror();
    return createError("cannot load model library ", path, ": ",
                       reason ? reason : "unknown dlopen error");
  }
  auto lookup = [&](const char *symbol) -> Expected<void *> {
    ::dlerror();
    void *address = ::dlsym(library->handle, symbol);
    if (!address || ::dlerror())
      return createError("model library ", path, " lacks symbol ", symbol);
    return address;
  };

  Expected<void *> abi = lookup("fdc_abi_version");
  if (!abi)
    return abi.takeError();
  uint32_t abiVersion = *static_cast<const uint32_t *>(*abi);
  if (abiVersion != kSupportedAbiVersion)
    return createError("model library ", path, " was built for ABI version ",
                       abiVersion, ", this runtime supports ",
                       kSupportedAbiVersion);

  Expected<void *> target = lookup("fdc_target");
  if (!target)
    return target.takeError();
  const char *targetText = static_cast<const char *>(*target);
  size_t targetLength = ::strnlen(targetText, kMaxTargetLength);
  if (targetLength == kMaxTargetLength)
    return createError("model library ", path,
                       ": fdc_target is not a short NUL-terminated string");
  library->targetName.assign(targetText, targetLength);
  if (cuda::isCudaTarget(library->targetName) && cuda::backendAvailable()) {
    Expected<cuda::CudaTarget> cudaTarget =
        cuda::parseCudaTarget(library->targetName);
    if (!cudaTarget)
      return createError("model library ", path, ": ",
                         cudaTarget.error().message());
  }
  if (!isSupportedTarget(library->targetName))
    return createError(
        "model library ", path, " targets '", library->targetName,
        "'; this runtime runs: ", joinTargets(),
        cuda::isCudaTarget(library->targetName)
            ? " (it was built without the CUDA backend: cuda.h was not "
              "found, or FDC_RUNTIME_CUDA=OFF)"
            : "");

  Expected<void *> manifest = lookup("fdc_manifest");
  if (!manifest)
    return manifest.takeError();
  library->rawManifest = static_cast<const char *>(*manifest);
  Expected<Manifest> parsed =
      Manifest::parse(library->rawManifest, "model library " + path);
  if (!parsed)
    return parsed.takeError();
  library->parsedManifest = std::move(*parsed);
  const Manifest &m = library->parsedManifest;
  if (m.abiVersion != static_cast<int64_t>(abiVersion))
    return createError("model library ", path, ": manifest says ABI version ",
                       m.abiVersion, " but fdc_abi_version is ", abiVersion);
  if (m.target != library->targetName)
    return createError("model library ", path, ": manifest says target '",
                       m.target, "' but fdc_target is '", library->targetName,
                       "'");

  Expected<void *> step = lookup("fdc_model_step");
  if (!step)
    return step.takeError();
  library->step = reinterpret_cast<FdcModelStepFn>(*step);
  return library;
}

ModelLibrary::~ModelLibrary() {
  if (handle)
    ::dlclose(handle);
}
