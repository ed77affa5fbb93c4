//===- TensorParallelModelTest.cpp - Tests of tensor-parallel host models -===//
//
// Runs TestTpModel.c, a 2-rank host library whose step gathers each rank's
// part of a column-parallel projection and sums the partial products of a
// row-parallel one, against the same math on the whole (unsharded) weights.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Engine.h"
#include "fdc/runtime/Model.h"
#include "fdc/runtime/StepArrays.h"
#include "fdc/runtime/ToolCommands.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

constexpr int kVocab = 32;

/// The unsharded weights: proj [8, 4], down [2, 8], bias [4] (small
/// integers and halves, so every f32 sum below is exact).
float proj(int o, int j) { return static_cast<float>(o - j); }
float down(int k, int o) { return static_cast<float>(k + o % 3); }
const float kBias[4] = {0.5f, 1, 1.5f, 2};

std::vector<TestTensor> tpTensors(int64_t projRows = 8) {
  std::vector<float> p, d;
  for (int o = 0; o < projRows; ++o)
    for (int j = 0; j < 4; ++j)
      p.push_back(proj(o, j));
  for (int k = 0; k < 2; ++k)
    for (int o = 0; o < 8; ++o)
      d.push_back(down(k, o));
  return {
      {"proj", "F32", {projRows, 4}, f32Bytes(p)},
      {"down", "F32", {2, 8}, f32Bytes(d)},
      {"bias", "F32", {4}, f32Bytes({kBias[0], kBias[1], kBias[2], kBias[3]})}};
}

/// Logits 0..9 of a row with `token`: P x, then D (P x).
std::vector<float> expectedLogits(int32_t token) {
  float x[4], h[8];
  for (int j = 0; j < 4; ++j)
    x[j] = static_cast<float>((token + j) % 5) + kBias[j];
  for (int o = 0; o < 8; ++o) {
    h[o] = 0;
    for (int j = 0; j < 4; ++j)
      h[o] += proj(o, j) * x[j];
  }
  std::vector<float> out(h, h + 8);
  for (int k = 0; k < 2; ++k) {
    float sum = 0;
    for (int o = 0; o < 8; ++o)
      sum += down(k, o) * h[o];
    out.push_back(sum);
  }
  return out;
}

class TensorParallelModelTest : public ::testing::Test {
protected:
  Expected<std::unique_ptr<Model>>
  load(const std::vector<TestTensor> &tensors = tpTensors()) {
    TempDir dir;
    writeFile(dir.file("model.safetensors"), makeSafetensors(tensors));
    ModelOptions options;
    options.numSlots = 2;
    options.maxContext = 16;
    options.maxStepRows = 4;
    return Model::load(FDC_TEST_TP_MODEL, dir.path(), options);
  }

  /// One step of `tokens` at `positions` in `slots`, greedy; its outputs
  /// land in `logits` and `next`.
  Error step(Model &model, std::vector<int32_t> tokens,
             std::vector<int32_t> positions, std::vector<int32_t> slots) {
    size_t n = tokens.size();
    StepArrays arrays;
    arrays.tokens = std::move(tokens);
    arrays.positions = std::move(positions);
    arrays.slots = std::move(slots);
    arrays.temperature.assign(n, 0);
    arrays.topK.assign(n, 0);
    arrays.topP.assign(n, 1);
    arrays.uniform.assign(n, 0);
    arrays.logits.assign(n * kVocab, -1);
    arrays.nextTokens.assign(n, -7);
    FdcStepArgs args = arrays.args();
    Error err = model.step(args);
    EXPECT_EQ(args.collective, nullptr) << "the caller's args are restored";
    logits = std::move(arrays.logits);
    next = std::move(arrays.nextTokens);
    return err;
  }

  std::vector<float> rowLogits(size_t row, int begin, int end) const {
    return std::vector<float>(logits.begin() + row * kVocab + begin,
                              logits.begin() + row * kVocab + end);
  }

  /// The logits ([rows][kVocab]) and next tokens of the last step().
  std::vector<float> logits;
  std::vector<int32_t> next;
};

TEST_F(TensorParallelModelTest, RanksComputeTheUnshardedMath) {
  Expected<std::unique_ptr<Model>> model = load();
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ((*model)->tensorParallel(), 2);
  EXPECT_EQ((*model)->manifest().weights[0].slices.size(), 2u);
  // Rank 0's arena: rows 0..3 of proj.
  const float *arena =
      reinterpret_cast<const float *>((*model)->weights().data());
  EXPECT_EQ(arena[4], proj(1, 0));

  // A prompt chunk of two rows in slot 0 and one row in slot 1.
  ASSERT_FALSE(step(**model, {3, 4, 10}, {0, 1, 0}, {0, 0, 1}));
  EXPECT_EQ(next, (std::vector<int32_t>{4, 5, 11}));
  int32_t tokens[3] = {3, 4, 10};
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rowLogits(i, 0, 10), expectedLogits(tokens[i]));
  }
  // The slots' K rows (each rank's cache) line up: slot 0 holds 3 + 4.
  EXPECT_EQ(logits[1 * kVocab + 31], 7.0f);
  EXPECT_EQ(logits[2 * kVocab + 31], 10.0f);

  // Decode steps; many of them, so the workers are handed many steps.
  int32_t token = 5;
  for (int32_t position = 2; position < 16; ++position) {
    ASSERT_FALSE(step(**model, {token, 0}, {position, 1}, {0, 1}));
    EXPECT_EQ(rowLogits(0, 0, 10), expectedLogits(token));
    EXPECT_EQ(rowLogits(1, 0, 10), expectedLogits(0));
    EXPECT_EQ(next[0], (token + 1) % kVocab);
    token = next[0];
    if (position == 15) {
      EXPECT_EQ(logits[31], 168.0f); // 3 + 4 + 5 + ... + 18
    }
  }
}

