//===- StepArrays.h - The host arrays of one model step ---------*- C++ -*-===//
//
// The per-row arrays of FdcStepArgs as host vectors, and the FdcStepArgs
// that points into them: what Engine fills for every step, and tests for
// Model::step by hand.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_STEPARRAYS_H
#define FDC_RUNTIME_STEPARRAYS_H

#include "fdc_model_abi.h"

#include <cstdint>
#include <vector>

namespace fdc::runtime {

/// The host arrays of one step's rows, as FdcStepArgs names them: one
/// element per row each, but vocab_size floats per row in `logits`.
struct StepArrays {
  /// Inputs: the token, position and KV-cache slot of each row, and its
  /// sampling parameters and uniform draw.
  std::vector<int32_t> tokens, positions, slots, topK;
  std::vector<float> temperature, topP, uniform;
  /// Outputs: [rows][vocab_size] logits and the next token of each row.
  std::vector<float> logits;
  std::vector<int32_t> nextTokens;

  /// The FdcStepArgs of a step of `batch` rows whose arrays are these
  /// vectors; every other field is zero (Model::step fills them in).
  FdcStepArgs args(int64_t batch) {
    FdcStepArgs a = {};
    a.batch = batch;
    a.tokens = tokens.data();
    a.positions = positions.data();
    a.slots = slots.data();
    a.temperature = temperature.data();
    a.top_k = topK.data();
    a.top_p = topP.data();
    a.uniform = uniform.data();
    a.logits = logits.data();
    a.next_tokens = nextTokens.data();
    return a;
  }
  /// The FdcStepArgs of a step of every row (batch = tokens.size()).
  FdcStepArgs args() { return args(static_cast<int64_t>(tokens.size())); }
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_STEPARRAYS_H
