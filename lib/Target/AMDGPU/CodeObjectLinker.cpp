//===- CodeObjectLinker.cpp - ld.lld for AMDGPU code objects --------------===//

#include "CodeObjectLinker.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
using namespace fdc::target::amdgpu;

#ifndef FDC_LLVM_TOOLS_DIR
#define FDC_LLVM_TOOLS_DIR ""
#endif

namespace {
/// A temporary file removed when it goes out of scope.
struct TemporaryFile {
  SmallString<128> path;
  std::optional<llvm::FileRemover> remover;

  LogicalResult create(StringRef prefix, StringRef suffix,
                       function_ref<InFlightDiagnostic()> emitError) {
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
      return emitError() << "cannot create a temporary file: " << ec.message();
    remover.emplace(path);
    return success();
  }
};
} // namespace

FailureOr<CodeObjectLinker>
CodeObjectLinker::find(function_ref<InFlightDiagnostic()> emitError) {
  if (const char *fromEnv = std::getenv("FDC_LLD")) {
    if (llvm::sys::fs::can_execute(fromEnv))
      return CodeObjectLinker(fromEnv);
    return emitError() << "FDC_LLD=" << fromEnv << " is not an executable";
  }
  SmallString<256> bundled(FDC_LLVM_TOOLS_DIR);
  if (!bundled.empty()) {
    llvm::sys::path::append(bundled, "ld.lld");
    if (llvm::sys::fs::can_execute(bundled))
      return CodeObjectLinker(bundled.str().str());
  }
  for (StringRef name : {"ld.lld-22", "ld.lld"})
    if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name))
      return CodeObjectLinker(*found);
  return emitError() << "no ld.lld to link the AMDGPU code objects: install "
                        "lld-22, or set FDC_LLD";
}

FailureOr<std::string>
CodeObjectLinker::link(ArrayRef<char> object, StringRef arch,
                       function_ref<InFlightDiagnostic()> emitError) const {
  TemporaryFile input, output, messages;
  if (failed(input.create("fdc-kernels-" + arch.str(), "o", emitError)) ||
      failed(output.create("fdc-kernels-" + arch.str(), "hsaco", emitError)) ||
      failed(messages.create("fdc-lld", "txt", emitError)))
    return failure();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input.path, ec);
    if (ec)
      return emitError() << "cannot write " << input.path << ": "
                         << ec.message();
    os.write(object.data(), object.size());
  }
  SmallVector<StringRef> argv = {
      path, "-shared",        "--no-undefined", input.path.str(),
      "-o", output.path.str()};
  std::optional<StringRef> redirects[] = {std::nullopt, messages.path.str(),
                                          messages.path.str()};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(path, argv, std::nullopt, redirects, 0,
                                         0, &error);
  if (status != 0) {
    InFlightDiagnostic diag = emitError()
                              << "linking the " << arch << " code object with "
                              << path << " failed (status " << status << ")";
    if (!error.empty())
      diag << ": " << error;
    if (auto text = llvm::MemoryBuffer::getFile(messages.path))
      if (!(*text)->getBuffer().trim().empty())
        diag << ": " << (*text)->getBuffer().trim();
    return diag;
  }
  auto buffer = llvm::MemoryBuffer::getFile(output.path, /*IsText=*/false);
  if (!buffer)
    return emitError() << "cannot read " << output.path;
  return (*buffer)->getBuffer().str();
}
