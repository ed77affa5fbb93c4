//===- RunCommand.cpp - The `fdc run` / fdc-run command line --------------===//

#include "fdc/runtime/RunCommand.h"

#include "CommandLine.h"
#include "fdc/runtime/Engine.h"
#include "fdc/runtime/Model.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

using namespace fdc::runtime;

namespace {

struct RunOptions {
  std::string library;
  std::string weights;
  std::string packedWeights;
  std::vector<int32_t> promptIds;
  int64_t maxNewTokens = 16;
  SamplingParams sampling;
  int32_t eosId = -1;
  int64_t maxContext = 0;
  int64_t maxStepRows = 0;
  std::string dumpLogits;
  /// Whether the command line gave --weights and --prompt-ids (both are
  /// required; either may be empty).
  bool haveWeights = false, havePrompt = false;
};

void printUsage(FILE *out, const char *program) {
  std::fprintf(
      out,
      "usage: %s MODEL.so --weights CHECKPOINT --prompt-ids ID,ID,...\n"
      "          [--max-new-tokens N] [--temperature T] [--top-k K]\n"
      "          [--top-p P] [--seed S] [--eos-id E] [--max-context C]\n"
      "          [--max-step-rows R] [--dump-logits FILE]\n"
      "          [--packed-weights FILE]\n"
      "\n"
      "Runs a compiled model library on a prompt of token ids and prints the\n"
      "generated ids ('ids: a,b,c') and the throughput.\n"
      "  --weights          checkpoint directory or .safetensors file\n"
      "  --packed-weights   the library's int4 / tiled_csl weights, packed by\n"
      "                     `fdc pack` (default: pack them while loading)\n"
      "  --max-new-tokens   tokens to generate (default 16)\n"
      "  --temperature      0 = greedy (default)\n"
      "  --top-k, --top-p   sampling filters (default off: 0, 1)\n"
      "  --seed             seed of the sampling draws (default 0)\n"
      "  --eos-id           stop after this token\n"
      "  --max-context      tokens per KV-cache slot (default: the model's)\n"
      "  --max-step-rows    prompt tokens one step reads (chunked prefill;\n"
      "                     default 1: one per step)\n"
      "  --dump-logits      write each generated step's logits as raw\n"
      "                     little-endian float32 [steps][vocab_size]\n",
      program);
}

/// Parses a finite float. A value too small for a float (it underflows to a
/// denormal or 0, strtof's ERANGE) is fine; NaN, infinity and values too
/// large for a float are refused with a message saying which.
Error parseFloat(const std::string &name, const std::string &text, float &out) {
  errno = 0;
  char *end = nullptr;
  float value = std::strtof(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0')
    return createError("option ", name, ": '", text, "' is not a number");
  if (std::isnan(value) || (std::isinf(value) && errno != ERANGE))
    return createError("option ", name, ": '", text,
                       "' is not a finite number");
  if (std::isinf(value))
    return createError("option ", name, ": '", text,
                       "' is too large for a float");
  out = value;
  return Error::success();
}

Error parseIdList(const std::string &text, std::vector<int32_t> &out) {
  for (const std::string &item : splitList(text)) {
    int64_t value;
    if (!parseInteger(item, INT32_MIN, INT32_MAX, value))
      return createError("--prompt-ids: '", item, "' is not a token id");
    out.push_back(static_cast<int32_t>(value));
  }
  return Error::success();
}

/// Reads the command line into `options`. Returns the exit code when the
/// model is not to run (the help, a usage error).
/// (The handlers `cl` keeps refer to `options` alone, which outlives it.)
std::optional<int> parseArguments(CommandLine &cl, RunOptions &options) {
  auto integerOption = [&cl](const char *name, int64_t min, int64_t max,
                             auto &out) {
    cl.option(name, [name, min, max, &out](const std::string &value) {
      int64_t integer;
      if (!parseInteger(value, min, max, integer))
        return createError("option ", name, ": '", value,
                           "' is not an integer in [", min, ", ", max, "]");
      out = static_cast<std::remove_reference_t<decltype(out)>>(integer);
      return Error::success();
    });
  };
  auto floatOption = [&cl](const char *name, float &out) {
    cl.option(name, [name, &out](const std::string &value) {
      return parseFloat(name, value, out);
    });
  };
  cl.option("--weights", [&](const std::string &value) {
    options.weights = value;
    options.haveWeights = true;
    return Error::success();
  });
  cl.option("--packed-weights", [&](const std::string &value) {
    if (value.empty())
      return createError("option --packed-weights needs a file");
    options.packedWeights = value;
    return Error::success();
  });
  cl.option("--prompt-ids", [&](const std::string &value) {
    if (Error err = parseIdList(value, options.promptIds))
      return err;
    options.havePrompt = true;
    return Error::success();
  });
  integerOption("--max-new-tokens", 0, INT32_MAX, options.maxNewTokens);
  integerOption("--top-k", 0, INT32_MAX, options.sampling.topK);
  cl.option("--seed", [&](const std::string &value) {
    errno = 0;
    char *end = nullptr;
    unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
    if (value.empty() || value[0] == '-' || errno != 0 || *end != '\0')
      return createError("option --seed: '", value,
                         "' is not an unsigned integer");
    options.sampling.seed = seed;
    return Error::success();
  });
  integerOption("--eos-id", -1, INT32_MAX, options.eosId);
  integerOption("--max-context", 1, INT32_MAX, options.maxContext);
  integerOption("--max-step-rows", 1, kMaxStepRows, options.maxStepRows);
  floatOption("--temperature", options.sampling.temperature);
  floatOption("--top-p", options.sampling.topP);
  cl.option("--dump-logits", options.dumpLogits);
  // The model library; only "--" arguments are options.
  cl.otherArguments([&](const std::string &arg) {
    if (arg.rfind("--", 0) == 0)
      return createError("unknown option '", arg.substr(0, arg.find('=')), "'");
    if (!options.library.empty())
      return createError("unexpected argument '", arg,
                         "' (the model library is '", options.library, "')");
    options.library = arg;
    return Error::success();
  });
  if (std::optional<int> exitCode = cl.parse())
    return exitCode;
  if (options.library.empty())
    return cl.usageError("no model library given");
  if (!options.haveWeights)
    return cl.usageError("--weights is required");
  if (!options.havePrompt)
    return cl.usageError("--prompt-ids is required");
  return std::nullopt;
}

int run(const RunOptions &options, const CommandLine &cl) {

  ModelOptions modelOptions;
  modelOptions.maxContext = options.maxContext;
  modelOptions.numSlots = 1;
  modelOptions.maxStepRows = options.maxStepRows;
  modelOptions.packedWeights = options.packedWeights;
  Expected<std::unique_ptr<Model>> model =
      Model::load(options.library, options.weights, modelOptions);
  if (!model)
    return cl.fail(model.error().message());

  FILE *logitsFile = nullptr;
  if (!options.dumpLogits.empty()) {
    logitsFile = std::fopen(options.dumpLogits.c_str(), "wb");
    if (!logitsFile)
      return cl.fail(concat("cannot open '", options.dumpLogits,
                            "': ", std::strerror(errno)));
  }
  int64_t vocab = (*model)->vocabSize();
  bool writeFailed = false;

  GenerationRequest request;
  request.prompt = options.promptIds;
  request.maxNewTokens = options.maxNewTokens;
  request.sampling = options.sampling;
  request.eosId = options.eosId;
  if (logitsFile) {
    // The step's logits are host floats; on the little-endian hosts the
    // runtime supports they are written as they are.
    request.onToken = [&](int32_t, const float *logits) {
      if (std::fwrite(logits, sizeof(float), static_cast<size_t>(vocab),
                      logitsFile) != static_cast<size_t>(vocab))
        writeFailed = true;
    };
  }

  Engine engine(**model);
  Expected<RequestId> id = engine.submit(std::move(request));
  if (!id) {
    if (logitsFile)
      std::fclose(logitsFile);
    return cl.fail(id.error().message());
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<GenerationResult> results = engine.runToCompletion();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (logitsFile && std::fclose(logitsFile) != 0)
    writeFailed = true;
  if (writeFailed)
    return cl.fail(concat("cannot write '", options.dumpLogits, "'"));
  if (results.size() != 1)
    return cl.fail("internal error: no result for the request");
  const GenerationResult &result = results.front();
  if (!result.error.empty())
    return cl.fail(result.error);

  std::string ids;
  for (size_t i = 0; i < result.tokens.size(); ++i)
    ids += (i ? "," : "") + std::to_string(result.tokens[i]);
  std::printf("ids: %s\n", ids.c_str());
  size_t generated = result.tokens.size();
  std::printf("tokens/s: %.2f (%zu new tokens after %zu prompt tokens in "
              "%.3f s, %lld steps, finish: %s)\n",
              seconds > 0 ? generated / seconds : 0.0, generated,
              options.promptIds.size(), seconds,
              static_cast<long long>(engine.stepsRun()),
              finishReasonName(result.reason));
  return 0;
}

} // namespace

int fdcRunMain(int argc, char **argv) {
  CommandLine::Syntax syntax;
  syntax.usageExitCode = 1;
  syntax.equalsValues = true;
  RunOptions options; // before `cl`, whose handlers refer to it
  CommandLine cl(argc, argv, "fdc-run", printUsage, syntax);
  if (std::optional<int> exitCode = parseArguments(cl, options))
    return *exitCode;
  return run(options, cl);
}
