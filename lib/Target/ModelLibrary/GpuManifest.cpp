//===- GpuManifest.cpp - the manifest fields of GPU libraries -------------===//
//
// The kernels and the scratch that convert-decode-to-gpu recorded on the
// module; the same for every vendor.
//
//===----------------------------------------------------------------------===//

#include "fdc/Target/ModelLibrary.h"
#include "fdc_model_abi.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace fdc;

namespace {
llvm::json::Object kernelToJson(decode::KernelAttr kernel) {
  llvm::json::Object config;
  for (NamedAttribute entry : kernel.getConfig())
    if (auto value = dyn_cast<IntegerAttr>(entry.getValue()))
      config[entry.getName().str()] = value.getInt();
  return llvm::json::Object{{"family", kernel.getFamily().str()},
                            {"config", std::move(config)}};
}

/// A #decode.kernel (one kernel for every M) or #decode.dispatch.
llvm::json::Object dispatchToJson(Attribute kernels) {
  llvm::json::Array bounds, list;
  if (auto dispatch = dyn_cast<decode::KernelDispatchAttr>(kernels)) {
    for (int64_t bound : dispatch.getMaxBatch().asArrayRef())
      bounds.push_back(bound);
    for (decode::KernelAttr kernel : dispatch.getKernelList())
      list.push_back(kernelToJson(kernel));
  } else if (auto kernel = dyn_cast<decode::KernelAttr>(kernels)) {
    list.push_back(kernelToJson(kernel));
  }
  return llvm::json::Object{{"max_batch", std::move(bounds)},
                            {"kernels", std::move(list)}};
}

/// The entries of a dictionary convert-decode-to-gpu recorded: integers,
/// booleans, strings; `kernels` as a table, `candidates` as a list.
llvm::json::Object recordToJson(DictionaryAttr record) {
  llvm::json::Object object;
  for (NamedAttribute entry : record) {
    std::string name = entry.getName().str();
    Attribute value = entry.getValue();
    if (name == "kernels") {
      object["dispatch"] = dispatchToJson(value);
    } else if (auto list = dyn_cast<ArrayAttr>(value)) {
      llvm::json::Array kernels;
      for (Attribute kernel : list)
        kernels.push_back(kernelToJson(cast<decode::KernelAttr>(kernel)));
      object[name] = std::move(kernels);
    } else if (auto flag = dyn_cast<BoolAttr>(value)) {
      object[name] = flag.getValue();
    } else if (auto integer = dyn_cast<IntegerAttr>(value)) {
      object[name] = integer.getInt();
    } else if (auto text = dyn_cast<StringAttr>(value)) {
      object[name] = text.str();
    }
  }
  return object;
}
} // namespace

FailureOr<std::string> target::addGpuManifestFields(StringRef manifest,
                                                    ModuleOp module) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(manifest);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return emitError(module.getLoc()) << "internal error: bad manifest JSON";
  }
  llvm::json::Object &object = *parsed->getAsObject();
  llvm::json::Array kernels;
  if (auto names = module->getAttrOfType<ArrayAttr>("fdc.kernels"))
    for (Attribute name : names)
      kernels.push_back(
          llvm::json::Object{{"name", cast<StringAttr>(name).str()}});
  object["kernels"] = std::move(kernels);
  // Kernels that wait for the one before them at their start may be
  // launched before it ends (#decode.gpu_target's dependent_launch).
  auto gpuTarget = module->getAttrOfType<decode::GpuTargetAttr>(
      decode::GpuTargetAttr::getModuleAttrName());
  object["dependent_launch"] = gpuTarget && gpuTarget.hasDependentLaunch();
  auto attr = [&](StringRef name) -> int64_t {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  object["scratch"] = llvm::json::Object{
      {"bytes_per_sequence", attr("fdc.scratch_bytes_per_sequence")},
      {"fixed_bytes", attr("fdc.scratch_fixed_bytes")}};
  // Every distinct decode.linear's kernels: its dispatch table as compiled.
  llvm::json::Array linears;
  if (auto tables = module->getAttrOfType<ArrayAttr>("fdc.linear_tables"))
    for (Attribute table : tables)
      linears.push_back(recordToJson(cast<DictionaryAttr>(table)));
  object["linears"] = std::move(linears);
  // A tuning library's candidates (fdc_tune_launch).
  if (auto tuned = module->getAttrOfType<ArrayAttr>("fdc.tune_signatures")) {
    llvm::json::Array signatures;
    for (Attribute signature : tuned)
      signatures.push_back(recordToJson(cast<DictionaryAttr>(signature)));
    object["tuning"] =
        llvm::json::Object{{"version", int64_t(FDC_TUNE_ABI_VERSION)},
                           {"entry", "fdc_tune_launch"},
                           {"signatures", std::move(signatures)}};
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  return text;
}
