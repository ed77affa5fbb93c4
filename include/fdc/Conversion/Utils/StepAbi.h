//===- StepAbi.h - FdcStepArgs as seen by the generated step ----*- C++ -*-===//
//
// The step entry `fdc_model_step(const FdcStepArgs *)` reads its arguments
// from a struct of 8-byte fields (docs/model-library.md); host and GPU
// lowerings and the launch lowering share these indices and accessors.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_UTILS_STEPABI_H
#define FDC_CONVERSION_UTILS_STEPABI_H

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fdc {

/// Field indices of FdcStepArgs; field i is at byte offset 8 * i.
enum StepField : int64_t {
  kStepBatch = 0,
  kStepNumSlots = 1,
  kStepMaxContext = 2,
  kStepWeights = 3,
  kStepKVCache = 4,
  kStepTokens = 5, // then positions, slots, temperature, top_k, top_p, uniform
  kStepLogits = 12,
  kStepNextTokens = 13,
  kStepScratch = 14,    // GPU targets
  kStepDevice = 15,     // GPU targets: const FdcDeviceApi *
  kStepCollective = 16, // tensor-parallel libraries: const FdcCollectiveApi *
};

/// Field indices of FdcCollectiveApi (8 bytes each).
enum CollectiveField : int64_t {
  kCollectiveContext = 0,
  kCollectiveRank = 1,
  kCollectiveRanks = 2,
  kCollectiveAllReduceSum = 3,
  kCollectiveAllGatherColumns = 4,
};

/// FDC_DTYPE_* of a collective's element type (f32, f16 or bf16).
int64_t getCollectiveDType(mlir::Type element);

/// Returns from the step function `b` is building when `status` (an i32,
/// the runtime's callback result) is non-zero: the block is split where `b`
/// stands, and `b` continues at the start of the rest of the step.
void returnFromStepIfFailed(mlir::ImplicitLocOpBuilder &b, mlir::Value status);

/// Calls collective function `field` of the FdcCollectiveApi that the
/// FdcStepArgs at `args` points to, with the context first and then
/// `operands` (pointers and i64s); returns the i32 result. Emitted where `b`
/// stands.
mlir::Value callCollective(mlir::ImplicitLocOpBuilder &b, mlir::Value args,
                           CollectiveField field, mlir::ValueRange operands);

/// This rank's index in its tensor-parallel group (an i64, FdcCollectiveApi
/// field `rank` of the FdcStepArgs at `args`); only for a tensor-parallel
/// library, whose collective field is set.
mlir::Value loadCollectiveRank(mlir::ImplicitLocOpBuilder &b, mlir::Value args);

/// Loads field `field` of the FdcStepArgs at `args` as `type`.
mlir::Value loadStepField(mlir::ImplicitLocOpBuilder &b, mlir::Value args,
                          int64_t field, mlir::Type type);

/// `base + byteOffset` as a pointer (an i64 value, or a constant).
mlir::Value pointerAtByte(mlir::ImplicitLocOpBuilder &b, mlir::Value base,
                          mlir::Value byteOffset);
mlir::Value pointerAtByte(mlir::ImplicitLocOpBuilder &b, mlir::Value base,
                          int64_t byteOffset);

/// The module's one `decode.model`; otherwise an error naming `pass`.
mlir::FailureOr<decode::ModelOp> getSingleModel(mlir::ModuleOp module,
                                                llvm::StringRef pass);

/// The address of the weight `ref` names in the arena of the FdcStepArgs at
/// `args`; fails (naming the weight) if decode-assign-weight-layout has not
/// placed it.
mlir::FailureOr<mlir::Value> weightPointer(mlir::ImplicitLocOpBuilder &b,
                                           mlir::Value args,
                                           decode::ModelOp model,
                                           decode::WeightRefOp ref);

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_STEPABI_H
