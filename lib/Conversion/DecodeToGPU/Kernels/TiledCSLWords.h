//===- TiledCSLWords.h - a block's reads of Tiled-CSL words -----*- C++ -*-===//
//
// The reads the Flash-LLM SpMM kernels (Kernels/FlashSpmm.cpp on the MMA,
// Kernels/GroupSpmm.cpp on the group MMA) share: the TileOffsets entries of
// a block's k tiles, each thread's share of a tile's run of 16-byte word
// vectors (vector i of a run is thread i % threads's), and a word's value
// and location (docs/model-ir.md has the format). Every read is clamped in
// the weight's buffer and every location in its tile, so a corrupt weight
// reads and writes nothing out of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDCSLWORDS_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDCSLWORDS_H

#include "../KernelRegistry.h"

namespace fdc::gpu {

/// A word's value (the weight's element type) and its location in its tile
/// (i32, row * TK + column, clamped in the tile).
struct TiledCSLWord {
  mlir::Value value, location;
};

/// The Flash-LLM kernels' default split of K (flash_spmm and group_spmm),
/// for `rows` blocks of tile rows over `tiles` k tiles when `slots` blocks
/// are resident at once (over all units). The blocks of a split run in
/// waves of `slots`; each takes its split's tiles plus about two tiles'
/// time for its prologue and partial sums. Of the splits up to
/// 16 that keep at least 8 k tiles per split (and none empty), the one
/// whose waves take least wins, the fewest splits on a tie. Counting whole
/// waves keeps a last wave from leaving units idle: on the H100 the
/// benchmark's 15 shape x batch points at 90 % sparsity gained 6 % in
/// geomean against giving every unit 8 (or 4) blocks, the rule before
/// (e.g. [11008, 4096] at M = 8: 6 splits, 16.4 against 18.4 us with 8).
/// A model, not a measurement: `slots` counts the blocks the shared memory
/// lets a unit hold (not its registers), and `rows` the grid's tile rows
/// (a batch wider than a block's batch tiles multiplies the blocks).
int64_t chooseSpmmSplitK(int64_t rows, int64_t tiles, int64_t slots);

class TiledCSLWords {
public:
  /// At most this many 16-byte word vectors per thread and tile in
  /// registers (a kernel config's `vectors`).
  static constexpr int64_t kMaxRegisterVectors = 16;
  /// The register vectors for a tile of `type` read by `threads` threads:
  /// a tile's words at 70 % sparsity and above (Flash-LLM's range; a denser
  /// tile loads the rest while it scatters). On the H100 5 vectors of 128
  /// threads gave flash_spmm the best geomean of 4, 5 and 6 over the
  /// benchmark at 70-90 % (4 is faster at 80-90 %, but puts 70 %'s words
  /// on the synchronous path; 6 costs occupancy).
  static int64_t getDefaultVectors(decode::TiledCSLType type, int64_t threads);

  /// Whether the kernels' scatter of a tile's words into shared memory on
  /// `target` keeps the spread over the banks that the packed word order
  /// was made for: decode::TiledCSLType::kOrderBanks banks of
  /// kOrderBankBytes bytes (a format constant; docs/model-library.md). It
  /// does where the target's banks are as wide and a multiple of them in
  /// number (words the order puts in different banks stay in different
  /// banks): every known target. Where it does not, the scatter's stores
  /// meet more bank conflicts, which costs speed, never correctness (every
  /// word still lands at its location): the kernels are built the same, and
  /// it is no error.
  static bool keepsOrderBanks(const GpuPrimitives &target);

  /// `weight` is the i32 buffer of a `type` weight of `element` values,
  /// read by `threads` threads that hold `vectors` vectors of a tile's run
  /// in registers; a block reads `tileCount` k tiles of a tile row.
  TiledCSLWords(GpuEmitter &e, mlir::Value weight, decode::TiledCSLType type,
                mlir::Type element, int64_t threads, int64_t vectors,
                mlir::Value tileCount);

  /// Per half (`halves`, each of `n` rows): the TileOffsets entry of tile
  /// row blockId.y's k tile `firstTile`, the block's first.
  void planOffsets(int64_t halves, int64_t n, mlir::Value firstTile);

  /// Where the words of the block's k tile `j` of half `h` start, in
  /// vectors of the weight buffer; `j` is clamped to the tile count (the
  /// next tile row's first offset, always in the header).
  mlir::Value loadOffset(int64_t h, mlir::Value j);

  /// This thread's register vectors of the run [begin, end); those past
  /// the run are zeros, not loaded.
  llvm::SmallVector<mlir::Value> loadWords(mlir::Value begin, mlir::Value end);

  /// `body(vector)` for each of this thread's vectors of the run [begin,
  /// end): first those of `registers` (loadWords') in the run, then, loaded
  /// here, those past what the registers hold.
  void forEachVector(mlir::ValueRange registers, mlir::Value begin,
                     mlir::Value end,
                     llvm::function_ref<void(mlir::Value)> body);

  /// Word `j` (< kWordsPerVector) of `vector`.
  TiledCSLWord unpack(mlir::Value vector, int64_t j);

private:
  mlir::Value vectorIndex(mlir::Value begin, int64_t i);
  mlir::Value loadVector(mlir::Value index);
  mlir::Value ifElseVector(mlir::Value condition,
                           llvm::function_ref<mlir::Value()> then);

  GpuEmitter &e;
  mlir::ImplicitLocOpBuilder &b;
  mlir::Value weight;
  decode::TiledCSLType type;
  mlir::Type element;
  int64_t threads, vectors;
  mlir::VectorType wordsType;
  mlir::Value tileCount;
  /// Per half: the TileOffsets entry of the block's first k tile.
  llvm::SmallVector<mlir::Value> offsetBase;
};

/// Whether the Flash-LLM kernels take `op`'s input: f16 or bf16, K a whole
/// number of the target's vector loads (the batch rows are copied in them).
bool isSpmmInput(decode::SparseLinearOp op, const GpuPrimitives &target);

/// Zeroes `elements` `element` values of shared memory `shared` from
/// `base` (both whole vectors of the target): each of `threads` threads
/// stores every threads-th vector.
void zeroShared(GpuEmitter &e, mlir::Value shared, mlir::Value base,
                int64_t elements, mlir::Type element, int64_t threads);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_TILEDCSLWORDS_H
