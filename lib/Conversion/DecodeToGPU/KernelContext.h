//===- KernelContext.h - building and launching step kernels ----*- C++ -*-===//
//
// What every kernel generator needs: a place in the gpu.module for its
// gpu.func, the host step's builder to emit its gpu.launch_func, and the
// buffers (device pointers + the memref type they are viewed as).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELCONTEXT_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELCONTEXT_H

#include "GpuEmitter.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <functional>

namespace fdc::gpu {

/// A step value on the device: its pointer (host side) and its view.
struct Buffer {
  mlir::Value pointer;
  mlir::MemRefType type;
};

/// A kernel parameter: a buffer (passed as its pointer, viewed in the kernel
/// with the batch size and, for the cache, its run-time sizes) or a scalar
/// i64 host value.
struct KernelArg {
  static KernelArg buffer(Buffer b) { return {b.pointer, b.type}; }
  static KernelArg scalar(mlir::Value value) { return {value, {}}; }
  mlir::Value host;
  mlir::MemRefType view; // null for scalars
};

class KernelContext {
public:
  KernelContext(mlir::ImplicitLocOpBuilder &host, mlir::gpu::GPUModuleOp module,
                const GpuPrimitives &primitives, mlir::Value batch,
                mlir::Value numSlots, mlir::Value maxContext)
      : host(host), module(module), primitives(primitives), batch(batch),
        numSlots(numSlots), maxContext(maxContext) {}

  /// Lanes of a subgroup on the target.
  int64_t subgroupSize() const { return primitives.subgroupSize(); }

  /// Body of a kernel: the emitter inside it and its arguments, buffers
  /// already viewed as memrefs, scalars as i64, in the order given.
  using BodyBuilder =
      std::function<void(GpuEmitter &, llvm::ArrayRef<mlir::Value>)>;

  /// Creates a gpu.func of kernel family `name` with `workgroupF32` f32s of
  /// shared memory (passed after the args, if non-zero), and launches it with
  /// `grid` (host index values) and `block` threads. A kernel identical to
  /// one built before is not kept: the launch reuses that one, so every
  /// distinct kernel exists once however many layers use it. Kernels are
  /// named `<family>_<n>`, n counting the family's distinct kernels.
  void launch(llvm::StringRef name, llvm::ArrayRef<KernelArg> args,
              std::array<mlir::Value, 3> grid, int64_t block,
              int64_t workgroupF32, BodyBuilder body);

  mlir::ImplicitLocOpBuilder &host;
  mlir::gpu::GPUModuleOp module;
  /// The target's facts and cross-lane operations.
  const GpuPrimitives &primitives;
  /// Host i64 values from FdcStepArgs.
  mlir::Value batch, numSlots, maxContext;
  /// Names of the distinct kernels, in order of their first launch.
  llvm::SmallVector<std::string> kernelNames;

  /// Host helpers.
  mlir::Value hostIndex(int64_t value);
  mlir::Value hostI64(int64_t value);
  mlir::Value toIndex(mlir::Value i64);
  mlir::Value ceilDiv(mlir::Value a, mlir::Value b); // i64

private:
  /// `func` under a unique name, or the identical kernel built before it
  /// (then `func` is erased).
  mlir::gpu::GPUFuncOp deduplicate(mlir::gpu::GPUFuncOp func,
                                   llvm::StringRef family);

  llvm::StringMap<mlir::gpu::GPUFuncOp> kernelsByText;
  llvm::StringMap<unsigned> kernelsPerFamily;
};

//===----------------------------------------------------------------------===//
// Generators. Each builds one kernel (or two) from a config and launches it.
//===----------------------------------------------------------------------===//

struct ElementwiseConfig {
  int64_t threads = 256;
  int64_t vectorBytes = 16;
};
struct RowConfig {
  int64_t threads = 256;
};
struct GemvConfig {
  /// One subgroup per output row; rows per block.
  int64_t warpsPerBlock = 4;
  int64_t vectorBytes = 16;
};
struct AttentionConfig {
  int64_t warps = 4;
  /// Upper bound on KV splits (sizes the scratch for partial results).
  int64_t maxSplits = 64;
  /// Blocks per compute unit of the target that automatic splits aim for
  /// (two waves).
  int64_t wavesPerUnit = 2;
  /// Fewest positions per split when splits are automatic.
  int64_t minSplitLength = 64;
};

void buildEmbedding(KernelContext &ctx, const ElementwiseConfig &config,
                    Buffer table, Buffer tokens, Buffer out);
void buildRMSNorm(KernelContext &ctx, const RowConfig &config, Buffer input,
                  Buffer weight, float eps, Buffer out);
/// Dense or INT4 weight; bias / residual may have a null pointer.
void buildLinear(KernelContext &ctx, const GemvConfig &config, Buffer input,
                 Buffer weight, mlir::Type weightType, Buffer bias,
                 Buffer residual, decode::Activation activation, Buffer out);
/// `accumulator` is f32 scratch of [M, N] (the weight's N).
void buildSparseLinear(KernelContext &ctx, const RowConfig &config,
                       Buffer input, Buffer weight, decode::TiledCSLType type,
                       Buffer accumulator, Buffer bias, Buffer residual,
                       decode::Activation activation, Buffer out);
void buildRope(KernelContext &ctx, const ElementwiseConfig &config,
               Buffer input, Buffer positions, int64_t rotaryDim, float theta,
               Buffer out);
void buildKVAppend(KernelContext &ctx, Buffer key, Buffer value, Buffer cache,
                   decode::KVCacheType cacheType, Buffer slots,
                   Buffer positions, int64_t layer);
/// Scratch bytes per sequence the attention of `query` needs for partials.
int64_t attentionScratchPerSequence(const AttentionConfig &config,
                                    mlir::RankedTensorType query);
/// Fails (with a diagnostic at `loc`) for head dims it cannot split into lanes.
mlir::LogicalResult buildAttention(mlir::Location loc, KernelContext &ctx,
                                   const AttentionConfig &config, Buffer query,
                                   Buffer cache, decode::KVCacheType cacheType,
                                   Buffer slots, Buffer positions,
                                   Buffer partials, int64_t layer, float scale,
                                   decode::SoftmaxAttr softmax, int64_t splits,
                                   Buffer out);
void buildArgmax(KernelContext &ctx, const RowConfig &config, Buffer logits,
                 Buffer out);
void buildSample(KernelContext &ctx, const RowConfig &config, Buffer logits,
                 Buffer uniform, Buffer temperature, Buffer topK, Buffer topP,
                 Buffer out);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELCONTEXT_H
