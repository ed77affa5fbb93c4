//===- CompileTarget.cpp - `fdc compile --target=...` ---------------------===//

#include "fdc/Target/Compile.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::target;

std::string target::getSupportedTargetsText() {
  std::string text = "host";
  for (const GpuPlatform &platform : getGpuPlatforms())
    text += (", " + platform.syntax).str();
  return text;
}

FailureOr<CompileTarget>
target::parseCompileTarget(StringRef text,
                           function_ref<InFlightDiagnostic()> emitError) {
  CompileTarget result;
  result.name = text.str();
  if (text == "host")
    return result;
  auto [platformName, archList] = text.split(':');
  const GpuPlatform *platform =
      text.contains(':') ? lookupGpuPlatform(platformName) : nullptr;
  if (!platform)
    return emitError() << "unknown target '" << text
                       << "'; supported targets: " << getSupportedTargetsText();
  if (archList.empty())
    return emitError() << platform->displayName << " target '" << text
                       << "' lists no arch; expected " << platform->syntax;
  SmallVector<StringRef> archs;
  archList.split(archs, ',');
  for (StringRef arch : archs) {
    if (arch.empty())
      return emitError() << platform->displayName << " target '" << text
                         << "' has an empty arch; expected "
                         << platform->syntax;
    if (failed(platform->checkArch(arch, emitError)))
      return failure();
    if (llvm::is_contained(result.archs, arch))
      return emitError() << platform->displayName << " arch '" << arch
                         << "' is listed twice";
    result.archs.push_back(arch.str());
  }
  result.platform = platform;
  return result;
}
