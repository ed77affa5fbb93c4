//===- SubgroupReduceLowering.cpp - gpu.subgroup_reduce per vendor --------===//

#include "fdc/Target/KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace fdc;

namespace {
class LowerSubgroupReducesPass
    : public PassWrapper<LowerSubgroupReducesPass,
                         OperationPass<gpu::GPUModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerSubgroupReducesPass)

  explicit LowerSubgroupReducesPass(target::SubgroupReduceLowering lowering)
      : lowering(std::move(lowering)) {}

  StringRef getArgument() const override {
    return "fdc-lower-subgroup-reduces";
  }
  StringRef getDescription() const override {
    return "Lower gpu.subgroup_reduce with the target's patterns";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    if (lowering.registerDialects)
      lowering.registerDialects(registry);
  }

  void runOnOperation() override {
    auto hasReduce = [&] {
      return getOperation()
          ->walk([](gpu::SubgroupReduceOp) { return WalkResult::interrupt(); })
          .wasInterrupted();
    };
    if (!hasReduce())
      return;
    RewritePatternSet patterns(&getContext());
    lowering.populatePatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    WalkResult left = getOperation()->walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("has no lowering for this target (value type ")
          << op.getValue().getType() << ")";
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }

private:
  target::SubgroupReduceLowering lowering;
};
} // namespace

std::unique_ptr<Pass>
target::createLowerSubgroupReducesPass(SubgroupReduceLowering lowering) {
  return std::make_unique<LowerSubgroupReducesPass>(std::move(lowering));
}
