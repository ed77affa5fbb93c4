//===- PackingTest.cpp - Tests of the int4 and tiled_csl packers ----------===//

#include "fdc/runtime/Packing.h"

#include "fdc/runtime/Manifest.h"
#include "fdc/runtime/WeightLoader.h"

#include "TestUtil.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

float bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(PackingTest, F16Conversion) {
  EXPECT_EQ(floatToF16Bits(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16Bits(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16Bits(0.0f), 0x0000);
  EXPECT_EQ(floatToF16Bits(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16Bits(0.2f), 0x3266);
  EXPECT_EQ(floatToF16Bits(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16Bits(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16Bits(65520.0f), 0x7c00); // tie rounds to even: inf
  EXPECT_EQ(floatToF16Bits(1e9f), 0x7c00);
  EXPECT_EQ(floatToF16Bits(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(floatToF16Bits(std::nanf("")), 0x7e00);
  // Ties to even in the normal range: 1 + 2^-11 -> 1, 1 + 3 * 2^-11 -> 1 +
  // 2^-9.
  EXPECT_EQ(floatToF16Bits(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToF16Bits(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to 0, 3 * 2^-25 to 2^-23.
  EXPECT_EQ(floatToF16Bits(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToF16Bits(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToF16Bits(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToF16Bits(0x1p-14f - 0x1p-25f), 0x0400); // rounds up to normal
  // Every finite f16 round-trips.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff))
      continue;
    ASSERT_EQ(floatToF16Bits(f16BitsToFloat(static_cast<uint16_t>(b))), b)
        << std::hex << b;
  }
  EXPECT_EQ(f16BitsToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(f16BitsToFloat(0x7bff), 65504.0f);
}

TEST(PackingTest, BF16Conversion) {
  EXPECT_EQ(floatToBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(floatToBF16Bits(bits(0x3f808000)), 0x3f80); // tie to even
  EXPECT_EQ(floatToBF16Bits(bits(0x3f818000)), 0x3f82); // tie to even
  EXPECT_EQ(floatToBF16Bits(bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBF16Bits(bits(0x7f7fffff)), 0x7f80); // overflow: inf
  EXPECT_EQ(floatToBF16Bits(bits(0x7f800001)), 0x7fc0); // NaN stays NaN
  EXPECT_EQ(bf16BitsToFloat(0xc000), -2.0f);
}

TEST(PackingTest, Sizes) {
  EXPECT_EQ(int4PackedBytes(2, 8, 4, DType::F16), 8u + 4 * 4);
  EXPECT_EQ(int4PackedBytes(2, 8, 4, DType::F32), 8u + 4 * 8);
  EXPECT_EQ(int4PackedBytes(4096, 4096, 128, DType::F16),
            4096u * 2048 + 4096u * 32 * 4);
  // The header (tiles + 1 offsets) is padded to 4 words; every tile
  // reserves a word per element, partial tiles too.
  EXPECT_EQ(tiledCSLCapacityBytes(4, 4, 2, 2), 8u * 4 + 4 * 4 * 4);
  EXPECT_EQ(tiledCSLCapacityBytes(256, 512, 128, 64),
            20u * 4 + 16 * 128 * 64 * 4);
  EXPECT_EQ(tiledCSLHeaderWords(200, 100, 128, 64), 8u);
  EXPECT_EQ(tiledCSLCapacityBytes(200, 100, 128, 64),
            8u * 4 + 4 * 128 * 64 * 4);
}

TEST(PackingTest, Int4KnownMatrix) {
  // [2, 8], group size 4, f16 scales.
  const float dense[16] = {0, 15, 7.5f, 8.5f, -1, 1, 1, -1, //
                           5, 5,  5,    5,    1,  2, 3, 4};
  std::vector<uint8_t> out(int4PackedBytes(2, 8, 4, DType::F16), 0xee);
  ASSERT_FALSE(packInt4(dense, 2, 8, 4, DType::F16, out.data()));
  std::vector<uint8_t> expected = {
      // Nibbles, element 2j in the low nibble of byte j.
      // row 0, group 0: min 0, scale 1: q = 0, 15, 8 (7.5: tie to even), 8
      // (8.5: tie to even); group 1: min -1, scale f16(2/15), q = 0, 15, 15, 0.
      0xf0,
      0x88,
      0xf0,
      0x0f,
      // row 1, group 0: all 5, scale 0, q = 0; group 1: min 1, scale
      // f16(0.2) = 0.19995: q = 0, 5, 10, 15.
      0x00,
      0x00,
      0x50,
      0xfa,
      // (scale, min) pairs, row-major by (row, group), f16 little-endian.
      0x00,
      0x3c,
      0x00,
      0x00, // 1.0, 0.0
      0x44,
      0x30,
      0x00,
      0xbc, // 0.1333, -1.0
      0x00,
      0x00,
      0x00,
      0x45, // 0.0, 5.0
      0x66,
      0x32,
      0x00,
      0x3c, // 0.19995, 1.0
  };
  EXPECT_EQ(out, expected);
}

TEST(PackingTest, Int4ScaleDTypes) {
  const float dense[4] = {-0.5f, 1.0f, 0.25f, 1.0f};
  // f32: min -0.5, scale 0.1 (f32), q = 0, 15, round(7.5) = 8, 15.
  std::vector<uint8_t> out(int4PackedBytes(1, 4, 4, DType::F32));
  ASSERT_FALSE(packInt4(dense, 1, 4, 4, DType::F32, out.data()));
  float scale, min;
  std::memcpy(&scale, out.data() + 2, 4);
  std::memcpy(&min, out.data() + 6, 4);
  EXPECT_EQ(scale, 1.5f / 15.0f);
  EXPECT_EQ(min, -0.5f);
  EXPECT_EQ(out[0], 0xf0);
  EXPECT_EQ(out[1], 0xf0 | static_cast<uint8_t>(std::nearbyint(0.75f / scale)));
  // bf16: scale bf16(0.1) = 0x3dcd (0.10009765625).
  out.assign(int4PackedBytes(1, 4, 4, DType::BF16), 0);
  ASSERT_FALSE(packInt4(dense, 1, 4, 4, DType::BF16, out.data()));
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 2, out.end()),
            (std::vector<uint8_t>{0xcd, 0x3d, 0x00, 0xbf}));
  EXPECT_EQ(out[0], 0xf0);
  EXPECT_EQ(out[1], 0xf7); // 0.75 / 0.10009765625 = 7.49: q = 7
}

TEST(PackingTest, Int4RefusesNonFinite) {
  const float dense[4] = {0, 1, std::numeric_limits<float>::infinity(), 2};
  std::vector<uint8_t> out(int4PackedBytes(1, 4, 2, DType::F16));
  Error err = packInt4(dense, 1, 4, 2, DType::F16, out.data());
  ASSERT_TRUE(err);
  EXPECT_EQ(err.message(),
            "element [0, 2] is inf; int4 packing needs finite values");
}

TEST(PackingTest, TiledCSLKnownMatrix) {
  // [4, 4] in 2x2 tiles; -0 and a value that rounds to f16 zero are dropped.
  const float dense[16] = {1, 0,     0,      2, //
                           0, -0.0f, 3,      0, //
                           0, 0,     1e-10f, 0, //
                           0, -1,    0,      0};
  std::vector<uint8_t> out(tiledCSLCapacityBytes(4, 4, 2, 2), 0);
  EXPECT_EQ(packTiledCSL(dense, 4, 4, 2, 2, DType::F16, out.data()), 12u);
  std::vector<uint32_t> words(out.size() / 4);
  std::memcpy(words.data(), out.data(), out.size());
  std::vector<uint32_t> expected(words.size(), 0);
  // TileOffsets of tiles 0..3 (row-major) padded to 8 words, then each
  // tile's words padded to 4 with zero values at its first zero location.
  // A tile's one vector stores word j in instruction j, the words taken
  // round-robin over the banks (locations 0-1 are bank 0, 2-3 bank 1): each
  // bank's first word in bank order, then each bank's second, and so on.
  std::vector<uint32_t> head = {0,          4,
                                8,          12,
                                12,         0,
                                0,          0,
                                0x00003c00, 0x00010000,
                                0x00010000, 0x00010000, // tile 0: (0,0) 1
                                0x00014000, 0x00024200,
                                0x00000000, 0x00000000, // tile 1: 2, 3
                                0x00000000, 0x0003bc00,
                                0x00000000, 0x00000000}; // tile 2: (1,1) -1
  std::copy(head.begin(), head.end(), expected.begin());
  EXPECT_EQ(words, expected);
  // bf16 words carry bf16 bits; 1e-10 is not zero in bf16: tile 3 gets a
  // word, padded at its first zero, (0,1).
  out.assign(out.size(), 0);
  EXPECT_EQ(packTiledCSL(dense, 4, 4, 2, 2, DType::BF16, out.data()), 16u);
  std::memcpy(words.data(), out.data(), out.size());
  std::vector<uint32_t> bf16Words = {
      0,          4,          8,
      12,         16,         0,
      0,          0,          0x00003f80,
      0x00010000, 0x00010000, 0x00010000,
      0x00014000, 0x00024040, 0x00000000,
      0x00000000, 0x00000000, 0x0003bf80,
      0x00000000, 0x00000000, floatToBF16Bits(1e-10f),
      0x00010000, 0x00010000, 0x00010000};
  EXPECT_EQ(std::vector<uint32_t>(words.begin(), words.begin() + 24),
            bf16Words);
}

TEST(PackingTest, TiledCSLPartialTiles) {
  // [3, 3] in 2x2 tiles: the last tile row and column are partial. The
  // corner tile's one element is non-zero, so its padding goes to the first
  // location outside the matrix, (0,1).
  const float dense[9] = {1, 2, 3, //
                          4, 5, 6, //
                          7, 8, 9};
  std::vector<uint8_t> out(tiledCSLCapacityBytes(3, 3, 2, 2), 0);
  EXPECT_EQ(packTiledCSL(dense, 3, 3, 2, 2, DType::BF16, out.data()), 16u);
  std::vector<uint32_t> words(out.size() / 4);
  std::memcpy(words.data(), out.data(), out.size());
  EXPECT_EQ(std::vector<uint32_t>(words.begin(), words.begin() + 8),
            (std::vector<uint32_t>{0, 4, 8, 12, 16, 0, 0, 0}));
  // Tile 3 holds (2,2) = 9 at location 0, then padding at location 1.
  uint32_t nine = floatToBF16Bits(9.0f);
  EXPECT_EQ(std::vector<uint32_t>(words.begin() + 20, words.begin() + 24),
            (std::vector<uint32_t>{nine, 0x00010000, 0x00010000, 0x00010000}));
}

TEST(PackingTest, TiledCSLBankOrder) {
  // A 70%-sparse 128x64 tile: the words one instruction stores (slot 128q +
  // 4l + j for its group's lanes l) should hit the banks of the kernels'
  // shared tile (row r's 16-byte chunks XOR r mod 8) as evenly as the
  // banks' counts allow.
  std::vector<float> dense(128 * 64, 0.0f);
  uint32_t state = 12345;
  int64_t nonZeros = 0;
  for (float &value : dense) {
    state = state * 1664525u + 1013904223u;
    if ((state >> 8) % 10 < 3) {
      value = 1.0f + static_cast<float>((state >> 4) % 7);
      ++nonZeros;
    }
  }
  std::vector<uint8_t> out(tiledCSLCapacityBytes(128, 64, 128, 64), 0);
  uint64_t count =
      packTiledCSL(dense.data(), 128, 64, 128, 64, DType::F16, out.data());
  EXPECT_EQ(count, static_cast<uint64_t>((nonZeros + 3) / 4 * 4));
  std::vector<uint32_t> words(count);
  std::memcpy(words.data(), out.data() + 4 * 4, count * 4);
  auto bankOf = [](uint32_t word) {
    uint32_t location = word >> 16;
    return ((location ^ (location / 64 % 8 * 8)) >> 1) & 31;
  };
  // Shared-memory wavefronts of the stores: per instruction, the most words
  // of one bank it holds.
  auto wavefronts = [&](const std::vector<uint32_t> &order) {
    unsigned total = 0;
    for (uint64_t q = 0; q * 128 < count; ++q) {
      uint64_t vectors = std::min<uint64_t>(32, (count - q * 128) / 4);
      for (uint64_t j = 0; j < 4; ++j) {
        unsigned uses[32] = {};
        for (uint64_t l = 0; l < vectors; ++l)
          ++uses[bankOf(order[q * 128 + l * 4 + j])];
        total += *std::max_element(uses, uses + 32);
      }
    }
    return total;
  };
  // Every real value is there once.
  std::vector<bool> seen(128 * 64, false);
  int64_t real = 0;
  unsigned bankCounts[32] = {};
  for (uint32_t word : words) {
    ++bankCounts[bankOf(word)];
    if ((word & 0x7fff) != 0) {
      EXPECT_FALSE(seen[word >> 16]);
      seen[word >> 16] = true;
      EXPECT_NE(dense[word >> 16], 0.0f);
      ++real;
    }
  }
  EXPECT_EQ(real, nonZeros);
  // No order takes fewer wavefronts than the instructions or the largest
  // bank's words; the packer's stays within 25 % of that (1.21x here),
  // where location order takes over twice as many.
  unsigned instructions = 4 * ((count + 127) / 128);
  unsigned largest = *std::max_element(bankCounts, bankCounts + 32);
  unsigned floor = std::max(instructions, largest);
  EXPECT_LE(wavefronts(words), floor * 5 / 4);
  std::vector<uint32_t> byLocation = words;
  std::sort(byLocation.begin(), byLocation.end(),
            [](uint32_t a, uint32_t b) { return (a >> 16) < (b >> 16); });
  EXPECT_GT(wavefronts(byLocation), 2 * wavefronts(words));
}

//===----------------------------------------------------------------------===//
// Manifest fields and the loader
//===----------------------------------------------------------------------===//

std::string manifestOf(const std::string &weights,
                       const std::string &weightsBytes = "4096") {
  return R"({"abi_version": 1, "target": "host", "config": {"vocab_size": 8},
             "kv_cache": {"layers": 1, "kv_heads": 1, "head_dim": 4,
                          "dtype": "f32", "row_bytes": 16},
             "weights_bytes": )" +
         weightsBytes + R"(, "weights": [)" + weights + "]}";
}

std::string manifestError(const std::string &weights) {
  Expected<Manifest> m = Manifest::parse(manifestOf(weights), "test");
  return m ? "" : m.error().message();
}

const char *int4Weight(const char *fields) {
  static std::string text;
  text = std::string(R"({"name": "q", "dtype": "int4", "shape": [2, 8],
                         "layout": "int4", "offset": 0, )") +
         fields + "}";
  return text.c_str();
}

TEST(PackingManifestTest, AcceptsPackedLayouts) {
  Expected<Manifest> m = Manifest::parse(
      manifestOf(R"({"name": "q", "dtype": "int4", "shape": [2, 8],
                     "layout": "int4", "group_size": 4, "scale_dtype": "f16",
                     "offset": 0, "bytes": 24, "sources": ["a", "b"]},
                    {"name": "s", "dtype": "bf16", "shape": [4, 4],
                     "layout": "tiled_csl", "tile": [2, 2], "csl_version": 3,
                     "offset": 256, "bytes": 96})"),
      "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->weights[0].layoutKind, WeightLayout::Int4);
  EXPECT_EQ(m->weights[0].groupSize, 4);
  EXPECT_EQ(m->weights[0].scaleDType, DType::F16);
  EXPECT_EQ(m->weights[1].layoutKind, WeightLayout::TiledCSL);
  EXPECT_EQ(m->weights[1].dtype, DType::BF16);
  EXPECT_EQ(m->weights[1].tileRows, 2);
  EXPECT_EQ(m->weights[1].tileCols, 2);
}

TEST(PackingManifestTest, Errors) {
  auto expectError = [](const std::string &weights, const std::string &what) {
    std::string message = manifestError(weights);
    EXPECT_NE(message.find(what), std::string::npos)
        << "expected '" << what << "' in: '" << message << "'";
  };
  expectError(int4Weight(R"("group_size": 3, "scale_dtype": "f16",
                            "bytes": 24)"),
              "weight 'q': group_size 3 does not divide K = 8");
  expectError(int4Weight(R"("group_size": 4, "scale_dtype": "f64",
                            "bytes": 24)"),
              "weight 'q': scale_dtype 'f64' is not one of");
  expectError(int4Weight(R"("group_size": 4, "bytes": 24)"),
              "missing field 'weights[0].scale_dtype'");
  expectError(int4Weight(R"("group_size": 4, "scale_dtype": "f16",
                            "bytes": 32)"),
              "weight 'q': bytes 32 does not match the int4 size of [2, 8] "
              "with group_size 4 and f16 scales (24)");
  expectError(R"({"name": "q", "dtype": "f16", "shape": [2, 8],
                  "layout": "int4", "group_size": 4, "scale_dtype": "f16",
                  "offset": 0, "bytes": 24})",
              "weight 'q': layout 'int4' needs dtype 'int4', got 'f16'");
  expectError(R"({"name": "q", "dtype": "int4", "shape": [2, 8],
                  "offset": 0, "bytes": 24})",
              "weight 'q': dtype 'int4' is not one of f32, bf16, f16 (int4 "
              "needs layout 'int4')");
  auto csl = [](const std::string &dtype, const std::string &tile,
                const std::string &bytes, const std::string &version = "3") {
    return R"({"name": "s", "dtype": ")" + dtype +
           R"(", "shape": [4, 6], "layout": "tiled_csl", "tile": )" + tile +
           R"(, "csl_version": )" + version + R"(, "offset": 0, "bytes": )" +
           bytes + "}";
  };
  EXPECT_EQ(manifestError(csl("f16", "[2, 2]", "128")), "");
  // Partial tiles: [4, 6] in 2x4 tiles is 2 x 2 tiles.
  EXPECT_EQ(manifestError(csl("f16", "[2, 4]", "160")), "");
  expectError(csl("f16", "[3, 3]", "116"),
              "weight 's': tile [3, 3] has 9 elements, not a multiple of 4");
  expectError(csl("f16", "[0, 4]", "116"),
              "weight 's': tile [0, 4]: 0 along N is not in [1, 65536]");
  expectError(csl("f16", "[2]", "116"),
              "weight 's': 'tile' must be [rows, columns]");
  expectError(csl("f16", "[2, 2]", "96"),
              "weight 's': bytes 96 does not match the tiled_csl capacity of "
              "[4, 6] with tile [2, 2] (128)");
  expectError(csl("f32", "[2, 2]", "128"),
              "weight 's': tiled_csl needs dtype f16 or bf16, got f32");
  expectError(csl("f16", "[2, 2]", "128", "1"),
              "weight 's': tiled_csl layout version 1 is not the version "
              "this runtime reads (3)");
  expectError(R"({"name": "s", "dtype": "f16", "shape": [4, 6],
                  "layout": "tiled_csl", "tile": [2, 2], "offset": 0,
                  "bytes": 128})",
              "missing field 'weights[0].csl_version'");
  std::string big = R"({"name": "s", "dtype": "f16", "shape": [512, 256],
                        "layout": "tiled_csl", "tile": [512, 256],
                        "csl_version": 3, "offset": 0, "bytes": 524296})";
  Expected<Manifest> m = Manifest::parse(manifestOf(big, "600000"), "test");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find(
                "weight 's': tile [512, 256] has 131072 elements, more than "
                "16-bit locations address (65536)"),
            std::string::npos)
      << m.error().message();
}

class PackingLoaderTest : public ::testing::Test {
protected:
  /// Loads `weights` (manifest entries) from a checkpoint of `tensors`;
  /// returns the error message or "" (and the arena in `arena`).
  std::string load(const std::string &weights,
                   const std::vector<TestTensor> &tensors) {
    Expected<Manifest> manifest = Manifest::parse(manifestOf(weights), "test");
    if (!manifest)
      return manifest.error().message();
    TempDir dir;
    writeFile(dir.file("model.safetensors"), makeSafetensors(tensors));
    Expected<std::unique_ptr<Checkpoint>> checkpoint =
        Checkpoint::open(dir.path());
    if (!checkpoint)
      return checkpoint.error().message();
    Expected<HostBuffer> loaded = loadWeights(*manifest, **checkpoint);
    if (!loaded)
      return loaded.error().message();
    arena = std::move(*loaded);
    return "";
  }

  static std::vector<uint8_t> f16Bytes(const std::vector<float> &values) {
    std::vector<uint8_t> out;
    for (float v : values) {
      uint16_t b = floatToF16Bits(v);
      out.push_back(static_cast<uint8_t>(b));
      out.push_back(static_cast<uint8_t>(b >> 8));
    }
    return out;
  }

  HostBuffer arena;
};

const char *packedWeights =
    R"({"name": "q", "dtype": "int4", "shape": [2, 8], "layout": "int4",
        "group_size": 4, "scale_dtype": "f16", "offset": 0, "bytes": 24,
        "sources": ["a", "b"]},
       {"name": "s", "dtype": "f16", "shape": [4, 4], "layout": "tiled_csl",
        "tile": [2, 2], "csl_version": 3, "offset": 256, "bytes": 96})";

