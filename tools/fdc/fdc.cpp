//===- fdc.cpp - the fdc driver -------------------------------------------===//
//
//   fdc compile model.mlir --target=host -o model.so
//   fdc run model.so --weights CHECKPOINT_DIR --prompt-ids 1,2,3 ...
//   fdc inspect model.so
//   fdc tune tuning.so -o tuning.json
//   fdc pack model.so --weights CHECKPOINT_DIR -o model.packed
//
//===----------------------------------------------------------------------===//

#include "CompileCommand.h"

#include "fdc/runtime/RunCommand.h"
#include "fdc/runtime/ToolCommands.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <string>

static void printUsage(llvm::raw_ostream &os) {
  os << "usage: fdc <command> [options]\n\n"
        "commands:\n"
        "  compile   model IR (.mlir) -> AOT model library (.so)\n"
        "  run       load a model library and weights, generate tokens\n"
        "  inspect   print a model library's linear dispatch tables\n"
        "  tune      time a tuning library's kernels on the GPU, write the "
        "tuning file\n"
        "  pack      pack a library's int4 / tiled_csl weights once, for fast "
        "loading\n\n"
        "`fdc <command> --help` describes a command's options.\n";
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  if (argc < 2 || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    printUsage(argc < 2 ? llvm::errs() : llvm::outs());
    return argc < 2 ? 2 : 0;
  }
  // The subcommand sees itself as argv[0], so messages read "fdc compile: ...".
  std::string name = std::string("fdc ") + argv[1];
  argv[1] = name.data();
  if (!std::strcmp(argv[1] + 4, "compile"))
    return fdc::compileMain(argc - 1, argv + 1);
  if (!std::strcmp(argv[1] + 4, "run"))
    return fdcRunMain(argc - 1, argv + 1);
  // The runtime's tools (also built without LLVM: fdc-inspect, fdc-tune,
  // fdc-pack).
  if (!std::strcmp(argv[1] + 4, "inspect"))
    return fdcInspectMain(argc - 1, argv + 1);
  if (!std::strcmp(argv[1] + 4, "tune"))
    return fdcTuneMain(argc - 1, argv + 1);
  if (!std::strcmp(argv[1] + 4, "pack"))
    return fdcPackMain(argc - 1, argv + 1);
  llvm::errs() << "fdc: unknown command '" << argv[1] + 4 << "'\n";
  printUsage(llvm::errs());
  return 2;
}
