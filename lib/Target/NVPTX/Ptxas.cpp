//===- Ptxas.cpp - the CUDA toolkit's PTX assembler -----------------------===//

#include "Ptxas.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace fdc::target::nvptx;

std::optional<Ptxas> Ptxas::find(StringRef cudaPath) {
  SmallString<256> path(cudaPath);
  llvm::sys::path::append(path, "bin", "ptxas");
  if (llvm::sys::fs::can_execute(path))
    return Ptxas(path.str().str());
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas"))
    return Ptxas(*found);
  return std::nullopt;
}

FailureOr<std::string> Ptxas::compile(StringRef ptx, StringRef arch,
                                      Location loc) const {
  SmallString<128> ptxPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fdc-kernels", "ptx", ptxPath))
    return emitError(loc) << "cannot create a temporary file: " << ec.message();
  llvm::FileRemover removePtx(ptxPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (ec)
      return emitError(loc)
             << "cannot write " << ptxPath << ": " << ec.message();
    os << ptx;
  }
  SmallString<128> cubinPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fdc-kernels", "cubin", cubinPath))
    return emitError(loc) << "cannot create a temporary file: " << ec.message();
  llvm::FileRemover removeCubin(cubinPath);
  std::string archFlag = ("-arch=" + arch).str();
  SmallVector<StringRef> argv = {path,    "-O3", archFlag,
                                 ptxPath, "-o",  cubinPath};
  std::string error;
  int status =
      llvm::sys::ExecuteAndWait(path, argv, std::nullopt, {}, 0, 0, &error);
  if (status != 0)
    return emitError(loc) << "ptxas " << archFlag << " failed (status "
                          << status << ")" << (error.empty() ? "" : ": ")
                          << error;
  auto buffer = llvm::MemoryBuffer::getFile(cubinPath);
  if (!buffer)
    return emitError(loc) << "cannot read " << cubinPath;
  return (*buffer)->getBuffer().str();
}
