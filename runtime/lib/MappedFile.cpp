//===- MappedFile.cpp - Read-only memory-mapped file ----------------------===//

#include "fdc/runtime/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fdc::runtime;

FileDescriptor &FileDescriptor::operator=(FileDescriptor &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      ::close(fd);
    fd = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd >= 0)
    ::close(fd);
}

Expected<RegularFile> fdc::runtime::openRegularFile(const std::string &path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return createError("cannot open '", path, "': ", std::strerror(errno));
  RegularFile file;
  file.fd = FileDescriptor(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return createError("cannot stat '", path, "': ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return createError("'", path, "' is not a regular file");
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

Expected<std::string> fdc::runtime::readRegularFile(const std::string &path,
                                                    uint64_t maxBytes) {
  Expected<RegularFile> file = openRegularFile(path);
  if (!file)
    return file.takeError();
  if (file->size > maxBytes)
    return createError("'", path, "' is ", file->size, " bytes, more than the ",
                       maxBytes, " allowed");
  std::string contents;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(file->fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return createError("cannot read '", path, "': ", std::strerror(errno));
    if (n == 0)
      break;
    contents.append(buffer, static_cast<size_t>(n));
    if (contents.size() > maxBytes) // The file grew while it was read.
      return createError("'", path, "' is more than the ", maxBytes,
                         " bytes allowed");
  }
  return contents;
}

Expected<std::unique_ptr<MappedFile>>
MappedFile::open(const std::string &path) {
  Expected<RegularFile> file = openRegularFile(path);
  if (!file)
    return file.takeError();
  if (file->size > SIZE_MAX)
    return createError("'", path, "' is too large to map");
  int fd = file->fd.get();
  size_t length = static_cast<size_t>(file->size);
  const uint8_t *bytes = nullptr;
  if (length > 0) {
    void *addr = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED)
      return createError("cannot map '", path, "': ", std::strerror(errno));
    bytes = static_cast<const uint8_t *>(addr);
  }
  return std::unique_ptr<MappedFile>(new MappedFile(path, bytes, length));
}

MappedFile::~MappedFile() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}
