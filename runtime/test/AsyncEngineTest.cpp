//===- AsyncEngineTest.cpp - Requests from many threads, one loop ---------===//
//
// The test model library (TestModel.c): greedy next = (token + 1) % 32, so a
// request's tokens are known: last prompt token + 1, + 2, ...
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/AsyncEngine.h"

#include "TestUtil.h"

#include <atomic>
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <random>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

constexpr int kVocab = 32;

std::unique_ptr<Model> loadModel(const TempDir &dir, int64_t numSlots,
                                 int64_t maxStepRows = 0) {
  writeTestCheckpoint(dir.path());
  ModelOptions options;
  options.numSlots = numSlots;
  options.maxContext = 64;
  options.maxStepRows = maxStepRows;
  Expected<std::unique_ptr<Model>> model =
      Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  EXPECT_TRUE(model) << model.error().message();
  return model ? std::move(*model) : nullptr;
}

GenerationRequest request(std::vector<int32_t> prompt, int64_t maxNew) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.maxNewTokens = maxNew;
  return r;
}

/// The test model's greedy tokens after `prompt`.
std::vector<int32_t> expectedTokens(const std::vector<int32_t> &prompt,
                                    int64_t count) {
  std::vector<int32_t> tokens;
  for (int64_t i = 1; i <= count; ++i)
    tokens.push_back(static_cast<int32_t>((prompt.back() + i) % kVocab));
  return tokens;
}

TEST(AsyncEngineTest, SubmitReturnsAtOnceAndResultsArriveById) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 2);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  std::vector<int32_t> streamed;
  GenerationRequest first = request({3, 7}, 4);
  first.onToken = [&](int32_t token, const float *) {
    streamed.push_back(token);
  };
  Expected<RequestId> a = engine.submit(std::move(first));
  Expected<RequestId> b = engine.submit(request({20}, 2));
  ASSERT_TRUE(a && b);
  EXPECT_NE(*a, *b);
  Expected<GenerationResult> second = engine.wait(*b);
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->tokens, (std::vector<int32_t>{21, 22}));
  EXPECT_EQ(second->reason, FinishReason::Length);
  Expected<GenerationResult> result = engine.wait(*a);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->tokens, (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_EQ(streamed, result->tokens);
  // Each result is returned once.
  Expected<GenerationResult> again = engine.wait(*a);
  ASSERT_FALSE(static_cast<bool>(again));
  EXPECT_EQ(again.error().message(),
            "no request 1 is running or has a result to return (each result "
            "is returned once)");
  EXPECT_EQ(engine.pendingCount(), 0u);
}

TEST(AsyncEngineTest, AnInvalidRequestIsRefusedAtSubmit) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  Expected<RequestId> bad = engine.submit(request({40}, 1));
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.error().message(),
            "prompt token 0 is 40, outside the vocabulary [0, 32)");
  bad = engine.submit(request({1}, 64));
  ASSERT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(engine.pendingCount(), 0u);
  Expected<RequestId> good = engine.submit(request({1}, 1));
  ASSERT_TRUE(good);
  EXPECT_EQ(engine.wait(*good)->tokens, (std::vector<int32_t>{2}));
}

TEST(AsyncEngineTest, RequestsWaitForASlotInsteadOfBeingRejected) {
  // One slot, three requests: they run one after another.
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  std::vector<RequestId> ids;
  for (int32_t first : {1, 10, 20})
    ids.push_back(*engine.submit(request({first}, 3)));
  for (size_t i = 0; i < ids.size(); ++i) {
    Expected<GenerationResult> result = engine.wait(ids[i]);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->reason, FinishReason::Length);
    EXPECT_EQ(result->tokens.size(), 3u);
  }
  EXPECT_EQ(model->kvCache().freeSlots(), 1);
}