TEST_F(PackingLoaderTest, PacksConcatenatedSourcesOfAnyFloatDType) {
  // "q" = [a (f32); b (f16)], the matrix of Int4KnownMatrix; "s" from f32.
  std::vector<TestTensor> tensors = {
      {"a", "F32", {1, 8}, f32Bytes({0, 15, 7.5f, 8.5f, -1, 1, 1, -1})},
      {"b", "F16", {1, 8}, f16Bytes({5, 5, 5, 5, 1, 2, 3, 4})},
      {"s",
       "F32",
       {4, 4},
       f32Bytes({1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, -1, 0, 0})}};
  ASSERT_EQ(load(packedWeights, tensors), "");
  std::vector<uint8_t> q(arena.data(), arena.data() + 24);
  EXPECT_EQ(q, (std::vector<uint8_t>{0xf0, 0x88, 0xf0, 0x0f, 0x00, 0x00,
                                     0x50, 0xfa, 0x00, 0x3c, 0x00, 0x00,
                                     0x44, 0x30, 0x00, 0xbc, 0x00, 0x00,
                                     0x00, 0x45, 0x66, 0x32, 0x00, 0x3c}));
  // The words of TiledCSLKnownMatrix (f16).
  uint32_t words[20];
  std::memcpy(words, arena.data() + 256, sizeof(words));
  EXPECT_EQ(std::vector<uint32_t>(words, words + 20),
            (std::vector<uint32_t>{
                0,          4,          8,          12,         12,
                0,          0,          0,          0x00003c00, 0x00010000,
                0x00010000, 0x00010000, 0x00014000, 0x00024200, 0,
                0,          0,          0x0003bc00, 0,          0}));
  // The rest of the capacity stays zero.
  for (int i = 256 + 80; i < 256 + 96; ++i)
    ASSERT_EQ(arena.data()[i], 0) << i;

  // A tiled_csl weight also takes its own element type.
  tensors[2] = {"s",
                "F16",
                {4, 4},
                f16Bytes({1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, -1, 0, 0})};
  ASSERT_EQ(load(packedWeights, tensors), "");
  std::memcpy(words, arena.data() + 256, sizeof(words));
  EXPECT_EQ(words[17], 0x0003bc00u);
}

