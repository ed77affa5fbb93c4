//===- ClusterSplitSums.h - split-K sums added inside a cluster -*- C++ -*-===//
//
// A GEMM split in K whose split_k workgroups of one tile form a cluster
// (GpuPrimitives::setClusterShape; the tiled, group and Flash-LLM GEMMs,
// where the target has clusters and split_k is at most kMaxSplits) adds its
// splits' f32 sums there instead of in a workspace and a second kernel:
//
//   1. each workgroup stores its sums in its own shared memory (the stage
//      buffers, free once its MMAs are done) as [half][column][row] f32, so
//      that four consecutive rows of a column are one 16-byte vector; a
//      column may take 4 rows more than the tile's (getColumnPad, from the
//      target's shared-memory banks), so that the MMA fragments' columns 2
//      apart fall in different banks;
//   2. a cluster barrier;
//   3. split s takes the 4-row chunks s * threads + t, (s + split_k) *
//      threads + t, ... of the tile and, a few chunks at a time, first loads
//      every split's vector of each (16-byte loads from the workgroups'
//      shared memory, all in flight together), then adds them in split
//      order 0 .. split_k - 1 and applies the epilogue to each element in
//      bounds;
//   4. a second cluster barrier, which orders no memory (the loads' values
//      have been used): no workgroup leaves while another reads its shared
//      memory.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_CLUSTERSPLITSUMS_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_CLUSTERSPLITSUMS_H

#include "../GpuEmitter.h"

#include "fdc/Conversion/Utils/LinearEpilogue.h"

#include <cassert>

namespace fdc::gpu {

class ClusterSplitSums {
public:
  /// The most splits added in a cluster (within the target's
  /// cluster_workgroups). On the H100 two splits gained over the workspace
  /// and linear_epilogue (ffn2 [4096, 11008] M = 128: 38.4 against 39.6 us,
  /// o [4096, 4096] M = 128: 16.8 against 17.4), four lost (ffn2 M = 2: 34.9
  /// against 33.6 us; llama3-8b down M = 2: 44.7 against 42.7): the
  /// workgroups of a cluster start and leave together.
  static constexpr int64_t kMaxSplits = 2;
  /// Rows of a column in one 16-byte vector of f32 sums.
  static constexpr int64_t kChunkRows = 4;
  /// The most rows a column's sums take past the tile's (getColumnPad):
  /// one vector, which keeps the vectors aligned.
  static constexpr int64_t kMaxColumnPad = kChunkRows;
  /// The rows a column's sums take past the tile's `rows` on `target`: none
  /// or kMaxColumnPad, whichever makes a store of an MMA fragment's sums
  /// meet fewer different addresses in one of the target's shared-memory
  /// banks (#decode.gpu_target's shared_memory_banks and
  /// shared_memory_bank_bytes); none on a tie. A fragment's lanes hold
  /// columns 2 apart, which with columns of a multiple of 16 f32s share
  /// banks on 32 banks of 4 bytes (4 ways for 64 rows: H100, o [4096, 4096]
  /// at M = 128, every store of the sums 4 ways conflicted), and 4 more rows
  /// spread them over all 32 (every known target: 4, the tiles' rows being
  /// multiples of 16). With other banks the pad may differ; a pad that does
  /// not suit the target's banks costs speed, never correctness.
  static int64_t getColumnPad(int64_t rows, decode::GpuTargetAttr target);
  /// Whether `splits` workgroups of a tile add their sums in a cluster on
  /// `target`.
  static bool reducesInCluster(int64_t splits, decode::GpuTargetAttr target) {
    return splits > 1 && splits <= kMaxSplits && target.canCluster(splits);
  }

  /// The sums of a tile of `rows` weight rows (a multiple of 4) per half by
  /// `columns` batch columns, at byte `base` (i64, 16-byte aligned) of each
  /// workgroup's shared memory; `splits` workgroups of `threads` threads.
  ClusterSplitSums(GpuEmitter &e, mlir::Value base, int64_t rows,
                   int64_t columns, int64_t halves, int64_t splits,
                   int64_t threads)
      : e(e), base(base), rows(rows), columns(columns), halves(halves),
        splits(splits), threads(threads),
        columnStride(getColumnStride(rows, e.target().target())) {
    assert(rows % kChunkRows == 0 &&
           "a column's sums are loaded 4 rows at a time");
  }

  /// The f32 sums a column of `rows` rows takes in shared memory on
  /// `target`.
  static int64_t getColumnStride(int64_t rows, decode::GpuTargetAttr target) {
    return rows + getColumnPad(rows, target);
  }
  /// The bytes the sums take on `target`.
  static int64_t getBytes(int64_t rows, int64_t columns, int64_t halves,
                          decode::GpuTargetAttr target) {
    return halves * getColumnStride(rows, target) * columns * 4;
  }

  /// Step 1 for one f32 sum: half `h`, tile column `column`, tile row `row`.
  void store(int64_t h, mlir::Value column, mlir::Value row, mlir::Value sum);

  /// Steps 2 to 4. `split` is this workgroup's split (its rank in the
  /// cluster), `thread` its thread; output (m, n) of tile row r and column
  /// c is (columnBase + c, rowBase + r), stored where n < `n` and m <
  /// `batch`.
  void reduce(mlir::Value split, mlir::Value thread, mlir::Value rowBase,
              mlir::Value columnBase, int64_t n, mlir::Value batch,
              const LinearEpilogueOperands &epilogue, bool gateUp);

private:
  mlir::Value address(int64_t h, mlir::Value column, mlir::Value row);

  GpuEmitter &e;
  mlir::Value base;
  int64_t rows, columns, halves, splits, threads;
  /// getColumnStride(rows) on the emitter's target.
  int64_t columnStride;
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_CLUSTERSPLITSUMS_H
