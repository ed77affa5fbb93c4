//===- DType.cpp - Element types of checkpoints and model libraries -------===//

#include "fdc/runtime/DType.h"

using namespace fdc::runtime;

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view safetensorsName;
  size_t size;
};

constexpr DTypeInfo dtypeTable[] = {
    {DType::Bool, "BOOL", 1},      {DType::U8, "U8", 1},
    {DType::I8, "I8", 1},          {DType::F8E4M3, "F8_E4M3", 1},
    {DType::F8E5M2, "F8_E5M2", 1}, {DType::U16, "U16", 2},
    {DType::I16, "I16", 2},        {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2},      {DType::U32, "U32", 4},
    {DType::I32, "I32", 4},        {DType::F32, "F32", 4},
    {DType::U64, "U64", 8},        {DType::I64, "I64", 8},
    {DType::F64, "F64", 8},
};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &entry : dtypeTable)
    if (entry.dtype == dtype)
      return entry;
  return dtypeTable[0];
}
} // namespace

size_t fdc::runtime::dtypeSize(DType dtype) { return info(dtype).size; }

std::string_view fdc::runtime::safetensorsDTypeName(DType dtype) {
  return info(dtype).safetensorsName;
}

std::optional<DType>
fdc::runtime::parseSafetensorsDType(std::string_view name) {
  for (const DTypeInfo &entry : dtypeTable)
    if (entry.safetensorsName == name)
      return entry.dtype;
  return std::nullopt;
}

std::string_view fdc::runtime::manifestDTypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "f32";
  case DType::BF16:
    return "bf16";
  case DType::F16:
    return "f16";
  default:
    return safetensorsDTypeName(dtype);
  }
}

std::optional<DType> fdc::runtime::parseManifestDType(std::string_view name) {
  if (name == "f32")
    return DType::F32;
  if (name == "bf16")
    return DType::BF16;
  if (name == "f16")
    return DType::F16;
  return std::nullopt;
}
