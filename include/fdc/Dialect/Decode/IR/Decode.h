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
} // namespace fdc::decode

#endif // FDC_DIALECT_DECODE_IR_DECODE_H
