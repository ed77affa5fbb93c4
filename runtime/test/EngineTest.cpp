//===- EngineTest.cpp - Tests of batched generation -----------------------===//
//
// Runs the test model library (TestModel.c): greedy next = (token + 1) % 32;
// logits are one-hot(next) + w[0] at 30 + sum of the slot's K rows at 31.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Engine.h"

#include "TestUtil.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <set>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

constexpr int kVocab = 32;

class EngineTest : public ::testing::Test {
protected:
  void loadModel(int64_t numSlots, int64_t maxContext = 16,
                 int64_t maxStepRows = 0) {
    TempDir dir;
    writeTestCheckpoint(dir.path());
    ModelOptions options;
    options.numSlots = numSlots;
    options.maxContext = maxContext;
    options.maxStepRows = maxStepRows;
    Expected<std::unique_ptr<Model>> loaded =
        Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
    ASSERT_TRUE(loaded) << loaded.error().message();
    model = std::move(*loaded);
    engine = std::make_unique<Engine>(*model);
    engine->stepObserver = [this](const FdcStepArgs &args) {
      batchSizes.push_back(args.batch);
      // A slot's rows are one sequence's consecutive positions, in order
      // and next to each other; slots of different rows runs differ.
      std::set<int32_t> runs;
      for (int64_t i = 0; i < args.batch; ++i) {
        EXPECT_GE(args.slots[i], 0);
        EXPECT_LT(args.slots[i], args.num_slots);
        EXPECT_LT(args.positions[i], args.max_context);
        bool continues = i > 0 && args.slots[i] == args.slots[i - 1];
        if (continues)
          EXPECT_EQ(args.positions[i], args.positions[i - 1] + 1);
        else
          EXPECT_TRUE(runs.insert(args.slots[i]).second)
              << "slot " << args.slots[i] << " in two runs of rows";
        slotsSeen.insert(args.slots[i]);
      }
      StepTrace t;
      t.slots.assign(args.slots, args.slots + args.batch);
      t.positions.assign(args.positions, args.positions + args.batch);
      t.tokens.assign(args.tokens, args.tokens + args.batch);
      t.next.assign(args.next_tokens, args.next_tokens + args.batch);
      t.withLogits = args.logits != nullptr;
      trace.push_back(std::move(t));
    };
  }

  static GenerationRequest request(std::vector<int32_t> prompt,
                                   int64_t maxNew) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.maxNewTokens = maxNew;
    return r;
  }

  RequestId submit(GenerationRequest r) {
    Expected<RequestId> id = engine->submit(std::move(r));
    EXPECT_TRUE(id) << id.error().message();
    return id ? *id : 0;
  }

  static const GenerationResult &
  resultFor(const std::vector<GenerationResult> &results, RequestId id) {
    for (const GenerationResult &r : results)
      if (r.id == id)
        return r;
    static GenerationResult none;
    ADD_FAILURE() << "no result for request " << id;
    return none;
  }

  /// The rows of one step as the step saw them.
  struct StepTrace {
    std::vector<int32_t> slots, positions, tokens, next;
    bool withLogits = false;
  };

  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;
  std::vector<int64_t> batchSizes;
  std::set<int32_t> slotsSeen;
  std::vector<StepTrace> trace;
};

TEST_F(EngineTest, SingleGreedyRequest) {
  loadModel(1);
  std::vector<std::vector<float>> rows;
  GenerationRequest r = request({3, 7}, 4);
  r.onToken = [&](int32_t, const float *logits) {
    rows.emplace_back(logits, logits + kVocab);
  };
  RequestId id = submit(std::move(r));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, id);
  EXPECT_EQ(results[0].tokens, (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_EQ(results[0].reason, FinishReason::Length);
  // Prompt of 2 + 4 generated - 1 (the last token is never fed).
  EXPECT_EQ(engine->stepsRun(), 5);
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{1, 1, 1, 1, 1}));

  // Each generated step's logits: token fed at positions 1..4.
  ASSERT_EQ(rows.size(), 4u);
  std::vector<int32_t> fed = {3, 7, 8, 9, 10};
  float sum = 3;
  for (size_t step = 0; step < rows.size(); ++step) {
    sum += fed[step + 1];
    std::vector<float> expected(kVocab, 0.0f);
    expected[results[0].tokens[step]] = 1;
    expected[30] += 0.5f; // w[0] from checkpoint tensor "a"
    expected[31] += sum;
    EXPECT_EQ(rows[step], expected) << "step " << step;
  }
}

TEST_F(EngineTest, BatchesRequestsOfDifferentLengths) {
  loadModel(3);
  RequestId a = submit(request({1}, 3));
  RequestId b = submit(request({10, 11, 12}, 2));
  RequestId c = submit(request({20, 21}, 1));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{13, 14}));
  EXPECT_EQ(resultFor(results, c).tokens, (std::vector<int32_t>{22}));
  // a: 3 steps, b: 4 steps, c: 2 steps, all starting together.
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{3, 3, 2, 1}));
  // c finished first.
  EXPECT_EQ(results[0].id, c);
}