TEST(AsyncEngineTest, CancelEndsARequestWithItsTokensSoFar) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  std::atomic<int> seen{0};
  std::optional<AsyncEngine> engine;
  engine.emplace(*model);
  std::atomic<RequestId> id{0};
  // The long request holds the only slot; its first token waits until the
  // queued request behind it has been cancelled, so the queued one can never
  // run first however the threads are scheduled.
  std::promise<void> queuedCancelled;
  std::shared_future<void> queuedCancelledGate =
      queuedCancelled.get_future().share();
  GenerationRequest long_ = request({5}, 60);
  long_.onToken = [&](int32_t, const float *) {
    // From the loop thread itself; the id is the engine's first.
    if (++seen == 1)
      EXPECT_EQ(queuedCancelledGate.wait_for(std::chrono::seconds(30)),
                std::future_status::ready);
    if (seen == 3)
      EXPECT_TRUE(engine->cancel(1));
  };
  id = *engine->submit(std::move(long_));
  ASSERT_EQ(id, 1u);
  // A queued request behind it (no free slot) is cancelled before it runs.
  RequestId queued = *engine->submit(request({9}, 2));
  EXPECT_TRUE(engine->cancel(queued));
  queuedCancelled.set_value();
  Expected<GenerationResult> result = engine->wait(id);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->reason, FinishReason::Cancelled);
  ASSERT_GE(result->tokens.size(), 3u);
  EXPECT_LT(result->tokens.size(), 60u);
  EXPECT_EQ(result->tokens,
            expectedTokens({5}, static_cast<int64_t>(result->tokens.size())));
  Expected<GenerationResult> other = engine->wait(queued);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->reason, FinishReason::Cancelled);
  EXPECT_TRUE(other->tokens.empty());
  // Finished requests cannot be cancelled; unknown ids neither.
  EXPECT_FALSE(engine->cancel(id));
  EXPECT_FALSE(engine->cancel(12345));
  EXPECT_EQ(model->kvCache().freeSlots(), 1);
  engine.reset();
}

TEST(AsyncEngineTest, PollDoesNotBlock) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  RequestId id = *engine.submit(request({1}, 3));
  for (int i = 0; i < 100000; ++i) {
    Expected<std::optional<GenerationResult>> polled = engine.poll(id);
    ASSERT_TRUE(polled);
    if (*polled) {
      EXPECT_EQ((*polled)->tokens, (std::vector<int32_t>{2, 3, 4}));
      EXPECT_FALSE(static_cast<bool>(engine.poll(id)));
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  FAIL() << "the request never finished";
}

TEST(AsyncEngineTest, DestroyingTheEngineCancelsWhatIsLeft) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 2);
  ASSERT_TRUE(model);
  {
    AsyncEngine engine(*model);
    for (int i = 0; i < 5; ++i)
      ASSERT_TRUE(engine.submit(request({1, 2, 3}, 60)));
  }
  // Every slot is free again.
  EXPECT_EQ(model->kvCache().freeSlots(), 2);
}

/// Soak: 2,000 short requests submitted from four threads at random times
/// with random prompts and lengths, a fifth of them cancelled at random
/// times, into 8 slots and 24 rows a step. Every request finishes, with the
/// right reason and the right tokens (the test model's are known: a
/// cancelled one's are a prefix), one held request is cancelled for certain,
/// and every slot is free at the end.
TEST(AsyncEngineTest, SoakWithRandomArrivalsAndCancellations) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 8, /*maxStepRows=*/24);
  ASSERT_TRUE(model);
  constexpr int kThreads = 4, kPerThread = 500;
  struct Submitted {
    RequestId id;
    std::vector<int32_t> prompt;
    int64_t maxNew;
    bool cancelled;
  };
  std::vector<std::vector<Submitted>> perThread(kThreads);
  {
    AsyncEngine engine(*model);
    // On a busy machine every random cancel may come too late, so one
    // request is cancelled for certain: its first token waits until the
    // cancel has been made.
    std::promise<void> heldCancelled;
    std::shared_future<void> heldGate = heldCancelled.get_future().share();
    GenerationRequest heldRequest = request({2}, 40);
    heldRequest.onToken = [heldGate](int32_t, const float *) {
      EXPECT_EQ(heldGate.wait_for(std::chrono::seconds(30)),
                std::future_status::ready);
    };
    RequestId held = *engine.submit(std::move(heldRequest));
    EXPECT_TRUE(engine.cancel(held));
    heldCancelled.set_value();
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        std::mt19937 rng(1234 + t);
        for (int i = 0; i < kPerThread; ++i) {
          std::vector<int32_t> prompt(1 + rng() % 6);
          for (int32_t &token : prompt)
            token = static_cast<int32_t>(rng() % kVocab);
          int64_t maxNew = 1 + rng() % 12;
          Expected<RequestId> id = engine.submit(request(prompt, maxNew));
          ASSERT_TRUE(id) << id.error().message();
          bool cancel = rng() % 5 == 0;
          if (cancel) {
            std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
            engine.cancel(*id); // may find it finished already
          }
          perThread[t].push_back({*id, prompt, maxNew, cancel});
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    int cancelledSeen = 0;
    for (const std::vector<Submitted> &submitted : perThread)
      for (const Submitted &s : submitted) {
        Expected<GenerationResult> result = engine.wait(s.id);
        ASSERT_TRUE(result) << result.error().message();
        std::vector<int32_t> full = expectedTokens(s.prompt, s.maxNew);
        if (result->reason == FinishReason::Cancelled) {
          ASSERT_TRUE(s.cancelled) << "request " << s.id;
          ++cancelledSeen;
          ASSERT_LE(result->tokens.size(), full.size());
          EXPECT_TRUE(std::equal(result->tokens.begin(), result->tokens.end(),
                                 full.begin()))
              << "request " << s.id;
        } else {
          ASSERT_EQ(result->reason, FinishReason::Length) << "request " << s.id;
          EXPECT_EQ(result->tokens, full) << "request " << s.id;
        }
      }
    Expected<GenerationResult> heldResult = engine.wait(held);
    ASSERT_TRUE(heldResult);
    EXPECT_EQ(heldResult->reason, FinishReason::Cancelled);
    EXPECT_LT(heldResult->tokens.size(), 40u);
    // Random cancels that land (most, with a free core) end with a prefix.
    RecordProperty("randomCancelsLanded", cancelledSeen);
    EXPECT_EQ(engine.pendingCount(), 0u);
    EXPECT_GT(engine.stepsRun(), 0);
  }
  EXPECT_EQ(model->kvCache().freeSlots(), 8);
}

