//===- Int4Vectors.cpp - INT4 cache rows in vector registers --------------===//

#include "Int4Vectors.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

Int4RowLayout Int4RowLayout::get(decode::KVCacheType type) {
  auto int4 = cast<decode::Int4Type>(type.getElementType());
  Int4RowLayout layout;
  layout.groups = int4.getGroups();
  layout.groupSize = type.getHeadDim() / layout.groups;
  layout.headerBytes = int4.getHeaderBytes();
  layout.rowBytes = type.getRowBytes();
  return layout;
}

bool Int4RowLayout::supportsRun(int64_t dims) const {
  if (dims <= 0 || dims % 8 != 0 || groupSize % 8 != 0)
    return false;
  return groupSize % dims == 0 || dims % groupSize == 0;
}

int64_t Int4RowLayout::runAlignment(int64_t dims) const {
  // The largest power of two (at most 16) that divides the row, the
  // header and the run's bytes.
  uint64_t rowAndHeader = llvm::MinAlign(rowBytes, headerBytes);
  return llvm::MinAlign(rowAndHeader, llvm::MinAlign(dims / 2, 16));
}

int64_t fdc::gpu::int4DecodedDim(int64_t i, int64_t words) {
  int64_t j = i / (2 * words), w = (i % (2 * words)) / 2, h = i % 2;
  return 8 * w + j + 4 * h;
}

int64_t fdc::gpu::int4DecodedIndex(int64_t d, int64_t words) {
  int64_t w = d / 8, j = d % 4, h = (d % 8) / 4;
  return j * 2 * words + 2 * w + h;
}

namespace {
/// The (scale, min) pair (vector<2xf16>) of group `group` (an index).
Value loadGroupPair(GpuEmitter &e, Value cache, const Int4RowLayout &layout,
                    ValueRange row, Value group) {
  ImplicitLocOpBuilder &b = e.builder();
  SmallVector<Value> indices(row);
  indices.push_back(arith::MulIOp::create(b, group, e.index(4)));
  auto bytesType = VectorType::get({4}, b.getI8Type());
  int64_t alignment = layout.rowBytes % 4 == 0 ? 4 : 2;
  Value bytes = vector::LoadOp::create(b, bytesType, cache, indices,
                                       /*nontemporal=*/false,
                                       llvm::MaybeAlign(alignment));
  auto pairType = VectorType::get({2}, b.getF16Type());
  return vector::BitCastOp::create(b, pairType, bytes);
}

/// The groups a run of `dims` dims spans.
int64_t runGroups(const Int4RowLayout &layout, int64_t dims) {
  return std::max<int64_t>(1, dims / layout.groupSize);
}
} // namespace

int64_t Int4Run::valueCount(const Int4RowLayout &layout, int64_t dims) {
  return 1 + runGroups(layout, dims);
}

void Int4Run::appendValues(SmallVectorImpl<Value> &values) const {
  values.push_back(words);
  values.append(pairs.begin(), pairs.end());
}

Int4Run Int4Run::fromValues(ArrayRef<Value> values) {
  Int4Run run;
  run.words = values.front();
  run.pairs.assign(values.begin() + 1, values.end());
  return run;
}

Int4Run fdc::gpu::loadInt4Run(GpuEmitter &e, Value cache,
                              const Int4RowLayout &layout, ValueRange row,
                              Value dim0, int64_t dims) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t bytes = dims / 2;
  SmallVector<Value> indices(row);
  Value byteOffset = arith::DivUIOp::create(b, dim0, e.index(2));
  indices.push_back(
      arith::AddIOp::create(b, byteOffset, e.index(layout.headerBytes)));
  Value raw = vector::LoadOp::create(
      b, VectorType::get({bytes}, b.getI8Type()), cache, indices,
      /*nontemporal=*/false, llvm::MaybeAlign(layout.runAlignment(dims)));
  Int4Run run;
  run.words = vector::BitCastOp::create(
      b, VectorType::get({dims / 8}, b.getI32Type()), raw);
  Value firstGroup = arith::DivUIOp::create(b, dim0, e.index(layout.groupSize));
  for (int64_t g = 0; g < runGroups(layout, dims); ++g) {
    Value group = arith::AddIOp::create(b, firstGroup, e.index(g));
    run.pairs.push_back(loadGroupPair(e, cache, layout, row, group));
  }
  return run;
}

