//===- SafetensorsFuzzer.cpp - libFuzzer target for safetensors and JSON --===//
//
// The first byte picks the parser: even = the input after it is a whole
// safetensors file image, odd = it is JSON text. Every tensor a successful
// parse reports is read end to end so that AddressSanitizer sees any range
// that lies outside the input.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Json.h"
#include "fdc/runtime/Safetensors.h"

#include <cstdlib>

using namespace fdc::runtime;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t *body = data + 1;
  size_t bodySize = size - 1;
  if (data[0] & 1) {
    json::ParseOptions options;
    options.maxDepth = 32;
    (void)json::parse(
        std::string_view(reinterpret_cast<const char *>(body), bodySize),
        options);
    return 0;
  }

  Expected<SafetensorsHeader> header =
      parseSafetensorsHeader(body, bodySize, "fuzz");
  if (!header)
    return 0;
  if (header->dataOffset > bodySize)
    std::abort();
  unsigned checksum = 0;
  for (const SafetensorsTensorInfo &info : header->tensors) {
    if (info.end < info.begin || info.end > bodySize - header->dataOffset)
      std::abort();
    const uint8_t *bytes = body + header->dataOffset + info.begin;
    for (uint64_t i = 0; i < info.byteSize(); ++i)
      checksum += bytes[i];
    if (header->find(info.name) != &info)
      std::abort();
  }
  volatile unsigned sink = checksum;
  (void)sink;
  return 0;
}
