//===- InspectCommand.cpp - `fdc inspect` / fdc-inspect -------------------===//

#include "CommandLine.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/ToolCommands.h"
#include "fdc/runtime/Tuning.h"

#include <cstdio>
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
  std::string path;
  bool manifestOnly = false;
  CommandLine cl(argc, argv, "fdc-inspect", printUsage);
  cl.flag("--manifest", manifestOnly).positional(path);
  if (std::optional<int> exitCode = cl.parse())
    return *exitCode;
  if (path.empty())
    return cl.usageError();
  Expected<std::unique_ptr<ModelLibrary>> library = ModelLibrary::open(path);
  if (!library)
    return cl.fail(library.error().message());
  if (manifestOnly) {
    std::printf("%s\n", (*library)->manifestText());
    return 0;
  }
  Expected<json::Value> manifest = json::parse((*library)->manifestText());
  if (!manifest)
    return cl.fail(concat(path, ": ", manifest.error().message()));
  Expected<std::vector<LinearTable>> tables =
      parseLinearTables(*manifest, path);
  if (!tables)
    return cl.fail(tables.error().message());
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
      return cl.fail(signatures.error().message());
    text += formatTuneSignatures(*signatures);
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}
