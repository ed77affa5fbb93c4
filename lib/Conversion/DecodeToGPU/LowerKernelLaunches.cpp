//===- LowerKernelLaunches.cpp - gpu.launch_func to the runtime's launch --===//
//
// Inside fdc_model_step(const FdcStepArgs *args), each gpu.launch_func
// becomes a call of args->device->launch(context, "kernel", grid, block,
// shared bytes, params), params an array of pointers to the 8-byte argument
// values (the cuLaunchKernel convention). A non-zero result (the runtime has
// recorded the error) returns from the step before the next launch.
//
//===----------------------------------------------------------------------===//

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/StepAbi.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fdc {
#define GEN_PASS_DEF_LOWERKERNELLAUNCHES
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;

namespace {
struct LowerKernelLaunches
    : public fdc::impl::LowerKernelLaunchesBase<LowerKernelLaunches> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
    auto launchType = LLVM::LLVMFunctionType::get(
        i32, {ptrType, ptrType, i32, i32, i32, i32, i32, i32, i32, ptrType});
    llvm::StringMap<LLVM::GlobalOp> names;

    auto nameGlobal = [&](StringRef kernel) {
      LLVM::GlobalOp &global = names[kernel];
      if (!global) {
        OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
        std::string bytes = kernel.str();
        bytes.push_back('\0');
        global = LLVM::GlobalOp::create(
            top, module.getLoc(),
            LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), bytes.size()),
            /*isConstant=*/true, LLVM::Linkage::Private,
            ("fdc_kernel_name." + kernel).str(), StringAttr::get(ctx, bytes));
      }
      return global;
    };

    // Collected first: lowering a launch splits its block.
    SmallVector<mlir::gpu::LaunchFuncOp> launches;
    module.walk([&](mlir::gpu::LaunchFuncOp op) { launches.push_back(op); });
    // Per step function, set up once in its entry block: the callback and
    // its context, and the parameter block, `params[i] = &slots[i]`, which
    // every launch refills (the callback reads the values before it
    // returns: cuLaunchKernel and hipModuleLaunchKernel copy them).
    struct StepLaunchState {
      Value context, callback, slots, params;
    };
    llvm::DenseMap<Operation *, StepLaunchState> states;
    llvm::DenseMap<Operation *, int64_t> maxOperands;
    for (mlir::gpu::LaunchFuncOp launch : launches) {
      int64_t &count = maxOperands[launch->getParentOp()];
      count = std::max<int64_t>(
          {count, 1, static_cast<int64_t>(launch.getKernelOperands().size())});
    }
    for (mlir::gpu::LaunchFuncOp launch : launches) {
      auto func = dyn_cast<func::FuncOp>(launch->getParentOp());
      if (!func || func.getNumArguments() != 1 || func.getNumResults() != 0 ||
          !isa<LLVM::LLVMPointerType>(func.getArgument(0).getType())) {
        launch.emitOpError()
            << "must be directly inside fdc_model_step(!llvm.ptr)";
        return signalPassFailure();
      }
      StepLaunchState &state = states[func];
      if (!state.params) {
        ImplicitLocOpBuilder entry(func.getLoc(), &func.getBody().front(),
                                   func.getBody().front().begin());
        auto field = [&](Value base, int64_t index) {
          Value address = LLVM::GEPOp::create(entry, ptrType, i64, base,
                                              ArrayRef<LLVM::GEPArg>{index});
          return LLVM::LoadOp::create(entry, ptrType, address).getResult();
        };
        // FdcStepArgs::device, or the field another entry point names
        // (fdc_tune_launch: FdcTuneArgs::device).
        int64_t deviceField = fdc::kStepDevice;
        if (auto named = func->getAttrOfType<IntegerAttr>("fdc.device_field"))
          deviceField = named.getInt();
        Value device = fdc::loadStepField(entry, func.getArgument(0),
                                          deviceField, ptrType);
        state.context = field(device, 0);
        state.callback = field(device, 1);
        int64_t count = maxOperands[func];
        Value size = LLVM::ConstantOp::create(entry, i64,
                                              entry.getI64IntegerAttr(count));
        state.slots = LLVM::AllocaOp::create(entry, ptrType, i64, size, 8);
        state.params = LLVM::AllocaOp::create(entry, ptrType, ptrType, size, 8);
        for (int64_t index = 0; index < count; ++index) {
          auto at = [&](Type element, Value base) {
            return LLVM::GEPOp::create(
                entry, ptrType, element, base,
                ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
          };
          Value slot = at(i64, state.slots);
          Value entryAddress = at(ptrType, state.params);
          LLVM::StoreOp::create(entry, slot, entryAddress);
        }
      }
      ImplicitLocOpBuilder b(launch.getLoc(), launch);
      ValueRange operands = launch.getKernelOperands();
      for (auto [index, operand] : llvm::enumerate(operands)) {
        // Every kernel parameter is 8 bytes: a pointer or an i64.
        Value slot = LLVM::GEPOp::create(
            b, ptrType, i64, state.slots,
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
        LLVM::StoreOp::create(b, operand, slot);
      }
      Value context = state.context, callback = state.callback;
      Value params = state.params;
      auto toI32 = [&](Value indexValue) -> Value {
        return arith::IndexCastOp::create(b, i32, indexValue);
      };
      mlir::gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      mlir::gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      Value name = LLVM::AddressOfOp::create(
          b, nameGlobal(launch.getKernelName().getValue()));
      // Dynamic shared memory (static shared memory is the kernel's own).
      Value shared = launch.getDynamicSharedMemorySize();
      if (!shared)
        shared = LLVM::ConstantOp::create(b, i32, b.getI32IntegerAttr(0));
      auto call = LLVM::CallOp::create(
          b, launchType,
          ValueRange{callback, context, name, toI32(grid.x), toI32(grid.y),
                     toI32(grid.z), toI32(block.x), toI32(block.y),
                     toI32(block.z), shared, params});
      // The launch op goes to the rest of the step, erased with it.
      fdc::returnFromStepIfFailed(b, call.getResult());
      launch.erase();
    }
  }
};
} // namespace
