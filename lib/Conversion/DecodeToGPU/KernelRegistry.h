//===- KernelRegistry.h - the GPU kernel families -------------*- C++ -*-===//
//
// A kernel family is one generator (Kernels/<Family>.cpp): the ops it lowers,
// the entries of its config with their defaults for a target, the checks of
// a config, and the build of its kernels. The registry lists the families in
// order of preference; decode-select-kernels writes each op's choice as a
// #decode.kernel, and convert-decode-to-gpu builds what that names.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELREGISTRY_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELREGISTRY_H

#include "KernelContext.h"

#include <memory>

namespace fdc::gpu {

/// What a family's build asks of the step lowering: the device buffers of
/// the op's operands and results.
class StepBuffers {
public:
  virtual ~StepBuffers();
  /// The buffer of an operand.
  virtual Buffer get(mlir::Value value) = 0;
  /// The buffer of an optional operand: a null pointer when absent.
  Buffer getOptional(mlir::Value value) {
    return value ? get(value) : Buffer{mlir::Value(), mlir::MemRefType()};
  }
  /// The buffer a result is written to (scratch, or a step output).
  virtual Buffer result(mlir::Value result) = 0;
  /// Scratch of `type` taking `bytesPerSequence` per sequence and
  /// `fixedBytes` besides.
  virtual Buffer scratch(mlir::MemRefType type, int64_t bytesPerSequence,
                         int64_t fixedBytes) = 0;
  Buffer scratch(mlir::MemRefType type, int64_t bytesPerSequence) {
    return scratch(type, bytesPerSequence, 0);
  }
  /// The workspace viewed as `type` (a memref whose one dynamic dimension
  /// is the batch): scratch the lowering reserved before the step's first
  /// kernel, as large as the largest KernelFamily::getWorkspaceBytesPerRow
  /// of any op's kernels. Every op's kernels share it: what one op leaves
  /// there is dead once its kernels have run.
  virtual Buffer workspace(mlir::MemRefType type) = 0;
  /// `result` lives in `source`'s buffer (an in-place update).
  virtual void alias(mlir::Value result, mlir::Value source) = 0;
};

/// A complete config: every entry of the family, defaults filled in.
class KernelConfig {
public:
  explicit KernelConfig(mlir::DictionaryAttr entries) : entries(entries) {}
  /// An entry the family declared (asserts it is there).
  int64_t get(llvm::StringRef name) const;
  mlir::DictionaryAttr getEntries() const { return entries; }

private:
  mlir::DictionaryAttr entries;
};

class KernelFamily {
public:
  virtual ~KernelFamily();
  /// The name in #decode.kernel, e.g. "gemv".
  virtual llvm::StringRef getName() const = 0;
  /// Whether the family lowers `op` (its kind and shapes).
  virtual bool canLower(mlir::Operation *op) const = 0;
  /// Every config entry the family takes (integers), with its default for
  /// `op` on `target`.
  virtual mlir::DictionaryAttr
  getDefaultConfig(mlir::Operation *op, const GpuPrimitives &target) const = 0;
  /// Checks the values of a complete config, with errors at `op`.
  virtual mlir::LogicalResult verifyConfig(mlir::Operation *op,
                                           const KernelConfig &config,
                                           const GpuPrimitives &target) const;
  /// The bytes of workspace per batch row the kernels of `op` with `config`
  /// take on `target` besides its results (StepBuffers::workspace); none by
  /// default.
  virtual int64_t getWorkspaceBytesPerRow(mlir::Operation *op,
                                          const KernelConfig &config,
                                          const GpuPrimitives &target) const {
    return 0;
  }
  /// Whether the kernels the family builds depend on
  /// KernelContext::releasesDependents (they signal the next kernel where
  /// it is set); the lowering keys kernels by the flag only then.
  virtual bool readsReleasesDependents() const { return false; }
  /// Whether the kernels scatter a Tiled-CSL weight's packed words into
  /// shared memory, where the words' order (made for
  /// decode::TiledCSLType::kOrderBanks banks) meets the target's banks.
  virtual bool scattersTiledCSLWords() const { return false; }
  /// Builds and launches the kernels of `op`.
  virtual mlir::LogicalResult build(mlir::Operation *op,
                                    const KernelConfig &config,
                                    StepBuffers &buffers,
                                    KernelContext &ctx) const = 0;

protected:
  /// Checks that config entry `name` is a whole number of subgroups that
  /// fits a workgroup of the target.
  static mlir::LogicalResult checkThreads(mlir::Operation *op,
                                          const KernelConfig &config,
                                          llvm::StringRef name,
                                          const GpuPrimitives &target);
  /// Checks that entry `name` is a power of two from one `element` to the
  /// target's widest vector load.
  static mlir::LogicalResult checkVectorBytes(mlir::Operation *op,
                                              const KernelConfig &config,
                                              llvm::StringRef name,
                                              const GpuPrimitives &target,
                                              mlir::Type element);
  /// Checks that entry `name` is in [lo, hi].
  static mlir::LogicalResult checkRange(mlir::Operation *op,
                                        const KernelConfig &config,
                                        llvm::StringRef name, int64_t lo,
                                        int64_t hi);
  /// A config from (name, value) pairs.
  static mlir::DictionaryAttr
  makeConfig(mlir::MLIRContext *context,
             llvm::ArrayRef<std::pair<llvm::StringRef, int64_t>> entries);
};

/// A family whose one config entry is its block size, `threads` (by default
/// 256, or the family's own), one thread block per row or per tile of
/// elements.
class BlockSizeFamily : public KernelFamily {
public:
  /// As defaultThreads: the target's max_workgroup_size.
  static constexpr int64_t kMaxWorkgroup = 0;
  /// `defaultThreads`: the block size when the op names none.
  explicit BlockSizeFamily(int64_t defaultThreads = 256)
      : defaultThreads(defaultThreads) {}
  mlir::DictionaryAttr
  getDefaultConfig(mlir::Operation *op,
                   const GpuPrimitives &target) const override;
  mlir::LogicalResult verifyConfig(mlir::Operation *op,
                                   const KernelConfig &config,
                                   const GpuPrimitives &target) const override;

private:
  int64_t defaultThreads;
};

class KernelRegistry {
public:
  /// The registry of every family, in order of preference.
  static const KernelRegistry &get();

