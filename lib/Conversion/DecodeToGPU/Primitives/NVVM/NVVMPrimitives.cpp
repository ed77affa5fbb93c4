//===- NVVMPrimitives.cpp - GPU building blocks for NVIDIA GPUs -----------===//
//
// Subgroup reductions are butterflies of warp shuffles (gpu.shuffle xor,
// lowered to shfl.sync.bfly by convert-gpu-to-nvvm), halving the distance
// each step.
//
//===----------------------------------------------------------------------===//

#include "../GpuPrimitives.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
class NVVMPrimitives : public GpuPrimitives {
public:
  using GpuPrimitives::GpuPrimitives;

  Value subgroupReduce(ImplicitLocOpBuilder &b, Value value, ReduceKind kind,
                       int64_t clusterSize) const override {
    for (int64_t offset = clusterSize / 2; offset > 0; offset /= 2)
      value = combine(b, kind, value, shuffleXor(b, value, offset));
    return value;
  }
};
} // namespace

std::unique_ptr<GpuPrimitives>
fdc::gpu::createNVVMPrimitives(decode::GpuTargetAttr target) {
  return std::make_unique<NVVMPrimitives>(target);
}
