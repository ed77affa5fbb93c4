//===- Packing.cpp - Packed weight layouts (int4, tiled_csl) --------------===//

#include "fdc/runtime/Packing.h"

#include "fdc/runtime/Manifest.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

using namespace fdc::runtime;

namespace {

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

void storeU16(uint8_t *out, uint16_t value) {
  out[0] = static_cast<uint8_t>(value);
  out[1] = static_cast<uint8_t>(value >> 8);
}

void storeU32(uint8_t *out, uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out[i] = static_cast<uint8_t>(value >> (8 * i));
}

/// Stores `value` (already representable in `dtype`) as `dtype`, little
/// endian; returns the bytes written.
size_t storeScalar(uint8_t *out, float value, DType dtype) {
  switch (dtype) {
  case DType::F16:
    storeU16(out, floatToF16Bits(value));
    return 2;
  case DType::BF16:
    storeU16(out, floatToBF16Bits(value));
    return 2;
  default:
    storeU32(out, floatBits(value));
    return 4;
  }
}

/// Bits of `value` rounded to the 16-bit `dtype`.
uint16_t narrowBits(float value, DType dtype) {
  return dtype == DType::F16 ? floatToF16Bits(value) : floatToBF16Bits(value);
}

bool isPackFloat(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}

} // namespace

//===----------------------------------------------------------------------===//
// fp16 / bf16
//===----------------------------------------------------------------------===//

uint16_t fdc::runtime::floatToF16Bits(float value) {
  // Round to nearest even (after F. Giesen's float_to_half_fast3_rtne).
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t magnitude = bits & 0x7fffffff;
  if (magnitude > 0x7f800000) // NaN
    return sign | 0x7e00;
  if (magnitude >= 0x47800000) // >= 65536 (and infinity): infinity
    return sign | 0x7c00;
  if (magnitude < 0x38800000) {
    // Subnormal or zero: adding 0.5 aligns the 10 mantissa bits at the bottom
    // of the sum, and the (round-to-nearest-even) float addition rounds them.
    constexpr uint32_t magicBits = 126u << 23; // 0.5f
    float sum = bitsFloat(magnitude) + bitsFloat(magicBits);
    return sign | static_cast<uint16_t>(floatBits(sum) - magicBits);
  }
  uint32_t odd = (magnitude >> 13) & 1;
  magnitude += (static_cast<uint32_t>(15 - 127) << 23) + 0xfff + odd;
  // Values in [65520, 65536) carry into the exponent and become infinity.
  return sign | static_cast<uint16_t>(magnitude >> 13);
}

float fdc::runtime::f16BitsToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return bitsFloat(sign | floatBits(magnitude));
  }
  if (exponent == 31)
    return bitsFloat(sign | 0x7f800000 | (mantissa << 13));
  return bitsFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

uint16_t fdc::runtime::floatToBF16Bits(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000)
    return static_cast<uint16_t>((bits >> 16) | 0x0040);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

float fdc::runtime::bf16BitsToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

float fdc::runtime::roundToDType(float value, DType dtype) {
  switch (dtype) {
  case DType::F16:
    return f16BitsToFloat(floatToF16Bits(value));
  case DType::BF16:
    return bf16BitsToFloat(floatToBF16Bits(value));
  default:
    return value;
  }
}

void fdc::runtime::convertToF32(const uint8_t *source, DType dtype,
                                uint64_t count, float *out) {
  for (uint64_t i = 0; i < count; ++i) {
    if (dtype == DType::F32) {
      uint32_t bits = 0;
      for (int b = 0; b < 4; ++b)
        bits |= static_cast<uint32_t>(source[4 * i + b]) << (8 * b);
      out[i] = bitsFloat(bits);
      continue;
    }
    uint16_t bits =
        static_cast<uint16_t>(source[2 * i] | (source[2 * i + 1] << 8));
    out[i] = dtype == DType::F16 ? f16BitsToFloat(bits) : bf16BitsToFloat(bits);
  }
}

//===----------------------------------------------------------------------===//
// Sizes and validation
//===----------------------------------------------------------------------===//

