//===- PackedLayouts.cpp - host access to packed weights and caches -------===//

#include "fdc/Conversion/Utils/PackedLayouts.h"

#include <cmath>

using namespace mlir;
using namespace fdc;

namespace {
Value addIndex(Emitter &e, Value a, Value b) {
  return arith::AddIOp::create(e.builder(), a, b);
}
Value mulIndex(Emitter &e, Value a, int64_t b) {
  return arith::MulIOp::create(e.builder(), a, e.index(b));
}

/// An element of `byteType` (f16 / bf16 / f32) stored little-endian at byte
/// `offset` of an i8 memref whose leading indices are `prefix`.
Value loadScalarFromBytes(Emitter &e, Value bytes, ValueRange prefix,
                          Value offset, Type scalarType) {
  ImplicitLocOpBuilder &b = e.builder();
  unsigned width = scalarType.getIntOrFloatBitWidth();
  Type intType = b.getIntegerType(width);
  Value bits = arith::ConstantIntOp::create(b, intType, 0);
  for (unsigned byte = 0; byte < width / 8; ++byte) {
    SmallVector<Value> indices(prefix);
    indices.push_back(addIndex(e, offset, e.index(byte)));
    Value part = memref::LoadOp::create(b, bytes, indices);
    Value wide = arith::ExtUIOp::create(b, intType, part);
    Value shifted = arith::ShLIOp::create(
        b, wide, arith::ConstantIntOp::create(b, intType, 8 * byte));
    bits = arith::OrIOp::create(b, bits, shifted);
  }
  Value value = arith::BitcastOp::create(b, scalarType, bits);
  return scalarType.isF32() ? value
                            : arith::ExtFOp::create(b, b.getF32Type(), value);
}

/// Stores an f32 as f16 (little-endian) at byte `offset`.
void storeF16ToBytes(Emitter &e, Value value, Value bytes, ValueRange prefix,
                     Value offset) {
  ImplicitLocOpBuilder &b = e.builder();
  Value half = arith::TruncFOp::create(b, b.getF16Type(), value);
  Value bits = arith::BitcastOp::create(b, b.getI16Type(), half);
  for (unsigned byte = 0; byte < 2; ++byte) {
    Value shifted = arith::ShRUIOp::create(
        b, bits, arith::ConstantIntOp::create(b, b.getI16Type(), 8 * byte));
    Value part = arith::TruncIOp::create(b, b.getI8Type(), shifted);
    SmallVector<Value> indices(prefix);
    indices.push_back(addIndex(e, offset, e.index(byte)));
    memref::StoreOp::create(b, part, bytes, indices);
  }
}

/// The 4-bit value at nibble index `k` of the packed bytes starting at byte
/// `base` (element 2j in the low nibble of byte j), as f32.
Value loadNibble(Emitter &e, Value bytes, ValueRange prefix, Value base,
                 Value k) {
  ImplicitLocOpBuilder &b = e.builder();
  Value byteIndex = addIndex(e, base, arith::DivUIOp::create(b, k, e.index(2)));
  SmallVector<Value> indices(prefix);
  indices.push_back(byteIndex);
  Value byte = memref::LoadOp::create(b, bytes, indices);
  Value odd = arith::IndexCastOp::create(
      b, b.getI8Type(), arith::RemUIOp::create(b, k, e.index(2)));
  Value shift = arith::MulIOp::create(
      b, odd, arith::ConstantIntOp::create(b, b.getI8Type(), 4));
  Value shifted = arith::ShRUIOp::create(b, byte, shift);
  Value mask = arith::ConstantIntOp::create(b, b.getI8Type(), 15);
  Value nibble = arith::AndIOp::create(b, shifted, mask);
  return arith::UIToFPOp::create(b, b.getF32Type(), nibble);
}
} // namespace

Value fdc::loadInt4CacheElement(Emitter &e, Value cache, decode::Int4Type int4,
                                int64_t headDim, ValueRange row, Value d) {
  int64_t groupSize = headDim / int4.getGroups();
  Value group = arith::DivUIOp::create(e.builder(), d, e.index(groupSize));
  Value pair = mulIndex(e, group, 4);
  Type f16 = e.builder().getF16Type();
  Value scale = loadScalarFromBytes(e, cache, row, pair, f16);
  Value min =
      loadScalarFromBytes(e, cache, row, addIndex(e, pair, e.index(2)), f16);
  Value q = loadNibble(e, cache, row, e.index(int4.getHeaderBytes()), d);
  return e.add(min, e.mul(scale, q));
}

