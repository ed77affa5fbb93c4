//===- CApiTest.cpp - Tests of the C API ----------------------------------===//

#include "fdc_runtime.h"

#include "TestUtil.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <gtest/gtest.h>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace fdc::runtime::test;

namespace {

class CApiTest : public ::testing::Test {
protected:
  void SetUp() override { writeTestCheckpoint(dir.path()); }
  void TearDown() override { fdc_model_free(model); }

  void load(int64_t maxContext, int64_t numSlots) {
    char *error = nullptr;
    model = fdc_model_load(FDC_TEST_MODEL_GOOD, dir.path().c_str(), maxContext,
                           numSlots, &error);
    ASSERT_NE(model, nullptr) << error;
    EXPECT_EQ(error, nullptr);
  }

  TempDir dir;
  fdc_model *model = nullptr;
};

TEST_F(CApiTest, LoadAndProperties) {
  load(0, 2);
  EXPECT_EQ(fdc_model_vocab_size(model), 32);
  EXPECT_EQ(fdc_model_max_context(model), 64);
  EXPECT_EQ(fdc_model_num_slots(model), 2);
  EXPECT_NE(std::strstr(fdc_model_manifest(model), "\"test_model\""), nullptr);
}

TEST_F(CApiTest, LoadErrors) {
  char *error = nullptr;
  EXPECT_EQ(
      fdc_model_load(FDC_TEST_MODEL_OLD_ABI, dir.path().c_str(), 0, 1, &error),
      nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_NE(std::string(error).find("was built for ABI version 1"),
            std::string::npos);
  EXPECT_STREQ(fdc_last_error(), error);
  fdc_string_free(error);

  EXPECT_EQ(fdc_model_load(FDC_TEST_MODEL_GOOD, "/nonexistent", 0, 1, nullptr),
            nullptr);
  EXPECT_NE(std::string(fdc_last_error()).find("/nonexistent"),
            std::string::npos);
}

TEST_F(CApiTest, GenerateWithLogits) {
  load(16, 1);
  int32_t prompt[] = {3, 7};
  int32_t ids[4] = {};
  int64_t n = -1;
  std::vector<float> logits(4 * 32, -1.0f);
  ASSERT_EQ(fdc_generate(model, prompt, 2, 4, nullptr, ids, &n, logits.data()),
            0)
      << fdc_last_error();
  EXPECT_EQ(n, 4);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4),
            (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_EQ(logits[0 * 32 + 8], 1.0f);
  EXPECT_EQ(logits[3 * 32 + 11], 1.0f);
  EXPECT_EQ(logits[0 * 32 + 30], 0.5f);
  EXPECT_EQ(logits[0 * 32 + 31], 10.0f);

  // The model is reusable; EOS stops early.
  fdc_sampling_params params = fdc_sampling_params_default();
  params.eos_id = 9;
  ASSERT_EQ(fdc_generate(model, prompt, 2, 4, &params, ids, &n, nullptr), 0);
  EXPECT_EQ(n, 2);
}

TEST_F(CApiTest, GenerateRejectsBadRequest) {
  load(16, 1);
  int32_t prompt[] = {3, 99};
  int32_t ids[4];
  int64_t n = -1;
  EXPECT_NE(fdc_generate(model, prompt, 2, 4, nullptr, ids, &n, nullptr), 0);
  EXPECT_EQ(n, 0);
  EXPECT_NE(std::string(fdc_last_error()).find("prompt token 1 is 99"),
            std::string::npos);
  EXPECT_NE(fdc_generate(model, prompt, 1, -1, nullptr, ids, &n, nullptr), 0);
  EXPECT_NE(fdc_generate(model, nullptr, 1, 1, nullptr, ids, &n, nullptr), 0);
  EXPECT_NE(fdc_generate(nullptr, prompt, 1, 1, nullptr, ids, &n, nullptr), 0);
}

struct CallbackLog {
  std::vector<int64_t> steps;
  std::vector<int32_t> tokens;
};

void logToken(void *userData, int64_t step, int32_t token, const float *logits,
              int64_t vocab) {
  auto *log = static_cast<CallbackLog *>(userData);
  log->steps.push_back(step);
  log->tokens.push_back(token);
  EXPECT_EQ(vocab, 32);
  EXPECT_EQ(logits[token], 1.0f);
}

TEST_F(CApiTest, BatchWithMoreRequestsThanSlots) {
  load(16, 2);
  std::vector<std::vector<int32_t>> prompts = {{1}, {2, 3}, {4, 99}, {5}, {6}};
  std::vector<fdc_request> requests(prompts.size());
  std::vector<std::vector<int32_t>> ids(prompts.size(),
                                        std::vector<int32_t>(3, -1));
  CallbackLog log;
  for (size_t i = 0; i < prompts.size(); ++i) {
    fdc_request &r = requests[i];
    std::memset(&r, 0, sizeof(r));
    r.prompt = prompts[i].data();
    r.prompt_len = static_cast<int64_t>(prompts[i].size());
    r.max_new_tokens = 3;
    r.params = fdc_sampling_params_default();
    r.out_ids = ids[i].data();
  }
  requests[4].callback = logToken;
  requests[4].user_data = &log;

  EXPECT_EQ(fdc_generate_batch(model, requests.data(), 5), 1);
  EXPECT_EQ(requests[2].status, 1);
  EXPECT_EQ(requests[2].finish_reason, FDC_FINISH_REJECTED);
  EXPECT_NE(std::string(requests[2].error).find("prompt token 1 is 99"),
            std::string::npos);
  EXPECT_EQ(requests[2].out_len, 0);
  for (size_t i : {0, 1, 3, 4}) {
    EXPECT_EQ(requests[i].status, 0) << requests[i].error;
    EXPECT_EQ(requests[i].finish_reason, FDC_FINISH_LENGTH);
    EXPECT_EQ(requests[i].out_len, 3);
    int32_t last = prompts[i].back();
    EXPECT_EQ(ids[i], (std::vector<int32_t>{last + 1, last + 2, last + 3}));
  }
  EXPECT_EQ(log.steps, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(log.tokens, (std::vector<int32_t>{7, 8, 9}));
}

TEST_F(CApiTest, BatchInvalidCall) {
  load(16, 1);
  EXPECT_EQ(fdc_generate_batch(model, nullptr, 2), -1);
  EXPECT_EQ(fdc_generate_batch(nullptr, nullptr, 0), -1);
  EXPECT_EQ(fdc_generate_batch(model, nullptr, 0), 0);
}

TEST_F(CApiTest, AbsurdSizesAreRefused) {
  char *error = nullptr;
  EXPECT_EQ(fdc_model_load(FDC_TEST_MODEL_GOOD, dir.path().c_str(), 0,
                           INT64_MAX, &error),
            nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_STREQ(error,
               "num_slots must be in [1, 2^31), got 9223372036854775807");
  fdc_string_free(error);
  EXPECT_EQ(fdc_model_load(FDC_TEST_MODEL_GOOD, dir.path().c_str(), 0,
                           INT64_MIN, nullptr),
            nullptr);
  EXPECT_STREQ(fdc_last_error(),
               "num_slots must be in [1, 2^31), got -9223372036854775808");
  EXPECT_EQ(fdc_model_load(FDC_TEST_MODEL_GOOD, dir.path().c_str(), INT64_MAX,
                           1, nullptr),
            nullptr);
  EXPECT_STREQ(fdc_last_error(), "max_context 9223372036854775807 exceeds "
                                 "the model's max_position_embeddings 64");
  EXPECT_EQ(
      fdc_model_load(FDC_TEST_MODEL_GOOD, dir.path().c_str(), -5, 1, nullptr),
      nullptr);
  EXPECT_STREQ(fdc_last_error(), "max_context must be positive, got -5");
}

TEST_F(CApiTest, LoadWithOptionsChunksPrompts) {
  load(32, 1); // one row per step: the prompt token by token
  fdc_model_options options = fdc_model_options_default();
  EXPECT_EQ(options.num_slots, 1);
  EXPECT_EQ(options.max_step_rows, 0);
  options.max_context = 32;
  options.num_slots = 2;
  options.max_step_rows = 8;
  char *error = nullptr;
  fdc_model *chunked = fdc_model_load_with_options(
      FDC_TEST_MODEL_GOOD, dir.path().c_str(), &options, &error);
  ASSERT_NE(chunked, nullptr) << error;
  EXPECT_EQ(fdc_model_max_step_rows(chunked), 8);
  EXPECT_EQ(fdc_model_num_slots(chunked), 2);
  // A prompt of 12 read 8 + 4 at a time gives what one at a time gives,
  // logits too (they sum the slot's cached K rows).
  std::vector<int32_t> prompt = {5, 1, 9, 9, 2, 30, 4, 4, 0, 7, 13, 21};
  std::vector<int32_t> ids(3), stepwiseIds(3);
  std::vector<float> logits(3 * 32), stepwiseLogits(3 * 32);
  int64_t n = 0;
  ASSERT_EQ(fdc_generate(chunked, prompt.data(), 12, 3, nullptr, ids.data(), &n,
                         logits.data()),
            0)
      << fdc_last_error();
  EXPECT_EQ(n, 3);
  ASSERT_EQ(fdc_generate(model, prompt.data(), 12, 3, nullptr,
                         stepwiseIds.data(), &n, stepwiseLogits.data()),
            0)
      << fdc_last_error();
  EXPECT_EQ(ids, stepwiseIds);
  EXPECT_EQ(logits, stepwiseLogits);
  fdc_model_free(chunked);

  options.max_step_rows = 1;
  EXPECT_EQ(fdc_model_load_with_options(FDC_TEST_MODEL_GOOD, dir.path().c_str(),
                                        &options, nullptr),
            nullptr);
  EXPECT_STREQ(fdc_last_error(),
               "max_step_rows must be 0 or in [num_slots = 2, 1048576], got 1");
  // NULL options are the defaults.
  fdc_model *plain = fdc_model_load_with_options(
      FDC_TEST_MODEL_GOOD, dir.path().c_str(), nullptr, nullptr);
  ASSERT_NE(plain, nullptr) << fdc_last_error();
  EXPECT_EQ(fdc_model_num_slots(plain), 1);
  EXPECT_EQ(fdc_model_max_step_rows(plain), 1);
  fdc_model_free(plain);

  // fdc_model_load_packed: NULL packs from the checkpoint (this library
  // has nothing packed); "" and a file that is not one are refused.
  fdc_model *unpacked = fdc_model_load_packed(
      FDC_TEST_MODEL_GOOD, dir.path().c_str(), nullptr, nullptr, nullptr);
  ASSERT_NE(unpacked, nullptr) << fdc_last_error();
  fdc_model_free(unpacked);
  EXPECT_EQ(fdc_model_load_packed(FDC_TEST_MODEL_GOOD, dir.path().c_str(), "",
                                  nullptr, nullptr),
            nullptr);
  EXPECT_STREQ(fdc_last_error(),
               "fdc_model_load_packed: packed_weights_path is empty (NULL "
               "packs the weights from the checkpoint)");
  std::string checkpointFile = dir.file("model.safetensors");
  EXPECT_EQ(fdc_model_load_packed(FDC_TEST_MODEL_GOOD, dir.path().c_str(),
                                  checkpointFile.c_str(), nullptr, nullptr),
            nullptr);
  EXPECT_EQ(std::string(fdc_last_error()),
            "packed-weights file '" + checkpointFile +
                "': its metadata has no \"format\": \"fdc-packed-weights\" "
                "(make one with fdc pack)");
}

struct StreamLog {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int32_t>> tokens;
};

void logStream(void *userData, int64_t step, int32_t token, const float *,
               int64_t vocab) {
  auto *log = static_cast<StreamLog *>(userData);
  EXPECT_EQ(vocab, 32);
  std::lock_guard<std::mutex> lock(log->mutex);
  log->tokens.emplace_back(step, token);
}

/// Holds the engine's thread at the first token until `released`: a request
/// streaming to it cannot finish before the test has cancelled it.
void holdUntilReleased(void *userData, int64_t, int32_t, const float *,
                       int64_t) {
  auto *released = static_cast<std::atomic<bool> *>(userData);
  while (!released->load())
    std::this_thread::yield();
}

TEST_F(CApiTest, EngineSubmitStreamCancelWait) {
  load(32, 2);
  fdc_engine *engine = fdc_engine_create(model, 0);
  ASSERT_NE(engine, nullptr) << fdc_last_error();
  // The model is the engine's while it exists.
  EXPECT_EQ(fdc_engine_create(model, 0), nullptr);
  int32_t prompt[] = {3, 7};
  int32_t ids[8];
  int64_t n = 0;
  EXPECT_NE(fdc_generate(model, prompt, 2, 1, nullptr, ids, &n, nullptr), 0);
  EXPECT_NE(std::string(fdc_last_error()).find("already generating"),
            std::string::npos);

  StreamLog log;
  int64_t a = fdc_engine_submit(engine, prompt, 2, 4, nullptr, logStream, &log);
  ASSERT_GT(a, 0) << fdc_last_error();
  int32_t bad[] = {99};
  EXPECT_EQ(fdc_engine_submit(engine, bad, 1, 1, nullptr, nullptr, nullptr),
            -1);
  EXPECT_STREQ(fdc_last_error(), "fdc_engine_submit: prompt token 0 is 99, "
                                 "outside the vocabulary [0, 32)");
  int32_t longPrompt[] = {1};
  std::atomic<bool> released{false};
  int64_t b = fdc_engine_submit(engine, longPrompt, 1, 30, nullptr,
                                holdUntilReleased, &released);
  ASSERT_GT(b, 0);
  EXPECT_EQ(fdc_engine_cancel(engine, b), 0);
  released = true;

  fdc_result result = {};
  ASSERT_EQ(fdc_engine_wait(engine, a, ids, 8, &result), 0) << fdc_last_error();
  EXPECT_EQ(result.out_len, 4);
  EXPECT_EQ(result.finish_reason, FDC_FINISH_LENGTH);
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4),
            (std::vector<int32_t>{8, 9, 10, 11}));
  EXPECT_EQ(log.tokens, (std::vector<std::pair<int64_t, int32_t>>{
                            {0, 8}, {1, 9}, {2, 10}, {3, 11}}));
  ASSERT_EQ(fdc_engine_wait(engine, b, ids, 8, &result), 0);
  EXPECT_EQ(result.finish_reason, FDC_FINISH_CANCELLED);
  EXPECT_LT(result.out_len, 30);
  // Outcomes are returned once; finished requests cannot be cancelled.
  EXPECT_EQ(fdc_engine_wait(engine, a, ids, 8, &result), -1);
  EXPECT_EQ(fdc_engine_poll(engine, a, ids, 8, &result), -1);
  EXPECT_EQ(fdc_engine_cancel(engine, a), 1);

  int64_t c =
      fdc_engine_submit(engine, prompt, 2, 2, nullptr, nullptr, nullptr);
  int status;
  while ((status = fdc_engine_poll(engine, c, ids, 8, &result)) == 1)
    std::this_thread::yield();
  EXPECT_EQ(status, 0);
  EXPECT_EQ(result.out_len, 2);
  EXPECT_EQ(fdc_engine_pending(engine), 0);
  // While the engine holds the model, the refusals say so.
  EXPECT_NE(fdc_generate(model, prompt, 2, 1, nullptr, ids, &n, nullptr), 0);
  EXPECT_STREQ(fdc_last_error(),
               "fdc_generate: the model is already generating: an fdc_engine "
               "holds it (free the engine first)");
  EXPECT_EQ(fdc_engine_cancel(nullptr, 1), 1);
  EXPECT_STREQ(fdc_last_error(),
               "fdc_engine_cancel: engine is NULL or id is not positive");
  EXPECT_EQ(fdc_engine_wait(engine, 0, ids, 8, &result), -1);
  EXPECT_EQ(fdc_engine_submit(nullptr, prompt, 2, 1, nullptr, nullptr, nullptr),
            -1);
  EXPECT_EQ(fdc_engine_create(nullptr, 0), nullptr);
  fdc_engine_free(engine);
  // The model is free again.
  EXPECT_EQ(fdc_generate(model, prompt, 2, 1, nullptr, ids, &n, nullptr), 0)
      << fdc_last_error();
  fdc_engine_free(nullptr);
}

struct FreeFromCallback {
  fdc_engine *engine = nullptr;
  std::string error;
};

void freeEngine(void *userData, int64_t, int32_t, const float *, int64_t) {
  auto *log = static_cast<FreeFromCallback *>(userData);
  fdc_engine_free(log->engine); // refused: it would join its own thread
  log->error = fdc_last_error();
}

TEST_F(CApiTest, EngineFreeFromItsCallbackIsRefused) {
  load(32, 1);
  FreeFromCallback log;
  log.engine = fdc_engine_create(model, 0);
  ASSERT_NE(log.engine, nullptr);
  int32_t prompt[] = {1};
  int64_t id =
      fdc_engine_submit(log.engine, prompt, 1, 1, nullptr, freeEngine, &log);
  int32_t ids[1];
  fdc_result result = {};
  ASSERT_EQ(fdc_engine_wait(log.engine, id, ids, 1, &result), 0);
  EXPECT_EQ(log.error, "fdc_engine_free: called from a token callback of "
                       "this engine; the engine was not freed");
  fdc_engine_free(log.engine);
}

struct ReentryLog {
  fdc_model *model = nullptr;
  int generateStatus = 0;
  int64_t batchStatus = 0;
  std::string generateError, batchError, freeError;
};

void reenter(void *userData, int64_t, int32_t, const float *, int64_t) {
  auto *log = static_cast<ReentryLog *>(userData);
  int32_t prompt[] = {1};
  int32_t ids[1];
  int64_t n;
  log->generateStatus =
      fdc_generate(log->model, prompt, 1, 1, nullptr, ids, &n, nullptr);
  log->generateError = fdc_last_error();
  fdc_request request = {};
  request.prompt = prompt;
  request.prompt_len = 1;
  request.max_new_tokens = 1;
  request.params = fdc_sampling_params_default();
  request.out_ids = ids;
  log->batchStatus = fdc_generate_batch(log->model, &request, 1);
  log->batchError = fdc_last_error();
  fdc_model_free(log->model); // Must not free it under the running call.
  log->freeError = fdc_last_error();
}

TEST_F(CApiTest, ReentryFromACallbackIsRefused) {
  load(16, 2);
  ReentryLog log;
  log.model = model;
  int32_t prompt[] = {3};
  int32_t ids[2] = {-1, -1};
  fdc_request request = {};
  request.prompt = prompt;
  request.prompt_len = 1;
  request.max_new_tokens = 2;
  request.params = fdc_sampling_params_default();
  request.out_ids = ids;
  request.callback = reenter;
  request.user_data = &log;
  EXPECT_EQ(fdc_generate_batch(model, &request, 1), 0) << request.error;
  EXPECT_EQ(ids[0], 4);
  EXPECT_EQ(ids[1], 5);
  EXPECT_EQ(log.generateStatus, 1);
  EXPECT_EQ(log.generateError,
            "fdc_generate: the model is already generating (a token callback "
            "or another thread called into it); one fdc_generate or "
            "fdc_generate_batch at a time per model");
  EXPECT_EQ(log.batchStatus, -1);
  EXPECT_EQ(log.batchError,
            "fdc_generate_batch: the model is already generating (a token "
            "callback or another thread called into it); one fdc_generate or "
            "fdc_generate_batch at a time per model");
  EXPECT_EQ(log.freeError,
            "fdc_model_free: the model is already generating (a token "
            "callback or another thread called into it); one fdc_generate or "
            "fdc_generate_batch at a time per model; the model was not freed");
  // Still usable afterwards.
  int64_t n = 0;
  EXPECT_EQ(fdc_generate(model, prompt, 1, 2, nullptr, ids, &n, nullptr), 0)
      << fdc_last_error();
  EXPECT_EQ(n, 2);
}

struct ThreadLog {
  std::vector<std::thread::id> threads;
  std::vector<int64_t> steps;
  std::vector<int32_t> tokens;
};

void logThread(void *userData, int64_t step, int32_t token, const float *logits,
               int64_t vocab) {
  auto *log = static_cast<ThreadLog *>(userData);
  log->threads.push_back(std::this_thread::get_id());
  log->steps.push_back(step);
  log->tokens.push_back(token);
  EXPECT_EQ(vocab, 32);
  EXPECT_NE(logits, nullptr);
}

/// fdc_generate_batch is a wrapper of the engine: its requests give the ids
/// that submitting them to an fdc_engine gives, more of them than slots all
/// finish, and their callbacks run on the engine's thread, not the caller's.
TEST_F(CApiTest, BatchIsTheEnginesWrapper) {
  load(32, 2);
  struct Spec {
    std::vector<int32_t> prompt;
    int64_t maxNew;
    float temperature;
    uint64_t seed;
    int32_t eos;
  };
  const std::vector<Spec> specs = {
      {{1, 2, 3}, 6, 0, 0, -1}, {{4}, 5, 1.0f, 7, -1},
      {{9, 9}, 8, 1.0f, 8, -1}, {{5}, 4, 0, 0, 7},
      {{2}, 0, 0, 0, -1},       {{3, 99}, 3, 0, 0, -1},
      {{30}, 10, 0.5f, 3, -1},  {{0, 1, 2, 3, 4}, 7, 1.0f, 11, -1},
      {{17}, 3, 0, 0, -1},
  };
  const size_t invalid = 5;
  std::vector<fdc_request> requests(specs.size());
  std::vector<std::vector<int32_t>> ids(specs.size());
  std::vector<ThreadLog> logs(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    fdc_request &r = requests[i];
    std::memset(&r, 0, sizeof(r));
    ids[i].assign(static_cast<size_t>(std::max<int64_t>(specs[i].maxNew, 1)),
                  -1);
    r.prompt = specs[i].prompt.data();
    r.prompt_len = static_cast<int64_t>(specs[i].prompt.size());
    r.max_new_tokens = specs[i].maxNew;
    r.params = fdc_sampling_params_default();
    r.params.temperature = specs[i].temperature;
    r.params.seed = specs[i].seed;
    r.params.eos_id = specs[i].eos;
    r.out_ids = ids[i].data();
    r.callback = logThread;
    r.user_data = &logs[i];
  }
  ASSERT_EQ(fdc_generate_batch(model, requests.data(),
                               static_cast<int64_t>(requests.size())),
            1);
  EXPECT_STREQ(fdc_last_error(), "1 of 9 requests failed");
  EXPECT_EQ(requests[invalid].finish_reason, FDC_FINISH_REJECTED);
  EXPECT_STREQ(requests[invalid].error,
               "prompt token 1 is 99, outside the vocabulary [0, 32)");
  EXPECT_TRUE(logs[invalid].steps.empty());
  EXPECT_EQ(requests[3].finish_reason, FDC_FINISH_EOS);
  EXPECT_EQ(requests[3].out_len, 2);
  EXPECT_EQ(requests[4].finish_reason, FDC_FINISH_LENGTH);
  EXPECT_EQ(requests[4].out_len, 0);

  // Every callback ran on one thread, the engine's, not this one.
  std::optional<std::thread::id> loopThread;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ThreadLog &log = logs[i];
    std::vector<int64_t> steps(log.steps.size());
    for (size_t k = 0; k < steps.size(); ++k)
      steps[k] = static_cast<int64_t>(k);
    EXPECT_EQ(log.steps, steps) << "request " << i;
    EXPECT_EQ(static_cast<int64_t>(log.tokens.size()), requests[i].out_len);
    for (std::thread::id thread : log.threads) {
      EXPECT_NE(thread, std::this_thread::get_id());
      if (!loopThread)
        loopThread = thread;
      EXPECT_EQ(thread, *loopThread);
    }
  }
  EXPECT_TRUE(loopThread);

  // The same requests through an engine give the same ids and outcomes.
  fdc_engine *engine = fdc_engine_create(model, 0);
  ASSERT_NE(engine, nullptr) << fdc_last_error();
  for (size_t i = 0; i < specs.size(); ++i) {
    if (i == invalid)
      continue;
    const fdc_request &r = requests[i];
    EXPECT_EQ(r.status, 0) << "request " << i << ": " << r.error;
    int64_t id =
        fdc_engine_submit(engine, r.prompt, r.prompt_len, r.max_new_tokens,
                          &r.params, nullptr, nullptr);
    ASSERT_GT(id, 0) << fdc_last_error();
    std::vector<int32_t> engineIds(ids[i].size(), -1);
    fdc_result result = {};
    ASSERT_EQ(fdc_engine_wait(engine, id, engineIds.data(),
                              static_cast<int64_t>(engineIds.size()), &result),
              0);
    EXPECT_EQ(result.out_len, r.out_len) << "request " << i;
    EXPECT_EQ(result.finish_reason, r.finish_reason) << "request " << i;
    EXPECT_EQ(engineIds, ids[i]) << "request " << i;
    EXPECT_EQ(logs[i].tokens,
              std::vector<int32_t>(ids[i].begin(), ids[i].begin() + r.out_len))
        << "request " << i;
  }
  fdc_engine_free(engine);
}

struct Held {
  std::atomic<bool> inside{false}, released{false};
};

void holdFirstToken(void *userData, int64_t step, int32_t, const float *,
                    int64_t) {
  auto *held = static_cast<Held *>(userData);
  if (step != 0)
    return;
  held->inside = true;
  while (!held->released.load())
    std::this_thread::yield();
}

TEST_F(CApiTest, ACallFromAnotherThreadWhileABatchRunsIsRefused) {
  load(16, 1);
  Held held;
  int32_t prompt[] = {3};
  int32_t ids[4] = {};
  fdc_request request = {};
  request.prompt = prompt;
  request.prompt_len = 1;
  request.max_new_tokens = 4;
  request.params = fdc_sampling_params_default();
  request.out_ids = ids;
  request.callback = holdFirstToken;
  request.user_data = &held;
  int64_t failures = -1;
  std::thread caller(
      [&] { failures = fdc_generate_batch(model, &request, 1); });
  while (!held.inside.load())
    std::this_thread::yield();
  int32_t other[2];
  int64_t n = -1;
  EXPECT_EQ(fdc_generate(model, prompt, 1, 2, nullptr, other, &n, nullptr), 1);
  EXPECT_EQ(n, 0);
  EXPECT_STREQ(fdc_last_error(),
               "fdc_generate: the model is already generating (a token "
               "callback or another thread called into it); one fdc_generate "
               "or fdc_generate_batch at a time per model");
  EXPECT_EQ(fdc_engine_create(model, 0), nullptr);
  held.released = true;
  caller.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(request.out_len, 4);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4),
            (std::vector<int32_t>{4, 5, 6, 7}));
  // The model is free again.
  EXPECT_EQ(fdc_generate(model, prompt, 1, 2, nullptr, other, &n, nullptr), 0)
      << fdc_last_error();
}

} // namespace