uint64_t fdc::runtime::int4PackedBytes(int64_t n, int64_t k, int64_t groupSize,
                                       DType scaleDType) {
  uint64_t elements = static_cast<uint64_t>(n) * static_cast<uint64_t>(k);
  uint64_t pairs =
      static_cast<uint64_t>(n) * static_cast<uint64_t>(k / groupSize);
  return elements / 2 + pairs * 2 * dtypeSize(scaleDType);
}

namespace {
uint64_t ceilDiv(int64_t a, int64_t b) {
  return static_cast<uint64_t>((a + b - 1) / b);
}
uint64_t tiledCSLTiles(int64_t n, int64_t k, int64_t tileRows,
                       int64_t tileCols) {
  return ceilDiv(n, tileRows) * ceilDiv(k, tileCols);
}
} // namespace

uint64_t fdc::runtime::tiledCSLHeaderWords(int64_t n, int64_t k,
                                           int64_t tileRows, int64_t tileCols) {
  return (tiledCSLTiles(n, k, tileRows, tileCols) / 4 + 1) * 4;
}

uint64_t fdc::runtime::tiledCSLCapacityBytes(int64_t n, int64_t k,
                                             int64_t tileRows,
                                             int64_t tileCols) {
  uint64_t tiles = tiledCSLTiles(n, k, tileRows, tileCols);
  return tiledCSLHeaderWords(n, k, tileRows, tileCols) * 4 +
         tiles * static_cast<uint64_t>(tileRows * tileCols) * 4;
}

