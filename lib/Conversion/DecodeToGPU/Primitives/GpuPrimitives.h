//===- GpuPrimitives.h - target-neutral GPU building blocks -----*- C++ -*-===//
//
// What a kernel generator may ask of the GPU beyond plain arithmetic: the
// subgroup (warp / wavefront) size and cross-lane operations. Generators call
// these and never name a vendor; each vendor implements them with its own
// MLIR dialects (Primitives/NVVM, Primitives/ROCDL), the way Triton's
// TargetInfoBase separates the NVIDIA and AMD back ends. The hardware facts
// come from the module's #decode.gpu_target.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H
#define FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <memory>

namespace fdc::gpu {

enum class ReduceKind { Sum, Max };

class GpuPrimitives {
public:
  explicit GpuPrimitives(decode::GpuTargetAttr target) : gpuTarget(target) {}
  virtual ~GpuPrimitives();

  /// The implementation for `target`'s vendor.
  static std::unique_ptr<GpuPrimitives> create(decode::GpuTargetAttr target);

  decode::GpuTargetAttr target() const { return gpuTarget; }
  /// Lanes of a subgroup (32 or 64).
  int64_t subgroupSize() const { return gpuTarget.getSubgroup(); }
  /// Compute units (SMs / CUs) a grid should fill.
  int64_t units() const { return gpuTarget.getUnits(); }
  /// The widest global load or store, in bytes.
  int64_t vectorBytes() const { return gpuTarget.getVectorBytes(); }

  /// The f32 `value` of lane `lane ^ offset` (0 < offset < subgroupSize()):
  /// a butterfly exchange, every lane active.
  virtual mlir::Value shuffleXor(mlir::ImplicitLocOpBuilder &b,
                                 mlir::Value value, int64_t offset) const;

  /// `kind` of the f32 `value` over each cluster of `clusterSize`
  /// consecutive lanes (a power of two dividing the subgroup); every lane
  /// gets its cluster's result. Every lane of the subgroup must be active.
  virtual mlir::Value subgroupReduce(mlir::ImplicitLocOpBuilder &b,
                                     mlir::Value value, ReduceKind kind,
                                     int64_t clusterSize) const = 0;
  mlir::Value subgroupReduce(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                             ReduceKind kind) const {
    return subgroupReduce(b, value, kind, subgroupSize());
  }

  /// A workgroup barrier that also orders shared-memory accesses.
  void barrier(mlir::ImplicitLocOpBuilder &b) const;

private:
  decode::GpuTargetAttr gpuTarget;
};

/// The vendor implementations (Primitives/NVVM, Primitives/ROCDL).
std::unique_ptr<GpuPrimitives>
createNVVMPrimitives(decode::GpuTargetAttr target);
std::unique_ptr<GpuPrimitives>
createROCDLPrimitives(decode::GpuTargetAttr target);

/// The module's #decode.gpu_target, else the known-targets table's for the
/// comma-separated archs of `archs` (a pass option); errors name `pass`.
mlir::FailureOr<decode::GpuTargetAttr> resolveGpuTarget(mlir::ModuleOp module,
                                                        llvm::StringRef archs,
                                                        llvm::StringRef pass);

/// `kind` of two f32 values.
mlir::Value combine(mlir::ImplicitLocOpBuilder &b, ReduceKind kind,
                    mlir::Value x, mlir::Value y);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H
