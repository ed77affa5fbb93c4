//===- SelectKernels.cpp - decode-select-kernels --------------------------===//
//
// Writes each kernel op's #decode.kernel (family and complete config) for the
// module's GPU target; see the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "KernelRegistry.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/StepAbi.h"

namespace fdc {
#define GEN_PASS_DEF_SELECTKERNELS
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
struct SelectKernels : public fdc::impl::SelectKernelsBase<SelectKernels> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<decode::ModelOp> model = getSingleModel(module, getArgument());
    if (failed(model))
      return signalPassFailure();
    FailureOr<decode::GpuTargetAttr> gpuTarget =
        resolveGpuTarget(module, target, getArgument());
    if (failed(gpuTarget))
      return signalPassFailure();
    module->setAttr(decode::GpuTargetAttr::getModuleAttrName(), *gpuTarget);
    std::unique_ptr<GpuPrimitives> primitives =
        GpuPrimitives::create(*gpuTarget);
    Block &body = model->getStepFunction().getBody().front();
    for (Operation &op : body.without_terminator()) {
      FailureOr<Attribute> kernels = resolveKernels(&op, *primitives);
      if (failed(kernels))
        return signalPassFailure();
      if (*kernels)
        op.setAttr(decode::KernelAttr::getOpAttrName(), *kernels);
    }
  }
};
} // namespace