TEST_F(EngineTest, RequestsJoinAndLeave) {
  loadModel(2);
  RequestId a = submit(request({5}, 4));
  engine->step();
  engine->step();
  EXPECT_EQ(engine->liveCount(), 1u);
  RequestId b = submit(request({0, 1}, 2));
  EXPECT_EQ(engine->queuedCount(), 1u);
  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{1, 1, 2, 2, 1}));
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{6, 7, 8, 9}));
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(engine->idle());
}

TEST_F(EngineTest, BadRequestIsRejectedAloneOthersContinue) {
  loadModel(2);
  RequestId good = submit(request({1, 2}, 3));
  engine->step();

  auto refused = [&](GenerationRequest r, const std::string &text) {
    Expected<RequestId> id = engine->submit(std::move(r));
    ASSERT_FALSE(id);
    EXPECT_NE(id.error().message().find(text), std::string::npos)
        << id.error().message();
  };
  refused(request({}, 1), "empty prompt");
  refused(request({1, 32}, 1), "prompt token 1 is 32, outside the vocabulary");
  refused(request({-1}, 1), "prompt token 0 is -1");
  refused(request(std::vector<int32_t>(10, 1), 7),
          "prompt of 10 tokens + max_new_tokens 7 exceeds max_context 16");
  refused(request(std::vector<int32_t>(17, 1), 0), "exceeds max_context 16");
  GenerationRequest badTemp = request({1}, 1);
  badTemp.sampling.temperature = -1;
  refused(std::move(badTemp), "temperature");
  GenerationRequest badTopP = request({1}, 1);
  badTopP.sampling.topP = 0;
  refused(std::move(badTopP), "top_p");

  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(resultFor(results, good).tokens, (std::vector<int32_t>{3, 4, 5}));
}

TEST_F(EngineTest, NoFreeSlotRejectsOnlyThatRequest) {
  loadModel(2);
  RequestId a = submit(request({1}, 2));
  RequestId b = submit(request({2}, 2));
  RequestId c = submit(request({3}, 2));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(resultFor(results, c).reason, FinishReason::Rejected);
  EXPECT_NE(resultFor(results, c).error.find("no free KV-cache slot"),
            std::string::npos);
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{3, 4}));
}

TEST_F(EngineTest, SlotsAreReused) {
  loadModel(1);
  RequestId a = submit(request({1, 2, 3}, 2));
  std::vector<GenerationResult> first = engine->runToCompletion();
  EXPECT_EQ(model->kvCache().freeSlots(), 1);
  // The second request overwrites the slot; its K-row sums (logit 31) must
  // count only its own tokens.
  std::vector<float> sums;
  GenerationRequest r = request({30}, 3);
  r.onToken = [&](int32_t, const float *logits) { sums.push_back(logits[31]); };
  RequestId b = submit(std::move(r));
  std::vector<GenerationResult> second = engine->runToCompletion();
  EXPECT_EQ(resultFor(first, a).tokens, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(resultFor(second, b).tokens, (std::vector<int32_t>{31, 0, 1}));
  // Fed 30, 31, 0 at positions 0..2; next==31 adds 1 to logit 31 at step 0.
  EXPECT_EQ(sums, (std::vector<float>{30 + 1, 61, 61}));
  EXPECT_EQ(slotsSeen, std::set<int32_t>{0});
}

TEST_F(EngineTest, StopsAtEos) {
  loadModel(1);
  GenerationRequest r = request({7}, 8);
  r.eosId = 10;
  submit(std::move(r));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].tokens, (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(results[0].reason, FinishReason::Eos);
}

TEST_F(EngineTest, StopsWhenContextIsFull) {
  loadModel(1, 8);
  submit(request({1, 2, 3}, -1));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].reason, FinishReason::ContextFull);
  // Positions 0..7 are fed: 3 prompt tokens then 5 generated ones; the token
  // produced at position 7 is the 6th.
  EXPECT_EQ(results[0].tokens.size(), 6u);
}

TEST_F(EngineTest, ZeroNewTokens) {
  loadModel(1);
  submit(request({1}, 0));
  std::vector<GenerationResult> results = engine->runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].tokens.empty());
  EXPECT_EQ(engine->stepsRun(), 0);
}

TEST_F(EngineTest, SamplingIsDeterministicPerSeed) {
  loadModel(3);
  auto sampled = [](uint64_t seed) {
    GenerationRequest r = request({1, 2}, 8);
    r.sampling.temperature = 1;
    r.sampling.seed = seed;
    return r;
  };
  RequestId a = submit(sampled(42));
  RequestId b = submit(sampled(42));
  RequestId c = submit(sampled(43));
  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(resultFor(results, a).tokens, resultFor(results, b).tokens);
  EXPECT_NE(resultFor(results, a).tokens, resultFor(results, c).tokens);

  // Running alone gives the same tokens as running in a batch.
  RequestId d = submit(sampled(42));
  std::vector<GenerationResult> alone = engine->runToCompletion();
  EXPECT_EQ(resultFor(alone, d).tokens, resultFor(results, a).tokens);
}