TEST(AsyncEngineTest, TwoWaitersOnOneIdDoNotHang) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  RequestId id = *engine.submit(request({1}, 20));
  std::atomic<int> results{0}, errors{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < 2; ++i)
    waiters.emplace_back([&] {
      Expected<GenerationResult> result = engine.wait(id);
      (result ? results : errors) += 1;
    });
  for (std::thread &t : waiters)
    t.join();
  EXPECT_EQ(results, 1);
  EXPECT_EQ(errors, 1);
}

TEST(AsyncEngineTest, WaitFromTheLoopThreadIsRefused) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  std::optional<AsyncEngine> engine;
  engine.emplace(*model);
  std::string refusal;
  GenerationRequest r = request({1}, 2);
  r.onToken = [&](int32_t, const float *) {
    EXPECT_TRUE(engine->onLoopThread());
    Expected<GenerationResult> result = engine->wait(1);
    if (!result)
      refusal = result.error().message();
  };
  RequestId id = *engine->submit(std::move(r));
  ASSERT_TRUE(engine->wait(id));
  EXPECT_FALSE(engine->onLoopThread());
  EXPECT_EQ(refusal, "wait on the engine's own thread (from a token callback) "
                     "would never end");
}

TEST(AsyncEngineTest, RequestsWaitForSlotsHeldElsewhereWithoutSpinning) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  std::optional<int32_t> held = model->kvCache().acquireSlot();
  ASSERT_TRUE(held);
  AsyncEngine engine(*model);
  RequestId id = *engine.submit(request({4}, 2));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(engine.stepsRun(), 0);
  Expected<std::optional<GenerationResult>> early = engine.poll(id);
  ASSERT_TRUE(early);
  EXPECT_FALSE(early->has_value());
  model->kvCache().releaseSlot(*held);
  Expected<GenerationResult> result = engine.wait(id);
  ASSERT_TRUE(result);
  EXPECT_EQ(result->tokens, (std::vector<int32_t>{5, 6}));
}

TEST(AsyncEngineTest, DestroyingTheEngineWakesItsWaiters) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  // The only slot is held elsewhere: the request waits for it.
  std::optional<int32_t> held = model->kvCache().acquireSlot();
  ASSERT_TRUE(held);
  std::optional<AsyncEngine> engine;
  engine.emplace(*model);
  RequestId behind = *engine->submit(request({2}, 1));
  std::optional<Expected<GenerationResult>> seen;
  std::atomic<bool> entering{false};
  AsyncEngine *running = &*engine;
  std::thread waiter([&] {
    entering = true;
    seen.emplace(running->wait(behind));
  });
  while (!entering)
    std::this_thread::yield();
  // Let it get inside wait() (a call may not start once destruction has).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  engine.reset(); // cancels it, then waits for the waiter to return
  waiter.join();
  ASSERT_TRUE(seen && *seen);
  EXPECT_EQ((**seen).reason, FinishReason::Cancelled);
  model->kvCache().releaseSlot(*held);
  EXPECT_EQ(model->kvCache().freeSlots(), 1);
}

