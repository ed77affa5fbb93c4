//===- StagingTest.h - Steps staged in pinned or pageable memory *- C++ -*-===//
//
// Shared by the CUDA and HIP backend tests: a GPU backend stages a step's
// inputs and sampled ids in pinned host memory when the driver allocates
// it, and in ordinary memory when it does not, with the same results.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TEST_FAKE_STAGINGTEST_H
#define FDC_RUNTIME_TEST_FAKE_STAGINGTEST_H

#include "GpuTestUtil.h"
#include "fake/StepGraphTest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace fdc::runtime::test {

/// A fake driver's counters of pinned host memory.
struct PinnedCounters {
  /// Live pinned allocations.
  int64_t live = 0;
  /// Copies whose host side lies in pinned memory.
  int64_t copies = 0;
};

/// Loads a model of 3 slots with `load` twice: once with pinned allocations
/// working, once with `pinnedCall` (e.g. "cuMemHostAlloc") failing through
/// the fake's `failVariable`. Each runs steps of batch sizes 1, 3, 1, 3: the
/// first stages every step's inputs and ids in its two pinned buffers, the
/// second in ordinary memory, and both compute the same. The pinned buffers
/// go with the model. `counters` reads the fake's counters.
inline void expectStepsStagedInPinnedMemoryOrNot(
    const std::function<std::unique_ptr<Model>()> &load,
    const std::function<PinnedCounters()> &counters, const char *failVariable,
    const char *pinnedCall) {
  std::vector<std::vector<StepRows>> outputs;
  for (bool pinned : {true, false}) {
    SCOPED_TRACE(pinned ? "pinned" : "pageable");
    std::optional<ScopedEnv> fail;
    if (!pinned)
      fail.emplace(failVariable, pinnedCall);
    PinnedCounters before = counters();
    {
      std::unique_ptr<Model> model = load();
      ASSERT_TRUE(model);
      // The inputs' staging buffers and the sampled ids', a pair for each
      // of the two steps that may be in flight.
      EXPECT_EQ(counters().live - before.live, pinned ? 4 : 0);
      Expected<std::vector<StepRows>> rows =
          runBatchSizes(*model, {1, 3, 1, 3});
      ASSERT_TRUE(rows) << rows.error().message();
      // Per step, its inputs go in and its ids come back through them (the
      // logits go straight to the caller's memory).
      EXPECT_EQ(counters().copies - before.copies, pinned ? 4 * 2 : 0);
      outputs.push_back(std::move(*rows));
    }
    EXPECT_EQ(counters().live, before.live);
  }
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0], outputs[1]);
}

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_FAKE_STAGINGTEST_H