TEST_F(EngineTest, InvalidTokenFromStepFailsOnlyThatRequest) {
  loadModel(2);
  GenerationRequest bad = request({1}, 3);
  bad.sampling.topK = 999; // the test model then returns token 37
  RequestId a = submit(std::move(bad));
  RequestId b = submit(request({4}, 2));
  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(resultFor(results, a).reason, FinishReason::Error);
  EXPECT_NE(resultFor(results, a).error.find("returned token 37"),
            std::string::npos);
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(model->kvCache().freeSlots(), 2);
}

TEST_F(EngineTest, MaxContextDefaultsAndLimits) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ModelOptions options;
  Expected<std::unique_ptr<Model>> m =
      Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ((*m)->maxContext(), 64); // max_position_embeddings
  EXPECT_EQ((*m)->kvCache().size(), 1u * 1 * 2 * 1 * 64 * 4);
  options.maxContext = 65;
  m = Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("exceeds the model's "
                                     "max_position_embeddings 64"),
            std::string::npos);
  options.maxContext = 8;
  options.numSlots = 0;
  m = Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("num_slots"), std::string::npos);
}

/// Two rows of step inputs for Model::step, valid for a model of 2 slots of
/// 16 tokens; tests break one field at a time.
struct StepInputs : StepArrays {
  StepInputs() {
    tokens = {3, 4};
    positions = {0, 0};
    slots = {0, 1};
    topK = {0, 0};
    temperature = {0, 0};
    topP = {1, 1};
    uniform = {0, 0};
    logits.assign(2 * kVocab, 0);
    nextTokens = {-1, -1};
  }
};

TEST_F(EngineTest, StepRefusesInputsOutsideTheBuffers) {
  loadModel(/*numSlots=*/2, /*maxContext=*/16);
  {
    StepInputs good;
    FdcStepArgs args = good.args();
    ASSERT_FALSE(static_cast<bool>(model->step(args)));
    EXPECT_EQ(good.nextTokens, (std::vector<int32_t>{4, 5}));
  }
  auto refusal = [&](StepInputs inputs, int64_t batch = 2) {
    FdcStepArgs args = inputs.args(batch);
    Error err = model->step(args);
    EXPECT_TRUE(static_cast<bool>(err));
    // Nothing ran.
    EXPECT_EQ(inputs.nextTokens, (std::vector<int32_t>{-1, -1}));
    return err ? err.message() : std::string("(no error)");
  };
  StepInputs in;
  EXPECT_EQ(refusal(in, 3),
            "model step: batch 3 is outside [1, max_step_rows = 2]");
  EXPECT_EQ(refusal(in, 0),
            "model step: batch 0 is outside [1, max_step_rows = 2]");
  EXPECT_EQ(refusal(in, -1),
            "model step: batch -1 is outside [1, max_step_rows = 2]");

  in = StepInputs();
  in.tokens[1] = kVocab;
  EXPECT_EQ(refusal(in),
            "model step: row 1: token 32 is outside the vocabulary [0, 32)");
  in.tokens[1] = -1;
  EXPECT_EQ(refusal(in),
            "model step: row 1: token -1 is outside the vocabulary [0, 32)");

  in = StepInputs();
  in.slots[0] = 2;
  EXPECT_EQ(refusal(in),
            "model step: row 0: slot 2 is outside [0, num_slots = 2)");
  in.slots[0] = -5;
  EXPECT_EQ(refusal(in),
            "model step: row 0: slot -5 is outside [0, num_slots = 2)");
  in.slots[0] = 1;
  EXPECT_EQ(refusal(in), "model step: row 1: slot 1 position 0 does not "
                         "follow the position 0 of row 0");

  in = StepInputs();
  in.positions[1] = 16;
  EXPECT_EQ(refusal(in),
            "model step: row 1: position 16 is outside [0, max_context = 16)");
  in.positions[1] = -1;
  EXPECT_EQ(refusal(in),
            "model step: row 1: position -1 is outside [0, max_context = 16)");

  in = StepInputs();
  in.temperature[0] = std::nanf("");
  EXPECT_EQ(refusal(in),
            "model step: row 0: temperature nan is not a finite number >= 0");
  in.temperature[0] = INFINITY;
  EXPECT_EQ(refusal(in),
            "model step: row 0: temperature inf is not a finite number >= 0");
  in.temperature[0] = -1;
  EXPECT_EQ(refusal(in),
            "model step: row 0: temperature -1 is not a finite number >= 0");

  in = StepInputs();
  in.topK[1] = -3;
  EXPECT_EQ(refusal(in), "model step: row 1: top_k -3 is negative");
  in = StepInputs();
  in.topP[1] = 0;
  EXPECT_EQ(refusal(in), "model step: row 1: top_p 0 is outside (0, 1]");
  in.topP[1] = std::nanf("");
  EXPECT_EQ(refusal(in), "model step: row 1: top_p nan is outside (0, 1]");
  in = StepInputs();
  in.uniform[0] = 1;
  EXPECT_EQ(refusal(in), "model step: row 0: uniform draw 1 is outside [0, 1)");

  in = StepInputs();
  FdcStepArgs args = in.args();
  args.slots = nullptr;
  Error err = model->step(args);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(err.message(), "model step: 'slots' is NULL");
}

