//===- MappedFile.h - Read-only memory-mapped file --------------*- C++ -*-===//

#ifndef FDC_RUNTIME_MAPPEDFILE_H
#define FDC_RUNTIME_MAPPEDFILE_H

#include "fdc/runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fdc::runtime {

/// A file descriptor, closed on destruction.
class FileDescriptor {
public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd(fd) {}
  FileDescriptor(FileDescriptor &&other) noexcept : fd(other.release()) {}
  FileDescriptor &operator=(FileDescriptor &&other) noexcept;
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor();

  int get() const { return fd; }
  int release() {
    int result = fd;
    fd = -1;
    return result;
  }

private:
  int fd = -1;
};

/// A regular file opened for reading, and its size.
struct RegularFile {
  FileDescriptor fd;
  uint64_t size = 0;
};

/// Opens `path` read-only with O_NONBLOCK (so that opening a FIFO cannot
/// hang) and O_CLOEXEC, and refuses anything but a regular file with
/// "'PATH' is not a regular file". Every file the runtime reads is opened
/// through this.
Expected<RegularFile> openRegularFile(const std::string &path);

/// The whole contents of the regular file at `path` (openRegularFile),
/// refused by name when it holds more than `maxBytes` bytes.
Expected<std::string> readRegularFile(const std::string &path,
                                      uint64_t maxBytes);

/// A whole regular file (openRegularFile) mapped read-only; unmapped on
/// destruction.
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
