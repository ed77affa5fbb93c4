//===- LinearArgs.h - the optional operands of linear kernels ---*- C++ -*-===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H

#include "../KernelRegistry.h"

#include "fdc/Conversion/Utils/LinearEpilogue.h"

namespace fdc::gpu {

/// The weight row blocks a linear reads per output row: two for
/// SiLU-gate-up (the gate and the up half, rows [0, N) and [N, 2N)), else
/// one.
inline int64_t getWeightHalves(bool gateUp) { return gateUp ? 2 : 1; }
inline int64_t getWeightHalves(decode::Activation activation) {
  return getWeightHalves(activation == decode::Activation::silu_gate_up);
}

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

/// The operands and shapes of one decode.linear or decode.sparse_linear on
/// the MMA (flat and tiled GEMM, Flash-LLM SpMM), and its kernel arguments:
/// input, weight, out, then the optional bias and residual.
struct LinearProblem {
  template <typename LinearOpT>
  LinearProblem(LinearOpT linear, StepBuffers &buffers)
      : input(buffers.get(linear.getInput())),
        weight(buffers.get(linear.getWeight())),
        out(buffers.result(linear.getResult())),
        bias(buffers.getOptional(linear.getBias())),
        residual(buffers.getOptional(linear.getResidual())),
        activation(linear.getActivation()), n(out.type.getDimSize(1)),
        k(input.type.getDimSize(1)), element(input.type.getElementType()),
        gateUp(activation == decode::Activation::silu_gate_up),
        weightIsModelWeight(isModelWeight(linear.getWeight())),
        optional(activation) {
    args = {KernelArg::buffer(input), KernelArg::buffer(weight),
            KernelArg::buffer(out)};
    optional.add(args, bias, residual);
  }

  Buffer input, weight, out, bias, residual;
  decode::Activation activation;
  /// Output features and the reduction length.
  int64_t n, k;
  /// The input's element type, which the MMA's operands share (the weight's
  /// elements are the same; a sparse weight's buffer holds words).
  mlir::Type element;
  /// SiLU-gate-up: the weight's rows [n, 2n) are the up half.
  bool gateUp;
  /// The weight is the model's (isModelWeight): no kernel of the step writes
  /// it, so a kernel may read it before the kernel before it has ended.
  bool weightIsModelWeight;
  /// The kernel's arguments before the implicit ones, and where the
  /// optional ones are.
  llvm::SmallVector<KernelArg> args;
  LinearOptionalArgs optional;
};

/// The workspace bytes per batch row of a linear kernel that splits K
/// `splitK` ways: its f32 partial sums, [split_k * halves * N] (0 for one
/// split).
int64_t getSplitKWorkspaceBytesPerRow(decode::LinearOp op, int64_t splitK);

/// A block's run of K's `tiles` tiles: all of them, or, with `splitK` > 1,
/// its split's (grid z; the last split may have fewer).
struct KTileRun {
  /// The block's split (null without split-K), its first tile and count.
  mlir::Value split, firstTile, tileCount;
};
KTileRun planKTileRun(GpuEmitter &e, int64_t tiles, int64_t splitK);

/// Launches "linear_epilogue" for `batch` rows: out[m][n] is the epilogue
/// (bias, activation, residual) of the sum over s < `splits` of
/// partials[m][(s * halves + h) * N + n], halves = 2 for SiLU-gate-up (h = 0
/// the gate, 1 the up half), else 1. `partials` is f32 [M][splits * halves *
/// N]; `threads` per block.
void launchLinearEpilogue(KernelContext &ctx, int64_t threads, Buffer partials,
                          int64_t splits, Buffer out, Buffer bias,
                          Buffer residual, decode::Activation activation);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_LINEARARGS_H