void fdc::storeInt4CacheRow(Emitter &e, Value source, Value i, Value h,
                            Value cache, decode::Int4Type int4, int64_t headDim,
                            ValueRange row) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t groups = int4.getGroups(), groupSize = headDim / groups;
  Value nibbleBase = e.index(int4.getHeaderBytes());
  e.loop(groups, [&](Value g) {
    Value first = mulIndex(e, g, groupSize);
    auto element = [&](Value offset) {
      return e.load(source, {i, h, addIndex(e, first, offset)});
    };
    Value inf = e.f32(std::numeric_limits<float>::infinity());
    Value groupMin = e.reduce1(e.index(groupSize), inf, [&](Value j, Value m) {
      return arith::MinimumFOp::create(b, m, element(j));
    });
    Value groupEnd = e.index(groupSize);
    Value negInf = e.f32(-INFINITY);
    Value max = e.reduce1(groupEnd, negInf, [&](Value j, Value m) {
      return arith::MaximumFOp::create(b, m, element(j));
    });
    // Quantise with the fp16-rounded scale and min the reader will use.
    Value min = e.roundTo(groupMin, b.getF16Type());
    Value range = e.sub(max, groupMin);
    Value scale = e.roundTo(e.div(range, e.f32(15)), b.getF16Type());
    Value pair = mulIndex(e, g, 4);
    storeF16ToBytes(e, scale, cache, row, pair);
    storeF16ToBytes(e, min, cache, row, addIndex(e, pair, e.index(2)));
    Value zeroScale = e.cmpf(arith::CmpFPredicate::OEQ, scale, e.f32(0));
    auto quantise = [&](Value offset) {
      Value scaled = e.div(e.sub(element(offset), min), scale);
      Value q = math::RoundEvenOp::create(b, scaled);
      q = arith::MaximumFOp::create(b, q, e.f32(0));
      q = arith::MinimumFOp::create(b, q, e.f32(15));
      q = e.select(zeroScale, e.f32(0), q);
      return arith::FPToUIOp::create(b, b.getI8Type(), q);
    };
    e.loop(groupSize / 2, [&](Value pairIndex) {
      Value even = mulIndex(e, pairIndex, 2);
      Value low = quantise(even);
      Value high = quantise(addIndex(e, even, e.index(1)));
      Value byte = arith::OrIOp::create(
          b, low,
          arith::ShLIOp::create(
              b, high, arith::ConstantIntOp::create(b, b.getI8Type(), 4)));
      Value nibbleIndex = addIndex(e, first, even);
      Value byteIndex = addIndex(
          e, nibbleBase, arith::DivUIOp::create(b, nibbleIndex, e.index(2)));
      SmallVector<Value> indices(row);
      indices.push_back(byteIndex);
      memref::StoreOp::create(b, byte, cache, indices);
    });
  });
}

Value fdc::loadInt4Weight(Emitter &e, Value bytes, decode::QuantTensorType type,
                          Value n, Value k) {
  int64_t rows = type.getShape()[0], cols = type.getShape()[1];
  int64_t groups = cols / type.getGroupSize();
  Type scaleType = type.getScaleType();
  int64_t scaleBytes = scaleType.getIntOrFloatBitWidth() / 8;
  ImplicitLocOpBuilder &b = e.builder();
  Value rowBase = mulIndex(e, n, cols / 2);
  Value q = loadNibble(e, bytes, {}, rowBase, k);
  Value group = arith::DivUIOp::create(b, k, e.index(type.getGroupSize()));
  Value pairIndex = addIndex(e, mulIndex(e, n, groups), group);
  Value scalesBase = e.index(rows * cols / 2);
  Value pair = addIndex(e, scalesBase, mulIndex(e, pairIndex, 2 * scaleBytes));
  Value scale = loadScalarFromBytes(e, bytes, {}, pair, scaleType);
  Value min = loadScalarFromBytes(
      e, bytes, {}, addIndex(e, pair, e.index(scaleBytes)), scaleType);
  return e.add(min, e.mul(scale, q));
}

