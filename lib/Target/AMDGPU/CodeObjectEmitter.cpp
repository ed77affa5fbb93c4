//===- CodeObjectEmitter.cpp - a ROCDL gpu.module to an object ------------===//
//
// MLIR's ROCDL serialiser looks for the device libraries in
// <toolkit>/amdgcn/bitcode and for <toolkit>/llvm/bin/ld.lld, a ROCm install's
// layout; Debian's rocm-device-libs and lld-22 live elsewhere. So the
// emitter keeps the serialiser's IR handling (translation, the oclc control
// variables and code-object-version flag of handleModulePreLink, bitcode
// clean-up, optimisation) and replaces the two steps that know paths: the
// device libraries come from one directory (--rocm-device-libs), and the
// object is returned for CodeObjectLinker instead of being linked here. No
// oclc_isa_version_*.bc is needed: the serialiser defines __oclc_ISA_version
// itself.
//
//===----------------------------------------------------------------------===//

#include "CodeObjectEmitter.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;
using namespace fdc::target::amdgpu;
using mlir::ROCDL::AMDGCNLibraries;

namespace {
/// The device libraries the emitter links, by the bit the serialiser sets
/// when the kernels call into them.
struct DeviceLibrary {
  AMDGCNLibraries library;
  const char *file;
};
constexpr DeviceLibrary kDeviceLibraries[] = {
    {AMDGCNLibraries::Ocml, "ocml.bc"},
    {AMDGCNLibraries::Ockl, "ockl.bc"},
};

std::string deviceLibraryPath(StringRef directory, StringRef file) {
  SmallString<256> path(directory);
  llvm::sys::path::append(path, file);
  return path.str().str();
}
} // namespace

CodeObjectEmitter::CodeObjectEmitter(gpu::GPUModuleOp module,
                                     ROCDL::ROCDLTargetAttr target,
                                     StringRef deviceLibsPath)
    : SerializeGPUModuleBase(*module, target),
      deviceLibsPath(deviceLibsPath.str()) {}

LogicalResult CodeObjectEmitter::checkDeviceLibs(
    StringRef deviceLibsPath, function_ref<InFlightDiagnostic()> emitError) {
  for (const DeviceLibrary &library : kDeviceLibraries) {
    std::string path = deviceLibraryPath(deviceLibsPath, library.file);
    if (!llvm::sys::fs::is_regular_file(path))
      return emitError() << "ROCm device library " << path
                         << " not found; point --rocm-device-libs at the "
                            "directory of ocml.bc and ockl.bc (Debian: "
                            "package rocm-device-libs)";
  }
  return success();
}

std::optional<SmallVector<std::unique_ptr<llvm::Module>>>
CodeObjectEmitter::loadBitcodeFiles(llvm::Module &module) {
  // handleModulePreLink has recorded which libraries the kernels call.
  AMDGCNLibraries unsupported =
      deviceLibs & (AMDGCNLibraries::Hip | AMDGCNLibraries::OpenCL);
  if (unsupported != AMDGCNLibraries::None) {
    getOperation().emitError()
        << "the kernels call into ROCm's hip.bc or opencl.bc (printf?); fdc "
           "links only ocml.bc and ockl.bc";
    return std::nullopt;
  }
  SmallVector<Attribute> files(getLibrariesToLink());
  for (const DeviceLibrary &library : kDeviceLibraries)
    if ((deviceLibs & library.library) != AMDGCNLibraries::None)
      files.push_back(
          StringAttr::get(getOperation().getContext(),
                          deviceLibraryPath(deviceLibsPath, library.file)));
  SmallVector<std::unique_ptr<llvm::Module>> modules;
  if (failed(loadBitcodeFilesFromList(module.getContext(), files, modules,
                                      /*failureOnError=*/true)))
    return std::nullopt;
  return std::move(modules);
}

FailureOr<SmallVector<char, 0>>
CodeObjectEmitter::moduleToObject(llvm::Module &llvmModule) {
  auto emitError = [&] { return getOperation().emitError(); };
  FailureOr<llvm::TargetMachine *> machine = getOrCreateTargetMachine();
  if (failed(machine))
    return emitError() << "no AMDGPU target machine for " << chip
                       << " (features '" << features << "')";
  FailureOr<SmallString<0>> isa =
      translateModuleToISA(llvmModule, **machine, emitError);
  if (failed(isa))
    return failure();
  assembly = isa->str().str();
  return ROCDL::assembleIsa(*isa, triple, chip, features, emitError);
}

FailureOr<CodeObjectEmitter::Output> CodeObjectEmitter::emit() {
  init();
  std::optional<SmallVector<char, 0>> object = run();
  if (!object)
    return failure();
  return Output{std::move(assembly), std::move(*object)};
}
