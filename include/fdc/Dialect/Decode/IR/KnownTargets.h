//===- KnownTargets.h - the GPUs fdc generates kernels for ------*- C++ -*-===//
//
// One table of hardware facts per GPU arch (IREE's known-targets table is the
// model): `fdc compile --target=cuda:sm_90` and `--target=rocm:gfx942` turn
// the arch names into a #decode.gpu_target, which is all a kernel generator
// knows about the GPU. Adding an arch is one entry in KnownTargets.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_DIALECT_DECODE_IR_KNOWNTARGETS_H
#define FDC_DIALECT_DECODE_IR_KNOWNTARGETS_H

#include "fdc/Dialect/Decode/IR/Decode.h"

namespace fdc::decode {

/// The arch names of the table ("sm_80", ..., "gfx1100"), in table order.
llvm::SmallVector<llvm::StringRef> getKnownGpuArchs();

/// The vendor of a known arch, if it is one. An arch-specific NVIDIA arch
/// without an entry of its own ("sm_XXa") has sm_XX's; "sm_90a" has its
/// own (wgmma).
std::optional<GpuVendor> getKnownGpuVendor(llvm::StringRef arch);

/// The subgroup sizes `arch` can run kernels with, preferred first (RDNA
/// runs wave32 and wave64); empty for an unknown arch.
llvm::SmallVector<int64_t> getSubgroupChoices(llvm::StringRef arch);

/// The instruction family of a known arch's MMA shapes ("mma.sync", "mfma",
/// "wmma"); empty for an unknown arch.
llvm::StringRef getKnownMmaFamily(llvm::StringRef arch);

/// The SIMDs (schedulers) of one unit of a known arch, over which its
/// resident subgroups are spread (4 on NVIDIA SMs and CDNA CUs, 2 on an
/// RDNA3 CU); 0 for an unknown arch.
int64_t getKnownSimdsPerUnit(llvm::StringRef arch);

/// The table's description of `arch`; an error naming the arch and the known
/// ones through `emitError` if there is none. "sm_90a" is sm_90's entry
/// plus its group MMA (wgmma), under its own name.
mlir::FailureOr<GpuTargetAttr>
lookupGpuTarget(mlir::MLIRContext *context, llvm::StringRef arch,
                llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

/// One description for kernels that must run on every arch of `archs` (one
/// library, one code object per arch): the first arch's unit count sizes the
/// grids and its shared-memory banks lay out shared memory (both tune speed
/// alone); shared memory, vector width and the MMA shapes are what every arch
/// has; the subgroup size is the first arch's preferred one if all archs
/// support it, else one they all support (gfx1100 beside CDNA runs wave64).
/// Fails naming the archs if they mix vendors or share no subgroup size.
mlir::FailureOr<GpuTargetAttr>
getCommonGpuTarget(mlir::MLIRContext *context,
                   llvm::ArrayRef<std::string> archs,
                   llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace fdc::decode

#endif // FDC_DIALECT_DECODE_IR_KNOWNTARGETS_H
