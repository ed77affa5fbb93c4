//===- StepGraphTest.h - Steps of several batch sizes -----------*- C++ -*-===//
//
// Shared by the CUDA and HIP backend tests of the step graphs: a sequence
// of steps whose outputs depend on the step's inputs and on the KV cache the
// earlier steps wrote, so that a replayed graph reproduces an eager step
// only if it reads its inputs and the device memory when it runs.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TEST_FAKE_STEPGRAPHTEST_H
#define FDC_RUNTIME_TEST_FAKE_STEPGRAPHTEST_H

#include "fdc/runtime/Model.h"

#include <cstdint>
#include <ostream>
#include <vector>

namespace fdc::runtime::test {

/// The outputs of one step: every row's next token and logits.
struct StepRows {
  std::vector<int32_t> next;
  std::vector<float> logits;
  bool operator==(const StepRows &o) const {
    return next == o.next && logits == o.logits;
  }
};

inline std::ostream &operator<<(std::ostream &os, const StepRows &rows) {
  os << "next [";
  for (int32_t t : rows.next)
    os << t << " ";
  return os << "], " << rows.logits.size() << " logits";
}

/// Runs one step per entry of `batches` (each at most 3, the model's slots):
/// row i is slot i at the position after its previous step's, with a token
/// that differs by step and row; row 1 samples (temperature 1).
inline Expected<std::vector<StepRows>>
runBatchSizes(Model &model, const std::vector<int64_t> &batches) {
  std::vector<StepRows> outputs;
  int32_t positions[3] = {0, 0, 0};
  int64_t vocab = model.vocabSize();
  for (size_t s = 0; s < batches.size(); ++s) {
    int64_t batch = batches[s];
    std::vector<int32_t> tokens, pos, slots, topK;
    std::vector<float> temperature, topP, uniform;
    for (int32_t i = 0; i < batch; ++i) {
      tokens.push_back(static_cast<int32_t>((7 * s + 3 * i + 1) % 32));
      pos.push_back(positions[i]++);
      slots.push_back(i);
      topK.push_back(0);
      temperature.push_back(i == 1 ? 1.0f : 0.0f);
      topP.push_back(1.0f);
      uniform.push_back(0.125f * static_cast<float>(s % 7 + 1));
    }
    StepRows rows;
    rows.next.assign(static_cast<size_t>(batch), -7);
    rows.logits.assign(static_cast<size_t>(batch * vocab), -7.0f);
    FdcStepArgs args = {};
    args.batch = batch;
    args.tokens = tokens.data();
    args.positions = pos.data();
    args.slots = slots.data();
    args.temperature = temperature.data();
    args.top_k = topK.data();
    args.top_p = topP.data();
    args.uniform = uniform.data();
    args.logits = rows.logits.data();
    args.next_tokens = rows.next.data();
    if (Error err = model.step(args))
      return createError("step ", s, " (batch size ", batch,
                         "): ", err.message());
    outputs.push_back(std::move(rows));
  }
  return outputs;
}

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_FAKE_STEPGRAPHTEST_H
