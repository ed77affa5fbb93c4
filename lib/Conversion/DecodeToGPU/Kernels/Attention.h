//===- Attention.h - what the attention families share ----------*- C++ -*-===//
//
// Both split-KV attention families (split_kv_attention, one block per query
// head; gqa_attention, one block per KV head on MMA units) write the same
// partial results, one row per (sequence, query head, split): acc[D], then
// the split's max (online) or out-of-range flag (unified max), then its sum.
// One reduce kernel, attention_reduce, combines the splits of either.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ATTENTION_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ATTENTION_H

#include "../KernelRegistry.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace fdc::gpu {

/// Index arithmetic of the attention kernels' bodies.
inline mlir::Value idx(mlir::ImplicitLocOpBuilder &b, mlir::Value v) {
  return mlir::arith::IndexCastOp::create(b, b.getIndexType(), v);
}
inline mlir::Value addI(mlir::ImplicitLocOpBuilder &b, mlir::Value x,
                        mlir::Value y) {
  return mlir::arith::AddIOp::create(b, x, y);
}
inline mlir::Value mulI(mlir::ImplicitLocOpBuilder &b, mlir::Value x,
                        mlir::Value y) {
  return mlir::arith::MulIOp::create(b, x, y);
}

/// The operands and attributes of one decode.attention.
struct AttentionProblem {
  Buffer query, cache, slots, positions, out;
  decode::KVCacheType cacheType;
  int64_t layer;
  float scale;
  decode::SoftmaxAttr softmax;
  /// KV splits fixed by the op; 0: chosen from the target.
  int64_t splits;

  static AttentionProblem get(decode::AttentionOp op, StepBuffers &buffers);

  int64_t queryHeads() const { return query.type.getDimSize(1); }
  int64_t kvHeads() const { return cacheType.getKvHeads(); }
  int64_t headDim() const { return cacheType.getHeadDim(); }
  /// Query heads per KV head.
  int64_t group() const { return queryHeads() / kvHeads(); }
  bool unified() const {
    return softmax.getScheme() == decode::SoftmaxScheme::unified_max;
  }
  /// f32s of one partial row: acc[D], max or flag, sum.
  int64_t partialRowFloats() const { return headDim() + 2; }
};

/// The arguments every attention kernel takes first, in this order: the
/// partial kernels of split_kv_attention and gqa_attention, and
/// attention_reduce (which recomputes a flagged row from the cache). A
/// launch starts its arguments with getAttentionArgs; a kernel body names
/// them by these indices and its own from FirstOwnArg on.
struct AttentionArgs {
  enum Index : unsigned {
    Query,
    Cache,
    Slots,
    Positions,
    Partials,
    NumSplits,
    FirstOwnArg
  };
};

/// The leading arguments (AttentionArgs) of an attention kernel's launch:
/// the op's query, cache, slots and positions, the partial rows and the
/// number of splits (a host i64).
llvm::SmallVector<KernelArg> getAttentionArgs(const AttentionProblem &problem,
                                              Buffer partials,
                                              mlir::Value numSplits);

/// How a family chooses its KV splits when the op leaves them open: enough
/// blocks to fill every compute unit `wavesPerUnit` times, at most
/// `maxSplits` and no split shorter than `minSplitLength` positions. With
/// `wholeWaves`, the most splits whose blocks stay within that count
/// instead (at least one): when the blocks of a split are few, one more
/// split would start a last, mostly idle wave of blocks. Never fewer than
/// `minSplits` (within the other two bounds), however many blocks the
/// batch brings.
struct AttentionSplitPolicy {
  int64_t maxSplits, wavesPerUnit, minSplitLength;
  bool wholeWaves = false;
  int64_t minSplits = 1;
};

/// The number of splits (a host i64) for `blocksPerSplit` blocks (a host
/// i64: the blocks one split of every sequence takes).
mlir::Value getAttentionSplits(KernelContext &ctx,
                               const AttentionProblem &problem,
                               const AttentionSplitPolicy &policy,
                               mlir::Value blocksPerSplit);

