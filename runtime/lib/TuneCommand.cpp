//===- TuneCommand.cpp - `fdc tune` / fdc-tune ----------------------------===//

#include "fdc/runtime/ToolCommands.h"
#include "fdc/runtime/Tuner.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

bool parseInt(const char *text, int64_t lo, int64_t hi, int64_t &out) {
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (errno || !*text || *end || value < lo || value > hi)
    return false;
  out = value;
  return true;
}
} // namespace

int fdcTuneMain(int argc, char **argv) {
  const char *program = argc > 0 ? argv[0] : "fdc-tune";
  TuneOptions options;
  std::string output;
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
    bool takesValue = arg == "-o" || arg == "--device" || arg == "--buckets" ||
                      arg == "--replays";
    if (takesValue && i + 1 >= argc)
      return usageError(arg + " needs a value");
    if (arg == "-o") {
      output = argv[++i];
    } else if (arg == "--device") {
      int64_t device = 0;
      if (!parseInt(argv[++i], 0, 1 << 16, device))
        return usageError(
            concat("--device '", argv[i], "' is not a device ordinal"));
      options.device = static_cast<int>(device);
    } else if (arg == "--replays") {
      int64_t replays = 0;
      if (!parseInt(argv[++i], 1, 1000, replays))
        return usageError(
            concat("--replays '", argv[i], "' is not an integer in [1, 1000]"));
      options.replays = static_cast<int>(replays);
    } else if (arg == "--buckets") {
      options.buckets.clear();
      std::string list = argv[++i];
      size_t begin = 0;
      while (begin <= list.size()) {
        size_t comma = list.find(',', begin);
        std::string item =
            list.substr(begin, comma == std::string::npos ? std::string::npos
                                                          : comma - begin);
        int64_t bucket = 0;
        if (!parseInt(item.c_str(), 1, 1 << 20, bucket) ||
            (!options.buckets.empty() && bucket <= options.buckets.back()))
          return usageError(concat("--buckets '", list,
                                   "' must be increasing integers in [1, ",
                                   1 << 20, "]"));
        options.buckets.push_back(bucket);
        if (comma == std::string::npos)
          break;
        begin = comma + 1;
      }
    } else if (arg[0] == '-' || !options.library.empty()) {
      return usageError("unexpected argument '" + arg + "'");
    } else {
      options.library = arg;
    }
  }
  if (options.library.empty())
    return usageError("no tuning library given");
  if (output.empty())
    return usageError("no output file given (-o tuning.json)");
  options.progress = [&](const std::string &line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  auto started = std::chrono::steady_clock::now();
  Expected<TuningResult> result = tuneLibrary(options);
  if (!result) {
    std::fprintf(stderr, "%s: error: %s\n", program,
                 result.error().message().c_str());
    return 1;
  }
  Expected<std::string> text = writeTuningFile(*result);
  if (!text) {
    std::fprintf(stderr, "%s: error: %s\n", program,
                 text.error().message().c_str());
    return 1;
  }
  std::ofstream file(output, std::ios::binary | std::ios::trunc);
  file << *text;
  file.close();
  if (!file) {
    std::fprintf(stderr, "%s: error: cannot write %s\n", program,
                 output.c_str());
    return 1;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::printf("wrote %s: %zu signatures tuned in %.1f s\n", output.c_str(),
              result->signatures.size(), seconds);
  return 0;
}
