//===- GpuManifest.cpp - the manifest fields of GPU libraries -------------===//
//
// The kernels and the scratch that convert-decode-to-gpu recorded on the
// module; the same for every vendor.
//
//===----------------------------------------------------------------------===//

#include "fdc/Target/ModelLibrary.h"

#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace fdc;

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
  auto attr = [&](StringRef name) -> int64_t {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  object["scratch"] = llvm::json::Object{
      {"bytes_per_sequence", attr("fdc.scratch_bytes_per_sequence")},
      {"fixed_bytes", attr("fdc.scratch_fixed_bytes")}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  return text;
}
