//===- HipTarget.cpp - rocm:gfxXXX targets, pure helpers ------------------===//

#include "fdc/runtime/hip/HipTarget.h"

#include <algorithm>

using namespace fdc::runtime;
using namespace fdc::runtime::hip;

namespace {
constexpr std::string_view kPrefix = "rocm:";
/// gcnArchName is a char[256] in every hipDeviceProp_t layout, and so is
/// the `name` that comes first.
constexpr size_t kNameFieldBytes = 256;

bool isLowerAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
}

bool isFeatureChar(char c) {
  return isLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
         c == '+' || c == '-';
}

/// "gfx" followed by at least one [0-9a-z].
bool isArchName(std::string_view name) {
  return name.size() > 3 && name.substr(0, 3) == "gfx" &&
         std::all_of(name.begin() + 3, name.end(), isLowerAlnum);
}

/// Whether the NUL-terminated string at `text` (at most `limit` bytes, the
/// NUL included) is a gcnArchName; its length in `length`.
bool isGcnArchNameAt(const char *text, size_t limit, size_t &length) {
  size_t n = 0;
  while (n < limit && text[n] != '\0')
    ++n;
  if (n == limit)
    return false; // Not terminated in time.
  std::string_view candidate(text, n);
  std::string_view arch = candidate.substr(0, candidate.find(':'));
  if (!isArchName(arch))
    return false;
  std::string_view features = candidate.substr(arch.size());
  if (!std::all_of(features.begin(), features.end(), isFeatureChar))
    return false;
  length = n;
  return true;
}
} // namespace

bool fdc::runtime::hip::isHipTarget(std::string_view target) {
  return target.substr(0, kPrefix.size()) == kPrefix;
}

Expected<HipTarget> fdc::runtime::hip::parseHipTarget(std::string_view target) {
  auto fail = [&](const auto &...args) {
    return createError("malformed rocm target '", target, "': ", args...);
  };
  if (!isHipTarget(target))
    return fail("it does not start with 'rocm:'");
  std::string_view list = target.substr(kPrefix.size());
  if (list.empty())
    return fail("no architecture after 'rocm:' (expected e.g. rocm:gfx90a)");
  HipTarget parsed;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string_view item = list.substr(start, comma == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : comma - start);
    if (!isArchName(item))
      return fail("'", item, "' is not an architecture like gfx90a or gfx1100");
    if (std::find(parsed.archs.begin(), parsed.archs.end(), item) !=
        parsed.archs.end())
      return fail("'", item, "' is listed twice");
    parsed.archs.emplace_back(item);
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return parsed;
}

std::string fdc::runtime::hip::hsacoSymbol(std::string_view arch) {
  return concat("fdc_hsaco_", arch);
}

std::string fdc::runtime::hip::hsacoSizeSymbol(std::string_view arch) {
  return concat("fdc_hsaco_", arch, "_size");
}

std::string fdc::runtime::hip::archOfGcnArchName(std::string_view gcnArchName) {
  return std::string(gcnArchName.substr(0, gcnArchName.find(':')));
}

std::optional<std::string>
fdc::runtime::hip::hsacoSymbolFor(const HipTarget &target,
                                  std::string_view deviceArch) {
  for (const std::string &arch : target.archs)
    if (arch == deviceArch)
      return hsacoSymbol(arch);
  return std::nullopt;
}

std::string fdc::runtime::hip::findGcnArchName(const void *properties,
                                               size_t size) {
  const char *bytes = static_cast<const char *>(properties);
  for (size_t i = kNameFieldBytes; i + 4 <= size; ++i) {
    if (bytes[i - 1] != '\0' || bytes[i] != 'g')
      continue;
    size_t length = 0;
    if (isGcnArchNameAt(bytes + i, std::min(size - i, kNameFieldBytes), length))
      return std::string(bytes + i, length);
  }
  return "";
}
