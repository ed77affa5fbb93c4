//===- PackCommand.cpp - `fdc pack` / fdc-pack ----------------------------===//

#include "fdc/runtime/Checkpoint.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/PackedWeights.h"
#include "fdc/runtime/ToolCommands.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using namespace fdc::runtime;

namespace {
void printUsage(FILE *out, const char *program) {
  std::fprintf(
      out,
      "usage: %s MODEL.so --weights CHECKPOINT -o PACKED\n"
      "\n"
      "Packs a model library's int4 and tiled_csl weights from a checkpoint\n"
      "once, into a packed-weights file (safetensors) that `fdc run\n"
      "--packed-weights PACKED` (fdc_model_load_packed) copies instead of\n"
      "packing them at every load. The file serves any library with the same\n"
      "packed weights (the host and GPU builds of one model IR); loading\n"
      "refuses one that does not match, naming the weight.\n"
      "  --weights   checkpoint directory or .safetensors file\n"
      "  -o          the packed-weights file to write (replaced whole when\n"
      "              complete; not a .safetensors file inside the checkpoint\n"
      "              directory)\n",
      program);
}
} // namespace

int fdcPackMain(int argc, char **argv) {
  const char *program = argc > 0 ? argv[0] : "fdc-pack";
  std::string library, weights, output;
  auto usageError = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", program, message.c_str());
    printUsage(stderr, program);
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      printUsage(stdout, program);
      return 0;
    }
    std::string *value = nullptr;
    if (arg == "--weights")
      value = &weights;
    else if (arg == "-o")
      value = &output;
    else if (arg.rfind("--weights=", 0) == 0)
      weights = arg.substr(10);
    else if (arg[0] == '-' || !library.empty())
      return usageError(concat("unexpected argument '", arg, "'"));
    else
      library = arg;
    if (value) {
      if (i + 1 >= argc)
        return usageError(concat("option ", arg, " needs a value"));
      *value = argv[++i];
    }
  }
  if (library.empty() || weights.empty() || output.empty())
    return usageError("a model library, --weights and -o are required");
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", program, message.c_str());
    return 1;
  };

  auto start = std::chrono::steady_clock::now();
  Expected<std::unique_ptr<ModelLibrary>> opened = ModelLibrary::open(library);
  if (!opened)
    return fail(opened.error().message());
  Expected<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(weights);
  if (!checkpoint)
    return fail(checkpoint.error().message());
  Expected<PackSummary> summary =
      writePackedWeights((*opened)->manifest(), **checkpoint, output);
  if (!summary)
    return fail(summary.error().message());
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("packed %lld int4 and %lld tiled_csl weights (%.1f MB) into "
              "'%s' in %.1f s\n",
              static_cast<long long>(summary->int4Weights),
              static_cast<long long>(summary->tiledCSLWeights),
              static_cast<double>(summary->bytes) / 1e6, output.c_str(),
              seconds);
  return 0;
}
