//===- LinearTuning.cpp - linear signatures of measured tables ------------===//

#include "LinearTuning.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

std::string LinearSignature::key() const {
  return (llvm::Twine("n=") + llvm::Twine(n) + " k=" + llvm::Twine(k) +
          " dtype=" + dtype + " activation=" + activation + " bias=" +
          llvm::Twine(int(bias)) + " residual=" + llvm::Twine(int(residual)))
      .str();
}

LinearSignature fdc::gpu::getLinearSignature(decode::LinearOp op) {
  LinearSignature signature;
  Type weight = op.getWeight().getType();
  if (auto quant = dyn_cast<decode::QuantTensorType>(weight)) {
    signature.n = quant.getShape()[0];
    signature.k = quant.getShape()[1];
    signature.dtype = "int4";
  } else {
    auto tensor = cast<RankedTensorType>(weight);
    signature.n = tensor.getDimSize(0);
    signature.k = tensor.getDimSize(1);
    signature.dtype = decode::getDTypeName(tensor.getElementType());
  }
  signature.activation = decode::stringifyActivation(op.getActivation()).str();
  signature.bias = static_cast<bool>(op.getBias());
  signature.residual = static_cast<bool>(op.getResidual());
  return signature;
}
