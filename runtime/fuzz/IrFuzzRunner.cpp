//===- IrFuzzRunner.cpp - Runs fuzzed model libraries under sanitizers ----===//
//
// The run half of the IR fuzzer (python/fdc/testing/ir_fuzz.py,
// docs/fuzzing.md). Built from the runtime's sources with AddressSanitizer
// and UndefinedBehaviorSanitizer; the generated library is not instrumented,
// so every buffer it is handed (weight arena, KV cache, and the step arrays
// allocated here) sits between PROT_NONE guard pages (FDC_GUARD_PAGES, set to
// "tight" here unless the caller chose otherwise): an access outside them
// faults and AddressSanitizer reports the SEGV with the address, which the
// driver matches against the buffer map printed at start.
//
//   fdc-ir-fuzz-runner LIBRARY CHECKPOINT INPUTS
//
// INPUTS is text. The first line is `options SLOTS MAX_CONTEXT`; then one
// line per step:
//   step M | tokens x M | positions x M | slots x M | temperature x M
//          | top_k x M | top_p x M | uniform x M
// (the `|` are separate words). Every step runs or is refused; a refusal is
// printed and the next step runs.
//
// Exit status: 0 every step ran or was refused; 2 the model did not load (a
// clean refusal); 1 a usage or INPUTS error; 3 a step ran but broke the
// step contract (a next token outside [0, vocab)). Sanitizer reports and
// signals are the driver's to see.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/Model.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace fdc::runtime;

namespace {

[[noreturn]] void fail(int code, const std::string &message) {
  std::fprintf(stderr, "fdc-ir-fuzz-runner: %s\n", message.c_str());
  std::exit(code);
}

void printBuffer(const char *name, const void *data, uint64_t size) {
  auto begin = reinterpret_cast<uintptr_t>(data);
  std::fprintf(stderr, "fdc-ir-fuzz-runner: buffer %s 0x%zx 0x%zx\n", name,
               static_cast<size_t>(begin), static_cast<size_t>(begin + size));
}

struct StepInputs {
  int64_t batch = 0;
  std::vector<int32_t> tokens, positions, slots, topK;
  std::vector<float> temperature, topP, uniform;
};

bool parseStep(const std::string &line, StepInputs &step) {
  std::istringstream in(line);
  std::string word;
  if (!(in >> word) || word != "step" || !(in >> word))
    return false;
  char *end = nullptr;
  step.batch = std::strtoll(word.c_str(), &end, 10);
  if (*end || step.batch < 0 || step.batch > (1 << 20))
    return false;
  auto ints = [&](std::vector<int32_t> &out) {
    if (!(in >> word) || word != "|")
      return false;
    for (int64_t i = 0; i < step.batch; ++i) {
      if (!(in >> word))
        return false;
      long long v = std::strtoll(word.c_str(), &end, 10);
      if (*end || v < INT32_MIN || v > INT32_MAX)
        return false;
      out.push_back(static_cast<int32_t>(v));
    }
    return true;
  };
  auto floats = [&](std::vector<float> &out) {
    if (!(in >> word) || word != "|")
      return false;
    for (int64_t i = 0; i < step.batch; ++i) {
      if (!(in >> word))
        return false;
      out.push_back(std::strtof(word.c_str(), &end));
      if (*end)
        return false;
    }
    return true;
  };
  return ints(step.tokens) && ints(step.positions) && ints(step.slots) &&
         floats(step.temperature) && ints(step.topK) && floats(step.topP) &&
         floats(step.uniform);
}

/// A guarded copy of `values` (or an uninitialised guarded array of `count`).
template <typename T>
HostBuffer guarded(const std::vector<T> &values, size_t count,
                   const char *what) {
  Expected<HostBuffer> buffer = HostBuffer::allocate(count * sizeof(T), what);
  if (!buffer) // e.g. logits of a huge vocabulary: a refusal, not a bug
    fail(2, "step refused: " + buffer.takeError().message());
  if (!values.empty())
    std::memcpy(buffer->data(), values.data(), values.size() * sizeof(T));
  return std::move(*buffer);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4)
    fail(1, "usage: fdc-ir-fuzz-runner LIBRARY CHECKPOINT INPUTS");
  ::setenv("FDC_GUARD_PAGES", "tight", /*overwrite=*/0);

