//===- CompileCommand.h - `fdc compile` -------------------------*- C++ -*-===//

#ifndef FDC_TOOLS_FDC_COMPILECOMMAND_H
#define FDC_TOOLS_FDC_COMPILECOMMAND_H

namespace fdc {
/// fdc compile MODEL.mlir --target=host -o MODEL.so
int compileMain(int argc, char **argv);
} // namespace fdc

#endif // FDC_TOOLS_FDC_COMPILECOMMAND_H
