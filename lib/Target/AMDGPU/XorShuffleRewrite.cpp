//===- XorShuffleRewrite.cpp - wave64 xor shuffles on RDNA ----------------===//
//
// MLIR 22's convert-gpu-to-rocdl promotes `gpu.shuffle xor` by 16 or 32 over
// 64 lanes to `amdgpu.permlane_swap` for every chipset ordered after gfx950,
// RDNA (gfx10+) included, which has no v_permlane16/32_swap ("Cannot
// select: intrinsic %llvm.amdgcn.permlane32.swap"); and its fallback,
// ds_bpermute, does not cross the halves of a wave64 on RDNA. So on RDNA,
// before that pass, a wave64 xor by 16 becomes the ds_swizzle the pass uses
// for the other offsets (it stays in its 32 lanes), and a xor by 32 becomes
// v_permlane64 (gfx11+), which swaps the two halves.
//
//===----------------------------------------------------------------------===//

#include "XorShuffleRewrite.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

using namespace mlir;

namespace {
struct RdnaWave64XorShuffle : public OpRewritePattern<gpu::ShuffleOp> {
  RdnaWave64XorShuffle(MLIRContext *context, StringRef chip,
                       mlir::amdgpu::Chipset chipset)
      : OpRewritePattern(context), chip(chip), chipset(chipset) {}

  LogicalResult matchAndRewrite(gpu::ShuffleOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<int64_t> offset = getConstantIntValue(op.getOffset());
    if (op.getMode() != gpu::ShuffleMode::XOR ||
        !isConstantIntValue(op.getWidth(), 64) ||
        (offset != 16 && offset != 32))
      return rewriter.notifyMatchFailure(op, "not a promotable xor shuffle");
    Location loc = op.getLoc();
    Value moved;
    if (*offset == 16) {
      moved = mlir::amdgpu::SwizzleBitModeOp::create(
          rewriter, loc, op.getValue().getType(), op.getValue(),
          /*andMask=*/31, /*orMask=*/0, /*xorMask=*/16);
    } else {
      if (chipset.majorVersion < 11)
        return op.emitOpError("exchanges the halves of a wave64, which ")
               << "needs v_permlane64 (gfx11+); not available on " << chip;
      moved = LLVM::CallIntrinsicOp::create(
                  rewriter, loc, op.getValue().getType(),
                  rewriter.getStringAttr("llvm.amdgcn.permlane64"),
                  ValueRange{op.getValue()})
                  .getResult(0);
    }
    Value valid = arith::ConstantIntOp::create(rewriter, loc, 1, /*width=*/1);
    rewriter.replaceOp(op, {moved, valid});
    return success();
  }

  StringRef chip;
  mlir::amdgpu::Chipset chipset;
};

class RewriteXorShufflesPass
    : public PassWrapper<RewriteXorShufflesPass,
                         OperationPass<gpu::GPUModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RewriteXorShufflesPass)

  RewriteXorShufflesPass(StringRef chip, mlir::amdgpu::Chipset chipset)
      : chip(chip.str()), chipset(chipset) {}

  StringRef getArgument() const override {
    return "fdc-rdna-wave64-xor-shuffles";
  }
  StringRef getDescription() const override {
    return "Lower 64-lane xor shuffles by 16/32 for RDNA";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, mlir::amdgpu::AMDGPUDialect,
                    LLVM::LLVMDialect>();
  }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RdnaWave64XorShuffle>(&getContext(), chip, chipset);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
    // A shuffle the pattern refused (and reported) is still there.
    WalkResult left = getOperation()->walk([](gpu::ShuffleOp op) {
      std::optional<int64_t> offset = getConstantIntValue(op.getOffset());
      bool refused = op.getMode() == gpu::ShuffleMode::XOR &&
                     isConstantIntValue(op.getWidth(), 64) && offset == 32;
      return refused ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }

private:
  std::string chip;
  mlir::amdgpu::Chipset chipset;
};
} // namespace

std::unique_ptr<Pass> fdc::target::amdgpu::createRewriteXorShufflesPass(
    StringRef chip, mlir::amdgpu::Chipset chipset) {
  return std::make_unique<RewriteXorShufflesPass>(chip, chipset);
}