TEST_F(PackingLoaderTest, Errors) {
  std::vector<TestTensor> good = {
      {"a", "F32", {1, 8}, f32Bytes({0, 1, 2, 3, 4, 5, 6, 7})},
      {"b", "F32", {1, 8}, f32Bytes({0, 1, 2, 3, 4, 5, 6, 7})},
      {"s", "F32", {4, 4}, std::vector<uint8_t>(64)}};
  ASSERT_EQ(load(packedWeights, good), "");

  std::vector<TestTensor> tensors = good;
  tensors[2] = {"s", "BF16", {4, 4}, std::vector<uint8_t>(32)};
  EXPECT_EQ(load(packedWeights, tensors),
            "weight 's': checkpoint dtype BF16, library expects f16 or f32 "
            "(to pack as tiled_csl)");
  tensors = good;
  tensors[0] = {"a", "I32", {1, 8}, std::vector<uint8_t>(32)};
  EXPECT_EQ(load(packedWeights, tensors),
            "weight 'q': source 'a': checkpoint dtype I32, library expects "
            "f32, f16 or bf16 (to pack as int4)");
  tensors = good;
  tensors[1] = {"b", "F32", {1, 4}, f32Bytes({0, 1, 2, 3})};
  EXPECT_EQ(load(packedWeights, tensors),
            "weight 'q': source 'b': checkpoint shape [1, 4] does not fit "
            "library shape [2, 8] (concatenated along dim 0)");
  tensors = good;
  tensors[0].bytes = f32Bytes({0, 1, 2, 3, 4, 5, std::nanf(""), 7});
  EXPECT_EQ(load(packedWeights, tensors),
            "weight 'q': element [0, 6] is nan; int4 packing needs finite "
            "values");
}

} // namespace