Error fdc::runtime::checkPackedLayout(const WeightSpec &weight) {
  const std::vector<int64_t> &shape = weight.shape;
  const char *layout =
      weight.layoutKind == WeightLayout::Int4 ? "int4" : "tiled_csl";
  if (weight.layoutKind == WeightLayout::Dense)
    return Error::success();
  if (shape.size() != 2 || shape[0] <= 0 || shape[1] <= 0)
    return createError("layout '", layout,
                       "' needs a 2-D shape [N, K] of positive sizes");
  int64_t n = shape[0], k = shape[1];
  // Word indices and nibble counts must fit 32 bits.
  if (static_cast<uint64_t>(n) * static_cast<uint64_t>(k) > UINT32_MAX)
    return createError("shape [", n, ", ", k,
                       "] has more than 2^32 - 1 "
                       "elements");
  uint64_t expected;
  if (weight.layoutKind == WeightLayout::Int4) {
    if (k % 2 != 0)
      return createError("int4 needs an even K, got ", k);
    if (weight.groupSize <= 0 || k % weight.groupSize != 0)
      return createError("group_size ", weight.groupSize,
                         " does not divide K = ", k);
    if (!isPackFloat(weight.scaleDType))
      return createError("scale_dtype must be f32, bf16 or f16");
    expected = int4PackedBytes(n, k, weight.groupSize, weight.scaleDType);
    if (weight.bytes != expected)
      return createError("bytes ", weight.bytes,
                         " does not match the int4 "
                         "size of [",
                         n, ", ", k, "] with group_size ", weight.groupSize,
                         " and ", manifestDTypeName(weight.scaleDType),
                         " scales (", expected, ")");
    return Error::success();
  }
  if (weight.dtype != DType::F16 && weight.dtype != DType::BF16)
    return createError("tiled_csl needs dtype f16 or bf16, got ",
                       manifestDTypeName(weight.dtype));
  int64_t tile[2] = {weight.tileRows, weight.tileCols};
  static const char *dimNames[2] = {"N", "K"};
  for (int i = 0; i < 2; ++i)
    if (tile[i] <= 0 || tile[i] > 65536)
      return createError("tile [", tile[0], ", ", tile[1], "]: ", tile[i],
                         " along ", dimNames[i], " is not in [1, 65536]");
  if (tile[0] * tile[1] > 65536)
    return createError("tile [", tile[0], ", ", tile[1], "] has ",
                       tile[0] * tile[1],
                       " elements, more than 16-bit locations address "
                       "(65536)");
  if (tile[0] * tile[1] % 4 != 0)
    return createError("tile [", tile[0], ", ", tile[1], "] has ",
                       tile[0] * tile[1],
                       " elements, not a multiple of 4 (tile runs are padded "
                       "to whole 16-byte vectors)");
  expected = tiledCSLCapacityBytes(n, k, tile[0], tile[1]);
  if (weight.bytes != expected)
    return createError("bytes ", weight.bytes,
                       " does not match the tiled_csl "
                       "capacity of [",
                       n, ", ", k, "] with tile [", tile[0], ", ", tile[1],
                       "] (", expected, ")");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

Error fdc::runtime::packInt4(const float *dense, int64_t n, int64_t k,
                             int64_t groupSize, DType scaleDType,
                             uint8_t *out) {
  int64_t groups = k / groupSize;
  size_t scaleSize = dtypeSize(scaleDType);
  uint8_t *pairs =
      out + static_cast<uint64_t>(n) * static_cast<uint64_t>(k) / 2;
  for (int64_t r = 0; r < n; ++r) {
    const float *row = dense + r * k;
    uint8_t *nibbles = out + r * (k / 2);
    for (int64_t g = 0; g < groups; ++g) {
      const float *x = row + g * groupSize;
      float lo = std::numeric_limits<float>::infinity();
      float hi = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < groupSize; ++j) {
        if (!std::isfinite(x[j]))
          return createError("element [", r, ", ", g * groupSize + j, "] is ",
                             x[j], "; int4 packing needs finite values");
        // IEEE minimum/maximum (as arith.minimumf/maximumf): -0 < +0.
        if (x[j] < lo || (x[j] == lo && std::signbit(x[j])))
          lo = x[j];
        if (x[j] > hi || (x[j] == hi && !std::signbit(x[j])))
          hi = x[j];
      }
      // The same arithmetic, in f32, as the compiled INT4 KV-cache append:
      // the scale comes from the exact min, q from the rounded one.
      float min = roundToDType(lo, scaleDType);
      float scale = roundToDType((hi - lo) / 15.0f, scaleDType);
      uint8_t *pair = pairs + (r * groups + g) * 2 * scaleSize;
      storeScalar(pair, scale, scaleDType);
      storeScalar(pair + scaleSize, min, scaleDType);
      for (int64_t j = 0; j < groupSize; ++j) {
        float q = 0.0f;
        if (scale != 0.0f) {
          q = std::nearbyint((x[j] - min) / scale);
          if (!(q >= 0.0f)) // also NaN (an infinite scale or min)
            q = 0.0f;
          q = std::min(q, 15.0f);
        }
        int64_t column = g * groupSize + j;
        uint8_t nibble = static_cast<uint8_t>(q);
        uint8_t &byte = nibbles[column / 2];
        byte = column % 2 == 0
                   ? static_cast<uint8_t>((byte & 0xf0) | nibble)
                   : static_cast<uint8_t>((byte & 0x0f) | (nibble << 4));
      }
    }
  }
  return Error::success();
}