TEST_F(EngineTest, ChunkedPrefillReadsThePromptInChunks) {
  // One slot, 8 rows per step: a 20-token prompt takes 3 steps (8 + 8 + 4
  // rows at consecutive positions of the slot), then one row per token.
  loadModel(/*numSlots=*/1, /*maxContext=*/32, /*maxStepRows=*/8);
  EXPECT_EQ(engine->stepTokenBudget(), 8);
  std::vector<int32_t> prompt;
  for (int32_t t = 0; t < 20; ++t)
    prompt.push_back((7 * t + 3) % kVocab);
  std::vector<std::vector<float>> chunkedLogits;
  GenerationRequest r = request(prompt, 3);
  r.onToken = [&](int32_t, const float *logits) {
    chunkedLogits.emplace_back(logits, logits + kVocab);
  };
  submit(std::move(r));
  std::vector<GenerationResult> chunked = engine->runToCompletion();
  ASSERT_EQ(chunked.size(), 1u);
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{8, 8, 4, 1, 1}));

  // The same request one token per step: the same tokens and logits (the
  // logits see the sum of the slot's K rows up to each position, so a row
  // that missed an earlier row's K of its step would differ).
  batchSizes.clear();
  loadModel(/*numSlots=*/1, /*maxContext=*/32);
  std::vector<std::vector<float>> stepwiseLogits;
  r = request(prompt, 3);
  r.onToken = [&](int32_t, const float *logits) {
    stepwiseLogits.emplace_back(logits, logits + kVocab);
  };
  submit(std::move(r));
  std::vector<GenerationResult> stepwise = engine->runToCompletion();
  ASSERT_EQ(stepwise.size(), 1u);
  EXPECT_EQ(engine->stepsRun(), 22);
  EXPECT_EQ(chunked[0].tokens, stepwise[0].tokens);
  EXPECT_EQ(chunked[0].reason, stepwise[0].reason);
  EXPECT_EQ(chunkedLogits, stepwiseLogits);
}

TEST_F(EngineTest, PromptChunksShareTheBudgetInOrderOfArrival) {
  // Two slots, 6 rows: every live request feeds a row, the 4 left go to
  // the first prompt that has more to read.
  loadModel(/*numSlots=*/2, /*maxContext=*/32, /*maxStepRows=*/6);
  RequestId a = submit(request({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 2));
  RequestId b = submit(request({20, 21, 22}, 2));
  std::vector<GenerationResult> results = engine->runToCompletion();
  // Step 1: a 5 rows (0..4), b 1; step 2: a 5 (5..9: its last prompt
  // token, its first new token), b 1; step 3: a decodes its second token
  // and finishes, b reads its last prompt token; step 4: b's second token.
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{6, 6, 2, 1}));
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{11, 12}));
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{23, 24}));
}

TEST_F(EngineTest, SamplingDrawsDoNotDependOnChunking) {
  auto sample = [&](int64_t maxStepRows) {
    loadModel(/*numSlots=*/1, /*maxContext=*/32, maxStepRows);
    GenerationRequest r = request({4, 9, 1, 30, 2, 7}, 5);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 1234;
    submit(std::move(r));
    std::vector<GenerationResult> results = engine->runToCompletion();
    return results.at(0).tokens;
  };
  EXPECT_EQ(sample(/*maxStepRows=*/4), sample(/*maxStepRows=*/0));
}

TEST_F(EngineTest, MaxStepRowsIsChecked) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ModelOptions options;
  options.numSlots = 4;
  options.maxStepRows = 3;
  Expected<std::unique_ptr<Model>> m =
      Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_EQ(m.error().message(),
            "max_step_rows must be 0 or in [num_slots = 4, 1048576], got 3");
  options.maxStepRows = kMaxStepRows + 1;
  m = Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_FALSE(static_cast<bool>(m));
  EXPECT_EQ(m.error().message(), "max_step_rows must be 0 or in [num_slots = "
                                 "4, 1048576], got 1048577");
  options.maxStepRows = 0;
  m = Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_TRUE(static_cast<bool>(m)) << m.error().message();
  EXPECT_EQ((*m)->maxStepRows(), 4);
  EXPECT_EQ((*m)->maxStepRows(), 4);
  options.maxStepRows = 8;
  m = Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_TRUE(static_cast<bool>(m)) << m.error().message();
  // An engine's budget stays within [num_slots, max_step_rows].
  EXPECT_EQ(Engine(**m, {/*maxStepTokens=*/1}).stepTokenBudget(), 4);
  EXPECT_EQ(Engine(**m, {/*maxStepTokens=*/6}).stepTokenBudget(), 6);
  EXPECT_EQ(Engine(**m, {/*maxStepTokens=*/100}).stepTokenBudget(), 8);
  EXPECT_EQ(Engine(**m).stepTokenBudget(), 8);
}

