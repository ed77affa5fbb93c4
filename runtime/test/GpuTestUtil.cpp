//===- GpuTestUtil.cpp - Helpers for the GPU backends' tests --------------===//

#include "GpuTestUtil.h"

#include "TestUtil.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <sys/wait.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

ScopedEnv::ScopedEnv(const char *name, const char *value) : name(name) {
  if (const char *old = std::getenv(name))
    previous = old;
  if (value)
    ::setenv(name, value, 1);
  else
    ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (previous)
    ::setenv(name, previous->c_str(), 1);
  else
    ::unsetenv(name);
}

std::ostream &fdc::runtime::test::operator<<(std::ostream &os,
                                             const Outcome &o) {
  os << finishReasonName(o.reason) << " [";
  for (int32_t t : o.tokens)
    os << t << " ";
  return os << "] " << o.error;
}

std::vector<Outcome> fdc::runtime::test::runWorkload(Model &model) {
  Engine engine(model);
  std::map<RequestId, Outcome> outcomes;
  using Logits = std::shared_ptr<std::vector<std::vector<float>>>;
  auto submit = [&](std::vector<int32_t> prompt, int64_t maxNew,
                    float temperature = 0, uint64_t seed = 0,
                    int32_t topK = 0) {
    GenerationRequest r;
    r.prompt = std::move(prompt);
    r.maxNewTokens = maxNew;
    r.sampling.temperature = temperature;
    r.sampling.seed = seed;
    r.sampling.topK = topK;
    auto logits = std::make_shared<std::vector<std::vector<float>>>();
    r.onToken = [logits](int32_t, const float *row) {
      logits->emplace_back(row, row + kTestVocab);
    };
    Expected<RequestId> id = engine.submit(std::move(r));
    EXPECT_TRUE(id) << id.error().message();
    return std::pair{id ? *id : 0, logits};
  };
  std::vector<std::pair<RequestId, Logits>> ids;
  ids.push_back(submit({1, 2, 3}, 5));
  ids.push_back(submit({30}, 4, 1.0f, 7));
  ids.push_back(submit({4}, 3, 0, 0, 999)); // the step returns token 37
  for (GenerationResult &r : engine.runToCompletion())
    outcomes[r.id] = {r.tokens, {}, r.reason, r.error};
  ids.push_back(submit({9, 10, 11, 12}, 6, 0.5f, 3));
  ids.push_back(submit({0}, 2));
  for (GenerationResult &r : engine.runToCompletion())
    outcomes[r.id] = {r.tokens, {}, r.reason, r.error};
  std::vector<Outcome> ordered;
  for (auto &[id, logits] : ids) {
    Outcome o = outcomes[id];
    o.logits = std::move(*logits);
    ordered.push_back(std::move(o));
  }
  return ordered;
}

GenerationResult fdc::runtime::test::generate(Model &model,
                                              std::vector<int32_t> prompt,
                                              int64_t maxNew) {
  Engine engine(model);
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.maxNewTokens = maxNew;
  Expected<RequestId> id = engine.submit(std::move(r));
  EXPECT_TRUE(id) << id.error().message();
  std::vector<GenerationResult> results = engine.runToCompletion();
  EXPECT_EQ(results.size(), 1u);
  return results.empty() ? GenerationResult() : results[0];
}

StepArrays fdc::runtime::test::greedyFirstRow(int32_t token, int64_t vocab) {
  StepArrays row;
  row.tokens = {token};
  row.positions = {0};
  row.slots = {0};
  row.temperature = {0.0f};
  row.topK = {0};
  row.topP = {1.0f};
  row.uniform = {0.0f};
  row.logits.assign(static_cast<size_t>(vocab), 0.0f);
  row.nextTokens = {0};
  return row;
}

Expected<StepOutput> fdc::runtime::test::stepOnce(Model &model, int32_t token) {
  StepArrays row = greedyFirstRow(token, model.vocabSize());
  FdcStepArgs args = row.args();
  if (Error err = model.step(args))
    return err;
  StepOutput out;
  out.nextToken = row.nextTokens[0];
  out.logits = std::move(row.logits);
  return out;
}

int fdc::runtime::test::runFdcRun(const std::string &fdcRun,
                                  const std::string &env,
                                  const std::vector<std::string> &args,
                                  std::string &stderrText) {
  TempDir dir;
  std::string errFile = dir.file("stderr.txt");
  // The arguments are test paths and numbers: no quoting needed beyond ''.
  std::string command = "env " + env + " '" + fdcRun + "'";
  for (const std::string &arg : args)
    command += " '" + arg + "'";
  command += " > /dev/null 2> '" + errFile + "'";
  int status = std::system(command.c_str());
  std::ifstream in(errFile);
  std::stringstream text;
  text << in.rdbuf();
  stderrText = text.str();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
