//===- Packing.h - Packed weight layouts (int4, tiled_csl) ------*- C++ -*-===//
//
// Packs dense weights into the layouts of docs/model-library.md ("Packed
// weight layouts"): group-wise INT4 with (scale, min) pairs and Flash-LLM's
// Tiled-CSL. The loader concatenates a weight's sources into a dense f32
// temporary and packs that; python/fdc/packing.py implements the same
// packing byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_PACKING_H
#define FDC_RUNTIME_PACKING_H

#include "fdc/runtime/DType.h"
#include "fdc/runtime/Error.h"

#include <cstdint>

namespace fdc::runtime {

struct WeightSpec;

/// IEEE binary16 / bfloat16 conversions. Narrowing rounds to nearest, ties
/// to even, and overflows to infinity; NaN stays NaN (f16: 0x7e00 with the
/// sign, bf16: the top half of the f32 with the quiet bit set).
uint16_t floatToF16Bits(float value);
float f16BitsToFloat(uint16_t bits);
uint16_t floatToBF16Bits(float value);
float bf16BitsToFloat(uint16_t bits);

/// `value` rounded to `dtype` (F32, F16 or BF16) and widened back to f32.
float roundToDType(float value, DType dtype);

/// Converts `count` little-endian elements of `dtype` (F32, F16 or BF16) to
/// f32.
void convertToF32(const uint8_t *source, DType dtype, uint64_t count,
                  float *out);

/// Bytes of an [n, k] int4 weight with `groupSize` and `scaleDType` (F32, F16
/// or BF16): n*k/2 nibble bytes, then n*k/groupSize (scale, min) pairs.
uint64_t int4PackedBytes(int64_t n, int64_t k, int64_t groupSize,
                         DType scaleDType);

/// The Tiled-CSL layout version this runtime packs and reads (the manifest's
/// "csl_version"; docs/model-library.md).
constexpr int64_t kTiledCSLVersion = 3;
/// The shared-memory banks that version 3's word order spreads each store
/// instruction of the GPU kernels over: kTiledCSLOrderBanks banks of
/// kTiledCSLOrderBankBytes bytes (docs/model-library.md). Part of the
/// format (the compiler's decode::TiledCSLType::kOrderBanks, fdc.packing's
/// TILED_CSL_BANKS), not of the GPU that reads it: a GPU with other banks
/// reads the same words, only with more conflicted stores.
constexpr int64_t kTiledCSLOrderBanks = 32;
constexpr int64_t kTiledCSLOrderBankBytes = 4;

/// Words of an [n, k] tiled_csl weight's header with tiles of tileRows x
/// tileCols: its tiles + 1 TileOffsets padded to a multiple of 4 (16 bytes).
uint64_t tiledCSLHeaderWords(int64_t n, int64_t k, int64_t tileRows,
                             int64_t tileCols);

/// Bytes reserved for an [n, k] tiled_csl weight: the header, then one word
/// per element of every tile (enough for a dense matrix).
uint64_t tiledCSLCapacityBytes(int64_t n, int64_t k, int64_t tileRows,
                               int64_t tileCols);

/// Checks the packed-layout fields of `weight` (shape, group size, scale
/// dtype, tile, bytes) against each other. Messages do not name the weight;
/// the caller prefixes them.
Error checkPackedLayout(const WeightSpec &weight);

/// Packs the row-major [n, k] matrix `dense` as int4 into `out`
/// (int4PackedBytes(...) bytes). Per group of `groupSize` values along k,
/// in f32 with round() rounding to `scaleDType` (nearest even):
/// min = round(min x), scale = round((max x - min x) / 15),
/// q = clamp(round_half_even((x - min) / scale), 0, 15), q = 0 when
/// scale == 0 (min/max order -0 before +0). Refuses a non-finite value.
Error packInt4(const float *dense, int64_t n, int64_t k, int64_t groupSize,
               DType scaleDType, uint8_t *out);

/// Packs the row-major [n, k] matrix `dense` as tiled_csl (kTiledCSLVersion) of
/// element type `elementDType` (F16 or BF16) into `out` (at least
/// tiledCSLCapacityBytes(...) bytes, zeroed): the header, then per tile one
/// word per value that is not zero once rounded to the element type, padded
/// to a multiple of 4 words with zero-valued words at a location that is
/// zero or outside the matrix, in the order that spreads each warp's
/// shared-memory stores over the banks (docs/model-library.md). Returns the
/// number of words, padding included.
uint64_t packTiledCSL(const float *dense, int64_t n, int64_t k,
                      int64_t tileRows, int64_t tileCols, DType elementDType,
                      uint8_t *out);

/// Bytes of the packed tiled_csl weight at `packed` up to the end of its last
/// run (its header and runs, read from TileOffsets[tiles]).
uint64_t tiledCSLPackedBytes(const uint8_t *packed, int64_t n, int64_t k,
                             int64_t tileRows, int64_t tileCols);

/// Checks a packed tiled_csl weight read from a file (`size` bytes at
/// `data`: the header and the runs, without the capacity's unused tail) for
/// an [n, k] matrix of tileRows x tileCols tiles, so that every consumer of
/// docs/model-library.md's layout reads inside it: the header's size and
/// zero padding; TileOffsets starting at 0, non-decreasing, multiples of 4,
/// no run longer than a tile, the last offset ending exactly at `size`; every
/// word's location inside the tile; a word with a value (bits & 0x7fff != 0)
/// inside the matrix and alone at its location (padding words, of value
/// +0/-0, may share one). The order inside a run is not checked (consumers
/// do not depend on it). Messages name the tile and word, not the weight;
/// the caller prefixes it.
Error checkTiledCSL(const uint8_t *data, uint64_t size, int64_t n, int64_t k,
                    int64_t tileRows, int64_t tileCols);

/// Packs `dense` (the weight's sources concatenated, as f32) into `out`, the
/// weight's [offset, offset + bytes) of the arena, per its layout (int4 or
/// tiled_csl). Errors name the weight.
Error packWeight(const WeightSpec &weight, const float *dense, uint8_t *out);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_PACKING_H
