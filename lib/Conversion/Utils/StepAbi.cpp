//===- StepAbi.cpp - FdcStepArgs as seen by the generated step ------------===//

#include "fdc/Conversion/Utils/StepAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#include "llvm/Support/MathExtras.h"

#include "fdc_model_abi.h"

#include <cstddef>

using namespace mlir;

// The generated step reads FdcStepArgs by field index (8 bytes a field); the
// runtime's header is the one definition of the struct.
#define FDC_CHECK_STEP_FIELD(index, member)                                    \
  static_assert(offsetof(FdcStepArgs, member) == 8 * (index),                  \
                "StepField " #index " must be FdcStepArgs::" #member)
FDC_CHECK_STEP_FIELD(fdc::kStepBatch, batch);
FDC_CHECK_STEP_FIELD(fdc::kStepNumSlots, num_slots);
FDC_CHECK_STEP_FIELD(fdc::kStepMaxContext, max_context);
FDC_CHECK_STEP_FIELD(fdc::kStepWeights, weights);
FDC_CHECK_STEP_FIELD(fdc::kStepKVCache, kv_cache);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens, tokens);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 1, positions);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 2, slots);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 3, temperature);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 4, top_k);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 5, top_p);
FDC_CHECK_STEP_FIELD(fdc::kStepTokens + 6, uniform);
FDC_CHECK_STEP_FIELD(fdc::kStepLogits, logits);
FDC_CHECK_STEP_FIELD(fdc::kStepNextTokens, next_tokens);
FDC_CHECK_STEP_FIELD(fdc::kStepScratch, scratch);
FDC_CHECK_STEP_FIELD(fdc::kStepDevice, device);
FDC_CHECK_STEP_FIELD(fdc::kStepCollective, collective);
#undef FDC_CHECK_STEP_FIELD
static_assert(sizeof(FdcStepArgs) == 8 * (fdc::kStepCollective + 1),
              "FdcStepArgs has a field StepField does not know");

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

int64_t fdc::getCollectiveDType(Type element) {
  if (element.isF16())
    return FDC_DTYPE_F16;
  if (element.isBF16())
    return FDC_DTYPE_BF16;
  return FDC_DTYPE_F32;
}

void fdc::returnFromStepIfFailed(ImplicitLocOpBuilder &b, Value status) {
  Value zero = arith::ConstantIntOp::create(b, b.getI32Type(), 0);
  Value failed =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne, status, zero);
  // Split here: failed -> return, else the rest of the step.
  Block *before = b.getInsertionBlock();
  Block *rest = before->splitBlock(b.getInsertionPoint());
  Block *exit = b.createBlock(rest);
  func::ReturnOp::create(b);
  b.setInsertionPointToEnd(before);
  cf::CondBranchOp::create(b, failed, exit, rest);
  b.setInsertionPointToStart(rest);
}

Value fdc::loadCollectiveRank(ImplicitLocOpBuilder &b, Value args) {
  Value api = loadStepField(b, args, kStepCollective,
                            LLVM::LLVMPointerType::get(b.getContext()));
  return loadStepField(b, api, kCollectiveRank, b.getI64Type());
}

Value fdc::callCollective(ImplicitLocOpBuilder &b, Value args,
                          CollectiveField field, ValueRange operands) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  Value api = loadStepField(b, args, kStepCollective, ptrType);
  Value context = loadStepField(b, api, kCollectiveContext, ptrType);
  Value function = loadStepField(b, api, field, ptrType);
  SmallVector<Type> parameterTypes = {ptrType};
  SmallVector<Value> callOperands = {function, context};
  for (Value operand : operands) {
    parameterTypes.push_back(operand.getType());
    callOperands.push_back(operand);
  }
  auto type = LLVM::LLVMFunctionType::get(b.getI32Type(), parameterTypes);
  return LLVM::CallOp::create(b, type, callOperands).getResult();
}
