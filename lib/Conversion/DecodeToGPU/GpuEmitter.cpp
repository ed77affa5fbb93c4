//===- GpuEmitter.cpp - helpers for building GPU kernels ------------------===//

#include "GpuEmitter.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include <algorithm>
#include <numeric>

using namespace mlir;
using namespace fdc::gpu;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

Value GpuEmitter::threadId() {
  return mlir::gpu::ThreadIdOp::create(builder(), mlir::gpu::Dimension::x);
}
Value GpuEmitter::blockId(mlir::gpu::Dimension dimension) {
  return mlir::gpu::BlockIdOp::create(builder(), dimension);
}
Value GpuEmitter::laneId() {
  Value thread = threadId();
  return arith::RemUIOp::create(builder(), thread, index(subgroupSize()));
}
Value GpuEmitter::subgroupId() {
  Value thread = threadId();
  return arith::DivUIOp::create(builder(), thread, index(subgroupSize()));
}
void GpuEmitter::barrier() { primitives.barrier(builder()); }

Value GpuEmitter::subgroupSum(Value value) {
  return primitives.subgroupReduce(builder(), value, ReduceKind::Sum);
}
Value GpuEmitter::subgroupMax(Value value) {
  return primitives.subgroupReduce(builder(), value, ReduceKind::Max);
}

Value GpuEmitter::shuffleXor(Value value, int64_t offset) {
  ImplicitLocOpBuilder &b = builder();
  auto vectorType = dyn_cast<VectorType>(value.getType());
  if (!vectorType)
    return primitives.shuffleXor(b, value, offset);
  Value result = value;
  for (int64_t c = 0; c < vectorType.getNumElements(); ++c) {
    Value lane = extract(value, c);
    Value moved = primitives.shuffleXor(b, lane, offset);
    result = vector::InsertOp::create(b, moved, result, ArrayRef<int64_t>{c});
  }
  return result;
}

