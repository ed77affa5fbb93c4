//===- fdc-tune.cpp - Measure a tuning library's dispatch tables ----------===//

#include "fdc/runtime/ToolCommands.h"

int main(int argc, char **argv) { return fdcTuneMain(argc, argv); }
