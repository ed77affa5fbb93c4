//===- TuneCommand.cpp - `fdc tune` / fdc-tune ----------------------------===//

#include "CommandLine.h"
#include "fdc/runtime/ToolCommands.h"
#include "fdc/runtime/Tuner.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using namespace fdc::runtime;

namespace {
void printUsage(FILE *out, const char *program) {
  std::fprintf(
      out,
      "usage: %s TUNING.so -o TUNING.json [--device N]\n"
      "          [--buckets 1,2,4,...] [--replays N]\n"
      "\n"
      "Times every candidate kernel of a tuning library (fdc compile\n"
      "--target=cuda:sm_XX --tuning-candidates) on the GPU, for every "
      "linear\nsignature and batch size, and writes the tuning file "
      "(fdc compile --tuning).\n"
      "  -o FILE      the tuning file to write\n"
      "  --device N   the CUDA device (default $FDC_CUDA_DEVICE, else 0)\n"
      "  --buckets    the batch sizes timed (default "
      "1,2,4,8,16,32,64,128,256)\n"
      "  --replays    timed graph replays per candidate, median (default 7)\n",
      program);
}
} // namespace

int fdcTuneMain(int argc, char **argv) {
  TuneOptions options;
  std::string output;
  CommandLine::Syntax syntax;
  syntax.sayOption = false;
  CommandLine cl(argc, argv, "fdc-tune", printUsage, syntax);
  cl.option("-o", output);
  cl.option("--device", [&](const std::string &value) {
    int64_t device = 0;
    if (!parseInteger(value, 0, 1 << 16, device))
      return createError("--device '", value, "' is not a device ordinal");
    options.device = static_cast<int>(device);
    return Error::success();
  });
  cl.option("--replays", [&](const std::string &value) {
    int64_t replays = 0;
    if (!parseInteger(value, 1, 1000, replays))
      return createError("--replays '", value,
                         "' is not an integer in [1, 1000]");
    options.replays = static_cast<int>(replays);
    return Error::success();
  });
  cl.option("--buckets", [&](const std::string &value) {
    options.buckets.clear();
    for (const std::string &item : splitList(value)) {
      int64_t bucket = 0;
      if (!parseInteger(item, 1, 1 << 20, bucket) ||
          (!options.buckets.empty() && bucket <= options.buckets.back()))
        return createError("--buckets '", value,
                           "' must be increasing integers in [1, ", 1 << 20,
                           "]");
      options.buckets.push_back(bucket);
    }
    return Error::success();
  });
  cl.positional(options.library);
  if (std::optional<int> exitCode = cl.parse())
    return *exitCode;
  if (options.library.empty())
    return cl.usageError("no tuning library given");
  if (output.empty())
    return cl.usageError("no output file given (-o tuning.json)");
  options.progress = [&](const std::string &line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  auto started = std::chrono::steady_clock::now();
  Expected<TuningResult> result = tuneLibrary(options);
  if (!result)
    return cl.fail(result.error().message());
  Expected<std::string> text = writeTuningFile(*result);
  if (!text)
    return cl.fail(text.error().message());
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  file << *text;
  file.close();
  if (!file)
    return cl.fail("cannot write " + output);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::printf("wrote %s: %zu signatures tuned in %.1f s\n", output.c_str(),
              result->signatures.size(), seconds);
  return 0;
}
