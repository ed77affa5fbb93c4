//===- DType.h - Element types of checkpoints and model libraries -*- C++
//-*-===//
//
// Safetensors names dtypes in upper case ("F32", "BF16"); the model-library
// manifest in lower case ("f32", "bf16"). Both map to one DType.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_DTYPE_H
#define FDC_RUNTIME_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace fdc::runtime {

enum class DType {
  Bool,
  U8,
  I8,
  F8E4M3,
  F8E5M2,
  U16,
  I16,
  F16,
  BF16,
  U32,
  I32,
  F32,
  U64,
  I64,
  F64,
};

/// Size of one element in bytes.
size_t dtypeSize(DType dtype);

/// The safetensors spelling ("F32", "BF16", "F8_E4M3", ...).
std::string_view safetensorsDTypeName(DType dtype);
std::optional<DType> parseSafetensorsDType(std::string_view name);

/// The manifest spelling: "f32", "bf16", "f16" (the only dtypes a model
/// library's weights may have).
std::string_view manifestDTypeName(DType dtype);
std::optional<DType> parseManifestDType(std::string_view name);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_DTYPE_H
