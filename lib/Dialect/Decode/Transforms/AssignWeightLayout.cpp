//===- AssignWeightLayout.cpp - place weights in the arena ----------------===//

#include "fdc/Dialect/Decode/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

namespace fdc::decode {
#define GEN_PASS_DEF_DECODEASSIGNWEIGHTLAYOUT
#include "fdc/Dialect/Decode/Transforms/Passes.h.inc"
} // namespace fdc::decode

using namespace mlir;
using namespace fdc::decode;

FailureOr<int64_t> fdc::decode::getWeightBytes(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getNumElements() *
           tensor.getElementType().getIntOrFloatBitWidth() / 8;
  if (auto quant = dyn_cast<QuantTensorType>(type)) {
    // Packed nibbles, then one (scale, min) pair per group.
    int64_t n = quant.getShape()[0], k = quant.getShape()[1];
    int64_t scaleBytes = quant.getScaleType().getIntOrFloatBitWidth() / 8;
    return n * k / 2 + n * (k / quant.getGroupSize()) * 2 * scaleBytes;
  }
  if (auto sparse = dyn_cast<TiledCSLType>(type)) {
    // The packed size depends on the non-zeros: reserve TileOffsets and one
    // 4-byte word per element, enough for a dense matrix.
    int64_t n = sparse.getShape()[0], k = sparse.getShape()[1];
    int64_t tiles = (n / sparse.getTile()[0]) * (k / sparse.getTile()[1]);
    return (tiles + 1) * 4 + n * k * 4;
  }
  return failure();
}

namespace {
struct AssignWeightLayout
    : public fdc::decode::impl::DecodeAssignWeightLayoutBase<
          AssignWeightLayout> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError()
          << "decode-assign-weight-layout: alignment must be a power of two, "
             "got "
          << static_cast<int64_t>(alignment);
      return signalPassFailure();
    }
    Builder builder(&getContext());
    int64_t offset = 0;
    for (auto weight : getOperation().getOps<WeightOp>()) {
      FailureOr<int64_t> bytes = getWeightBytes(weight.getType());
      if (failed(bytes)) {
        weight.emitOpError() << "weight @" << weight.getSymName() << " of type "
                             << weight.getType()
                             << " has a data-dependent size; it cannot be "
                                "placed in the weight arena yet";
        return signalPassFailure();
      }
      weight.setOffsetAttr(builder.getI64IntegerAttr(offset));
      offset = llvm::alignTo(offset + *bytes, alignment);
    }
  }
};
} // namespace
