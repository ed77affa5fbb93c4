//===- DecodeTypes.cpp - decode dialect types -----------------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace fdc::decode;

LogicalResult Int4Type::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t groups) {
  if (groups <= 0)
    return emitError() << "!decode.int4 groups must be positive, got "
                       << groups;
  return success();
}

LogicalResult KVCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t layers, int64_t kvHeads,
                                  int64_t headDim, Type elementType) {
  if (layers <= 0)
    return emitError() << "!decode.kv_cache layers must be positive, got "
                       << layers;
  if (kvHeads <= 0)
    return emitError() << "!decode.kv_cache kv_heads must be positive, got "
                       << kvHeads;
  if (headDim <= 0)
    return emitError() << "!decode.kv_cache head_dim must be positive, got "
                       << headDim;
  if (auto int4 = dyn_cast<Int4Type>(elementType)) {
    int64_t groups = int4.getGroups();
    if (headDim % groups != 0)
      return emitError() << "!decode.kv_cache INT4 group count " << groups
                         << " does not divide head_dim " << headDim;
    if ((headDim / groups) % 2 != 0)
      return emitError() << "!decode.kv_cache INT4 group size "
                         << headDim / groups
                         << " must be even (two nibbles per byte)";
    return success();
  }
  if (!elementType.isF32() && !elementType.isF16() && !elementType.isBF16())
    return emitError() << "!decode.kv_cache element type must be f32, f16, "
                          "bf16 or !decode.int4, got "
                       << elementType;
  return success();
}

int64_t KVCacheType::getRowBytes() const {
  if (auto int4 = dyn_cast<Int4Type>(getElementType()))
    return int4.getGroups() * 4 + getHeadDim() / 2;
  return getHeadDim() * getElementType().getIntOrFloatBitWidth() / 8;
}

//===----------------------------------------------------------------------===//
// QuantTensorType: !decode.qtensor<NxKxi4, group_size = G, scale = T>
//===----------------------------------------------------------------------===//

Type QuantTensorType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape;
  int64_t groupSize;
  Type scaleType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseKeyword("i4") || parser.parseComma() ||
      parser.parseKeyword("group_size") || parser.parseEqual() ||
      parser.parseInteger(groupSize) || parser.parseComma() ||
      parser.parseKeyword("scale") || parser.parseEqual() ||
      parser.parseType(scaleType) || parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), ArrayRef<int64_t>(shape), groupSize,
                    scaleType);
}

void QuantTensorType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printDimensionList(getShape());
  printer << "xi4, group_size = " << getGroupSize()
          << ", scale = " << getScaleType() << ">";
}

LogicalResult
QuantTensorType::verify(function_ref<InFlightDiagnostic()> emitError,
                        ArrayRef<int64_t> shape, int64_t groupSize,
                        Type scaleType) {
  if (shape.size() != 2)
    return emitError() << "!decode.qtensor must be 2-D [N, K], got rank "
                       << shape.size();
  if (shape[0] <= 0 || shape[1] <= 0)
    return emitError() << "!decode.qtensor dimensions must be positive";
  if (groupSize <= 0 || shape[1] % groupSize != 0)
    return emitError() << "!decode.qtensor group_size " << groupSize
                       << " does not divide K = " << shape[1];
  if (!scaleType.isF16() && !scaleType.isBF16() && !scaleType.isF32())
    return emitError() << "!decode.qtensor scale type must be f16, bf16 or "
                          "f32, got "
                       << scaleType;
  return success();
}

//===----------------------------------------------------------------------===//
// TiledCSLType: !decode.tiled_csl<NxKxT, tile = RxC>
//===----------------------------------------------------------------------===//

Type TiledCSLType::parse(AsmParser &parser) {
  SmallVector<int64_t> shape, tile;
  Type elementType;
  if (parser.parseLess() ||
      parser.parseDimensionList(shape, /*allowDynamic=*/false) ||
      parser.parseType(elementType) || parser.parseComma() ||
      parser.parseKeyword("tile") || parser.parseEqual() ||
      parser.parseDimensionList(tile, /*allowDynamic=*/false,
                                /*withTrailingX=*/false) ||
      parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); },
                    parser.getContext(), ArrayRef<int64_t>(shape), elementType,
                    ArrayRef<int64_t>(tile));
}

void TiledCSLType::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printDimensionList(getShape());
  printer << "x" << getElementType() << ", tile = ";
  printer.printDimensionList(getTile());
  printer << ">";
}

LogicalResult TiledCSLType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<int64_t> shape, Type elementType,
                                   ArrayRef<int64_t> tile) {
  if (shape.size() != 2 || tile.size() != 2)
    return emitError() << "!decode.tiled_csl shape and tile must be 2-D";
  if (!elementType.isF16() && !elementType.isBF16())
    return emitError() << "!decode.tiled_csl element type must be f16 or "
                          "bf16, got "
                       << elementType;
  static const char *dimNames[] = {"N", "K"};
  for (int i = 0; i < 2; ++i) {
    if (tile[i] <= 0 || shape[i] <= 0 || shape[i] % tile[i] != 0)
      return emitError() << "!decode.tiled_csl tile dimension " << tile[i]
                         << " does not divide " << dimNames[i] << " = "
                         << shape[i];
  }
  if (tile[0] * tile[1] > 65536)
    return emitError() << "!decode.tiled_csl tile of " << tile[0] * tile[1]
                       << " elements does not fit 16-bit locations";
  return success();
}