/// exp(x) of the softmax, as the target's base-2 exponential of x log2(e)
/// (GpuPrimitives::exp2: one ex2.approx.ftz on NVIDIA, v_exp_f32 and a
/// subnormal range fix-up on AMD) after a multiply, where math.exp takes a
/// dozen instructions to be exact to the last bit. Its relative error (a
/// few ulp, plus the rounding of x log2(e): about 1e-6 for |x| < 100) stays
/// far below the cache's precision; weights below 2^-126 may flush to 0.
mlir::Value attentionExp(GpuEmitter &e, mlir::Value x);

/// exp(x - max) (attentionExp), 0 when x is -inf (an empty split or a
/// masked position), so that -inf - -inf never produces NaN.
mlir::Value attentionScaleFactor(GpuEmitter &e, mlir::Value x, mlir::Value max);

/// The cache vector of `vecLen` elements at dims [d0, d0 + vecLen) of the
/// cache row `row` = (slot, layer, k|v, head, position), as f32.
mlir::Value loadCacheVector(GpuEmitter &e, mlir::Value cache,
                            decode::KVCacheType type, mlir::ValueRange row,
                            mlir::Value d0, int64_t vecLen);

/// One element of an attention kernel's output: head dim `dim` of query
/// head `head` of sequence `sequence` in `out` ([M, Hq, D]), in a kernel whose
/// arguments `args` begin with AttentionArgs; `layer` is the op's layer
/// (an index), for the cache rows a recompute reads.
struct AttentionOutputElement {
  llvm::ArrayRef<mlir::Value> args;
  mlir::Value out, layer, sequence, head, dim;
};

/// Unified max's last step for one output element, given its row's splits
/// combined: `flag` (> 0 if a split saw a score out of range), `sum` and
/// the dim's accumulator `acc`. Stores acc / sum, unless the row is flagged
/// or the sum or accumulator under- or overflowed: then one thread
/// recomputes the element from the cache with the online scheme over the
/// whole row, so the result is always right. attention_reduce runs it for
/// several splits, gqa_attention_single_split for a launch of one split
/// (which then needs no reduce).
void storeUnifiedAttentionResult(GpuEmitter &e, const AttentionProblem &problem,
                                 const AttentionOutputElement &element,
                                 mlir::Value flag, mlir::Value sum,
                                 mlir::Value acc);

/// Where a block of a split-KV kernel reads the cache: its sequence's slot,
/// the sequence's length (its last position + 1) and the split's positions
/// [start, end): split `split` of `chunk` positions (index values), cut at
/// the length (empty for a split past it). `chunk` is the kernel's i64
/// argument.
struct SplitPositions {
  mlir::Value slot, length, start, end;
};

/// The SplitPositions of (`sequence`, `split`) from the kernel's arguments
/// (AttentionArgs' Slots and Positions).
SplitPositions getSplitPositions(GpuEmitter &e,
                                 llvm::ArrayRef<mlir::Value> args,
                                 mlir::Value sequence, mlir::Value split,
                                 mlir::Value chunk);

/// One split's part of an output element: its row's max (online) or flag
/// (unified max), its row's sum, and the element's accumulator.
struct SplitState {
  mlir::Value first, sum, acc;
};

/// Several splits' states of one output element combined: online, each
/// rescaled to the largest max; unified max, the flags' max, the sums and
/// accumulators added. attention_reduce and gqa_attention_cluster share it.
SplitState mergeSplitStates(GpuEmitter &e, const AttentionProblem &problem,
                            llvm::ArrayRef<SplitState> states);

/// Launches attention_reduce, which combines the `numSplits` (host i64)
/// partial rows in `partials` of each (sequence, query head) into
/// problem.out: a subgroup-wide unit of head dims takes as many groups of
/// lanes as its splits need for one round of loads, and a block as many
/// units as its groups allow. Online: rescale to the global max. Unified max:
/// add and divide; a flagged row (or an under- or overflowed sum) is recomputed
/// with the online scheme right there, so the result is always right.
void launchAttentionReduce(KernelContext &ctx, const AttentionProblem &problem,
                           Buffer partials, mlir::Value numSplits);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ATTENTION_H