  const KernelFamily *lookup(llvm::StringRef name) const;
  /// The preferred family that lowers `op`, or null.
  const KernelFamily *select(mlir::Operation *op) const;
  llvm::SmallVector<llvm::StringRef> getFamilyNames() const;

private:
  KernelRegistry();
  llvm::SmallVector<std::unique_ptr<KernelFamily>> families;
};

/// `kernel` for `op`, checked against the registry with the family's
/// defaults filled in; failure, with an error naming the op, for a bad one.
mlir::FailureOr<decode::KernelAttr> completeKernel(mlir::Operation *op,
                                                   decode::KernelAttr kernel,
                                                   const GpuPrimitives &target);

/// The kernels of `op`: its decode.kernel (a #decode.kernel, or a
/// #decode.dispatch over the batch size) with every kernel completed, else
/// the default: a dispatch table for a decode.linear a flat GEMM can lower,
/// the registry's preferred family with its defaults for other ops. A null
/// attribute for an op no family lowers (and that names no kernel).
mlir::FailureOr<mlir::Attribute> resolveKernels(mlir::Operation *op,
                                                const GpuPrimitives &target);

/// The MMA a flat GEMM of `op` uses on `target`: f16 or bf16 input and
/// weight, K a multiple of the target's vector width, and an MMA the target
/// lists for them (Kernels/FlatGemm.cpp); none otherwise.
std::optional<MmaLayout> getFlatGemmLayout(decode::LinearOp op,
                                           const GpuPrimitives &target);

/// FlashDecoding++'s heuristic dataflow from the target description: for a
/// decode.linear a flat GEMM can lower, GEMV for M = 1 and flat GEMM tiles
/// growing with M (Kernels/LinearDispatch.cpp); none otherwise.
std::optional<decode::KernelDispatchAttr>
getDefaultLinearDispatch(decode::LinearOp op, const GpuPrimitives &target);

/// Flash-LLM's SpMM for a decode.sparse_linear on a target with an MMA for
/// its type: flash_spmm up to 8 batch rows, then group_spmm's blocks of 16
/// and 32 where the target has a group MMA of that width (else flash_spmm's
/// wider tiles), K split to fill the units (Kernels/FlashSpmm.cpp); none
/// otherwise (sparse_row_scan then serves it).
std::optional<decode::KernelDispatchAttr>
getDefaultSparseLinearDispatch(decode::SparseLinearOp op,
                               const GpuPrimitives &target);

/// group_spmm's default kernel for blocks of `batch` batch rows, K split as
/// flash_spmm's (chooseSpmmSplitK); failure where the target has no group
/// MMA of that width or the family refuses the config
/// (Kernels/GroupSpmm.cpp).
mlir::FailureOr<decode::KernelAttr>
getDefaultGroupSpmmKernel(decode::SparseLinearOp op,
                          const GpuPrimitives &target, int64_t batch);

/// The default kernel of a decode.attention on a target with an MMA for the
/// cache's type: gqa_attention (Kernels/GqaAttention.cpp), which reads each
/// KV head once for its group of query heads (MHA, GQA, MQA) within the
/// target's registers; none otherwise (split_kv_attention then serves it).
std::optional<decode::KernelAttr>
getDefaultAttentionKernel(decode::AttentionOp op, const GpuPrimitives &target);

/// Whether `value` is a declared weight of the model (decode.weight_ref,
/// through reshapes), which the step reads and never writes.
bool isModelWeight(mlir::Value value);

/// The families, one per file in Kernels/.
std::unique_ptr<KernelFamily> createEmbeddingFamily();
std::unique_ptr<KernelFamily> createRMSNormFamily();
std::unique_ptr<KernelFamily> createGemvFamily();
std::unique_ptr<KernelFamily> createFlatGemmFamily();
std::unique_ptr<KernelFamily> createTiledGemmFamily();
std::unique_ptr<KernelFamily> createGroupGemmFamily();
std::unique_ptr<KernelFamily> createSparseRowScanFamily();
std::unique_ptr<KernelFamily> createFlashSpmmFamily();
std::unique_ptr<KernelFamily> createGroupSpmmFamily();
std::unique_ptr<KernelFamily> createRopeFamily();
std::unique_ptr<KernelFamily> createKVAppendFamily();
std::unique_ptr<KernelFamily> createSplitKVAttentionFamily();
std::unique_ptr<KernelFamily> createGqaAttentionFamily();
std::unique_ptr<KernelFamily> createArgmaxFamily();
std::unique_ptr<KernelFamily> createSampleFamily();
std::unique_ptr<KernelFamily> createAllReduceFamily();
std::unique_ptr<KernelFamily> createAllGatherFamily();

/// Measured dispatch tables (fdc tune): the complete, verified kernels worth
/// timing for `op` on `target` (Kernels/LinearCandidates.cpp), and the
/// k_unroll of a flat GEMM tile within the register budget of the default
/// table (Kernels/LinearDispatch.cpp).
llvm::SmallVector<decode::KernelAttr>
getLinearCandidates(decode::LinearOp op, const GpuPrimitives &target);
int64_t getFlatGemmUnroll(decode::LinearOp op, const GpuPrimitives &target,
                          const MmaLayout &layout, int64_t rowTiles,
                          int64_t batchTiles, int64_t maxUnroll);
/// A tiled GEMM's tile and split for getTiledGemmKernel.
struct TiledGemmShape {
  int64_t warpsN, warpsM, rowTiles, batchTiles, kTile;
  int64_t maxStages = 4;
  int64_t splitK = 1;
  /// The shared memory its stages may take; 0: the target's shared_memory
  /// (above staticSharedBytes(), dynamic shared memory).
  int64_t maxSharedBytes = 0;
};
/// A complete tiled GEMM (Kernels/TiledGemm.cpp) of `shape` with the most
/// stages, at most shape.maxStages, that fit its shared memory and that the
/// family accepts for `op` on `target`; none if not even two stages do.
std::optional<decode::KernelAttr>
getTiledGemmKernel(decode::LinearOp op, const GpuPrimitives &target,
                   const TiledGemmShape &shape);

/// The most stages a group GEMM may have (GroupGemm.cpp's verifier): a
/// block with 15 tiles of K in flight streams its weight rows alone.
constexpr int64_t kMaxGroupGemmStages = 16;
/// A group GEMM's tile and split for getGroupGemmKernel.
struct GroupGemmShape {
  int64_t groups, rowTiles, batch;
  int64_t maxStages = 4;
  int64_t splitK = 1;
};
/// A complete group GEMM (Kernels/GroupGemm.cpp) of `shape` with the most
/// stages, at most shape.maxStages, that fit the target's shared memory and
/// that the family accepts for `op` on `target`; none if not even two
/// stages do (or the target has no group MMA for the op).
std::optional<decode::KernelAttr>
getGroupGemmKernel(decode::LinearOp op, const GpuPrimitives &target,
                   const GroupGemmShape &shape);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELREGISTRY_H
