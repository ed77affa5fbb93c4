//===- TiledCSLFuzzer.cpp - libFuzzer target for the Tiled-CSL checker ----===//
//
// Input: byte 0 picks N and byte 1 K (1..32), byte 2 the tile (of kTiles);
// the rest is a packed tiled_csl weight (docs/model-library.md), copied into
// a buffer of exactly its size. When checkTiledCSL accepts it, every run is
// read through TileOffsets and scattered into a dense tile as the host code
// and the Flash-LLM kernels do, so that AddressSanitizer sees any word or
// location outside the buffer or the tile; a location past the tile, a
// value outside the matrix, or a word where a value is (or a value where
// padding is), aborts.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Packing.h"

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace fdc::runtime;

namespace {
constexpr int64_t kTiles[][2] = {{2, 2}, {1, 4}, {4, 4}, {2, 8},
                                 {8, 2}, {4, 1}, {3, 4}, {16, 8}};

uint32_t loadWord(const std::vector<uint8_t> &bytes, uint64_t index) {
  uint32_t word;
  std::memcpy(&word, bytes.data() + index * 4, 4);
  return word;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3)
    return 0;
  int64_t n = 1 + data[0] % 32, k = 1 + data[1] % 32;
  const int64_t *tile = kTiles[data[2] % (sizeof(kTiles) / sizeof(kTiles[0]))];
  int64_t tileRows = tile[0], tileCols = tile[1];
  // An exactly sized copy: a read past the end is a heap overflow.
  std::vector<uint8_t> packed(data + 3, data + size);
  if (checkTiledCSL(packed.data(), packed.size(), n, k, tileRows, tileCols))
    return 0;

  int64_t tilesPerRow = (k + tileCols - 1) / tileCols;
  int64_t tiles = (n + tileRows - 1) / tileRows * tilesPerRow;
  uint64_t header = tiledCSLHeaderWords(n, k, tileRows, tileCols);
  if (tiledCSLPackedBytes(packed.data(), n, k, tileRows, tileCols) !=
      packed.size())
    std::abort();
  std::vector<float> dense(static_cast<size_t>(n * k), 0.0f);
  for (int64_t t = 0; t < tiles; ++t) {
    std::vector<uint8_t> held(static_cast<size_t>(tileRows * tileCols), 0);
    uint32_t begin = loadWord(packed, t), end = loadWord(packed, t + 1);
    for (uint32_t w = begin; w < end; ++w) {
      uint32_t word = loadWord(packed, header + w);
      uint32_t location = word >> 16;
      uint16_t bits = static_cast<uint16_t>(word);
      if (location >= held.size())
        std::abort();
      // A value alone at its location; padding never over a value (the
      // scatter would store a zero over it).
      if ((bits & 0x7fff) == 0) {
        if (held[location] == 2)
          std::abort();
        held[location] = 1;
        continue;
      }
      if (held[location] != 0)
        std::abort();
      held[location] = 2;
      int64_t row = t / tilesPerRow * tileRows + location / tileCols;
      int64_t col = t % tilesPerRow * tileCols + location % tileCols;
      if (row >= n || col >= k)
        std::abort();
      dense[row * k + col] = f16BitsToFloat(bits);
    }
  }
  volatile float sink = dense[0];
  (void)sink;
  return 0;
}
