//===- Decode.h - the decode dialect ----------------------------*- C++ -*-===//
//
// Dialect, types, attributes and ops of one LLM decode step.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_DIALECT_DECODE_IR_DECODE_H
#define FDC_DIALECT_DECODE_IR_DECODE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fdc/Dialect/Decode/IR/DecodeDialect.h.inc"
#include "fdc/Dialect/Decode/IR/DecodeEnums.h.inc"

#define GET_TYPEDEF_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeAttrs.h.inc"

#define GET_OP_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeOps.h.inc"

namespace fdc::decode {
/// Names of the step function's arguments, in order (for diagnostics and the
/// model-library ABI).
llvm::ArrayRef<llvm::StringRef> getStepArgumentNames();

/// `value` for a diagnostic: "1e-05", "10000", "nan", "inf".
std::string formatFloat(double value);

/// The bytes a weight of `type` takes in the weight arena (a dense tensor,
/// !decode.qtensor or !decode.tiled_csl); failure for any other type, a
/// dynamic shape, or a size that does not fit in int64.
mlir::FailureOr<int64_t> getWeightBytes(mlir::Type type);

/// The name manifests and tuning files give an element type: "f32", "bf16",
/// "f16", "int4", else the type as printed.
std::string getDTypeName(mlir::Type type);
} // namespace fdc::decode

#endif // FDC_DIALECT_DECODE_IR_DECODE_H