TEST_F(EngineTest, CancelDuringAStepChangesNothing) {
  loadModel(/*numSlots=*/2);
  RequestId a = 0, b = 0;
  GenerationRequest first = request({1}, 3);
  std::vector<bool> cancelled;
  first.onToken = [&](int32_t, const float *) {
    cancelled.push_back(engine->cancel(b));
  };
  a = submit(std::move(first));
  b = submit(request({10}, 3));
  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(cancelled, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(resultFor(results, a).reason, FinishReason::Length);
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{11, 12, 13}));
}

TEST_F(EngineTest, WaitingForASlotAdmitsInOrder) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ModelOptions options;
  options.maxContext = 16;
  Expected<std::unique_ptr<Model>> m =
      Model::load(FDC_TEST_MODEL_GOOD, dir.path(), options);
  ASSERT_TRUE(static_cast<bool>(m));
  Engine waiting(**m, {/*maxStepTokens=*/0, /*waitForSlot=*/true});
  std::vector<RequestId> ids;
  for (int32_t first : {1, 10, 20})
    ids.push_back(*waiting.submit(request({first}, 2)));
  std::vector<GenerationResult> results = waiting.runToCompletion();
  ASSERT_EQ(results.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(results[i].id, ids[i]); // one slot: in order of submission
    EXPECT_EQ(results[i].reason, FinishReason::Length);
  }

  // With every slot held elsewhere, none will free: runToCompletion
  // rejects the waiting requests instead of looping.
  std::optional<int32_t> held = (*m)->kvCache().acquireSlot();
  ASSERT_TRUE(held);
  RequestId stuck = *waiting.submit(request({3}, 1));
  results = waiting.runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].id, stuck);
  EXPECT_EQ(results[0].reason, FinishReason::Rejected);
  EXPECT_EQ(results[0].error,
            "no free KV-cache slot (num_slots = 1) and none will free");
  (*m)->kvCache().releaseSlot(*held);
}

TEST_F(EngineTest, StepRefusesASlotInTwoRunsOfRows) {
  loadModel(/*numSlots=*/3, /*maxContext=*/16, /*maxStepRows=*/3);
  StepArrays rows;
  rows.tokens = {1, 2, 3};
  rows.positions = {0, 0, 1};
  rows.slots = {0, 1, 0};
  rows.topK = {0, 0, 0};
  rows.temperature.assign(3, 0.0f);
  rows.topP.assign(3, 1.0f);
  rows.uniform.assign(3, 0.5f);
  rows.logits.assign(3 * kVocab, 0.0f);
  rows.nextTokens.assign(3, -1);
  FdcStepArgs args = rows.args();
  Error err = model->step(args);
  ASSERT_TRUE(static_cast<bool>(err));
  EXPECT_EQ(err.message(), "model step: row 2: slot 0 is in two runs of rows "
                           "(a slot's rows must be consecutive)");
  // One run of slot 0 at positions 0, 1 beside slot 1 is fine.
  rows.slots = {0, 0, 1};
  rows.positions = {0, 1, 0};
  EXPECT_FALSE(static_cast<bool>(model->step(args)));
  EXPECT_EQ(rows.nextTokens, (std::vector<int32_t>{2, 3, 4}));
}

// Minimal-move compaction of the live table (Flover's memory shuffle). In
// these tests every request feeds one row a step, so a step's rows are the
// live table in order and args.slots names each row's request.

/// The moves that make rows 0..m-1 dense when `leaving` rows leave a table
/// of `rows` (m = the rows that stay): the holes below m.
int64_t holesBelowStaying(const std::vector<RequestId> &rows,
                          const std::set<RequestId> &leaving) {
  size_t staying = 0;
  for (RequestId id : rows)
    staying += leaving.count(id) ? 0 : 1;
  int64_t holes = 0;
  for (size_t i = 0; i < staying; ++i)
    holes += leaving.count(rows[i]) ? 1 : 0;
  return holes;
}

