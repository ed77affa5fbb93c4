//===- Safetensors.cpp - Validating safetensors reader --------------------===//

#include "fdc/runtime/Safetensors.h"

#include "fdc/runtime/Json.h"

#include <algorithm>

using namespace fdc::runtime;

const SafetensorsTensorInfo *
SafetensorsHeader::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const SafetensorsTensorInfo &t,
                                std::string_view n) { return t.name < n; });
  if (it == tensors.end() || it->name != name)
    return nullptr;
  return &*it;
}

namespace {

/// Parses one tensor entry of the header.
Expected<SafetensorsTensorInfo> parseTensorEntry(const std::string &name,
                                                 const json::Value &entry,
                                                 uint64_t dataSize,
                                                 std::string_view fileName) {
  auto fail = [&](const auto &...args) {
    return createError("safetensors file '", fileName, "': tensor '", name,
                       "': ", args...);
  };
  const json::Object *object = entry.getObject();
  if (!object)
    return fail("entry is not an object");
  for (const auto &member : *object)
    if (member.first != "dtype" && member.first != "shape" &&
        member.first != "data_offsets")
      return fail("unknown field '", member.first, "'");

  SafetensorsTensorInfo info;
  info.name = name;

  const json::Value *dtype = entry.get("dtype");
  if (!dtype || !dtype->getString())
    return fail("missing or non-string \"dtype\"");
  std::optional<DType> parsedDType = parseSafetensorsDType(*dtype->getString());
  if (!parsedDType)
    return fail("unknown dtype '", *dtype->getString(), "'");
  info.dtype = *parsedDType;

  const json::Value *shape = entry.get("shape");
  if (!shape || !shape->getArray())
    return fail("missing or non-array \"shape\"");
  uint64_t elements = 1;
  bool overflow = false;
  for (const json::Value &dim : *shape->getArray()) {
    std::optional<int64_t> value = dim.getInt64();
    if (!value || *value < 0 || !dim.isNumber())
      return fail("shape entries must be non-negative integers");
    info.shape.push_back(*value);
    uint64_t d = static_cast<uint64_t>(*value);
    if (d != 0 && elements > UINT64_MAX / d)
      overflow = true;
    else
      elements *= d;
  }
  uint64_t itemSize = dtypeSize(info.dtype);
  if (!overflow && elements > UINT64_MAX / itemSize)
    overflow = true;
  // A zero-sized dimension makes the product zero however large the rest.
  if (std::find(info.shape.begin(), info.shape.end(), 0) != info.shape.end())
    overflow = false, elements = 0;
  if (overflow)
    return fail("shape has more bytes than fit in 64 bits");
  uint64_t expectedBytes = elements * itemSize;

  const json::Value *offsets = entry.get("data_offsets");
  const json::Array *offsetArray = offsets ? offsets->getArray() : nullptr;
  if (!offsetArray || offsetArray->size() != 2)
    return fail("\"data_offsets\" must be an array [begin, end]");
  std::optional<int64_t> begin = (*offsetArray)[0].getInt64();
  std::optional<int64_t> end = (*offsetArray)[1].getInt64();
  if (!begin || !end || *begin < 0 || *end < 0)
    return fail("\"data_offsets\" must be non-negative integers");
  if (*end < *begin)
    return fail("data_offsets end ", *end, " is before begin ", *begin);
  info.begin = static_cast<uint64_t>(*begin);
  info.end = static_cast<uint64_t>(*end);
  if (info.end > dataSize)
    return fail("data_offsets [", info.begin, ", ", info.end,
                "] run past the data section (", dataSize, " bytes)");
  if (info.byteSize() != expectedBytes)
    return fail("holds ", info.byteSize(), " bytes but shape and dtype ",
                safetensorsDTypeName(info.dtype), " need ", expectedBytes);
  return info;
}

} // namespace

Expected<SafetensorsHeader>
fdc::runtime::parseSafetensorsHeader(const uint8_t *data, size_t size,
                                     std::string_view fileName) {
  auto fail = [&](const auto &...args) {
    return createError("safetensors file '", fileName, "': ", args...);
  };
  if (size < 8)
    return fail("file is ", size,
                " bytes, too short for the 8-byte header "
                "length");
  uint64_t headerLength = 0;
  for (int i = 7; i >= 0; --i)
    headerLength = (headerLength << 8) | data[i];
  if (headerLength > kMaxSafetensorsHeaderBytes)
    return fail("header length ", headerLength, " exceeds the limit of ",
                kMaxSafetensorsHeaderBytes, " bytes");
  if (headerLength > size - 8)
    return fail("header length ", headerLength, " runs past the end of the ",
                size, "-byte file");

  std::string_view text(reinterpret_cast<const char *>(data + 8),
                        static_cast<size_t>(headerLength));
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return fail("bad header: ", root.error().message());
  const json::Object *object = root->getObject();
  if (!object)
    return fail("header is not a JSON object");

  SafetensorsHeader header;
  header.dataOffset = 8 + headerLength;
  uint64_t dataSize = size - header.dataOffset;
  for (const auto &[name, entry] : *object) {
    if (name == "__metadata__") {
      const json::Object *metadata = entry.getObject();
      if (!metadata)
        return fail("__metadata__ is not an object");
      for (const auto &[key, value] : *metadata) {
        if (!value.getString())
          return fail("__metadata__ value of '", key, "' is not a string");
        header.metadata.emplace(key, *value.getString());
      }
      continue;
    }
    Expected<SafetensorsTensorInfo> info =
        parseTensorEntry(name, entry, dataSize, fileName);
    if (!info)
      return info.takeError();
    header.tensors.push_back(std::move(*info));
  }
  // json::Object is ordered by key, so the tensors are sorted by name.

  // Overlap check on the tensors that hold bytes, in offset order.
  std::vector<const SafetensorsTensorInfo *> byOffset;
  for (const SafetensorsTensorInfo &info : header.tensors)
    if (info.byteSize() > 0)
      byOffset.push_back(&info);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafetensorsTensorInfo *a, const SafetensorsTensorInfo *b) {
              return a->begin < b->begin;
            });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      return fail("tensors '", byOffset[i - 1]->name, "' and '",
                  byOffset[i]->name, "' overlap");
  return header;
}

Expected<std::unique_ptr<SafetensorsFile>>
SafetensorsFile::open(const std::string &path) {
  Expected<std::unique_ptr<MappedFile>> file = MappedFile::open(path);
  if (!file)
    return file.takeError();
  Expected<SafetensorsHeader> header =
      parseSafetensorsHeader((*file)->data(), (*file)->size(), path);
  if (!header)
    return header.takeError();
  return std::unique_ptr<SafetensorsFile>(
      new SafetensorsFile(std::move(*file), std::move(*header)));
}
