//===- RocmArch.cpp - the archs of rocm: targets --------------------------===//

#include "fdc/Dialect/Decode/IR/KnownTargets.h"
#include "fdc/Target/AMDGPU/AMDGPUSerializer.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace fdc;

LogicalResult
target::amdgpu::checkArch(StringRef arch,
                          function_ref<InFlightDiagnostic()> emitError) {
  std::optional<decode::GpuVendor> vendor = decode::getKnownGpuVendor(arch);
  if (vendor == decode::GpuVendor::amd)
    return success();
  SmallVector<StringRef> known;
  for (StringRef name : decode::getKnownGpuArchs())
    if (decode::getKnownGpuVendor(name) == decode::GpuVendor::amd)
      known.push_back(name);
  InFlightDiagnostic diag = emitError();
  if (vendor)
    diag << "'" << arch << "' is not an AMD GPU arch (for NVIDIA GPUs use "
         << "--target=cuda:" << arch << ")";
  else
    diag << "unknown AMD GPU arch '" << arch << "'";
  return diag << "; known AMD archs: " << llvm::join(known, ", ");
}
