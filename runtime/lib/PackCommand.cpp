//===- PackCommand.cpp - `fdc pack` / fdc-pack ----------------------------===//

#include "CommandLine.h"
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
  std::string library, weights, output;
  CommandLine::Syntax syntax;
  syntax.equalsValues = true;
  CommandLine cl(argc, argv, "fdc-pack", printUsage, syntax);
  cl.option("--weights", weights).option("-o", output).positional(library);
  if (std::optional<int> exitCode = cl.parse())
    return *exitCode;
  if (library.empty() || weights.empty() || output.empty())
    return cl.usageError("a model library, --weights and -o are required");

  auto start = std::chrono::steady_clock::now();
  Expected<std::unique_ptr<ModelLibrary>> opened = ModelLibrary::open(library);
  if (!opened)
    return cl.fail(opened.error().message());
  Expected<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(weights);
  if (!checkpoint)
    return cl.fail(checkpoint.error().message());
  Expected<PackSummary> summary =
      writePackedWeights((*opened)->manifest(), **checkpoint, output);
  if (!summary)
    return cl.fail(summary.error().message());
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
