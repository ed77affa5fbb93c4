//===- MappedFile.cpp - Read-only memory-mapped file ----------------------===//

#include "fdc/runtime/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fdc::runtime;

Expected<std::unique_ptr<MappedFile>>
MappedFile::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return createError("cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int savedErrno = errno;
    ::close(fd);
    return createError("cannot stat '", path, "': ", std::strerror(savedErrno));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return createError("'", path, "' is not a regular file");
  }
  size_t length = static_cast<size_t>(st.st_size);
  const uint8_t *bytes = nullptr;
  if (length > 0) {
    void *addr = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int savedErrno = errno;
      ::close(fd);
      return createError("cannot map '", path,
                         "': ", std::strerror(savedErrno));
    }
    bytes = static_cast<const uint8_t *>(addr);
  }
  ::close(fd);
  return std::unique_ptr<MappedFile>(new MappedFile(path, bytes, length));
}

MappedFile::~MappedFile() {
  if (bytes)
    ::munmap(const_cast<uint8_t *>(bytes), length);
}
