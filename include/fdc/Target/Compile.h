//===- Compile.h - model IR to a model library ------------------*- C++ -*-===//
//
// The compile pipeline of `fdc compile` as a library: the target string,
// weight placement (decode-assign-weight-layout), the manifest, for GPU
// targets the #decode.gpu_target, convert-decode-to-gpu,
// fdc-lower-kernel-launches and the vendor's GpuSerializer, for the host
// convert-decode-to-host, then the host-to-LLVM pipeline and the shared
// object (docs/model-library.md). Nothing here names a vendor: the GPU
// platforms and serialisers come from GpuSerializer.h.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_COMPILE_H
#define FDC_TARGET_COMPILE_H

#include "fdc/Target/GpuSerializer.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <map>
#include <string>

namespace fdc::target {

/// A parsed `--target`: `host`, or PLATFORM:ARCH[,ARCH...] of a GPU
/// platform (`cuda:sm_90a,sm_80`, `rocm:gfx90a,gfx942,gfx1100`).
struct CompileTarget {
  /// The string as given; the library's `fdc_target`.
  std::string name;
  /// Null for the host.
  const GpuPlatform *platform = nullptr;
  /// The GPU archs in the order given, each checked by the platform.
  llvm::SmallVector<std::string> archs;

  bool isHost() const { return platform == nullptr; }
};

/// Parses a target string. Errors name the bad part: an unknown target (and
/// the supported forms), a platform without archs, an arch the platform does
/// not accept, an arch listed twice.
mlir::FailureOr<CompileTarget>
parseCompileTarget(llvm::StringRef text,
                   llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// "host, cuda:sm_XX[,sm_YY...], rocm:gfxNNN[,gfxMMM...]".
std::string getSupportedTargetsText();

struct CompileOptions {
  /// The model IR file (compileModelLibraryFile reads it).
  std::string inputPath;
  std::string target = "host";
  /// The model library to write.
  std::string outputPath;
  /// Host CPU (see HostLibraryOptions::cpu).
  std::string cpu = "generic";
  /// Compiler driver that links the library; found on PATH if empty.
  std::string linker;
  /// Where to also write the LLVM IR / the lowered MLIR, if non-empty.
  std::string llvmIRPath;
  std::string mlirPath;
  GpuToolchainOptions toolchain;
  /// GPU targets: also export fdc_tune_launch and list every linear
  /// signature's candidate kernels in the manifest (a tuning library for
  /// `fdc tune`).
  bool tuningCandidates = false;
  /// GPU targets: a tuning file of `fdc tune` whose measured dispatch tables
  /// replace the heuristic ones (decode-apply-tuning), if non-empty.
  std::string tuningFile;
  /// Ranks of a tensor-parallel library (decode-shard-tensor-parallel); 1
  /// compiles the model whole.
  int64_t tensorParallel = 1;
  /// Kernel dumps to write: the file (PTX) or prefix (per-arch dumps) of
  /// each `--emit-*` given. A kind the target's serialiser does not produce
  /// is an error.
  std::map<KernelDumpKind, std::string> kernelDumps;
};

/// The dialects (and their LLVM IR translations) a model library compile
/// needs in its context.
void registerCompileDialects(mlir::DialectRegistry &registry);

/// Compiles the `decode.model` of `module` into `options.outputPath`.
/// `module` is lowered in place. Errors are reported through the context's
/// diagnostics; nothing is written when the target is bad.
mlir::LogicalResult compileModelLibrary(mlir::ModuleOp module,
                                        const CompileOptions &options);

/// Reads `options.inputPath` (diagnostics located in it are printed with the
/// source line) and compiles it.
mlir::LogicalResult compileModelLibraryFile(mlir::MLIRContext &context,
                                            const CompileOptions &options);

} // namespace fdc::target

#endif // FDC_TARGET_COMPILE_H
