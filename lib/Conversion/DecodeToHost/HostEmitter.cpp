//===- HostEmitter.cpp - loop-building helpers for host kernels -----------===//

#include "HostEmitter.h"

using namespace mlir;
using namespace fdc::host;

Value HostEmitter::index(int64_t value) {
  return arith::ConstantIndexOp::create(b, value);
}
Value HostEmitter::f32(double value) {
  return arith::ConstantFloatOp::create(
      b, b.getF32Type(), llvm::APFloat(static_cast<float>(value)));
}
Value HostEmitter::i32(int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI32Type(), value);
}
Value HostEmitter::i64(int64_t value) {
  return arith::ConstantIntOp::create(b, b.getI64Type(), value);
}

void HostEmitter::loop(Value lb, Value ub, function_ref<void(Value)> body) {
  loop(lb, ub, index(1), body);
}

void HostEmitter::loop(Value lb, Value ub, Value step,
                       function_ref<void(Value)> body) {
  auto forOp = scf::ForOp::create(b, lb, ub, step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(forOp.getBody()->getTerminator());
  body(forOp.getInductionVar());
}

SmallVector<Value>
HostEmitter::reduce(Value lb, Value ub, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return reduce(lb, ub, index(1), init, body);
}

SmallVector<Value>
HostEmitter::reduce(Value lb, Value ub, Value step, ValueRange init,
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

Value HostEmitter::reduce1(Value ub, Value init,
                           function_ref<Value(Value, Value)> body) {
  return reduce(index(0), ub, init, [&](Value iv, ValueRange carried) {
    return SmallVector<Value>{body(iv, carried[0])};
  })[0];
}

void HostEmitter::ifThenElse(Value cond, function_ref<void()> then,
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

Value HostEmitter::load(Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(b, memref, indices);
  Type type = value.getType();
  if (isa<FloatType>(type) && !type.isF32())
    value = arith::ExtFOp::create(b, b.getF32Type(), value);
  return value;
}

Value HostEmitter::loadIndex(Value memref, ValueRange indices) {
  Value value = memref::LoadOp::create(b, memref, indices);
  return arith::IndexCastOp::create(b, b.getIndexType(), value);
}

void HostEmitter::store(Value value, Value memref, ValueRange indices) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  if (value.getType() != element) {
    if (isa<FloatType>(element))
      value = arith::TruncFOp::create(b, element, value);
    else if (value.getType().isIndex())
      value = arith::IndexCastOp::create(b, element, value);
  }
  memref::StoreOp::create(b, value, memref, indices);
}

Value HostEmitter::roundTo(Value value, Type storage) {
  if (storage.isF32())
    return value;
  Value narrow = arith::TruncFOp::create(b, storage, value);
  return arith::ExtFOp::create(b, b.getF32Type(), narrow);
}

Value HostEmitter::add(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, x, y);
  return arith::AddIOp::create(b, x, y);
}
Value HostEmitter::sub(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::SubFOp::create(b, x, y);
  return arith::SubIOp::create(b, x, y);
}
Value HostEmitter::mul(Value x, Value y) {
  if (isa<FloatType>(x.getType()))
    return arith::MulFOp::create(b, x, y);
  return arith::MulIOp::create(b, x, y);
}
Value HostEmitter::div(Value x, Value y) {
  return arith::DivFOp::create(b, x, y);
}
Value HostEmitter::exp(Value x) { return math::ExpOp::create(b, x); }
Value HostEmitter::select(Value cond, Value x, Value y) {
  return arith::SelectOp::create(b, cond, x, y);
}
Value HostEmitter::cmpf(arith::CmpFPredicate pred, Value x, Value y) {
  return arith::CmpFOp::create(b, pred, x, y);
}
Value HostEmitter::cmpi(arith::CmpIPredicate pred, Value x, Value y) {
  return arith::CmpIOp::create(b, pred, x, y);
}
Value HostEmitter::toF32(Value value) {
  if (value.getType().isIndex())
    value = arith::IndexCastOp::create(b, b.getI64Type(), value);
  return arith::SIToFPOp::create(b, b.getF32Type(), value);
}