TEST_F(EngineTest, ShuffleFillsHolesWithTheLastStayingRows) {
  loadModel(/*numSlots=*/7, /*maxContext=*/16);
  std::vector<int64_t> maxNew = {7, 2, 2, 5, 7, 3, 2};
  std::vector<RequestId> ids;
  for (size_t i = 0; i < maxNew.size(); ++i)
    ids.push_back(submit(request({static_cast<int32_t>(4 * i)}, maxNew[i])));

  std::map<int32_t, RequestId> requestOfSlot;
  std::vector<std::vector<RequestId>> tables; // each step's rows
  std::vector<int64_t> moves;
  int64_t expectedTotal = 0;
  while (!engine->idle()) {
    ASSERT_TRUE(engine->step());
    const StepTrace &t = trace.back();
    if (trace.size() == 1) // admitted in order of arrival
      for (size_t i = 0; i < t.slots.size(); ++i)
        requestOfSlot[t.slots[i]] = ids[i];
    std::vector<RequestId> rows;
    for (int32_t slot : t.slots)
      rows.push_back(requestOfSlot.at(slot));
    std::set<RequestId> leaving;
    for (const GenerationResult &r : engine->takeFinished()) {
      EXPECT_EQ(r.reason, FinishReason::Length);
      leaving.insert(r.id);
    }
    int64_t expected = holesBelowStaying(rows, leaving);
    EXPECT_EQ(engine->lastShuffle().rowsMoved, expected)
        << "step " << trace.size();
    EXPECT_EQ(engine->lastShuffle().bytesMoved, expected * kShuffleRowBytes);
    expectedTotal += expected;
    moves.push_back(expected);
    tables.push_back(rows);
  }
  // Step 2: rows 1, 2 and 6 leave, 4 stay: rows 5 and 4 fill the holes
  // (not row 6, which leaves too). Step 3: row 1 leaves, row 3 fills it.
  // Step 5: likewise. Step 7: the last two leave together.
  auto r = [&](size_t i) { return ids[i]; };
  ASSERT_EQ(tables.size(), 7u);
  EXPECT_EQ(tables[0],
            (std::vector<RequestId>{r(0), r(1), r(2), r(3), r(4), r(5), r(6)}));
  EXPECT_EQ(tables[2], (std::vector<RequestId>{r(0), r(5), r(4), r(3)}));
  EXPECT_EQ(tables[3], (std::vector<RequestId>{r(0), r(3), r(4)}));
  EXPECT_EQ(tables[5], (std::vector<RequestId>{r(0), r(4)}));
  EXPECT_EQ(moves, (std::vector<int64_t>{0, 2, 1, 0, 1, 0, 0}));
  // A row that stays below the new count never moves.
  for (size_t k = 0; k + 1 < tables.size(); ++k) {
    const std::vector<RequestId> &before = tables[k], &after = tables[k + 1];
    for (size_t i = 0; i < after.size(); ++i)
      if (std::count(after.begin(), after.end(), before[i]))
        EXPECT_EQ(after[i], before[i]) << "step " << k + 2 << " row " << i;
  }
  EXPECT_EQ(engine->totalShuffle().rowsMoved, expectedTotal);
  EXPECT_EQ(engine->totalShuffle().bytesMoved,
            expectedTotal * kShuffleRowBytes);
  EXPECT_EQ(kShuffleRowBytes, 56);
}

TEST_F(EngineTest, RowsLeavingAtTheEndMoveNothing) {
  loadModel(/*numSlots=*/4);
  std::vector<RequestId> ids;
  for (int64_t maxNew : {5, 4, 3, 2})
    ids.push_back(submit(request({static_cast<int32_t>(maxNew)}, maxNew)));
  while (!engine->idle()) {
    ASSERT_TRUE(engine->step());
    EXPECT_EQ(engine->lastShuffle().rowsMoved, 0);
    EXPECT_EQ(engine->lastShuffle().bytesMoved, 0);
  }
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{4, 4, 3, 2, 1}));
  EXPECT_EQ(engine->totalShuffle().rowsMoved, 0);
  EXPECT_EQ(engine->totalShuffle().bytesMoved, 0);
  std::vector<GenerationResult> results = engine->takeFinished();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(resultFor(results, ids[0]).tokens,
            (std::vector<int32_t>{6, 7, 8, 9, 10}));
}

