//===- CudaArch.cpp - the archs of cuda: targets --------------------------===//

#include "CudaArch.h"

#include "fdc/Dialect/Decode/IR/KnownTargets.h"
#include "fdc/Target/NVPTX/NVPTXSerializer.h"

#include "llvm/ADT/StringExtras.h"

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
  if (!CudaArch::parse(arch))
    return emitError() << "bad CUDA arch '" << arch
                       << "': expected sm_XX, or sm_XXa from sm_90, e.g. "
                          "cuda:sm_90a,sm_80";
  // The generators need the GPU's description: the known-targets table's.
  if (decode::getKnownGpuVendor(arch) == decode::GpuVendor::nvidia)
    return success();
  SmallVector<StringRef> known;
  for (StringRef name : decode::getKnownGpuArchs())
    if (decode::getKnownGpuVendor(name) == decode::GpuVendor::nvidia)
      known.push_back(name);
  return emitError() << "unknown NVIDIA GPU arch '" << arch
                     << "'; known NVIDIA archs: " << llvm::join(known, ", ");
}
