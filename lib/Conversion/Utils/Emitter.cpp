//===- Emitter.cpp - loop-building helpers for host kernels -----------===//

#include "fdc/Conversion/Utils/Emitter.h"

using namespace mlir;
using namespace fdc;

Value Emitter::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}
Value Emitter::f32(double value) {
  return arith::ConstantFloatOp::create(
      b, b.getF32Type(), llvm::APFloat(static_cast<float>(value)));
}
Value Emitter::i32(int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), value);
}
Value Emitter::i64(int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), value);
}

void Emitter::loop(Value lb, Value ub, function_ref<void(Value)> body) {
  loop(lb, ub, index(1), body);
}

void Emitter::loop(Value lb, Value ub, Value step,
                   function_ref<void(Value)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  body(forOp.getInductionVar());
}

SmallVector<Value>
Emitter::reduce(Value lb, Value ub, ValueRange init,
                function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return reduce(lb, ub, index(1), init, body);
}

SmallVector<Value>
Emitter::reduce(Value lb, Value ub, Value step, ValueRange init,
                function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step, init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(forOp.getBody());
    SmallVector<Value> next =
        body(forOp.getInductionVar(), forOp.getRegionIterArgs());
    scf::YieldOp::create(b, next);
  }
  ResultRange results = forOp.getResults();
  return SmallVector<Value>(results.begin(), results.end());
}

Value Emitter::reduce1(Value ub, Value init,
                       function_ref<Value(Value, Value)> body) {
  return reduce(index(0), ub, init, [&](Value iv, ValueRange carried) {
    return SmallVector<Value>{body(iv, carried[0])};
  })[0];
}

void Emitter::ifThenElse(Value cond, function_ref<void()> then,
                         function_ref<void()> otherwise) {
  auto ifOp = scf::IfOp::create(b, cond, /*withElseRegion=*/bool(otherwise));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
  if (otherwise) {
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    otherwise();
  }
}

Value Emitter::load(Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(b, memref, indices);
  Type type = value.getType();
  if (isa<FloatType>(type) && !type.isF32())
    value = arith::ExtFOp::create(b, b.getF32Type(), value);
  return value;
}

Value Emitter::loadIndex(Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(b, memref, indices);
  return arith::IndexCastOp::create(b, b.getIndexType(), value);
}

Value Emitter::clampIndex(Value value, int64_t size) {
  Value atLeastZero = arith::MaxSIOp::create(b, value, index(0));
  return arith::MinSIOp::create(b, atLeastZero, index(size - 1));
}

void Emitter::store(Value value, Value memref, ValueRange indices) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  if (value.getType() != element) {
    if (isa<FloatType>(element))
      value = arith::TruncFOp::create(b, element, value);
    else if (value.getType().isIndex())
      value = arith::IndexCastOp::create(b, element, value);
  }
  memref::StoreOp::create(b, value, memref, indices);
}

Value Emitter::roundTo(Value value, Type storage) {
  if (storage.isF32())
    return value;
  Value narrow = arith::TruncFOp::create(b, storage, value);
  return arith::ExtFOp::create(b, b.getF32Type(), narrow);
}

Value Emitter::add(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, x, y);
  return arith::AddIOp::create(b, x, y);
}
Value Emitter::sub(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::SubFOp::create(b, x, y);
  return arith::SubIOp::create(b, x, y);
}
Value Emitter::mul(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, x, y);
  return arith::MulIOp::create(b, x, y);
}
Value Emitter::div(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
Value Emitter::exp(Value x) { return math::ExpOp::create(b, x); }
Value Emitter::select(Value cond, Value x, Value y) {
  return arith::SelectOp::create(b, cond, x, y);
}
Value Emitter::cmpf(arith::CmpFPredicate pred, Value x, Value y) {
  return arith::CmpFOp::create(b, pred, x, y);
}
Value Emitter::cmpi(arith::CmpIPredicate pred, Value x, Value y) {
  return arith::CmpIOp::create(b, pred, x, y);
}
Value Emitter::toF32(Value value) {
  if (value.getType().isIndex())
    value = arith::IndexCastOp::create(b, b.getI64Type(), value);
  return arith::SIToFPOp::create(b, b.getF32Type(), value);
}