TEST_F(TensorParallelModelTest, GeneratesThroughTheEngine) {
  Expected<std::unique_ptr<Model>> model = load();
  ASSERT_TRUE(model) << model.error().message();
  Engine engine(**model);
  std::vector<float> lastLogits;
  GenerationRequest request;
  request.prompt = {1, 2, 3};
  request.maxNewTokens = 4;
  request.onToken = [&](int32_t, const float *rowLogits) {
    lastLogits.assign(rowLogits, rowLogits + 10);
  };
  ASSERT_TRUE(engine.submit(std::move(request)));
  GenerationRequest other;
  other.prompt = {20};
  other.maxNewTokens = 2;
  ASSERT_TRUE(engine.submit(std::move(other)));
  std::vector<GenerationResult> results = engine.runToCompletion();
  ASSERT_EQ(results.size(), 2u);
  for (const GenerationResult &result : results) {
    EXPECT_EQ(result.error, "");
    if (result.tokens.size() == 4)
      EXPECT_EQ(result.tokens, (std::vector<int32_t>{4, 5, 6, 7}));
    else
      EXPECT_EQ(result.tokens, (std::vector<int32_t>{21, 22}));
  }
  EXPECT_EQ(lastLogits, expectedLogits(6));
}

TEST_F(TensorParallelModelTest, AFailingRankAbortsTheGroup) {
  Expected<std::unique_ptr<Model>> model = load();
  ASSERT_TRUE(model) << model.error().message();
  ASSERT_FALSE(step(**model, {1}, {0}, {0}));
  // Token 29: rank 1 makes an invalid call while rank 0 waits in the gather.
  Error err = step(**model, {2, 29}, {1, 0}, {0, 1});
  std::string expected = "tensor-parallel rank 1: all_reduce_sum(count 8, "
                         "dtype 99) is invalid (dtype must be an FDC_DTYPE_* "
                         "code, count >= 0, buffers non-null)";
  EXPECT_EQ(err.message(), expected);
  // The model refuses every later step.
  err = step(**model, {2}, {1}, {0});
  EXPECT_EQ(err.message(), "tensor-parallel group aborted: " + expected);
  err = step(**model, {2}, {1}, {0});
  EXPECT_EQ(err.message(), "tensor-parallel group aborted: " + expected);
}

TEST_F(TensorParallelModelTest, RanksMustAgreeOnTheNextToken) {
  Expected<std::unique_ptr<Model>> model = load();
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ(step(**model, {1, 28}, {0, 0}, {0, 1}).message(),
            "tensor-parallel ranks disagree: row 1: rank 0 chose token 29, "
            "rank 1 token 30");
  // The group itself is fine.
  EXPECT_FALSE(step(**model, {2}, {1}, {0}));
  EXPECT_EQ(next[0], 3);
}

TEST_F(TensorParallelModelTest, InvalidInputsRunNoRank) {
  Expected<std::unique_ptr<Model>> model = load();
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ(step(**model, {40}, {0}, {0}).message(),
            "model step: row 0: token 40 is outside the vocabulary [0, 32)");
  EXPECT_FALSE(step(**model, {2}, {0}, {0}));
}

TEST_F(TensorParallelModelTest, RefusesSlicesOutsideTheCheckpoint) {
  // proj has 6 rows: rank 1's rows [4, 8) do not fit.
  Expected<std::unique_ptr<Model>> model = load(tpTensors(6));
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().message(),
            "tensor-parallel rank 1 of 2: weight 'proj': rank 1 piece 0: rows "
            "[4, 8) lie outside source 'proj' of shape [6, 4]");
}

TEST_F(TensorParallelModelTest, ManyModelsComeAndGo) {
  // Workers start at load and stop with the model, stepped or not.
  for (int i = 0; i < 20; ++i) {
    Expected<std::unique_ptr<Model>> model = load();
    ASSERT_TRUE(model) << model.error().message();
    if (i % 2) {
      ASSERT_FALSE(step(**model, {static_cast<int32_t>(i)}, {0}, {0}));
    }
  }
}

TEST(TensorParallelModelInspectTest, PrintsTheRanks) {
  std::string path = FDC_TEST_TP_MODEL;
  char *argv[] = {const_cast<char *>("fdc-inspect"), path.data()};
  testing::internal::CaptureStdout();
  int rc = fdcInspectMain(2, argv);
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out, "model test_tp_model, target host\n"
                 "tensor parallel: 2 ranks\n"
                 "no linear dispatch tables (a host library runs no GPU "
                 "kernels)\n");
}

} // namespace
