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

namespace {
/// The largest alignment the pass accepts (1 GiB).
constexpr int64_t kMaxAlignment = int64_t(1) << 30;

struct AssignWeightLayout
    : public fdc::decode::impl::DecodeAssignWeightLayoutBase<
          AssignWeightLayout> {
  using Base::Base;

  void runOnOperation() override {
    if (alignment <= 0 || alignment > kMaxAlignment ||
        !llvm::isPowerOf2_64(alignment)) {
      getOperation().emitError()
          << "decode-assign-weight-layout: alignment must be a power of two "
             "between 1 and "
          << kMaxAlignment << ", got " << static_cast<int64_t>(alignment);
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
      // The next offset, end rounded up to the alignment, must fit in int64.
      int64_t end, padded;
      if (llvm::AddOverflow(offset, *bytes, end) ||
          llvm::AddOverflow(end, alignment - 1, padded)) {
        weight.emitOpError()
            << "weight @" << weight.getSymName() << " of " << *bytes
            << " bytes at offset " << offset
            << " ends past the largest weight arena (2^63 - 1 bytes)";
        return signalPassFailure();
      }
      offset = padded & ~(alignment - 1);
    }
  }
};
} // namespace