namespace {
/// Records whether each callback got logits, and the ids.
struct LogitsSeen {
  std::vector<bool> withLogits;
  std::vector<int32_t> ids;
  static void record(void *user, int64_t, int32_t token, const float *logits,
                     int64_t) {
    auto *seen = static_cast<LogitsSeen *>(user);
    seen->withLogits.push_back(logits != nullptr);
    seen->ids.push_back(token);
  }
};
} // namespace

TEST_F(CApiTest, CallbacksWithoutLogits) {
  load(16, 2);
  EXPECT_EQ(fdc_model_set_callback_logits(nullptr, 0), 1);
  EXPECT_NE(std::string(fdc_last_error()).find("model is NULL"),
            std::string::npos);
  int32_t prompt[] = {3, 7};
  auto batchOf = [&](LogitsSeen &seen, float *outLogits) {
    int32_t ids[3] = {};
    fdc_request r = {};
    r.prompt = prompt;
    r.prompt_len = 2;
    r.max_new_tokens = 3;
    r.params = fdc_sampling_params_default();
    r.out_ids = ids;
    r.out_logits = outLogits;
    r.callback = &LogitsSeen::record;
    r.user_data = &seen;
    EXPECT_EQ(fdc_generate_batch(model, &r, 1), 0) << fdc_last_error();
    EXPECT_EQ(std::vector<int32_t>(ids, ids + 3),
              (std::vector<int32_t>{8, 9, 10}));
  };
  // The default: callbacks see logits.
  LogitsSeen byDefault;
  batchOf(byDefault, nullptr);
  EXPECT_EQ(byDefault.withLogits, (std::vector<bool>{true, true, true}));

  // Off: callbacks get NULL and the same ids ...
  ASSERT_EQ(fdc_model_set_callback_logits(model, 0), 0);
  LogitsSeen idsOnly;
  batchOf(idsOnly, nullptr);
  EXPECT_EQ(idsOnly.withLogits, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(idsOnly.ids, byDefault.ids);
  // ... unless the request asks for out_logits, which are filled.
  LogitsSeen withOut;
  std::vector<float> logits(3 * 32, -1.0f);
  batchOf(withOut, logits.data());
  EXPECT_EQ(withOut.withLogits, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(logits[0 * 32 + 8], 1.0f);
  EXPECT_EQ(logits[2 * 32 + 10], 1.0f);

  // An engine's requests submitted while it is off get NULL too.
  fdc_engine *engine = fdc_engine_create(model, 0);
  ASSERT_NE(engine, nullptr) << fdc_last_error();
  LogitsSeen streamed;
  int64_t id = fdc_engine_submit(engine, prompt, 2, 3, nullptr,
                                 &LogitsSeen::record, &streamed);
  ASSERT_GT(id, 0) << fdc_last_error();
  int32_t ids[3];
  fdc_result result = {};
  ASSERT_EQ(fdc_engine_wait(engine, id, ids, 3, &result), 0);
  fdc_engine_free(engine);
  EXPECT_EQ(streamed.withLogits, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(streamed.ids, byDefault.ids);
}
