//===- Safetensors.h - Validating safetensors reader ------------*- C++ -*-===//
//
// File layout: an 8-byte little-endian u64 N, N bytes of JSON header
//   {name: {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]},
//    "__metadata__"?: {string: string}}
// then the data section; offsets are relative to the data section.
//
// Everything is validated before a tensor can be read: the header length
// against the file size, the JSON, each dtype, offsets against the data size,
// byte sizes against shape x dtype size (overflow-checked), and overlaps.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_SAFETENSORS_H
#define FDC_RUNTIME_SAFETENSORS_H

#include "fdc/runtime/DType.h"
#include "fdc/runtime/Error.h"
#include "fdc/runtime/MappedFile.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime {

/// Headers larger than this are refused before they are parsed (the
/// reference implementation uses the same limit).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  /// Byte range within the data section.
  uint64_t begin = 0;
  uint64_t end = 0;

  uint64_t byteSize() const { return end - begin; }
};

struct SafetensorsHeader {
  /// Sorted by name.
  std::vector<SafetensorsTensorInfo> tensors;
  std::map<std::string, std::string> metadata;
  /// File offset of the data section (8 + header length).
  uint64_t dataOffset = 0;

  const SafetensorsTensorInfo *find(std::string_view name) const;
};

/// Parses and validates the header of the safetensors file image
/// [data, data + size). `fileName` is only used in error messages.
Expected<SafetensorsHeader> parseSafetensorsHeader(const uint8_t *data,
                                                   size_t size,
                                                   std::string_view fileName);

/// A memory-mapped, validated safetensors file.
class SafetensorsFile {
public:
  static Expected<std::unique_ptr<SafetensorsFile>>
  open(const std::string &path);

  const std::string &path() const { return file->path(); }
  const SafetensorsHeader &header() const { return parsed; }
  const SafetensorsTensorInfo *find(std::string_view name) const {
    return parsed.find(name);
  }
  /// The bytes of a tensor of this file.
  const uint8_t *tensorData(const SafetensorsTensorInfo &info) const {
    return file->data() + parsed.dataOffset + info.begin;
  }

private:
  SafetensorsFile(std::unique_ptr<MappedFile> file, SafetensorsHeader header)
      : file(std::move(file)), parsed(std::move(header)) {}

  std::unique_ptr<MappedFile> file;
  SafetensorsHeader parsed;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_SAFETENSORS_H
