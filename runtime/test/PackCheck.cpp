//===- PackCheck.cpp - Packs a matrix read from stdin (for tests) ---------===//
//
//   fdc-pack-check int4 N K GROUP_SIZE f16|bf16|f32  < f32 matrix > packed
//   fdc-pack-check tiled_csl N K TILE_ROWS TILE_COLS f16|bf16 < ... > packed
//
// Reads N*K little-endian f32 values (row-major) from stdin and writes the
// packed weight (int4: its exact size; tiled_csl: its whole capacity) to
// stdout. python/tests/test_packing.py compares it with fdc.packing.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Manifest.h"
#include "fdc/runtime/Packing.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace fdc::runtime;

static int usage() {
  std::fprintf(stderr,
               "usage: fdc-pack-check int4 N K GROUP_SIZE f16|bf16|f32\n"
               "       fdc-pack-check tiled_csl N K TILE_ROWS TILE_COLS "
               "f16|bf16\n");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string layout = argv[1];
  WeightSpec weight;
  weight.name = "stdin";
  std::optional<DType> dtype;
  if (layout == "int4" && argc == 6) {
    weight.layoutKind = WeightLayout::Int4;
    weight.groupSize = std::atoll(argv[4]);
    dtype = parseManifestDType(argv[5]);
    if (dtype)
      weight.scaleDType = *dtype;
  } else if (layout == "tiled_csl" && argc == 7) {
    weight.layoutKind = WeightLayout::TiledCSL;
    weight.tileRows = std::atoll(argv[4]);
    weight.tileCols = std::atoll(argv[5]);
    dtype = parseManifestDType(argv[6]);
    if (dtype)
      weight.dtype = *dtype;
  } else {
    return usage();
  }
  if (!dtype)
    return usage();
  weight.layout = layout;
  weight.shape = {std::atoll(argv[2]), std::atoll(argv[3])};
  int64_t n = weight.shape[0], k = weight.shape[1];
  weight.bytes =
      weight.layoutKind == WeightLayout::Int4
          ? int4PackedBytes(n, k, weight.groupSize > 0 ? weight.groupSize : 1,
                            weight.scaleDType)
          : tiledCSLCapacityBytes(n, k,
                                  weight.tileRows > 0 ? weight.tileRows : 1,
                                  weight.tileCols > 0 ? weight.tileCols : 1);
  if (n <= 0 || k <= 0)
    return usage();

  std::vector<float> dense(static_cast<size_t>(n * k));
  if (std::fread(dense.data(), sizeof(float), dense.size(), stdin) !=
      dense.size()) {
    std::fprintf(stderr, "fdc-pack-check: stdin holds fewer than %zu floats\n",
                 dense.size());
    return 1;
  }
  std::vector<uint8_t> out(weight.bytes, 0);
  if (Error err = packWeight(weight, dense.data(), out.data())) {
    std::fprintf(stderr, "fdc-pack-check: %s\n", err.message().c_str());
    return 1;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}
