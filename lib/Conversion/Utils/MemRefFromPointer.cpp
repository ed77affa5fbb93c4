//===- MemRefFromPointer.cpp - memrefs over raw pointers ------------------===//

#include "fdc/Conversion/Utils/MemRefFromPointer.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/Transforms/Passes.h"

using namespace mlir;

Value fdc::memrefFromPointer(ImplicitLocOpBuilder &b, Value pointer,
                             MemRefType type, ArrayRef<Value> dynamicSizesI64) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  int64_t rank = type.getRank();
  auto arrayType = LLVM::LLVMArrayType::get(i64, rank);
  auto descriptorType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptrType, ptrType, i64, arrayType, arrayType});
  auto constant = [&](int64_t value) -> Value {
    return arith::ConstantIntOp::create(b, i64, value);
  };

  SmallVector<Value> sizes;
  for (int64_t d = 0, dynamic = 0; d < rank; ++d)
    sizes.push_back(type.isDynamicDim(d) ? dynamicSizesI64[dynamic++]
                                         : constant(type.getDimSize(d)));
  SmallVector<Value> strides(rank);
  Value stride = constant(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    if (d > 0)
      stride = arith::MulIOp::create(b, stride, sizes[d]);
  }

  Value descriptor = LLVM::PoisonOp::create(b, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor = LLVM::InsertValueOp::create(b, descriptor, value, position);
  };
  insert(pointer, {0});
  insert(pointer, {1});
  insert(constant(0), {2});
  for (int64_t d = 0; d < rank; ++d) {
    insert(sizes[d], {3, d});
    insert(strides[d], {4, d});
  }
  return UnrealizedConversionCastOp::create(b, type, descriptor).getResult(0);
}

MemRefType fdc::getBufferType(Type type) {
  MLIRContext *ctx = type.getContext();
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  if (auto cache = dyn_cast<decode::KVCacheType>(type)) {
    bool int4 = isa<decode::Int4Type>(cache.getElementType());
    Type element = int4 ? IntegerType::get(ctx, 8) : cache.getElementType();
    return MemRefType::get({ShapedType::kDynamic, cache.getLayers(), 2,
                            cache.getKvHeads(), ShapedType::kDynamic,
                            int4 ? cache.getRowBytes() : cache.getHeadDim()},
                           element);
  }
  int64_t bytes = *decode::getWeightBytes(type);
  if (isa<decode::QuantTensorType>(type))
    return MemRefType::get({bytes}, IntegerType::get(ctx, 8));
  return MemRefType::get({bytes / 4}, IntegerType::get(ctx, 32));
}