TEST_F(EngineTest, ShuffledRowsKeepTheirSlotAndTokens) {
  // Greedy and sampled requests of different lengths leave from the middle
  // of the table; every row keeps its slot (its K/V never moves) and each
  // request's tokens and logits (logit 31 sums its slot's K rows) are those
  // of running it alone.
  struct Case {
    std::vector<int32_t> prompt;
    int64_t maxNew;
    float temperature;
    uint64_t seed;
  };
  std::vector<Case> cases = {{{1, 2}, 9, 0, 0},    {{5}, 2, 1, 7},
                             {{9, 3, 4}, 3, 1, 8}, {{12}, 8, 0, 0},
                             {{20, 6}, 1, 1, 9},   {{17}, 6, 1, 10}};
  auto makeRequest = [&](const Case &c, std::vector<std::vector<float>> &out) {
    GenerationRequest r = request(c.prompt, c.maxNew);
    r.sampling.temperature = c.temperature;
    r.sampling.seed = c.seed;
    r.onToken = [&out](int32_t, const float *logits) {
      out.emplace_back(logits, logits + kVocab);
    };
    return r;
  };

  loadModel(/*numSlots=*/static_cast<int64_t>(cases.size()));
  std::vector<std::vector<std::vector<float>>> batchedLogits(cases.size());
  std::vector<RequestId> ids;
  for (size_t i = 0; i < cases.size(); ++i)
    ids.push_back(submit(makeRequest(cases[i], batchedLogits[i])));
  std::vector<GenerationResult> batched = engine->runToCompletion();
  EXPECT_GT(engine->totalShuffle().rowsMoved, 0);

  // Nobody joins after the first step (which has one row per request, in
  // order of arrival), so each later step's rows continue in the same
  // slots: a slot's run of rows starts one past where it ended the step
  // before, and feeds its request's prompt, then the token its last row
  // produced the step before.
  std::vector<StepTrace> batchedTrace = trace;
  ASSERT_EQ(batchedTrace[0].slots.size(), cases.size());
  std::map<int32_t, size_t> caseOfSlot;
  for (size_t i = 0; i < cases.size(); ++i)
    caseOfSlot[batchedTrace[0].slots[i]] = i;
  for (size_t k = 0; k + 1 < batchedTrace.size(); ++k) {
    const StepTrace &now = batchedTrace[k], &next = batchedTrace[k + 1];
    for (size_t i = 0; i < next.slots.size(); ++i) {
      if (i > 0 && next.slots[i] == next.slots[i - 1])
        continue; // checked with its run's first row
      int32_t slot = next.slots[i];
      const Case &c = cases[caseOfSlot.at(slot)];
      auto last = std::find(now.slots.rbegin(), now.slots.rend(), slot);
      ASSERT_NE(last, now.slots.rend()) << "slot " << slot << " is new";
      size_t j =
          now.slots.size() - 1 - static_cast<size_t>(last - now.slots.rbegin());
      EXPECT_EQ(next.positions[i], now.positions[j] + 1) << "slot " << slot;
      for (size_t row = i; row < next.slots.size() && next.slots[row] == slot;
           ++row) {
        size_t position = static_cast<size_t>(next.positions[row]);
        int32_t fed =
            position < c.prompt.size() ? c.prompt[position] : now.next[j];
        EXPECT_EQ(next.tokens[row], fed)
            << "step " << k + 2 << " slot " << slot << " position " << position;
      }
    }
  }

  for (size_t i = 0; i < cases.size(); ++i) {
    loadModel(/*numSlots=*/1);
    std::vector<std::vector<float>> aloneLogits;
    submit(makeRequest(cases[i], aloneLogits));
    std::vector<GenerationResult> alone = engine->runToCompletion();
    ASSERT_EQ(alone.size(), 1u);
    const GenerationResult &b = resultFor(batched, ids[i]);
    EXPECT_EQ(b.tokens, alone[0].tokens) << "request " << i;
    EXPECT_EQ(b.reason, alone[0].reason) << "request " << i;
    EXPECT_EQ(batchedLogits[i], aloneLogits) << "request " << i;
  }
}

