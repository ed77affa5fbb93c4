//===- GpuTestUtil.h - Helpers for the GPU backends' tests ------*- C++ -*-===//
//
// Shared by the CUDA (cuda/) and HIP (hip/) backend tests: scoped
// environment variables, and a workload whose tokens and logits a GPU test
// library must reproduce bit for bit from the host test library.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TEST_GPUTESTUTIL_H
#define FDC_RUNTIME_TEST_GPUTESTUTIL_H

#include "fdc/runtime/Engine.h"
#include "fdc/runtime/StepArrays.h"

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fdc::runtime::test {

/// The vocabulary of every test model library.
constexpr int kTestVocab = 32;

/// Sets (or with nullptr unsets) an environment variable for its lifetime.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  std::optional<std::string> previous;
};

inline bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

#define EXPECT_CONTAINS(text, part)                                            \
  EXPECT_PRED2(::fdc::runtime::test::contains, text, part)

/// What one request of runWorkload() produced.
struct Outcome {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
  FinishReason reason = FinishReason::Length;
  std::string error;
  bool operator==(const Outcome &o) const {
    return tokens == o.tokens && logits == o.logits && reason == o.reason &&
           error == o.error;
  }
};

std::ostream &operator<<(std::ostream &os, const Outcome &o);

/// Runs two rounds on a model with 3 slots: a batch of greedy, sampled and
/// invalid-token requests, then new requests that reuse the slots.
std::vector<Outcome> runWorkload(Model &model);

/// Generates greedily from `prompt` alone.
GenerationResult generate(Model &model, std::vector<int32_t> prompt,
                          int64_t maxNew);

/// The outputs of one step.
struct StepOutput {
  int32_t nextToken = 0;
  std::vector<float> logits;
};

/// The arrays of a step of one greedy row, `token` at position 0 in slot 0,
/// with its outputs (`vocab` logits, the next token) zero.
StepArrays greedyFirstRow(int32_t token, int64_t vocab);

/// Runs one step of greedyFirstRow(token, vocab_size) through Model::step.
Expected<StepOutput> stepOnce(Model &model, int32_t token);

/// Runs `fdc-run` (the executable at `fdcRun`) with `args` under `env`
/// ("NAME=value ..."); returns its exit status, its stderr in `stderrText`.
int runFdcRun(const std::string &fdcRun, const std::string &env,
              const std::vector<std::string> &args, std::string &stderrText);

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_GPUTESTUTIL_H
