//===- ROCDLPrimitives.cpp - GPU building blocks for AMD GPUs -------------===//
//
// Subgroup reductions are gpu.subgroup_reduce ops, which the AMDGPU pipeline
// lowers to DPP row operations (row_shr / row_bcast, and a permlane or
// readlane across rows) where the chipset has them, and to ds_bpermute
// shuffles otherwise: cheaper than a chain of LDS-routed shuffles.
//
//===----------------------------------------------------------------------===//

#include "../GpuPrimitives.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
class ROCDLPrimitives : public GpuPrimitives {
public:
  using GpuPrimitives::GpuPrimitives;

  Value subgroupReduce(ImplicitLocOpBuilder &b, Value value, ReduceKind kind,
                       int64_t clusterSize) const override {
    if (clusterSize == 1)
      return value;
    auto operation = kind == ReduceKind::Max
                         ? mlir::gpu::AllReduceOperation::MAXIMUMF
                         : mlir::gpu::AllReduceOperation::ADD;
    std::optional<uint32_t> cluster;
    if (clusterSize != subgroupSize())
      cluster = static_cast<uint32_t>(clusterSize);
    return mlir::gpu::SubgroupReduceOp::create(b, value, operation,
                                               /*uniform=*/true, cluster);
  }
};
} // namespace

std::unique_ptr<GpuPrimitives>
fdc::gpu::createROCDLPrimitives(decode::GpuTargetAttr target) {
  return std::make_unique<ROCDLPrimitives>(target);
}