TEST_F(EngineTest, CancelInTheMiddleMovesTheLastRow) {
  loadModel(/*numSlots=*/4);
  std::vector<RequestId> ids;
  for (int32_t first : {0, 8, 16, 24})
    ids.push_back(submit(request({first}, 6)));
  ASSERT_TRUE(engine->step());
  std::vector<int32_t> slots = trace.back().slots; // in order of arrival
  ASSERT_EQ(slots.size(), 4u);

  // Row 1 leaves: row 3 fills it, one move.
  EXPECT_TRUE(engine->cancel(ids[1]));
  EXPECT_EQ(engine->lastShuffle().rowsMoved, 1);
  EXPECT_EQ(engine->lastShuffle().bytesMoved, kShuffleRowBytes);
  ASSERT_TRUE(engine->step());
  EXPECT_EQ(trace.back().slots,
            (std::vector<int32_t>{slots[0], slots[3], slots[2]}));
  EXPECT_EQ(engine->lastShuffle().rowsMoved, 0);

  // The last row leaves: nothing moves.
  EXPECT_TRUE(engine->cancel(ids[2]));
  EXPECT_EQ(engine->lastShuffle().rowsMoved, 0);
  ASSERT_TRUE(engine->step());
  EXPECT_EQ(trace.back().slots, (std::vector<int32_t>{slots[0], slots[3]}));
  EXPECT_EQ(engine->totalShuffle().rowsMoved, 1);
  EXPECT_EQ(engine->totalShuffle().bytesMoved, kShuffleRowBytes);

  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(resultFor(results, ids[1]).reason, FinishReason::Cancelled);
  EXPECT_EQ(resultFor(results, ids[1]).tokens, (std::vector<int32_t>{9}));
  EXPECT_EQ(resultFor(results, ids[2]).reason, FinishReason::Cancelled);
  EXPECT_EQ(resultFor(results, ids[2]).tokens, (std::vector<int32_t>{17, 18}));
  EXPECT_EQ(resultFor(results, ids[0]).tokens,
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(resultFor(results, ids[3]).tokens,
            (std::vector<int32_t>{25, 26, 27, 28, 29, 30}));
  EXPECT_EQ(model->kvCache().freeSlots(), 4);
}

TEST_F(EngineTest, PromptChunksFollowArrivalInAShuffledTable) {
  // Three slots, 8 rows. Step 1: a (1 row) finishes, b reads 6 prompt
  // rows, c 1; c then fills a's row, so the table is [c, b]. Step 2: the 6
  // rows left go to b first (the earlier arrival, though second in the
  // table): its last 3 prompt tokens, then c gets 3.
  loadModel(/*numSlots=*/3, /*maxContext=*/32, /*maxStepRows=*/8);
  std::vector<int32_t> promptB, promptC;
  for (int32_t t = 0; t < 10; ++t) {
    promptB.push_back(10 + t);
    promptC.push_back(20 + t);
  }
  RequestId a = submit(request({1}, 1));
  RequestId b = submit(request(promptB, 2));
  RequestId c = submit(request(promptC, 2));
  ASSERT_TRUE(engine->step());
  std::vector<int32_t> slots = trace.back().slots;
  ASSERT_EQ(slots.size(), 8u);
  int32_t slotB = slots[1], slotC = slots[7];
  EXPECT_EQ(engine->lastShuffle().rowsMoved, 1);

  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(batchSizes, (std::vector<int64_t>{8, 8, 6, 1}));
  ASSERT_EQ(trace.size(), 4u);
  EXPECT_EQ(trace[1].slots, (std::vector<int32_t>{slotC, slotC, slotC, slotC,
                                                  slotB, slotB, slotB, slotB}));
  EXPECT_EQ(trace[1].positions, (std::vector<int32_t>{1, 2, 3, 4, 6, 7, 8, 9}));
  EXPECT_EQ(trace[2].slots,
            (std::vector<int32_t>{slotC, slotC, slotC, slotC, slotC, slotB}));
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{2}));
  EXPECT_EQ(resultFor(results, b).tokens, (std::vector<int32_t>{20, 21}));
  EXPECT_EQ(resultFor(results, c).tokens, (std::vector<int32_t>{30, 31}));
  EXPECT_EQ(engine->totalShuffle().rowsMoved, 1);
}

TEST_F(EngineTest, StepsWithoutLogitsWhenNoRequestReadsThem) {
  loadModel(2);
  // Alone, a request that does not read logits runs steps without them; its
  // callback sees nullptr and the same tokens.
  std::vector<int32_t> streamed;
  GenerationRequest idsOnly = request({3, 7}, 3);
  idsOnly.wantsLogits = false;
  idsOnly.onToken = [&](int32_t token, const float *logits) {
    EXPECT_EQ(logits, nullptr);
    streamed.push_back(token);
  };
  RequestId a = submit(std::move(idsOnly));
  std::vector<GenerationResult> results = engine->runToCompletion();
  EXPECT_EQ(resultFor(results, a).tokens, (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(streamed, resultFor(results, a).tokens);
  ASSERT_EQ(trace.size(), 3u);
  for (const StepTrace &t : trace)
    EXPECT_FALSE(t.withLogits);

  // No callback at all: no logits either.
  trace.clear();
  submit(request({5}, 2));
  engine->runToCompletion();
  ASSERT_FALSE(trace.empty());
  for (const StepTrace &t : trace)
    EXPECT_FALSE(t.withLogits);

  // Beside a request that reads them, the steps where that one produces a
  // token bring logits back; the other's callback still sees nullptr.
  trace.clear();
  std::vector<std::vector<float>> rows;
  GenerationRequest reader = request({1}, 2);
  reader.onToken = [&](int32_t, const float *logits) {
    ASSERT_NE(logits, nullptr);
    rows.emplace_back(logits, logits + kVocab);
  };
  GenerationRequest quiet = request({10, 11, 12, 13}, 1);
  quiet.wantsLogits = false;
  quiet.onToken = [](int32_t, const float *logits) {
    EXPECT_EQ(logits, nullptr);
  };
  RequestId r = submit(std::move(reader));
  RequestId q = submit(std::move(quiet));
  results = engine->runToCompletion();
  EXPECT_EQ(resultFor(results, r).tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(resultFor(results, q).tokens, (std::vector<int32_t>{14}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0][2], 1.0f); // the argmax row of the token it produced
  EXPECT_EQ(rows[1][3], 1.0f);
  std::vector<bool> withLogits;
  for (const StepTrace &t : trace)
    withLogits.push_back(t.withLogits);
  EXPECT_EQ(withLogits, (std::vector<bool>{true, true, false}));
}

TEST_F(EngineTest, StepRunsWithoutALogitsBuffer) {
  loadModel(/*numSlots=*/2);
  StepInputs in;
  FdcStepArgs args = in.args();
  args.logits = nullptr;
  ASSERT_FALSE(static_cast<bool>(model->step(args)));
  EXPECT_EQ(in.nextTokens, (std::vector<int32_t>{4, 5}));
}

} // namespace
