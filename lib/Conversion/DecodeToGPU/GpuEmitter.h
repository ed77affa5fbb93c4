//===- GpuEmitter.h - helpers for building GPU kernels ----------*- C++ -*-===//
//
// Emitter's loops and arithmetic plus what kernels need: thread and block
// indices, subgroup- and block-wide reductions (the target's primitives, then
// shared memory), and vector loads. The subgroup size and every cross-lane
// operation come from the GpuPrimitives of the module's #decode.gpu_target.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H
#define FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H

#include "Primitives/GpuPrimitives.h"
#include "fdc/Conversion/Utils/Emitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace fdc::gpu {

class GpuEmitter : public Emitter {
public:
  GpuEmitter(mlir::ImplicitLocOpBuilder &b, const GpuPrimitives &primitives)
      : Emitter(b), primitives(primitives) {}

  const GpuPrimitives &target() const { return primitives; }
  int64_t subgroupSize() const { return primitives.subgroupSize(); }

  mlir::Value threadId();
  mlir::Value blockId(mlir::gpu::Dimension dimension);
  /// The thread's lane in its subgroup, and its subgroup in the block.
  mlir::Value laneId();
  /// blockIdx.x * threadsPerBlock + threadIdx.x
  mlir::Value globalIdX(int64_t threadsPerBlock);
  mlir::Value subgroupId();
  void barrier();

  /// Sum / max of `value` over the lanes of a subgroup; every lane gets it.
  mlir::Value subgroupSum(mlir::Value value);
  mlir::Value subgroupMax(mlir::Value value);
  /// Lane `lane ^ offset`'s f32 value, elementwise for a vector.
  mlir::Value shuffleXor(mlir::Value value, int64_t offset);
  /// Sum / max over a block of `subgroups` subgroups through `shared` (a
  /// workgroup memref of at least `subgroups` f32); every thread gets it.
  mlir::Value blockSum(mlir::Value value, mlir::Value shared,
                       int64_t subgroups);
  mlir::Value blockMax(mlir::Value value, mlir::Value shared,
                       int64_t subgroups);

  /// out[i] = the first index of the largest element of row `i` of `logits`
  /// ([M, vocab] f32), computed by a block of `threads` threads through
  /// `shared` (a workgroup memref of at least threads / subgroup f32).
  void blockArgmax(int64_t threads, mlir::Value logits, mlir::Value out,
                   mlir::Value i, mlir::Value shared);

  /// A vector of `lanes` elements of `memref` at `indices`, 16-byte aligned
  /// when `lanes * element bytes` is 16 (callers guarantee the alignment),
  /// widened to f32.
  mlir::Value loadVector(mlir::Value memref, mlir::ValueRange indices,
                         int64_t lanes);
  /// Stores the f32 `values` as one vector of `memref`'s element type at
  /// `indices` (aligned as for loadVector).
  void storeVector(llvm::ArrayRef<mlir::Value> values, mlir::Value memref,
                   mlir::ValueRange indices);
  /// Element `i` of a vector.
  mlir::Value extract(mlir::Value vector, int64_t i);
  /// `value` (index) as a leaf of the optimiser's address arithmetic: sums
  /// of it and constants keep their constants, which fold into the
  /// addressing of the loads and copies that use them, instead of being
  /// regrouped with other loop-invariant terms (one register and one add
  /// each).
  mlir::Value addressBase(mlir::Value value);
  /// The 1-D vectors `parts` (one element type) concatenated in order.
  mlir::Value concatVectors(llvm::ArrayRef<mlir::Value> parts);
  /// A lane's k slots of MMA `s` of a run of `layout.kPerLane`-element
  /// slices (the run itself when it holds one).
  mlir::Value mmaSlice(mlir::Value run, const MmaLayout &layout, int64_t s);

private:
  mlir::Value blockReduce(mlir::Value value, mlir::Value shared,
                          int64_t subgroups, ReduceKind kind);

  const GpuPrimitives &primitives;
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H
