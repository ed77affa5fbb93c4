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

#include "fdc/runtime/DeviceBackend.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/Model.h"
#include "fdc/runtime/StepArrays.h"

#include "GpuTestUtil.h"
#include "fake/FakeDevice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
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
    StepArrays arrays;
    for (int32_t i = 0; i < batch; ++i) {
      arrays.tokens.push_back(static_cast<int32_t>((7 * s + 3 * i + 1) % 32));
      arrays.positions.push_back(positions[i]++);
      arrays.slots.push_back(i);
      arrays.topK.push_back(0);
      arrays.temperature.push_back(i == 1 ? 1.0f : 0.0f);
      arrays.topP.push_back(1.0f);
      arrays.uniform.push_back(0.125f * static_cast<float>(s % 7 + 1));
    }
    arrays.nextTokens.assign(static_cast<size_t>(batch), -7);
    arrays.logits.assign(static_cast<size_t>(batch * vocab), -7.0f);
    FdcStepArgs args = arrays.args(batch);
    if (Error err = model.step(args))
      return createError("step ", s, " (batch size ", batch,
                         "): ", err.message());
    StepRows rows;
    rows.next = std::move(arrays.nextTokens);
    rows.logits = std::move(arrays.logits);
    outputs.push_back(std::move(rows));
  }
  return outputs;
}

/// Steps of batch size 1 on `backend` (a test library: 3 slots of 16
/// positions, `vocab` logits, logit 30 = the weight arena's first float)
/// across new weights and new buffers: the graph captured before either
/// held the old addresses, so it is dropped and captured again, and the
/// replays see the new weights. `graphStats` reads the fake's counters.
inline void expectStepGraphsDroppedWithTheBuffers(
    DeviceBackend &backend, int64_t vocab,
    std::function<FakeGraphStats()> graphStats) {
  auto upload = [&](float w0) {
    Expected<HostBuffer> arena = HostBuffer::allocate(512, "test weights");
    EXPECT_TRUE(arena);
    std::memcpy(arena->data(), &w0, 4);
    Error err = backend.uploadWeights(*arena);
    EXPECT_FALSE(err) << err.message();
  };
  auto allocate = [&] {
    Error err = backend.allocateState(3 * 2 * 16 * 4, 3, vocab);
    EXPECT_FALSE(err) << err.message();
  };
  // One step (slot 0, position 0); returns logit 30.
  auto step = [&](int32_t token) {
    StepArrays row = greedyFirstRow(token, vocab);
    row.nextTokens = {-1};
    FdcStepArgs args = row.args();
    args.num_slots = 3;
    args.max_context = 16;
    Error err = backend.step(args);
    EXPECT_FALSE(err) << err.message();
    EXPECT_EQ(row.nextTokens[0], token + 1);
    return row.logits[30];
  };
  int64_t start = graphStats().captures;
  upload(0.5f);
  allocate();
  EXPECT_EQ(step(1), 0.5f);
  EXPECT_EQ(step(2), 0.5f);
  EXPECT_EQ(graphStats().captures - start, 1);
  EXPECT_EQ(graphStats().liveGraphExecs, 1);

  // New buffers: the graph held the old addresses.
  allocate();
  EXPECT_EQ(graphStats().liveGraphExecs, 0);
  EXPECT_EQ(step(3), 0.5f);
  EXPECT_EQ(graphStats().captures - start, 2);

  // New weights: the same.
  upload(4.0f);
  EXPECT_EQ(graphStats().liveGraphExecs, 0);
  EXPECT_EQ(step(4), 4.0f);
  EXPECT_EQ(step(5), 4.0f);
  EXPECT_EQ(graphStats().captures - start, 3);
}

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_FAKE_STEPGRAPHTEST_H
