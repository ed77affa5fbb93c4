//===- GpuSerializer.h - the kernels of a GPU model library -----*- C++ -*-===//
//
// One interface for the vendors' kernel back ends: a GpuSerializer takes the
// module after convert-decode-to-gpu and fdc-lower-kernel-launches (host code
// plus `gpu.module @fdc_kernels`), lowers the gpu.module with its vendor's
// MLIR pipeline for every listed arch and returns the kernel images the model
// library embeds (symbol name -> bytes), plus what `fdc compile --emit-*`
// can dump. The implementations live in lib/Target/NVPTX and
// lib/Target/AMDGPU; the factory below is the one place that maps a target
// string's platform ("cuda", "rocm") and a vendor to them.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_TARGET_GPUSERIALIZER_H
#define FDC_TARGET_GPUSERIALIZER_H

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <string>

namespace fdc::target {

/// A kernel image the model library exports as `const uint8_t symbol[]`.
struct KernelImage {
  /// "fdc_ptx", "fdc_cubin_sm_90", "fdc_hsaco_gfx942".
  std::string symbol;
  std::string bytes;
  /// Text (PTX) is NUL-terminated and has no size symbol; a binary also gets
  /// `const uint64_t symbol_size`.
  bool isText = false;
};

/// What a serialiser can write for `fdc compile --emit-*`.
enum class KernelDumpKind {
  /// --emit-ptx=FILE: the PTX the cubins are made from (one for all archs).
  PTX,
  /// --emit-amdgpu-isa=PREFIX: PREFIX.<arch>.s, the AMDGPU assembly.
  AMDGPUAssembly,
  /// --emit-hsaco=PREFIX: PREFIX.<arch>.hsaco, the code object as embedded.
  HSACO,
};

/// The `fdc compile` option that asks for a dump ("emit-ptx").
llvm::StringRef getKernelDumpOption(KernelDumpKind kind);

/// One dump: for one arch, or for all of them when `arch` is empty.
struct KernelDump {
  KernelDumpKind kind;
  std::string arch;
  std::string bytes;
};

/// The file a dump is written to: `path` itself for a dump of all archs,
/// else `path.<arch><extension>` ("out.gfx942.s").
std::string getKernelDumpPath(const KernelDump &dump, llvm::StringRef path);

struct SerializedKernels {
  /// In the order the library defines them.
  llvm::SmallVector<KernelImage> images;
  llvm::SmallVector<KernelDump> dumps;
};

/// Where the vendors' tools and device libraries are.
struct GpuToolchainOptions {
  /// CUDA toolkit: nvvm/libdevice/libdevice.10.bc and bin/ptxas.
  std::string cudaPath;
  /// The directory of the ROCm device libraries' bitcode (ocml.bc, ockl.bc).
  std::string rocmDeviceLibsPath;
};

/// Lowers and serialises the kernels of one vendor.
class GpuSerializer {
public:
  virtual ~GpuSerializer() = default;

  /// The dumps serialize() returns (the `--emit-*` options it serves).
  virtual llvm::ArrayRef<KernelDumpKind> getDumpKinds() const = 0;

  /// Lowers `module`'s gpu.module for every arch of `archs` (all of the
  /// serialiser's vendor, described together by `target`), returns the
  /// images, and removes the gpu.module: the host code stays. Errors are
  /// reported on the module and name the arch and the tool that failed.
  virtual mlir::FailureOr<SerializedKernels>
  serialize(mlir::ModuleOp module, decode::GpuTargetAttr target,
            llvm::ArrayRef<std::string> archs) = 0;
};

/// A GPU platform of `fdc compile --target=PLATFORM:ARCH[,ARCH...]`.
struct GpuPlatform {
  /// The target string's prefix: "cuda", "rocm".
  llvm::StringRef name;
  /// For diagnostics: "CUDA", "ROCm".
  llvm::StringRef displayName;
  decode::GpuVendor vendor;
  /// For diagnostics: "cuda:sm_XX[,sm_YY...]".
  llvm::StringRef syntax;
  /// Checks one arch of a target string; the error names it and what the
  /// platform accepts.
  mlir::LogicalResult (*checkArch)(
      llvm::StringRef arch,
      llvm::function_ref<mlir::InFlightDiagnostic()> emitError);
};

/// Every GPU platform, in the order diagnostics list them.
llvm::ArrayRef<GpuPlatform> getGpuPlatforms();

/// The platform named `name` ("cuda"), or null.
const GpuPlatform *lookupGpuPlatform(llvm::StringRef name);

/// The serialiser of `vendor`'s kernels.
std::unique_ptr<GpuSerializer>
createGpuSerializer(decode::GpuVendor vendor,
                    const GpuToolchainOptions &options);

/// Registers every vendor's kernel pipeline with the pass registry (for
/// fdc-opt): `fdc-nvvm-kernels`, `fdc-rocdl-kernels`.
void registerGpuKernelPipelines();

} // namespace fdc::target

#endif // FDC_TARGET_GPUSERIALIZER_H
