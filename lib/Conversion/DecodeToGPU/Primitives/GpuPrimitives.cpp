//===- GpuPrimitives.cpp - target-neutral GPU building blocks -------------===//

#include "GpuPrimitives.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

GpuPrimitives::~GpuPrimitives() = default;

std::unique_ptr<GpuPrimitives>
GpuPrimitives::create(decode::GpuTargetAttr target) {
  switch (target.getVendor()) {
  case decode::GpuVendor::nvidia:
    return createNVVMPrimitives(target);
  case decode::GpuVendor::amd:
    return createROCDLPrimitives(target);
  }
  llvm_unreachable("unknown GPU vendor");
}

Value GpuPrimitives::shuffleXor(ImplicitLocOpBuilder &b, Value value,
                                int64_t offset) const {
  return mlir::gpu::ShuffleOp::create(b, value, offset, subgroupSize(),
                                      mlir::gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

void GpuPrimitives::barrier(ImplicitLocOpBuilder &b) const {
  mlir::gpu::BarrierOp::create(b);
}

Value fdc::gpu::combine(ImplicitLocOpBuilder &b, ReduceKind kind, Value x,
                        Value y) {
  if (kind == ReduceKind::Max)
    return arith::MaximumFOp::create(b, x, y);
  return arith::AddFOp::create(b, x, y);
}
