//===- LinearArgs.h - the optional operands of linear kernels ---*- C++ -*-===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H

#include "../KernelContext.h"

#include "fdc/Conversion/Utils/LinearEpilogue.h"

namespace fdc::gpu {

/// A linear kernel's bias and residual arguments: appended when present, and
/// found again in the kernel body for the shared epilogue.
class LinearOptionalArgs {
public:
  LinearOptionalArgs(decode::Activation activation) : activation(activation) {}

  void add(llvm::SmallVectorImpl<KernelArg> &args, Buffer bias,
           Buffer residual) {
    if (bias.pointer) {
      biasIndex = args.size();
      args.push_back(KernelArg::buffer(bias));
    }
    if (residual.pointer) {
      residualIndex = args.size();
      args.push_back(KernelArg::buffer(residual));
    }
  }

  /// The epilogue's operands in a kernel body whose arguments are `v`.
  LinearEpilogueOperands operands(llvm::ArrayRef<mlir::Value> v,
                                  mlir::Value out) const {
    LinearEpilogueOperands result;
    result.bias = biasIndex >= 0 ? v[biasIndex] : mlir::Value();
    result.residual = residualIndex >= 0 ? v[residualIndex] : mlir::Value();
    result.out = out;
    result.activation = activation;
    return result;
  }

private:
  decode::Activation activation;
  int biasIndex = -1, residualIndex = -1;
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H
