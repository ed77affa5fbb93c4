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

#include "fdc/Conversion/Utils/StepAbi.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <array>
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
  /// The target's widest global load or store, in bytes.
  int64_t vectorBytes() const { return primitives.vectorBytes(); }

  /// A kernel's workgroup: its threads and, where a generator wants several
  /// workgroups resident per compute unit (to keep more loads in flight
  /// than one workgroup's subgroups do), the fewest it asks the target's
  /// compiler to fit, which bounds the registers a thread may take
  /// (GpuPrimitives::setMinWorkgroupsPerUnit; 0: the compiler's choice).
  ///
  /// `cluster`: the workgroups of the grid grouped into clusters of this
  /// shape (GpuPrimitives::setClusterShape; {1, 1, 1}: none).
  struct Workgroup {
    int64_t threads;
    int64_t minPerUnit = 0;
    std::array<int64_t, 3> cluster = {1, 1, 1};
    /// The body calls the target's beginKernel itself (after it has started
    /// reading inputs that no kernel of the step writes, the weights), not
    /// the kernel's entry.
    bool waitsInBody = false;
    Workgroup(int64_t threads, int64_t minPerUnit = 0)
        : threads(threads), minPerUnit(minPerUnit) {}
    Workgroup(int64_t threads, std::array<int64_t, 3> cluster)
        : threads(threads), cluster(cluster) {}
  };

  /// Body of a kernel: the emitter inside it and its arguments, buffers
  /// already viewed as memrefs, scalars as i64, in the order given.
  using BodyBuilder =
      std::function<void(GpuEmitter &, llvm::ArrayRef<mlir::Value>)>;

  /// Creates a gpu.func of kernel family `name` with `workgroupF32` f32s of
  /// shared memory (passed after the args, if non-zero), and launches it with
  /// `grid` (host index values) and `block`. A kernel identical to
  /// one built before is not kept: the launch reuses that one, so every
  /// distinct kernel exists once however many layers use it. Kernels are
  /// named `<family>_<n>`, n counting the family's distinct kernels.
  void launch(llvm::StringRef name, llvm::ArrayRef<KernelArg> args,
              std::array<mlir::Value, 3> grid, Workgroup block,
              int64_t workgroupF32, BodyBuilder body);

  /// A kernel's shared memory: `elements` of `element`. Up to the target's
  /// staticSharedBytes() it is a static workgroup allocation; above, it is
  /// dynamic shared memory of the launch (up to the target's
  /// shared_memory, which the runtime opts the kernel in to), viewed as the
  /// same memref: the body cannot tell the two apart.
  struct SharedMemory {
    int64_t elements = 0;
    mlir::Type element;
    int64_t bytes() const {
      return elements * element.getIntOrFloatBitWidth() / 8;
    }
  };
  /// As above, with shared memory of any element type.
  void launch(llvm::StringRef name, llvm::ArrayRef<KernelArg> args,
              std::array<mlir::Value, 3> grid, Workgroup block,
              SharedMemory shared, BodyBuilder body);

  mlir::ImplicitLocOpBuilder &host;
  mlir::gpu::GPUModuleOp module;
  /// The target's facts and cross-lane operations.
  const GpuPrimitives &primitives;
  /// Host i64 values from FdcStepArgs.
  mlir::Value batch, numSlots, maxContext;
  /// Set while the op being lowered is followed, among the ops that launch
  /// kernels, by a decode.linear on a model weight (after the step's last
  /// op: its first, for the next step), whose kernels may read that weight
  /// before they wait for the kernel before them. The op's kernels then
  /// let the next kernel launch early (GpuPrimitives::releaseDependents)
  /// where their family knows when. Kernels built under the flag are keyed
  /// apart from those built without it.
  bool releasesDependents = false;
  /// Names of the distinct kernels, in order of their first launch.
  llvm::SmallVector<std::string> kernelNames;

  /// While set, the kernels launched are also identified by `key` (what
  /// they depend on: the op's name, attributes, types and kernel config) and
  /// their order under it, so a later op of the same key reuses them without
  /// building their bodies again (a model's layers share every kernel).
  void setKernelKey(std::string key) {
    kernelKey = std::move(key);
    launchesUnderKey = 0;
  }
  void clearKernelKey() { kernelKey.clear(); }

  /// Calls collective `field` of the step's FdcCollectiveApi with
  /// `operands` after the context; a non-zero result (the runtime recorded
  /// the error) returns from the step before the next launch.
  void callCollective(CollectiveField field, mlir::ValueRange operands);

  /// The step's `const FdcStepArgs *` (host), for the collectives.
  mlir::Value stepArgs;

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
  /// A new kernel of family `name` from `body`, or the identical one built
  /// before. Its shared memory is `workgroup` (static attributions) or, when
  /// `dynamicShared` is set, the launch's dynamic shared memory viewed as
  /// that type.
  mlir::gpu::GPUFuncOp
  buildKernel(llvm::StringRef name, llvm::ArrayRef<mlir::Type> types,
              llvm::ArrayRef<mlir::Type> workgroup,
              llvm::ArrayRef<KernelArg> args, Workgroup block,
              mlir::MemRefType dynamicShared, const BodyBuilder &body);

  llvm::StringMap<mlir::gpu::GPUFuncOp> kernelsByText;
  llvm::StringMap<mlir::gpu::GPUFuncOp> kernelsByKey;
  std::string kernelKey;
  unsigned launchesUnderKey = 0;
  llvm::StringMap<unsigned> kernelsPerFamily;
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELCONTEXT_H
