//===- Passes.h - decode-level transforms -----------------------*- C++ -*-===//

#ifndef FDC_DIALECT_DECODE_TRANSFORMS_PASSES_H
#define FDC_DIALECT_DECODE_TRANSFORMS_PASSES_H

#include "fdc/Dialect/Decode/IR/Decode.h"
#include "mlir/Pass/Pass.h"

namespace fdc::decode {

/// Bytes a weight of this type occupies in the arena (for Tiled-CSL, the
/// capacity reserved for it), or failure for a type that is not a weight.
#define GEN_PASS_DECL
#include "fdc/Dialect/Decode/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fdc/Dialect/Decode/Transforms/Passes.h.inc"

} // namespace fdc::decode

#endif // FDC_DIALECT_DECODE_TRANSFORMS_PASSES_H
