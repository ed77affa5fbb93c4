//===- fdc-inspect.cpp - Print a model library's kernel tables ------------===//

#include "fdc/runtime/ToolCommands.h"

int main(int argc, char **argv) { return fdcInspectMain(argc, argv); }
