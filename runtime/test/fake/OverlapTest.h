//===- OverlapTest.h - Overlapped steps and steps one by one ----*- C++ -*-===//
//
// Shared by the CUDA and HIP backend tests: an engine on a GPU backend that
// overlaps steps (the next step launched before the last one's ids are
// read, its tokens read on the device) produces what steps run one by one
// produce, with requests that end by EOS, by length, by cancellation and
// that join mid-run; falls back to steps one by one when a launch fails;
// and calls onToken while the next step runs.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TEST_FAKE_OVERLAPTEST_H
#define FDC_RUNTIME_TEST_FAKE_OVERLAPTEST_H

#include "GpuTestUtil.h"

#include "fdc/runtime/Engine.h"
#include "fdc/runtime/Model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace fdc::runtime::test {

/// A fake driver's counters of overlapped steps.
struct OverlapCounters {
  /// Waits of one stream for the other's event.
  int64_t streamWaits = 0;
  int64_t liveStreams = 0;
  int64_t liveEvents = 0;
  /// Events created without timing (cheaper to wait for).
  int64_t liveUntimedEvents = 0;
};

/// What a workload of runOverlapWorkload produced.
struct OverlapRun {
  /// Every request's result, by id.
  std::vector<GenerationResult> results;
  int64_t steps = 0;
  int64_t launchedAhead = 0;
};

/// On a test model of 3 slots and 16 positions (the fake's kernels: the
/// next token is the fed one + 1, + a draw when sampling): a greedy request,
/// a sampled one cancelled after three steps, one that ends at its EOS id,
/// and one that joins after five steps.
inline OverlapRun runOverlapWorkload(Model &model, bool overlap) {
  EngineOptions options;
  options.overlapSteps = overlap;
  OverlapRun run;
  {
    Engine engine(model, options);
    auto submit = [&](std::vector<int32_t> prompt, int64_t maxNew,
                      float temperature = 0, int32_t eos = -1) {
      GenerationRequest r;
      r.prompt = std::move(prompt);
      r.maxNewTokens = maxNew;
      r.sampling.temperature = temperature;
      r.sampling.seed = 7;
      r.eosId = eos;
      Expected<RequestId> id = engine.submit(std::move(r));
      EXPECT_TRUE(id) << id.error().message();
      return id ? *id : 0;
    };
    submit({1, 2}, 10);
    RequestId sampled = submit({30}, 9, 1.0f);
    submit({5}, 12, 0, /*eos=*/9);
    for (int i = 0; i < 3; ++i)
      engine.step();
    EXPECT_TRUE(engine.cancel(sampled));
    for (int i = 0; i < 2; ++i)
      engine.step();
    submit({3, 4, 5}, 4);
    run.results = engine.runToCompletion();
    run.steps = engine.stepsRun();
    run.launchedAhead = engine.stepsLaunchedAhead();
  }
  std::sort(run.results.begin(), run.results.end(),
            [](const GenerationResult &a, const GenerationResult &b) {
              return a.id < b.id;
            });
  EXPECT_EQ(model.kvCache().freeSlots(), 3);
  return run;
}

