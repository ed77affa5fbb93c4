//===- GpuEmitter.cpp - helpers for building GPU kernels ------------------===//

#include "GpuEmitter.h"

using namespace mlir;
using namespace fdc::gpu;

Value GpuEmitter::threadId() {
  return mlir::gpu::ThreadIdOp::create(builder(), mlir::gpu::Dimension::x);
}
Value GpuEmitter::blockId(mlir::gpu::Dimension dimension) {
  return mlir::gpu::BlockIdOp::create(builder(), dimension);
}
Value GpuEmitter::laneId() {
  Value thread = threadId();
  return arith::RemUIOp::create(builder(), thread, index(kWarpSize));
}
Value GpuEmitter::warpId() {
  Value thread = threadId();
  return arith::DivUIOp::create(builder(), thread, index(kWarpSize));
}
void GpuEmitter::barrier() { mlir::gpu::BarrierOp::create(builder()); }

Value GpuEmitter::warpReduce(Value value, bool isMax) {
  for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
    Value other =
        mlir::gpu::ShuffleOp::create(builder(), value, offset, kWarpSize,
                                     mlir::gpu::ShuffleMode::XOR)
            .getShuffleResult();
    value = isMax ? Value(arith::MaximumFOp::create(builder(), value, other))
                  : add(value, other);
  }
  return value;
}
Value GpuEmitter::warpSum(Value value) { return warpReduce(value, false); }
Value GpuEmitter::warpMax(Value value) { return warpReduce(value, true); }

Value GpuEmitter::blockReduce(Value value, Value shared, int64_t warps,
                              bool isMax) {
  ImplicitLocOpBuilder &b = builder();
  Value partial = warpReduce(value, isMax);
  Value lane = laneId(), warp = warpId();
  Value firstLane = cmpi(arith::CmpIPredicate::eq, lane, index(0));
  barrier(); // the shared slots may still be read by an earlier reduction
  ifThenElse(firstLane,
             [&] { memref::StoreOp::create(b, partial, shared, warp); });
  barrier();
  Value identity = f32(isMax ? -INFINITY : 0.0);
  Value inRange = cmpi(arith::CmpIPredicate::ult, lane, index(warps));
  Value laneIndex = select(inRange, lane, index(0));
  Value mine = memref::LoadOp::create(b, shared, laneIndex);
  return warpReduce(select(inRange, mine, identity), isMax);
}
Value GpuEmitter::blockSum(Value value, Value shared, int64_t warps) {
  return blockReduce(value, shared, warps, false);
}
Value GpuEmitter::blockMax(Value value, Value shared, int64_t warps) {
  return blockReduce(value, shared, warps, true);
}

Value GpuEmitter::loadVector(Value memref, ValueRange indices, int64_t lanes) {
  ImplicitLocOpBuilder &b = builder();
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  int64_t bytes = lanes * element.getIntOrFloatBitWidth() / 8;
  llvm::MaybeAlign alignment =
      bytes % 16 == 0 ? llvm::MaybeAlign(16) : llvm::MaybeAlign();
  Value vector =
      vector::LoadOp::create(b, VectorType::get({lanes}, element), memref,
                             indices, /*nontemporal=*/false, alignment);
  if (!element.isF32())
    vector = arith::ExtFOp::create(b, VectorType::get({lanes}, b.getF32Type()),
                                   vector);
  return vector;
}

Value GpuEmitter::extract(Value vector, int64_t i) {
  return vector::ExtractOp::create(builder(), vector, ArrayRef<int64_t>{i});
}
