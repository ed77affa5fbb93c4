//===- InspectCommand.cpp - `fdc inspect` / fdc-inspect -------------------===//

#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/ToolCommands.h"
#include "fdc/runtime/Tuning.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace fdc::runtime;

namespace {
void printUsage(FILE *out, const char *program) {
  std::fprintf(out,
               "usage: %s MODEL.so [--manifest]\n"
               "\n"
               "Prints a model library's target and the dispatch table of "
               "every\ndistinct decode.linear signature (M ranges and "
               "kernels, heuristic,\ntuned or written in the IR); for a "
               "tuning library also its candidates, for a\n"
               "tensor-parallel one its ranks.\n"
               "  --manifest   print the manifest JSON instead\n",
               program);
}
} // namespace

int fdcInspectMain(int argc, char **argv) {
  const char *program = argc > 0 ? argv[0] : "fdc-inspect";
  std::string path;
  bool manifestOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      printUsage(stdout, program);
      return 0;
    }
    if (!std::strcmp(argv[i], "--manifest")) {
      manifestOnly = true;
    } else if (argv[i][0] == '-' || !path.empty()) {
      std::fprintf(stderr, "%s: error: unexpected argument '%s'\n", program,
                   argv[i]);
      printUsage(stderr, program);
      return 2;
    } else {
      path = argv[i];
    }
  }
  if (path.empty()) {
    printUsage(stderr, program);
    return 2;
  }
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", program, message.c_str());
    return 1;
  };
  Expected<std::unique_ptr<ModelLibrary>> library = ModelLibrary::open(path);
  if (!library)
    return fail(library.error().message());
  if (manifestOnly) {
    std::printf("%s\n", (*library)->manifestText());
    return 0;
  }
  Expected<json::Value> manifest = json::parse((*library)->manifestText());
  if (!manifest)
    return fail(concat(path, ": ", manifest.error().message()));
  Expected<std::vector<LinearTable>> tables =
      parseLinearTables(*manifest, path);
  if (!tables)
    return fail(tables.error().message());
  std::string text = formatLinearTables((*library)->manifest().model,
                                        (*library)->target(), *tables);
  if (int64_t ranks = (*library)->manifest().tensorParallel; ranks > 1) {
    // After the first line ("model M, target T").
    size_t lineEnd = text.find('\n');
    text.insert(lineEnd == std::string::npos ? text.size() : lineEnd + 1,
                concat("tensor parallel: ", ranks, " ranks\n"));
  }
  if (manifest->get("tuning")) {
    Expected<std::vector<TuneSignature>> signatures =
        parseTuneSignatures(*manifest, path);
    if (!signatures)
      return fail(signatures.error().message());
    text += formatTuneSignatures(*signatures);
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}
