//===- StepAbi.cpp - FdcStepArgs as seen by the generated step ------------===//

#include "fdc/Conversion/Utils/StepAbi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;

Value fdc::loadStepField(ImplicitLocOpBuilder &b, Value args, int64_t field,
                         Type type) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value address = LLVM::GEPOp::create(b, ptrType, b.getI64Type(), args,
                                      ArrayRef<LLVM::GEPArg>{field});
  return LLVM::LoadOp::create(b, type, address);
}

Value fdc::pointerAtByte(ImplicitLocOpBuilder &b, Value base,
                         Value byteOffset) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::GEPOp::create(b, ptrType, b.getI8Type(), base,
                             ValueRange{byteOffset});
}

Value fdc::pointerAtByte(ImplicitLocOpBuilder &b, Value base,
                         int64_t byteOffset) {
  // Constant GEP indices hold 29 bits (LLVM::kGEPConstantBitWidth); weight
  // arenas pass 256 MiB.
  if (!llvm::isInt<LLVM::kGEPConstantBitWidth>(byteOffset))
    return pointerAtByte(
        b, base, LLVM::ConstantOp::create(b, b.getI64Type(), byteOffset));
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  return LLVM::GEPOp::create(
      b, ptrType, b.getI8Type(), base,
      ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(byteOffset)});
}

FailureOr<Value> fdc::weightPointer(ImplicitLocOpBuilder &b, Value args,
                                    decode::ModelOp model,
                                    decode::WeightRefOp ref) {
  auto weight = model.lookupSymbol<decode::WeightOp>(ref.getNameAttr());
  std::optional<int64_t> offset = weight.getOffset();
  if (!offset)
    return ref.emitOpError()
           << "weight " << ref.getNameAttr()
           << " has no arena offset; run decode-assign-weight-layout first";
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value base = loadStepField(b, args, kStepWeights, ptrType);
  return pointerAtByte(b, base, *offset);
}

FailureOr<fdc::decode::ModelOp> fdc::getSingleModel(ModuleOp module,
                                                    StringRef pass) {
  auto models = llvm::to_vector(module.getOps<decode::ModelOp>());
  if (models.size() != 1)
    return module.emitError()
           << pass << " expects exactly one 'decode.model', found "
           << models.size();
  return models.front();
}
