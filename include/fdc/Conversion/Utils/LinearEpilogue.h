//===- LinearEpilogue.h - the epilogue of decode.linear ---------*- C++ -*-===//
//
// One output element of decode.linear / decode.sparse_linear from its f32
// accumulators: bias, the SiLU-gate-up activation, the residual add, and the
// store in the result's type. The host lowering and every GPU linear kernel
// emit it, so they compute the same function.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_UTILS_LINEAREPILOGUE_H
#define FDC_CONVERSION_UTILS_LINEAREPILOGUE_H

#include "fdc/Conversion/Utils/Emitter.h"
#include "fdc/Dialect/Decode/IR/Decode.h"

namespace fdc {

/// The buffers of the epilogue; `bias` ([N] or [2N]) and `residual`
/// ([M, N]) may be null.
struct LinearEpilogueOperands {
  mlir::Value bias, residual, out;
  decode::Activation activation = decode::Activation::none;
};

/// out[i, j] = residual[i, j] + f(acc + bias[j]) where f is the identity, or
/// for silu_gate_up silu(acc + bias[j]) * (upAcc + bias[j + n]), n being the
/// output width. `upAcc` (the accumulator of weight row j + n) is only read
/// for silu_gate_up.
void emitLinearOutput(Emitter &e, const LinearEpilogueOperands &operands,
                      mlir::Value i, mlir::Value j, mlir::Value acc,
                      mlir::Value upAcc);

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_LINEAREPILOGUE_H
