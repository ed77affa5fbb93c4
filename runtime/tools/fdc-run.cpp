//===- fdc-run.cpp - Run a compiled model library -------------------------===//

#include "fdc/runtime/RunCommand.h"

int main(int argc, char **argv) { return fdcRunMain(argc, argv); }
