//===- RunCommand.cpp - The `fdc run` / fdc-run command line --------------===//

#include "fdc/runtime/RunCommand.h"

#include "fdc/runtime/Engine.h"
#include "fdc/runtime/Model.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
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

bool parseInt(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = value;
  return true;
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
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t value;
    if (!parseInt(item, value) || value < INT32_MIN || value > INT32_MAX)
      return createError("--prompt-ids: '", item, "' is not a token id");
    out.push_back(static_cast<int32_t>(value));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return Error::success();
}

Expected<RunOptions> parseArguments(int argc, char **argv, bool &wantsHelp) {
  RunOptions options;
  bool haveWeights = false, havePrompt = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      wantsHelp = true;
      return options;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!options.library.empty())
        return createError("unexpected argument '", arg,
                           "' (the model library is '", options.library, "')");
      options.library = arg;
      continue;
    }
    std::string name = arg, value;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    } else {
      if (i + 1 >= argc)
        return createError("option ", name, " needs a value");
      value = argv[++i];
    }

    int64_t integer;
    auto needInt = [&](int64_t min, int64_t max) -> Error {
      if (!parseInt(value, integer) || integer < min || integer > max)
        return createError("option ", name, ": '", value,
                           "' is not an integer in [", min, ", ", max, "]");
      return Error::success();
    };
    if (name == "--weights") {
      options.weights = value;
      haveWeights = true;
    } else if (name == "--packed-weights") {
      if (value.empty())
        return createError("option --packed-weights needs a file");
      options.packedWeights = value;
    } else if (name == "--prompt-ids") {
      if (Error err = parseIdList(value, options.promptIds))
        return err;
      havePrompt = true;
    } else if (name == "--max-new-tokens") {
      if (Error err = needInt(0, INT32_MAX))
        return err;
      options.maxNewTokens = integer;
    } else if (name == "--top-k") {
      if (Error err = needInt(0, INT32_MAX))
        return err;
      options.sampling.topK = static_cast<int32_t>(integer);
    } else if (name == "--seed") {
      errno = 0;
      char *end = nullptr;
      unsigned long long seed = std::strtoull(value.c_str(), &end, 10);
      if (value.empty() || value[0] == '-' || errno != 0 || *end != '\0')
        return createError("option --seed: '", value,
                           "' is not an unsigned integer");
      options.sampling.seed = seed;
    } else if (name == "--eos-id") {
      if (Error err = needInt(-1, INT32_MAX))
        return err;
      options.eosId = static_cast<int32_t>(integer);
    } else if (name == "--max-context") {
      if (Error err = needInt(1, INT32_MAX))
        return err;
      options.maxContext = integer;
    } else if (name == "--max-step-rows") {
      if (Error err = needInt(1, kMaxStepRows))
        return err;
      options.maxStepRows = integer;
    } else if (name == "--temperature") {
      if (Error err = parseFloat(name, value, options.sampling.temperature))
        return err;
    } else if (name == "--top-p") {
      if (Error err = parseFloat(name, value, options.sampling.topP))
        return err;
    } else if (name == "--dump-logits") {
      options.dumpLogits = value;
    } else {
      return createError("unknown option '", name, "'");
    }
  }
  if (options.library.empty())
    return createError("no model library given");
  if (!haveWeights)
    return createError("--weights is required");
  if (!havePrompt)
    return createError("--prompt-ids is required");
  return options;
}

int run(const RunOptions &options, const char *program) {
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", program, message.c_str());
    return 1;
  };

  ModelOptions modelOptions;
  modelOptions.maxContext = options.maxContext;
  modelOptions.numSlots = 1;
  modelOptions.maxStepRows = options.maxStepRows;
  modelOptions.packedWeights = options.packedWeights;
  Expected<std::unique_ptr<Model>> model =
      Model::load(options.library, options.weights, modelOptions);
  if (!model)
    return fail(model.error().message());

  FILE *logitsFile = nullptr;
  if (!options.dumpLogits.empty()) {
    logitsFile = std::fopen(options.dumpLogits.c_str(), "wb");
    if (!logitsFile)
      return fail(concat("cannot open '", options.dumpLogits,
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
    return fail(id.error().message());
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<GenerationResult> results = engine.runToCompletion();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (logitsFile && std::fclose(logitsFile) != 0)
    writeFailed = true;
  if (writeFailed)
    return fail(concat("cannot write '", options.dumpLogits, "'"));
  if (results.size() != 1)
    return fail("internal error: no result for the request");
  const GenerationResult &result = results.front();
  if (!result.error.empty())
    return fail(result.error);

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
  const char *program = argc > 0 && argv[0] ? argv[0] : "fdc-run";
  bool wantsHelp = false;
  Expected<RunOptions> options = parseArguments(argc, argv, wantsHelp);
  if (wantsHelp) {
    printUsage(stdout, program);
    return 0;
  }
  if (!options) {
    std::fprintf(stderr, "%s: error: %s\n", program,
                 options.error().message().c_str());
    printUsage(stderr, program);
    return 1;
  }
  return run(*options, program);
}
