//===- ModelLibrary.h - Loading a compiled model library --------*- C++ -*-===//
//
// Checks that the file is a complete ELF shared object for this host,
// dlopen()s it and checks, in this order, fdc_abi_version, fdc_target,
// fdc_manifest, fdc_manifest_hash and fdc_model_step
// (docs/model-library.md). A "cuda:..." target is accepted when the runtime
// has the CUDA backend (its kernel images are looked up later, by the
// backend); a "rocm:..." target when it has the HIP backend and the library
// exports fdc_hsaco_<arch> and fdc_hsaco_<arch>_size for every listed arch.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_MODELLIBRARY_H
#define FDC_RUNTIME_MODELLIBRARY_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/Manifest.h"
#include "fdc_model_abi.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fdc::runtime {

/// The library ABI version this runtime implements.
constexpr uint32_t kSupportedAbiVersion = FDC_MODEL_ABI_VERSION;

/// Targets this runtime can run a step for: "host", "cuda:sm_XX[,...]" when
/// it was built with the CUDA backend and "rocm:gfxXXX[,...]" when it was
/// built with the HIP backend.
const std::vector<std::string> &supportedTargets();

/// Whether this runtime runs libraries for `target` (a well-formed cuda or
/// rocm target counts when its backend is built in).
bool isSupportedTarget(const std::string &target);

/// Checks, before anything maps it, that `path` is a regular file holding a
/// 64-bit ELF shared object of this host's byte order and machine whose
/// header, program and section header tables and loadable segments all lie
/// inside the file (dlopen of a truncated one faults in the loader).
Error checkSharedObject(const std::string &path);

/// ELF machines of the kernel images a GPU library embeds.
constexpr uint16_t kElfMachineCUDA = 190;   // EM_CUDA: a cubin
constexpr uint16_t kElfMachineAMDGPU = 224; // EM_AMDGPU: a code object

class ModelLibrary {
public:
  static Expected<std::unique_ptr<ModelLibrary>> open(const std::string &path);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;

  const std::string &path() const { return libraryPath; }
  const std::string &target() const { return targetName; }
  const Manifest &manifest() const { return parsedManifest; }
  /// The manifest JSON text as the library holds it.
  const char *manifestText() const { return rawManifest; }
  FdcModelStepFn stepFunction() const { return step; }
  /// True for the "host" target: the step runs on the CPU, no backend.
  bool runsOnHost() const { return targetName == "host"; }
  /// True for a "cuda:..." target.
  bool isCuda() const;
  /// True for a "rocm:..." target.
  bool isRocm() const;
  /// The address of exported symbol `name`, or nullptr when there is none.
  const void *symbol(const char *name) const;

  /// A binary kernel image (cubin, code object) the library exports.
  struct KernelImage {
    const void *data;
    uint64_t size;
  };
  /// The image `symbol` of `symbol`_size bytes, checked before a driver
  /// parses it: the size symbol holds 8 bytes, the size is non-zero and no
  /// larger than the array, and the bytes are a 64-bit little-endian ELF
  /// for `elfMachine` (EM_CUDA 190, EM_AMDGPU 224) whose program and
  /// section header tables lie inside them. Errors name the library and
  /// the symbol.
  Expected<KernelImage> kernelImage(const std::string &symbol,
                                    uint16_t elfMachine) const;

private:
  ModelLibrary() = default;
  /// For a rocm target: every listed arch's fdc_hsaco_<arch> is a
  /// kernelImage() for EM_AMDGPU.
  Error checkCodeObjects() const;

  std::string libraryPath;
  void *handle = nullptr;
  std::string targetName;
  const char *rawManifest = nullptr;
  Manifest parsedManifest;
  FdcModelStepFn step = nullptr;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MODELLIBRARY_H
