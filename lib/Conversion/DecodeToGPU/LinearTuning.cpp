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

std::string fdc::gpu::getDTypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isBF16())
    return "bf16";
  if (type.isF16())
    return "f16";
  if (isa<decode::Int4Type>(type))
    return "int4";
  std::string name;
  llvm::raw_string_ostream os(name);
  os << type;
  return name;
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
    signature.dtype = getDTypeName(tensor.getElementType());
  }
  signature.activation = decode::stringifyActivation(op.getActivation()).str();
  signature.bias = static_cast<bool>(op.getBias());
  signature.residual = static_cast<bool>(op.getResidual());
  return signature;
}