TEST(AsyncEngineTest, SubmitAllQueuesTheValidRequestsTogether) {
  // Three slots, a step of three rows: the three valid requests run in the
  // same four steps (one token each a step), the invalid one is refused
  // alone.
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 3);
  ASSERT_TRUE(model);
  AsyncEngine engine(*model);
  std::vector<GenerationRequest> requests;
  requests.push_back(request({1}, 4));
  requests.push_back(request({40}, 4));
  requests.push_back(request({10}, 4));
  requests.push_back(request({20}, 4));
  std::vector<Expected<RequestId>> ids = engine.submitAll(std::move(requests));
  ASSERT_EQ(ids.size(), 4u);
  ASSERT_FALSE(static_cast<bool>(ids[1]));
  EXPECT_EQ(ids[1].error().message(),
            "prompt token 0 is 40, outside the vocabulary [0, 32)");
  ASSERT_TRUE(ids[0] && ids[2] && ids[3]);
  EXPECT_LT(*ids[0], *ids[2]);
  EXPECT_LT(*ids[2], *ids[3]);
  for (size_t i : {0, 2, 3}) {
    Expected<GenerationResult> result = engine.wait(*ids[i]);
    ASSERT_TRUE(result) << result.error().message();
    EXPECT_EQ(result->reason, FinishReason::Length);
  }
  EXPECT_EQ(engine.stepsRun(), 4);
  EXPECT_EQ(engine.pendingCount(), 0u);
  EXPECT_TRUE(engine.submitAll({}).empty());
}

TEST(AsyncEngineTest, WhileRunningRejectsWhatNoSlotWillFreeFor) {
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 1);
  ASSERT_TRUE(model);
  // The only slot is held outside the engine, which runs nothing.
  std::optional<int32_t> held = model->kvCache().acquireSlot();
  ASSERT_TRUE(held);
  {
    AsyncEngine engine(*model, {}, SlotWait::WhileRunning);
    std::vector<GenerationRequest> requests;
    requests.push_back(request({4}, 2));
    requests.push_back(request({5}, 0)); // needs no slot
    requests.push_back(request({6}, 2));
    std::vector<Expected<RequestId>> ids =
        engine.submitAll(std::move(requests));
    for (size_t i : {0, 2}) {
      Expected<GenerationResult> result = engine.wait(*ids[i]);
      ASSERT_TRUE(result) << result.error().message();
      EXPECT_EQ(result->reason, FinishReason::Rejected);
      EXPECT_EQ(result->error,
                "no free KV-cache slot (num_slots = 1) and none will free");
      EXPECT_TRUE(result->tokens.empty());
    }
    Expected<GenerationResult> empty = engine.wait(*ids[1]);
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->reason, FinishReason::Length);
    EXPECT_EQ(engine.stepsRun(), 0);
    // Once the slot is back, requests run.
    model->kvCache().releaseSlot(*held);
    Expected<GenerationResult> result =
        engine.wait(*engine.submit(request({4}, 2)));
    ASSERT_TRUE(result);
    EXPECT_EQ(result->reason, FinishReason::Length);
    EXPECT_EQ(result->tokens, (std::vector<int32_t>{5, 6}));
  }
  EXPECT_EQ(model->kvCache().freeSlots(), 1);
}

TEST(AsyncEngineTest, WhileRunningWaitsForTheEnginesOwnSlots) {
  // Two slots, one held outside: the engine runs one request at a time in
  // the other, and the rest wait for it instead of being rejected.
  TempDir dir;
  std::unique_ptr<Model> model = loadModel(dir, 2);
  ASSERT_TRUE(model);
  std::optional<int32_t> held = model->kvCache().acquireSlot();
  ASSERT_TRUE(held);
  {
    AsyncEngine engine(*model, {}, SlotWait::WhileRunning);
    const std::vector<int32_t> firsts = {1, 10, 20};
    std::vector<GenerationRequest> requests;
    for (int32_t first : firsts)
      requests.push_back(request({first}, 3));
    std::vector<Expected<RequestId>> ids =
        engine.submitAll(std::move(requests));
    for (size_t i = 0; i < ids.size(); ++i) {
      Expected<GenerationResult> result = engine.wait(*ids[i]);
      ASSERT_TRUE(result);
      EXPECT_EQ(result->reason, FinishReason::Length) << result->error;
      EXPECT_EQ(result->tokens, expectedTokens({firsts[i]}, 3));
    }
    EXPECT_EQ(engine.stepsRun(), 9);
  }
  model->kvCache().releaseSlot(*held);
  EXPECT_EQ(model->kvCache().freeSlots(), 2);
}

} // namespace