  std::ifstream file(argv[3]);
  if (!file)
    fail(1, std::string("cannot read ") + argv[3]);
  std::string line, word;
  ModelOptions options;
  if (!std::getline(file, line))
    fail(1, "INPUTS: missing the options line");
  {
    std::istringstream in(line);
    if (!(in >> word >> options.numSlots >> options.maxContext) ||
        word != "options")
      fail(1, "INPUTS: bad options line: " + line);
  }
  std::vector<StepInputs> steps;
  while (std::getline(file, line)) {
    if (line.empty())
      continue;
    StepInputs step;
    if (!parseStep(line, step))
      fail(1, "INPUTS: bad step line: " + line);
    steps.push_back(std::move(step));
  }

  Expected<std::unique_ptr<Model>> loaded =
      Model::load(argv[1], argv[2], options);
  if (!loaded)
    fail(2, "load refused: " + loaded.takeError().message());
  Model &model = **loaded;
  const int64_t vocab = model.vocabSize();
  printBuffer("weights", model.weights().data(), model.weights().size());
  printBuffer("kv_cache", model.kvCache().data(), model.kvCache().size());

  for (size_t s = 0; s < steps.size(); ++s) {
    StepInputs &in = steps[s];
    size_t m = static_cast<size_t>(in.batch);
    HostBuffer tokens = guarded(in.tokens, m, "tokens");
    HostBuffer positions = guarded(in.positions, m, "positions");
    HostBuffer slots = guarded(in.slots, m, "slots");
    HostBuffer temperature = guarded(in.temperature, m, "temperature");
    HostBuffer topK = guarded(in.topK, m, "top_k");
    HostBuffer topP = guarded(in.topP, m, "top_p");
    HostBuffer uniform = guarded(in.uniform, m, "uniform");
    uint64_t logitsCount = vocab > 0 ? m * static_cast<uint64_t>(vocab) : 0;
    HostBuffer logits =
        guarded(std::vector<float>(), static_cast<size_t>(logitsCount),
                "logits");
    HostBuffer next = guarded(std::vector<int32_t>(), m, "next_tokens");
    // Outputs the step must overwrite start as garbage-but-recognisable.
    std::memset(next.data(), 0xA5, next.size());
    std::fprintf(stderr, "fdc-ir-fuzz-runner: step %zu\n", s);
    printBuffer("tokens", tokens.data(), tokens.size());
    printBuffer("positions", positions.data(), positions.size());
    printBuffer("slots", slots.data(), slots.size());
    printBuffer("temperature", temperature.data(), temperature.size());
    printBuffer("top_k", topK.data(), topK.size());
    printBuffer("top_p", topP.data(), topP.size());
    printBuffer("uniform", uniform.data(), uniform.size());
    printBuffer("logits", logits.data(), logits.size());
    printBuffer("next_tokens", next.data(), next.size());

    FdcStepArgs args{};
    args.batch = in.batch;
    args.tokens = reinterpret_cast<const int32_t *>(tokens.data());
    args.positions = reinterpret_cast<const int32_t *>(positions.data());
    args.slots = reinterpret_cast<const int32_t *>(slots.data());
    args.temperature = reinterpret_cast<const float *>(temperature.data());
    args.top_k = reinterpret_cast<const int32_t *>(topK.data());
    args.top_p = reinterpret_cast<const float *>(topP.data());
    args.uniform = reinterpret_cast<const float *>(uniform.data());
    args.logits = reinterpret_cast<float *>(logits.data());
    args.next_tokens = reinterpret_cast<int32_t *>(next.data());
    if (Error err = model.step(args)) {
      std::printf("step %zu refused: %s\n", s, err.message().c_str());
      continue;
    }
    const auto *out = reinterpret_cast<const int32_t *>(next.data());
    for (size_t i = 0; i < m; ++i)
      if (out[i] < 0 || out[i] >= vocab)
        fail(3, "FDC-FUZZ-CONTRACT: step " + std::to_string(s) +
                    " ran but next_tokens[" + std::to_string(i) + "] = " +
                    std::to_string(out[i]) + " is outside [0, " +
                    std::to_string(vocab) + ")");
    std::printf("step %zu ran: next", s);
    for (size_t i = 0; i < m; ++i)
      std::printf(" %d", out[i]);
    std::printf("\n");
  }
  return 0;
}