namespace {
/// Per group of a run, its scale and min as `element`s (f16 as stored; for
/// bf16 converted once per group).
std::pair<SmallVector<Value>, SmallVector<Value>>
groupScalesAndMins(GpuEmitter &e, const Int4Run &run, Type element) {
  ImplicitLocOpBuilder &b = e.builder();
  SmallVector<Value> scales, mins;
  for (Value pair : run.pairs) {
    if (!element.isF16()) {
      auto wide = VectorType::get({2}, b.getF32Type());
      auto narrow = VectorType::get({2}, element);
      Value widened = arith::ExtFOp::create(b, wide, pair);
      pair = arith::TruncFOp::create(b, narrow, widened);
    }
    scales.push_back(e.extract(pair, 0));
    mins.push_back(e.extract(pair, 1));
  }
  return {scales, mins};
}

/// The group of word `w` of a run: 8w / groupSize, or the run's one.
int64_t wordGroup(const Int4RowLayout &layout, const Int4Run &run, int64_t w) {
  return run.pairs.size() == 1 ? 0 : 8 * w / layout.groupSize;
}

/// Dequantises 32-bit words of nibbles to `element` (f16 or bf16) in
/// decoded order: per piece j (nibbles j and j + 4 of each word) a
/// mask-and-or into the biased value, the bias subtracted, and a
/// contracted multiply-add of the scale and min of each half of each word
/// (`scale` and `min`: vector<2 * words x element>).
class Int4Dequantizer {
public:
  Int4Dequantizer(GpuEmitter &e, Value words, Value scale, Value min,
                  Type element)
      : e(e), b(e.builder()), words(words), scale(scale), min(min),
        element(element),
        count(cast<VectorType>(words.getType()).getNumElements()),
        wordsType(VectorType::get({count}, b.getI32Type())),
        halvesType(VectorType::get({2 * count}, element)) {}

  Value dequantize() {
    SmallVector<Value> pieces;
    if (element.isF16()) {
      // The odd pieces' nibbles sit 4 bits up: 1024 + 16q, whose scale is a
      // sixteenth (exact, but for a scale below 2^-10, whose sixteenth
      // rounds to a multiple of f16's subnormal step 2^-24).
      Value highScale = arith::MulFOp::create(b, scale, halves(1.0 / 16));
      Value bias = halves(1024.0);
      Value shifted = shiftWords(8);
      for (int64_t j = 0; j < 4; ++j) {
        // Piece j: nibbles j and j + 4 (bits 4j and 16 + 4j) of each word,
        // or-ed into f16 1024 + q (j even) or 1024 + 16q (j odd).
        bool odd = j % 2 == 1;
        Value source = j < 2 ? words : shifted;
        pieces.push_back(piece(source, odd ? 0x00F000F0 : 0x000F000F,
                               0x64006400, bias, odd ? highScale : scale));
      }
    } else {
      // bf16's 7 mantissa bits take a nibble in the low bits only: piece j
      // from the words shifted down 4j bits, or-ed into 128 + q.
      Value bias = halves(128.0);
      for (int64_t j = 0; j < 4; ++j) {
        Value source = j == 0 ? words : shiftWords(4 * j);
        pieces.push_back(piece(source, 0x000F000F, 0x43004300, bias, scale));
      }
    }
    return e.concatVectors(pieces);
  }

private:
  Value halves(double value) {
    return arith::ConstantOp::create(
        b, halvesType,
        DenseElementsAttr::get(halvesType, FloatAttr::get(element, value)));
  }

  Value shiftWords(int64_t bits) {
    Value shift = arith::ConstantOp::create(
        b, wordsType,
        DenseElementsAttr::get(wordsType, b.getI32IntegerAttr(bits)));
    return arith::ShRUIOp::create(b, words, shift);
  }

