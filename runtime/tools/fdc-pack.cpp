//===- fdc-pack.cpp - Pack a library's int4 / tiled_csl weights once ------===//

#include "fdc/runtime/ToolCommands.h"

int main(int argc, char **argv) { return fdcPackMain(argc, argv); }