Value GpuEmitter::blockReduce(Value value, Value shared, int64_t warps,
                              ReduceKind kind) {
  ImplicitLocOpBuilder &b = builder();
  bool isMax = kind == ReduceKind::Max;
  Value partial = primitives.subgroupReduce(b, value, kind);
  Value lane = laneId(), warp = subgroupId();
  Value firstLane = cmpi(arith::CmpIPredicate::eq, lane, index(0));
  barrier(); // the shared slots may still be read by an earlier reduction
  ifThenElse(firstLane,
             [&] { memref::StoreOp::create(b, partial, shared, warp); });
  barrier();
  Value identity = f32(isMax ? -INFINITY : 0.0);
  Value inRange = cmpi(arith::CmpIPredicate::ult, lane, index(warps));
  Value laneIndex = select(inRange, lane, index(0));
  Value mine = memref::LoadOp::create(b, shared, laneIndex);
  return primitives.subgroupReduce(b, select(inRange, mine, identity), kind);
}
Value GpuEmitter::blockSum(Value value, Value shared, int64_t subgroups) {
  return blockReduce(value, shared, subgroups, ReduceKind::Sum);
}
Value GpuEmitter::blockMax(Value value, Value shared, int64_t subgroups) {
  return blockReduce(value, shared, subgroups, ReduceKind::Max);
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

void GpuEmitter::storeVector(ArrayRef<Value> values, Value memref,
                             ValueRange indices) {
  ImplicitLocOpBuilder &b = builder();
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  int64_t lanes = static_cast<int64_t>(values.size());
  int64_t bytes = lanes * element.getIntOrFloatBitWidth() / 8;
  llvm::MaybeAlign alignment =
      bytes % 16 == 0 ? llvm::MaybeAlign(16) : llvm::MaybeAlign();
  Value vector = vector::FromElementsOp::create(
      b, VectorType::get({lanes}, b.getF32Type()), values);
  if (!element.isF32())
    vector =
        arith::TruncFOp::create(b, VectorType::get({lanes}, element), vector);
  vector::StoreOp::create(b, vector, memref, indices, /*nontemporal=*/false,
                          alignment);
}

Value GpuEmitter::extract(Value vector, int64_t i) {
  return vector::ExtractOp::create(builder(), vector, ArrayRef<int64_t>{i});
}

Value GpuEmitter::addressBase(Value value) {
  ImplicitLocOpBuilder &b = builder();
  Value wide = arith::IndexCastOp::create(b, b.getI64Type(), value);
  Value leaf = LLVM::FreezeOp::create(b, wide);
  return arith::IndexCastOp::create(b, b.getIndexType(), leaf);
}

Value GpuEmitter::concatVectors(ArrayRef<Value> parts) {
  Value run = parts.front();
  for (Value part : parts.drop_front()) {
    int64_t length = cast<VectorType>(run.getType()).getNumElements();
    int64_t added = cast<VectorType>(part.getType()).getNumElements();
    SmallVector<int64_t> mask(length + added);
    std::iota(mask.begin(), mask.end(), 0);
    run = vector::ShuffleOp::create(builder(), run, part, mask);
  }
  return run;
}

Value GpuEmitter::mmaSlice(Value run, const MmaLayout &layout, int64_t s) {
  if (cast<VectorType>(run.getType()).getNumElements() == layout.kPerLane)
    return run;
  return vector::ExtractStridedSliceOp::create(
      builder(), run, ArrayRef<int64_t>{s * layout.kPerLane},
      ArrayRef<int64_t>{layout.kPerLane}, ArrayRef<int64_t>{1});
}

Value GpuEmitter::globalIdX(int64_t threadsPerBlock) {
  ImplicitLocOpBuilder &b = builder();
  Value block = blockId(mlir::gpu::Dimension::x);
  Value blockStart = arith::MulIOp::create(b, block, index(threadsPerBlock));
  return arith::AddIOp::create(b, blockStart, threadId());
}

void GpuEmitter::blockArgmax(int64_t threads, Value logits, Value out, Value i,
                             Value shared) {
  GpuEmitter &e = *this;
  ImplicitLocOpBuilder &b = e.builder();
  int64_t vocab = cast<MemRefType>(logits.getType()).getDimSize(1);
  int64_t warps = threads / subgroupSize();
  // The target's widest loads (vectorBytes) where every row starts that
  // aligned, and kLoadsInFlight of them per thread per iteration, issued
  // before any is compared: the row is read in a few memory round trips,
  // not one per element a thread holds.
  constexpr int64_t kLoadsInFlight = 8;
  int64_t widest = std::max<int64_t>(primitives.vectorBytes() / 4, 1);
  int64_t lanes = vocab % widest == 0 ? widest : 1;
  int64_t vectors = vocab / lanes;
  int64_t perIteration = threads * kLoadsInFlight;
  int64_t iterations = (vectors + perIteration - 1) / perIteration;
  // (One builder call per statement: the IR's order must not depend on
  // the order a compiler evaluates arguments in.)
  Value thread = e.threadId();
  Value vectorsEnd = e.index(vectors);
  Value negInfinity = e.f32(-INFINITY);
  Value indexZero = e.index(0);
  Value end = e.index(iterations * perIteration);
  Value step = e.index(perIteration);
  Value lanesIndex = e.index(lanes);
  SmallVector<Value> best = e.reduce(
      indexZero, end, step, {negInfinity, indexZero},
      [&](Value base, ValueRange carried) {
        SmallVector<Value> vectorIndex, valid, loaded;
        Value threadBase = arith::AddIOp::create(b, base, thread);
        for (int64_t u = 0; u < kLoadsInFlight; ++u) {
          Value w = arith::AddIOp::create(b, threadBase, e.index(u * threads));
          Value inRow = e.cmpi(CmpIPredicate::ult, w, vectorsEnd);
          Value safe = e.select(inRow, w, indexZero);
          Value column = arith::MulIOp::create(b, safe, lanesIndex);
          vectorIndex.push_back(w);
          valid.push_back(inRow);
          loaded.push_back(e.loadVector(logits, {i, column}, lanes));
        }
        // Each thread sees its indices in increasing order, so a strict
        // comparison keeps the first of equal values (NaN never wins).
        Value value = carried[0], index = carried[1];
        for (int64_t u = 0; u < kLoadsInFlight; ++u)
          for (int64_t c = 0; c < lanes; ++c) {
            Value x = e.select(valid[u], e.extract(loaded[u], c), negInfinity);
            Value first = arith::MulIOp::create(b, vectorIndex[u], lanesIndex);
            Value j = arith::AddIOp::create(b, first, e.index(c));
            Value greater = e.cmpf(CmpFPredicate::OGT, x, value);
            value = e.select(greater, x, value);
            index = e.select(greater, j, index);
          }
        return SmallVector<Value>{value, index};
      });
  Value maximum = e.blockMax(best[0], shared, warps);
  // The smallest index holding the maximum: indices < 2^24 are exact in f32.
  Value isMaximum = e.cmpf(CmpFPredicate::OEQ, best[0], maximum);
  Value index = e.toF32(best[1]);
  Value infinity = e.f32(INFINITY);
  Value mine = e.select(isMaximum, index, infinity);
  Value zero = e.f32(0);
  Value first = e.sub(zero, e.blockMax(e.sub(e.f32(0), mine), shared, warps));
  Value threadForStore = e.threadId();
  e.ifThenElse(e.cmpi(CmpIPredicate::eq, threadForStore, e.index(0)), [&] {
    Value index = arith::FPToSIOp::create(b, b.getI32Type(), first);
    memref::StoreOp::create(b, index, out, i);
  });
}
