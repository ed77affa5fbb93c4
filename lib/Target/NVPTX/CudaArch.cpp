//===- CudaArch.cpp - the archs of cuda: targets --------------------------===//

#include "CudaArch.h"

#include "fdc/Target/NVPTX/NVPTXSerializer.h"

using namespace mlir;
using namespace fdc::target;

std::optional<nvptx::CudaArch> nvptx::CudaArch::parse(StringRef name) {
  CudaArch parsed;
  StringRef digits = name;
  parsed.archSpecific = digits.consume_back("a");
  if (!digits.consume_front("sm_") || digits.getAsInteger(10, parsed.version) ||
      parsed.version < 70 || (parsed.archSpecific && parsed.version < 90))
    return std::nullopt;
  return parsed;
}

LogicalResult nvptx::checkArch(StringRef arch,
                               function_ref<InFlightDiagnostic()> emitError) {
  if (CudaArch::parse(arch))
    return success();
  return emitError() << "bad CUDA arch '" << arch
                     << "': expected sm_XX with XX >= 70, or sm_XXa with XX "
                        ">= 90, e.g. cuda:sm_90a,sm_80";
}
