//===- ExternDynamicSharedMemory.cpp - launch-sized shared memory ---------===//
//
// convert-gpu-to-{nvvm,rocdl} lower gpu.dynamic_shared_memory to the address
// of a zero-length LLVM global in the workgroup address space with internal
// linkage. The backends only treat an *external* one as the launch-sized
// region (`.extern .shared .b8 x[]` in PTX, dynamic LDS on AMDGPU); an
// internal one is a static allocation of (almost) nothing, and the kernel
// would address past it. This pass gives those globals external linkage.
//
//===----------------------------------------------------------------------===//

#include "fdc/Target/KernelLowering.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

namespace {
/// The workgroup (shared memory, LDS) address space of NVVM and AMDGPU.
constexpr unsigned kWorkgroupAddressSpace = 3;

class ExternDynamicSharedMemoryPass
    : public PassWrapper<ExternDynamicSharedMemoryPass,
                         OperationPass<gpu::GPUModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExternDynamicSharedMemoryPass)

  StringRef getArgument() const override {
    return "fdc-extern-dynamic-shared-memory";
  }
  StringRef getDescription() const override {
    return "Give the zero-length workgroup globals of "
           "gpu.dynamic_shared_memory external linkage";
  }
  void runOnOperation() override {
    getOperation()->walk([](LLVM::GlobalOp global) {
      auto array = dyn_cast<LLVM::LLVMArrayType>(global.getGlobalType());
      if (!array || array.getNumElements() != 0 ||
          global.getAddrSpace() != kWorkgroupAddressSpace ||
          global.getValueOrNull() || global.getInitializerBlock())
        return;
      global.setLinkage(LLVM::Linkage::External);
    });
  }
};
} // namespace

std::unique_ptr<Pass> fdc::target::createExternDynamicSharedMemoryPass() {
  return std::make_unique<ExternDynamicSharedMemoryPass>();
}
