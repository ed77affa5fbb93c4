//===- ModelLibrary.h - the AOT model library -------------------*- C++ -*-===//
//
// Builds the model library of docs/model-library.md: the manifest, the ABI
// globals, the kernel images' globals, and the host shared object. Nothing
// here depends on the GPU vendor.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_MODELLIBRARY_H
#define FDC_TARGET_MODELLIBRARY_H

#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Target/GpuSerializer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fdc::target {

/// The manifest JSON of a model whose weights have arena offsets
/// (decode-assign-weight-layout).
mlir::FailureOr<std::string> buildManifest(decode::ModelOp model,
                                           llvm::StringRef target);

/// Adds `fdc_abi_version`, `fdc_target`, `fdc_manifest` and
/// `fdc_manifest_hash` to a module in the LLVM dialect.
void addLibraryGlobals(mlir::ModuleOp module, llvm::StringRef target,
                       llvm::StringRef manifest);

struct HostLibraryOptions {
  /// Output shared object.
  std::string outputPath;
  /// CPU to generate code for ("generic" runs on any x86-64, "native" is
  /// this machine's); checked with resolveHostCPU.
  std::string cpu = "generic";
  /// Compiler driver used to link the shared object; found on PATH if empty.
  std::string linker;
  /// Where to also write the LLVM IR (.ll), if non-empty.
  std::string llvmIRPath;
  /// LLVM optimisation level (0-3) of the host code: 3 where the step
  /// computes on the CPU; a GPU library's step only launches kernels, and a
  /// lower level keeps its compile time flat in the model's depth.
  unsigned optLevel = 3;
};

/// The CPU name to generate host code for: "native" is this machine's CPU;
/// any other name must be one the host's LLVM target knows (an unknown name
/// would make LLVM abort while creating the target machine). Errors name the
/// CPU and are reported at `loc`.
mlir::FailureOr<std::string> resolveHostCPU(llvm::StringRef requested,
                                            mlir::Location loc);

/// Translates a module in the LLVM dialect to LLVM IR, optimises it, emits a
/// position-independent object for the host and links it into a shared
/// object. Errors are reported on the module's location.
mlir::LogicalResult emitHostLibrary(mlir::ModuleOp module,
                                    const HostLibraryOptions &options);

/// Adds every kernel image as `const uint8_t symbol[]` (NUL-terminated for
/// text) and, for a binary, `const uint64_t symbol_size`, in order.
void addKernelImageGlobals(mlir::ModuleOp module,
                           llvm::ArrayRef<KernelImage> images);

/// Adds the kernels and scratch that convert-decode-to-gpu recorded on the
/// module to the manifest.
mlir::FailureOr<std::string> addGpuManifestFields(llvm::StringRef manifest,
                                                  mlir::ModuleOp module);

} // namespace fdc::target

#endif // FDC_TARGET_MODELLIBRARY_H
