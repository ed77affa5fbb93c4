//===- MappedFile.h - Read-only memory-mapped file --------------*- C++ -*-===//

#ifndef FDC_RUNTIME_MAPPEDFILE_H
#define FDC_RUNTIME_MAPPEDFILE_H

#include "fdc/runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fdc::runtime {

/// A whole file mapped read-only; unmapped on destruction.
class MappedFile {
public:
  static Expected<std::unique_ptr<MappedFile>> open(const std::string &path);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return bytes; }
  size_t size() const { return length; }
  const std::string &path() const { return filePath; }

private:
  MappedFile(std::string path, const uint8_t *bytes, size_t length)
      : filePath(std::move(path)), bytes(bytes), length(length) {}

  std::string filePath;
  const uint8_t *bytes;
  size_t length;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MAPPEDFILE_H