  /// (source & mask | bits) as `element`s, less `bias`, times `pieceScale`
  /// plus the min.
  Value piece(Value source, uint32_t mask, uint32_t bits, Value bias,
              Value pieceScale) {
    Value biased = e.target().maskOr(b, source, mask, bits);
    Value values = vector::BitCastOp::create(b, halvesType, biased);
    Value q = arith::SubFOp::create(b, values, bias);
    // q * scale + min, contracted to one fma (math.fma would be widened
    // to f32 on the way to a libdevice call).
    auto contract = arith::FastMathFlags::contract;
    Value scaled = arith::MulFOp::create(b, q, pieceScale, contract);
    return arith::AddFOp::create(b, scaled, min, contract);
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  Value words, scale, min;
  Type element;
  int64_t count;
  VectorType wordsType, halvesType;
};
} // namespace

Value fdc::gpu::dequantizeInt4Run(GpuEmitter &e, const Int4RowLayout &layout,
                                  const Int4Run &run, Type element) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t count = cast<VectorType>(run.words.getType()).getNumElements();
  auto [groupScales, groupMins] = groupScalesAndMins(e, run, element);
  // Both halves of word w take its group's scale and min.
  SmallVector<Value> scales, mins;
  for (int64_t w = 0; w < count; ++w) {
    int64_t g = wordGroup(layout, run, w);
    scales.append({groupScales[g], groupScales[g]});
    mins.append({groupMins[g], groupMins[g]});
  }
  auto halvesType = VectorType::get({2 * count}, element);
  Value scale = vector::FromElementsOp::create(b, halvesType, scales);
  Value min = vector::FromElementsOp::create(b, halvesType, mins);
  return Int4Dequantizer(e, run.words, scale, min, element).dequantize();
}

int64_t fdc::gpu::int4PairedIndex(int64_t d, int64_t words) {
  // Mixed word 2w + h holds half h of word w of both runs (h: dims 4h up of
  // the word's 8): dim d's decoded element there, as the first's.
  int64_t mixed = 2 * (d / 8) + (d % 8) / 4;
  return (d % 4) * 2 * (2 * words) + 2 * mixed;
}

Value fdc::gpu::dequantizeInt4RunPair(GpuEmitter &e,
                                      const Int4RowLayout &layout,
                                      const Int4Run &first,
                                      const Int4Run &second, Type element) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t count = cast<VectorType>(first.words.getType()).getNumElements();
  // Mixed word 2w + h: 16-bit half h of word w of the first run, then of
  // the second's (one byte permute each).
  auto halvesType = VectorType::get({2 * count}, b.getI16Type());
  Value firstHalves = vector::BitCastOp::create(b, halvesType, first.words);
  Value secondHalves = vector::BitCastOp::create(b, halvesType, second.words);
  SmallVector<int64_t> interleaved;
  for (int64_t i = 0; i < 2 * count; ++i)
    interleaved.append({i, 2 * count + i});
  Value mixedHalves =
      vector::ShuffleOp::create(b, firstHalves, secondHalves, interleaved);
  auto mixedType = VectorType::get({2 * count}, b.getI32Type());
  Value mixed = vector::BitCastOp::create(b, mixedType, mixedHalves);
  // A mixed word's halves take the first's and the second's scale and min.
  auto [firstScales, firstMins] = groupScalesAndMins(e, first, element);
  auto [secondScales, secondMins] = groupScalesAndMins(e, second, element);
  SmallVector<Value> scales, mins;
  for (int64_t u = 0; u < 2 * count; ++u) {
    int64_t g = wordGroup(layout, first, u / 2);
    scales.append({firstScales[g], secondScales[g]});
    mins.append({firstMins[g], secondMins[g]});
  }
  auto elementsType = VectorType::get({4 * count}, element);
  Value scale = vector::FromElementsOp::create(b, elementsType, scales);
  Value min = vector::FromElementsOp::create(b, elementsType, mins);
  return Int4Dequantizer(e, mixed, scale, min, element).dequantize();
}