/// Loads a model with `load` and runs the workload with overlapped steps
/// and without: the same tokens and reasons, the same number of steps, and
/// only the first launches steps ahead, each step's copies on the second
/// stream ordered by events (`counters` reads the fake's). With `waitCall`
/// (the stream wait) failing through the fake's `failVariable`, no step is
/// launched ahead and the results are again the same.
inline void expectOverlappedStepsMatchStepsOneByOne(
    const std::function<std::unique_ptr<Model>()> &load,
    const std::function<OverlapCounters()> &counters, const char *failVariable,
    const char *waitCall) {
  std::unique_ptr<Model> model = load();
  ASSERT_TRUE(model);
  OverlapRun oneByOne = runOverlapWorkload(*model, false);
  // A model that never overlapped has no copy stream and no events.
  EXPECT_EQ(counters().liveEvents, 0);
  ASSERT_TRUE(model->canOverlapSteps());
  OverlapCounters before = counters();
  OverlapRun overlapped = runOverlapWorkload(*model, true);
  OverlapCounters after = counters();
  EXPECT_EQ(oneByOne.launchedAhead, 0);
  EXPECT_GT(overlapped.launchedAhead, 0);
  EXPECT_EQ(overlapped.steps, oneByOne.steps);
  // Per step: the kernels wait for the inputs' copy, the ids' copy for the
  // kernels.
  EXPECT_EQ(after.streamWaits - before.streamWaits, 2 * overlapped.steps);
  // The two copy streams (inputs, ids) beside the main one, and 3 events
  // without timing for each of the two steps in flight.
  EXPECT_EQ(after.liveStreams, 3);
  EXPECT_EQ(after.liveEvents, 6);
  EXPECT_EQ(after.liveUntimedEvents, 6);
  ASSERT_EQ(oneByOne.results.size(), 4u);
  // Greedy: the fed token + 1; the EOS request stops at 9.
  EXPECT_EQ(oneByOne.results[0].tokens,
            (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  EXPECT_EQ(oneByOne.results[1].reason, FinishReason::Cancelled);
  EXPECT_EQ(oneByOne.results[2].tokens, (std::vector<int32_t>{6, 7, 8, 9}));
  EXPECT_EQ(oneByOne.results[2].reason, FinishReason::Eos);
  EXPECT_EQ(oneByOne.results[3].tokens, (std::vector<int32_t>{6, 7, 8, 9}));
  auto expectSame = [&](const OverlapRun &run) {
    ASSERT_EQ(run.results.size(), oneByOne.results.size());
    for (size_t i = 0; i < run.results.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(run.results[i].id));
      EXPECT_EQ(run.results[i].tokens, oneByOne.results[i].tokens);
      EXPECT_EQ(run.results[i].reason, oneByOne.results[i].reason);
      EXPECT_EQ(run.results[i].error, oneByOne.results[i].error);
    }
  };
  expectSame(overlapped);

  ScopedEnv fail(failVariable, waitCall);
  OverlapRun fallback = runOverlapWorkload(*model, true);
  EXPECT_EQ(fallback.launchedAhead, 0);
  expectSame(fallback);
}

/// Steps whose rows change (prompt chunks beside a decode row) cannot be
/// launched ahead; the engine launches each before it calls onToken for
/// the tokens of the step before. Through `counters`' stream waits (two per
/// launched step): each callback of step k, but the last step's, sees step
/// k + 1 launched. The tokens are those of steps one by one.
inline void expectCallbacksRunWhileTheNextStepRuns(
    const std::function<std::unique_ptr<Model>()> &load,
    const std::function<OverlapCounters()> &counters) {
  std::unique_ptr<Model> model = load();
  ASSERT_TRUE(model);
  struct Seen {
    int64_t step;
    int64_t waits;
  };
  auto run = [&](bool overlap, std::vector<Seen> &seen) {
    EngineOptions options;
    options.overlapSteps = overlap;
    options.maxStepTokens = 3; // the fewest: one chunk row beside each
    Engine engine(*model, options);
    int64_t waitsBefore = counters().streamWaits;
    for (std::vector<int32_t> prompt :
         {std::vector<int32_t>{1, 2, 3, 4, 5, 6}, std::vector<int32_t>{9}}) {
      GenerationRequest r;
      r.prompt = std::move(prompt);
      r.maxNewTokens = 4;
      r.wantsLogits = false;
      r.onToken = [&, waitsBefore](int32_t, const float *) {
        seen.push_back(
            {engine.stepsRun(), counters().streamWaits - waitsBefore});
      };
      EXPECT_TRUE(engine.submit(std::move(r)));
    }
    std::vector<GenerationResult> results = engine.runToCompletion();
    std::sort(results.begin(), results.end(),
              [](const GenerationResult &a, const GenerationResult &b) {
                return a.id < b.id;
              });
    return std::pair{results, engine.stepsRun()};
  };
  std::vector<Seen> oneByOne, overlapped;
  auto [expected, steps] = run(false, oneByOne);
  auto [got, overlappedSteps] = run(true, overlapped);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i].tokens, expected[i].tokens);
  EXPECT_EQ(overlappedSteps, steps);
  ASSERT_EQ(overlapped.size(), 8u);
  for (const Seen &callback : overlapped) {
    SCOPED_TRACE("a token of step " + std::to_string(callback.step));
    if (callback.step < overlappedSteps)
      EXPECT_GE(callback.waits, 2 * (callback.step + 1));
  }
}

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_FAKE_OVERLAPTEST_H
