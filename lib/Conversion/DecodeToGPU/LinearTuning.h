//===- LinearTuning.h - linear signatures of measured tables ----*- C++ -*-===//
//
// A decode.linear's signature, (N, K, weight dtype, activation, has bias,
// has residual): what a measured dispatch table (fdc tune) is keyed by, the
// manifest records per table, and decode-apply-tuning matches. Ops of one
// signature launch the same kernels.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_LINEARTUNING_H
#define FDC_LIB_CONVERSION_DECODETOGPU_LINEARTUNING_H

#include "fdc/Dialect/Decode/IR/Decode.h"

#include <string>

namespace fdc::gpu {

struct LinearSignature {
  /// The weight's rows (N, 2 x the output width for silu_gate_up) and K.
  int64_t n = 0, k = 0;
  /// The weight's element type: "f32", "f16", "bf16" or "int4".
  std::string dtype;
  /// "none" or "silu_gate_up".
  std::string activation;
  bool bias = false, residual = false;

  /// "n=4096 k=4096 dtype=bf16 activation=none bias=0 residual=1": equal
  /// keys, equal signatures.
  std::string key() const;
  bool operator==(const LinearSignature &other) const {
    return key() == other.key();
  }
};

LinearSignature getLinearSignature(decode::LinearOp op);

/// The discardable attribute decode-apply-tuning sets on an op whose
/// decode.kernel it wrote ("tuned"), for the manifest.
inline constexpr llvm::StringLiteral kKernelSourceAttrName =
    "decode.kernel_source";

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_LINEARTUNING_H