namespace {
static_assert((kTiledCSLOrderBanks & (kTiledCSLOrderBanks - 1)) == 0 &&
                  kTiledCSLOrderBankBytes % 2 == 0,
              "the order's banks are a power of two of whole elements");

/// The shared-memory bank (of kTiledCSLOrderBanks) of a tile location in
/// the Flash-LLM kernels' dense tile (flash_spmm and group_spmm on NVIDIA):
/// 2-byte elements, rows of tileCols, and when a row holds a multiple of 64
/// elements, row r's 16-byte chunks XOR r mod 8 (the group MMA's 128-byte
/// swizzle).
unsigned sharedBank(uint32_t location, int64_t tileCols) {
  constexpr uint32_t kElementsPerBank = kTiledCSLOrderBankBytes / 2;
  uint32_t swizzle = tileCols % 64 == 0 ? (location / tileCols) % 8 * 8 : 0;
  return (location ^ swizzle) / kElementsPerBank % kTiledCSLOrderBanks;
}

/// Orders a tile's padded words so that the words lanes store in one
/// instruction (instruction 4q + j stores slot 128q + 4l + j, word j of
/// vector l of group q, for its group's vectors l) share banks as little as
/// the banks' counts allow (docs/model-library.md): the words ranked within
/// their bank, then sorted stably by (rank, bank), are dealt out
/// instruction by instruction, so an instruction takes one word of each
/// bank while every bank has words left.
void orderForBanks(std::vector<uint32_t> &words, int64_t tileCols) {
  size_t count = words.size();
  std::array<uint32_t, kTiledCSLOrderBanks> seen{};
  std::vector<uint32_t> key(count);
  for (size_t i = 0; i < count; ++i) {
    unsigned bank = sharedBank(words[i] >> 16, tileCols);
    key[i] = seen[bank]++ * kTiledCSLOrderBanks + bank;
  }
  std::vector<uint32_t> byKey(count);
  std::iota(byKey.begin(), byKey.end(), 0u);
  std::stable_sort(byKey.begin(), byKey.end(),
                   [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
  std::vector<uint32_t> ordered(count);
  for (size_t next = 0; next < count; ++next) {
    size_t group = next / 128, inGroup = next % 128;
    size_t vectors = std::min<size_t>(32, (count - group * 128) / 4);
    size_t j = inGroup / vectors, lane = inGroup % vectors;
    ordered[group * 128 + lane * 4 + j] = words[byKey[next]];
  }
  words.swap(ordered);
}
} // namespace

uint64_t fdc::runtime::packTiledCSL(const float *dense, int64_t n, int64_t k,
                                    int64_t tileRows, int64_t tileCols,
                                    DType elementDType, uint8_t *out) {
  int64_t tilesPerRow = static_cast<int64_t>(ceilDiv(k, tileCols));
  int64_t tiles = static_cast<int64_t>(ceilDiv(n, tileRows)) * tilesPerRow;
  uint8_t *words = out + tiledCSLHeaderWords(n, k, tileRows, tileCols) * 4;
  uint64_t count = 0;
  std::vector<uint32_t> run;
  for (int64_t t = 0; t < tiles; ++t) {
    storeU32(out + t * 4, static_cast<uint32_t>(count));
    int64_t row0 = (t / tilesPerRow) * tileRows;
    int64_t col0 = (t % tilesPerRow) * tileCols;
    run.clear();
    // The first location, row-major over the whole tile, that is outside
    // the matrix or holds a zero: where padding words go.
    int64_t padding = -1;
    for (int64_t r = 0; r < tileRows; ++r)
      for (int64_t c = 0; c < tileCols; ++c) {
        uint32_t location = static_cast<uint32_t>(r * tileCols + c);
        bool inside = row0 + r < n && col0 + c < k;
        uint16_t bits =
            inside ? narrowBits(dense[(row0 + r) * k + col0 + c], elementDType)
                   : 0;
        if ((bits & 0x7fff) == 0) { // +0 and -0 are dropped
          if (padding < 0)
            padding = location;
          continue;
        }
        run.push_back((location << 16) | bits);
      }
    while (run.size() % 4 != 0)
      run.push_back(static_cast<uint32_t>(padding) << 16);
    orderForBanks(run, tileCols);
    for (uint32_t word : run)
      storeU32(words + (count++) * 4, word);
  }
  storeU32(out + tiles * 4, static_cast<uint32_t>(count));
  return count;
}

Error fdc::runtime::packWeight(const WeightSpec &weight, const float *dense,
                               uint8_t *out) {
  if (Error err = checkPackedLayout(weight))
    return createError("weight '", weight.name, "': ", err.message());
  int64_t n = weight.shape[0], k = weight.shape[1];
  switch (weight.layoutKind) {
  case WeightLayout::Int4:
    if (Error err =
            packInt4(dense, n, k, weight.groupSize, weight.scaleDType, out))
      return createError("weight '", weight.name, "': ", err.message());
    return Error::success();
  case WeightLayout::TiledCSL:
    packTiledCSL(dense, n, k, weight.tileRows, weight.tileCols, weight.dtype,
                 out);
    return Error::success();
  case WeightLayout::Dense:
    break;
  }
  return createError("weight '", weight.name,
                     "': layout 'dense' is not packed");
}

//===----------------------------------------------------------------------===//
// Reading packed weights
//===----------------------------------------------------------------------===//

namespace {
uint32_t loadU32(const uint8_t *in) {
  return static_cast<uint32_t>(in[0]) | static_cast<uint32_t>(in[1]) << 8 |
         static_cast<uint32_t>(in[2]) << 16 |
         static_cast<uint32_t>(in[3]) << 24;
}
} // namespace

uint64_t fdc::runtime::tiledCSLPackedBytes(const uint8_t *packed, int64_t n,
                                           int64_t k, int64_t tileRows,
                                           int64_t tileCols) {
  uint64_t tiles = tiledCSLTiles(n, k, tileRows, tileCols);
  return (tiledCSLHeaderWords(n, k, tileRows, tileCols) +
          loadU32(packed + tiles * 4)) *
         4;
}

Error fdc::runtime::checkTiledCSL(const uint8_t *data, uint64_t size, int64_t n,
                                  int64_t k, int64_t tileRows,
                                  int64_t tileCols) {
  uint64_t tiles = tiledCSLTiles(n, k, tileRows, tileCols);
  uint64_t headerWords = tiledCSLHeaderWords(n, k, tileRows, tileCols);
  if (size % 4 != 0 || size < headerWords * 4)
    return createError("holds ", size, " bytes, not a header of ",
                       headerWords * 4, " bytes followed by 4-byte words");
  for (uint64_t i = tiles + 1; i < headerWords; ++i)
    if (loadU32(data + i * 4) != 0)
      return createError("header word ", i, " (padding after TileOffsets) is ",
                         loadU32(data + i * 4), ", not 0");
  if (uint32_t first = loadU32(data); first != 0)
    return createError("TileOffsets[0] is ", first, ", not 0");
  uint64_t words = size / 4 - headerWords;
  if (uint32_t last = loadU32(data + tiles * 4); last != words)
    return createError("TileOffsets[", tiles, "] is ", last, ", but ", words,
                       " words follow the header");

  const uint64_t tileElements = static_cast<uint64_t>(tileRows * tileCols);
  uint64_t tilesPerRow = ceilDiv(k, tileCols);
  // Per location of the tile being read: 0 no word, 1 padding words only, 2
  // a word with a value.
  std::vector<uint8_t> held(tileElements);
  const uint8_t *runs = data + headerWords * 4;
  for (uint64_t t = 0; t < tiles; ++t) {
    uint32_t begin = loadU32(data + t * 4), end = loadU32(data + t * 4 + 4);
    if (end < begin)
      return createError("TileOffsets[", t + 1, "] = ", end,
                         " is less than TileOffsets[", t, "] = ", begin);
    if (end % 4 != 0)
      return createError("TileOffsets[", t + 1, "] = ", end,
                         " is not a multiple of 4");
    if (end > words)
      return createError("TileOffsets[", t + 1, "] = ", end, " is past the ",
                         words, " words that follow the header");
    if (end - begin > tileElements)
      return createError("tile ", t, " has ", end - begin,
                         " words, more than its ", tileElements, " elements");
    int64_t rowsInside = std::min<int64_t>(
        tileRows, n - static_cast<int64_t>(t / tilesPerRow) * tileRows);
    int64_t colsInside = std::min<int64_t>(
        tileCols, k - static_cast<int64_t>(t % tilesPerRow) * tileCols);
    std::fill(held.begin(), held.end(), 0);
    for (uint32_t w = begin; w < end; ++w) {
      uint32_t word = loadU32(runs + static_cast<uint64_t>(w) * 4);
      uint32_t location = word >> 16;
      auto failWord = [&](const auto &...args) {
        return createError("tile ", t, " word ", w - begin, " (location ",
                           location, "): ", args...);
      };
      if (location >= tileElements)
        return failWord("outside the ", tileRows, "x", tileCols, " tile");
      if ((word & 0x7fff) == 0) {
        if (held[location] == 2)
          return failWord("padding over a word with a value");
        held[location] = 1;
        continue;
      }
      if (static_cast<int64_t>(location) / tileCols >= rowsInside ||
          static_cast<int64_t>(location) % tileCols >= colsInside)
        return failWord("a value outside the matrix");
      if (held[location] != 0)
        return failWord("a second word at one location");
      held[location] = 2;
    }
  }
  return Error::success();
}