Value fdc::emitSparseProduct(Emitter &e, Value input, Value words,
                             decode::TiledCSLType type) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t n = type.getShape()[0], k = type.getShape()[1];
  int64_t tileRows = type.getTile()[0], tileCols = type.getTile()[1];
  int64_t tilesPerRow = type.getTilesPerRow();
  Value batch = memref::DimOp::create(b, input, 0);
  Value acc = memref::AllocOp::create(
      b, MemRefType::get({ShapedType::kDynamic, n}, b.getF32Type()),
      ValueRange{batch});
  e.loop(batch, [&](Value i) {
    e.loop(n,
           [&](Value j) { memref::StoreOp::create(b, e.f32(0), acc, {i, j}); });
  });
  // Each tile is expanded into a dense f32 tile, then multiplied in k order:
  // the sums are those of the dense matrix, whatever the words' order.
  Value dense = memref::AllocOp::create(
      b, MemRefType::get({tileRows * tileCols}, b.getF32Type()));
  Value wordBase = e.index(type.getHeaderWords());
  auto offsetAt = [&](Value tile) {
    Value word = memref::LoadOp::create(b, words, tile);
    Value wide = arith::ExtUIOp::create(b, b.getI64Type(), word);
    return addIndex(e, wordBase,
                    arith::IndexCastOp::create(b, b.getIndexType(), wide));
  };
  Type valueType = type.getElementType();
  e.loop(type.getTileCount(), [&](Value tile) {
    e.loop(tileRows * tileCols,
           [&](Value l) { memref::StoreOp::create(b, e.f32(0), dense, l); });
    Value begin = offsetAt(tile);
    Value end = offsetAt(addIndex(e, tile, e.index(1)));
    e.loop(begin, end, [&](Value w) {
      Value word = memref::LoadOp::create(b, words, w);
      // Padding words store a zero at a zero or outside the matrix.
      Value valueBits = arith::TruncIOp::create(b, b.getI16Type(), word);
      Value bitcast = arith::BitcastOp::create(b, valueType, valueBits);
      Value weight = arith::ExtFOp::create(b, b.getF32Type(), bitcast);
      Value shifted = arith::ShRUIOp::create(b, word, e.i32(16));
      Value location = arith::IndexCastOp::create(b, b.getIndexType(), shifted);
      // A location past the tile (only a corrupt weight has one) stays in
      // the tile, as on the GPU.
      Value inTile =
          arith::MinUIOp::create(b, location, e.index(tileRows * tileCols - 1));
      memref::StoreOp::create(b, weight, dense, inTile);
    });
    Value tileRow = arith::DivUIOp::create(b, tile, e.index(tilesPerRow));
    Value tileCol = arith::RemUIOp::create(b, tile, e.index(tilesPerRow));
    Value rowBase = mulIndex(e, tileRow, tileRows);
    Value colBase = mulIndex(e, tileCol, tileCols);
    Value rowsLeft = arith::SubIOp::create(b, e.index(n), rowBase);
    Value rows = arith::MinUIOp::create(b, rowsLeft, e.index(tileRows));
    Value colsLeft = arith::SubIOp::create(b, e.index(k), colBase);
    Value cols = arith::MinUIOp::create(b, colsLeft, e.index(tileCols));
    e.loop(rows, [&](Value r) {
      Value row = addIndex(e, rowBase, r);
      Value rowStart = mulIndex(e, r, tileCols);
      e.loop(batch, [&](Value i) {
        Value old = memref::LoadOp::create(b, acc, {i, row});
        Value sum = e.reduce1(cols, old, [&](Value c, Value partial) {
          Value weight =
              memref::LoadOp::create(b, dense, addIndex(e, rowStart, c));
          Value x = e.load(input, {i, addIndex(e, colBase, c)});
          Value term = e.mul(weight, x);
          return e.add(partial, term);
        });
        memref::StoreOp::create(b, sum, acc, {i, row});
      });
    });
  });
  memref::DeallocOp::create(b, dense);
  return acc;
}
