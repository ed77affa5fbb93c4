//===- GpuEmitter.h - helpers for building GPU kernels ----------*- C++ -*-===//
//
// HostEmitter's loops and arithmetic plus what kernels need: thread and block
// indices, warp- and block-wide reductions through shuffles and shared
// memory, and 16-byte vector loads.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H
#define FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H

#include "../DecodeToHost/HostEmitter.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace fdc::gpu {

constexpr int64_t kWarpSize = 32;

class GpuEmitter : public host::HostEmitter {
public:
  using HostEmitter::HostEmitter;

  mlir::Value threadId();
  mlir::Value blockId(mlir::gpu::Dimension dimension);
  mlir::Value laneId();
  mlir::Value warpId();
  void barrier();

  /// Sum / max of `value` over the 32 lanes of a warp; every lane gets it.
  mlir::Value warpSum(mlir::Value value);
  mlir::Value warpMax(mlir::Value value);
  /// Sum / max over a block of `warps` warps through `shared` (a workgroup
  /// memref of at least `warps` f32); every thread gets the result.
  mlir::Value blockSum(mlir::Value value, mlir::Value shared, int64_t warps);
  mlir::Value blockMax(mlir::Value value, mlir::Value shared, int64_t warps);

  /// A vector of `lanes` elements of `memref` at `indices`, 16-byte aligned
  /// when `lanes * element bytes` is 16 (callers guarantee the alignment),
  /// widened to f32.
  mlir::Value loadVector(mlir::Value memref, mlir::ValueRange indices,
                         int64_t lanes);
  /// Element `i` of a vector.
  mlir::Value extract(mlir::Value vector, int64_t i);

private:
  mlir::Value warpReduce(mlir::Value value, bool isMax);
  mlir::Value blockReduce(mlir::Value value, mlir::Value shared, int64_t warps,
                          bool isMax);
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_GPUEMITTER_H
