//===- DecodeTypes.cpp - decode dialect types -----------------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fdc::decode;

namespace {
/// The product of `factors`, or nullopt if it does not fit in int64.
std::optional<int64_t> checkedProduct(ArrayRef<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (llvm::MulOverflow(product, factor, product))
      return std::nullopt;
  return product;
}

std::optional<int64_t> checkedSum(ArrayRef<int64_t> terms) {
  int64_t sum = 0;
  for (int64_t term : terms)
    if (llvm::AddOverflow(sum, term, sum))
      return std::nullopt;
  return sum;
}

/// Bytes of a !decode.qtensor: packed nibbles, then one (scale, min) pair
/// per group.
std::optional<int64_t> quantBytes(ArrayRef<int64_t> shape, int64_t groupSize,
                                  Type scaleType) {
  int64_t n = shape[0], k = shape[1];
  int64_t scaleBytes = scaleType.getIntOrFloatBitWidth() / 8;
  std::optional<int64_t> elements = checkedProduct({n, k});
  std::optional<int64_t> scales =
      checkedProduct({n, k / groupSize, 2, scaleBytes});
  if (!elements || !scales)
    return std::nullopt;
  return checkedSum({*elements / 2 + *elements % 2, *scales});
}

/// Bytes reserved for a !decode.tiled_csl (version 2): the padded
/// TileOffsets and one 4-byte word per element of every tile, enough for a
/// dense matrix (the packed size depends on the non-zeros).
std::optional<int64_t> tiledCSLBytes(ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> tile) {
  int64_t tileRows = (shape[0] + tile[0] - 1) / tile[0];
  int64_t tilesPerRow = (shape[1] + tile[1] - 1) / tile[1];
  std::optional<int64_t> tiles = checkedProduct({tileRows, tilesPerRow});
  if (!tiles)
    return std::nullopt;
  std::optional<int64_t> words = checkedProduct({*tiles, tile[0], tile[1], 4});
  int64_t vector = TiledCSLType::kWordsPerVector;
  std::optional<int64_t> header =
      checkedProduct({*tiles / vector + 1, vector, 4});
  if (!words || !header)
    return std::nullopt;
  return checkedSum({*header, *words});
}
} // namespace

FailureOr<int64_t> fdc::decode::getWeightBytes(Type type) {
  std::optional<int64_t> bytes;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
    if (!tensor.hasStaticShape() || bits % 8 != 0)
      return failure();
    SmallVector<int64_t> factors(tensor.getShape());
    factors.push_back(bits / 8);
    bytes = checkedProduct(factors);
  } else if (auto quant = dyn_cast<QuantTensorType>(type)) {
    bytes = quantBytes(quant.getShape(), quant.getGroupSize(),
                       quant.getScaleType());
  } else if (auto sparse = dyn_cast<TiledCSLType>(type)) {
    bytes = tiledCSLBytes(sparse.getShape(), sparse.getTile());
  }
  if (!bytes)
    return failure();
  return *bytes;
}

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
  } else if (!elementType.isF32() && !elementType.isF16() &&
             !elementType.isBF16()) {
    return emitError() << "!decode.kv_cache element type must be f32, f16, "
                          "bf16 or !decode.int4, got "
                       << elementType;
  }
  // One token of one slot: every layer's key and value rows. The runtime
  // multiplies this by the slot count and context length.
  int64_t rowBytes = 0;
  if (auto int4 = dyn_cast<Int4Type>(elementType)) {
    std::optional<int64_t> scales = checkedProduct({int4.getGroups(), 4});
    rowBytes = scales && *scales <= INT64_MAX - headDim / 2
                   ? *scales + headDim / 2
                   : -1;
  } else if (std::optional<int64_t> bytes = checkedProduct(
                 {headDim, elementType.getIntOrFloatBitWidth() / 8})) {
    rowBytes = *bytes;
  } else {
    rowBytes = -1;
  }
  if (rowBytes < 0 || !checkedProduct({layers, 2, kvHeads, rowBytes}))
    return emitError() << "!decode.kv_cache of " << layers << " layers, "
                       << kvHeads << " kv_heads and head_dim " << headDim
                       << " takes more than 2^63 - 1 bytes per token";
  return success();
}

int64_t KVCacheType::getRowBytes() const {
  if (auto int4 = dyn_cast<Int4Type>(getElementType()))
    return int4.getHeaderBytes() + getHeadDim() / 2;
  return getHeadDim() * (getElementType().getIntOrFloatBitWidth() / 8);
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
  if (!quantBytes(shape, groupSize, scaleType))
    return emitError() << "!decode.qtensor of " << shape[0] << "x" << shape[1]
                       << " takes more than 2^63 - 1 bytes";
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
    if (shape[i] <= 0)
      return emitError() << "!decode.tiled_csl dimension " << dimNames[i]
                         << " = " << shape[i] << " must be positive";
    if (tile[i] <= 0)
      return emitError() << "!decode.tiled_csl tile dimension " << tile[i]
                         << " along " << dimNames[i] << " must be positive";
  }
  std::optional<int64_t> tileElements = checkedProduct(tile);
  if (!tileElements || *tileElements > 65536)
    return emitError() << "!decode.tiled_csl tile of " << tile[0] << "x"
                       << tile[1] << " elements does not fit 16-bit locations";
  if (*tileElements % TiledCSLType::kWordsPerVector != 0)
    return emitError() << "!decode.tiled_csl tile of " << tile[0] << "x"
                       << tile[1] << " elements is not a multiple of "
                       << TiledCSLType::kWordsPerVector
                       << " (tile runs are padded to whole 16-byte vectors)";
  if (!tiledCSLBytes(shape, tile))
    return emitError() << "!decode.tiled_csl of " << shape[0] << "x" << shape[1]
                       << " takes more than 2^63 - 1 bytes";
  return success();
}

std::string fdc::decode::getDTypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (isa<decode::Int4Type>(type))
    return "int4";
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  return name;
}
