//===- LinearEpilogue.cpp - the epilogue of decode.linear -----------------===//

#include "fdc/Conversion/Utils/LinearEpilogue.h"

using namespace mlir;
using namespace fdc;

void fdc::emitLinearOutput(Emitter &e, const LinearEpilogueOperands &operands,
                           Value i, Value j, Value acc, Value upAcc) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t n = cast<MemRefType>(operands.out.getType()).getDimSize(1);
  auto biased = [&](Value value, Value row) {
    return operands.bias ? e.add(value, e.load(operands.bias, row)) : value;
  };
  Value result = biased(acc, j);
  if (operands.activation == decode::Activation::silu_gate_up) {
    Value up = biased(upAcc, arith::AddIOp::create(b, j, e.index(n)));
    // silu(g) = g / (1 + exp(-g))
    Value one = e.f32(1);
    Value expNegResult = e.exp(e.sub(e.f32(0), result));
    Value silu = e.div(result, e.add(one, expNegResult));
    result = e.mul(silu, up);
  }
  if (operands.residual)
    result = e.add(result, e.load(operands.residual, {i, j}));
  e.store(result, operands.out, {i, j});
}
