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
/// Dequantises a run's words to `element` (f16 or bf16) in decoded order:
/// per piece j (nibbles j and j + 4 of each word) a mask-and-or into the
/// biased value, the bias subtracted, and a contracted multiply-add of the
/// scale and min.
class Int4Dequantizer {
public:
  Int4Dequantizer(GpuEmitter &e, const Int4RowLayout &layout,
                  const Int4Run &run, Type element)
      : e(e), b(e.builder()), layout(layout), run(run), element(element),
        count(cast<VectorType>(run.words.getType()).getNumElements()),
        wordsType(VectorType::get({count}, b.getI32Type())),
        halvesType(VectorType::get({2 * count}, element)) {}

  Value dequantize() {
    auto [scale, min] = scalesAndMins();
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
        Value source = j < 2 ? run.words : shifted;
        pieces.push_back(piece(source, odd ? 0x00F000F0 : 0x000F000F,
                               0x64006400, bias, odd ? highScale : scale, min));
      }
    } else {
      // bf16's 7 mantissa bits take a nibble in the low bits only: piece j
      // from the words shifted down 4j bits, or-ed into 128 + q.
      Value bias = halves(128.0);
      for (int64_t j = 0; j < 4; ++j) {
        Value source = j == 0 ? run.words : shiftWords(4 * j);
        pieces.push_back(
            piece(source, 0x000F000F, 0x43004300, bias, scale, min));
      }
    }
    return e.concatVectors(pieces);
  }

private:
  /// Per word w, its group's scale and min in both halves (word w's group
  /// is 8w / groupSize of the run, or the run's one).
  std::pair<Value, Value> scalesAndMins() {
    SmallVector<Value> groupScales, groupMins;
    for (Value pair : run.pairs) {
      if (!element.isF16()) {
        auto wide = VectorType::get({2}, b.getF32Type());
        auto narrow = VectorType::get({2}, element);
        pair = arith::TruncFOp::create(b, narrow,
                                       arith::ExtFOp::create(b, wide, pair));
      }
      groupScales.push_back(e.extract(pair, 0));
      groupMins.push_back(e.extract(pair, 1));
    }
    SmallVector<Value> scales, mins;
    for (int64_t w = 0; w < count; ++w) {
      int64_t g = run.pairs.size() == 1 ? 0 : 8 * w / layout.groupSize;
      scales.append({groupScales[g], groupScales[g]});
      mins.append({groupMins[g], groupMins[g]});
    }
    Value scale = vector::FromElementsOp::create(b, halvesType, scales);
    Value min = vector::FromElementsOp::create(b, halvesType, mins);
    return {scale, min};
  }

  Value halves(double value) {
    return arith::ConstantOp::create(
        b, halvesType,
        DenseElementsAttr::get(halvesType, FloatAttr::get(element, value)));
  }

  Value shiftWords(int64_t bits) {
    Value shift = arith::ConstantOp::create(
        b, wordsType,
        DenseElementsAttr::get(wordsType, b.getI32IntegerAttr(bits)));
    return arith::ShRUIOp::create(b, run.words, shift);
  }

  /// (source & mask | bits) as `element`s, less `bias`, times `scale`
  /// plus `min`.
  Value piece(Value source, uint32_t mask, uint32_t bits, Value bias,
              Value scale, Value min) {
    Value biased = e.target().maskOr(b, source, mask, bits);
    Value values = vector::BitCastOp::create(b, halvesType, biased);
    Value q = arith::SubFOp::create(b, values, bias);
    // q * scale + min, contracted to one fma (math.fma would be widened
    // to f32 on the way to a libdevice call).
    auto contract = arith::FastMathFlags::contract;
    Value scaled = arith::MulFOp::create(b, q, scale, contract);
    return arith::AddFOp::create(b, scaled, min, contract);
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const Int4RowLayout &layout;
  const Int4Run &run;
  Type element;
  int64_t count;
  VectorType wordsType, halvesType;
};
} // namespace

Value fdc::gpu::dequantizeInt4Run(GpuEmitter &e, const Int4RowLayout &layout,
                                  const Int4Run &run, Type element) {
  return Int4Dequantizer(e, layout, run, element).dequantize();
}
