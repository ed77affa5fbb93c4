//===- DecodeDialect.cpp - decode dialect registration --------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace fdc::decode;

#include "fdc/Dialect/Decode/IR/DecodeDialect.cpp.inc"
#include "fdc/Dialect/Decode/IR/DecodeEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeAttrs.cpp.inc"

void DecodeDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "fdc/Dialect/Decode/IR/DecodeTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "fdc/Dialect/Decode/IR/DecodeAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "fdc/Dialect/Decode/IR/DecodeOps.cpp.inc"
      >();
}
