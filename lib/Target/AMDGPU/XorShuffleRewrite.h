//===- XorShuffleRewrite.h - wave64 xor shuffles on RDNA --------*- C++ -*-===//

#ifndef FDC_LIB_TARGET_AMDGPU_XORSHUFFLEREWRITE_H
#define FDC_LIB_TARGET_AMDGPU_XORSHUFFLEREWRITE_H

#include "mlir/Dialect/AMDGPU/Utils/Chipset.h"
#include "mlir/Pass/Pass.h"

namespace fdc::target::amdgpu {

/// For an RDNA `chip` (gfx10+; `chipset` is its parsed version), on a
/// gpu.module: every `gpu.shuffle xor`
/// over 64 lanes by 16 becomes a ds_swizzle (amdgpu.swizzle_bitmode) and by
/// 32 a v_permlane64, before convert-gpu-to-rocdl would make them permlane
/// swaps the chip lacks. A xor by 32 on gfx10 (no v_permlane64) is an error
/// naming the op.
std::unique_ptr<mlir::Pass>
createRewriteXorShufflesPass(llvm::StringRef chip,
                             mlir::amdgpu::Chipset chipset);

} // namespace fdc::target::amdgpu

#endif // FDC_LIB_TARGET_AMDGPU_XORSHUFFLEREWRITE_H
