//===- HostBuffer.cpp - Zeroed, page-aligned host memory ------------------===//

#include "fdc/runtime/HostBuffer.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <utility>

using namespace fdc::runtime;

Expected<HostBuffer> HostBuffer::allocate(uint64_t size, const char *what) {
  HostBuffer buffer;
  // Map at least one page so data() is never null.
  uint64_t mapped = size == 0 ? 1 : size;
  if (mapped > SIZE_MAX / 2)
    return createError("cannot allocate ", size, " bytes for the ", what);
  void *addr =
      ::mmap(nullptr, static_cast<size_t>(mapped), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED)
    return createError("cannot allocate ", size, " bytes for the ", what, ": ",
                       std::strerror(errno));
  buffer.bytes = static_cast<uint8_t *>(addr);
  buffer.length = size;
  buffer.mappedLength = mapped;
  return buffer;
}

HostBuffer::~HostBuffer() {
  if (bytes)
    ::munmap(bytes, static_cast<size_t>(mappedLength));
}

HostBuffer::HostBuffer(HostBuffer &&other) noexcept
    : bytes(std::exchange(other.bytes, nullptr)),
      length(std::exchange(other.length, 0)),
      mappedLength(std::exchange(other.mappedLength, 0)) {}

HostBuffer &HostBuffer::operator=(HostBuffer &&other) noexcept {
  if (this != &other) {
    if (bytes)
      ::munmap(bytes, static_cast<size_t>(mappedLength));
    bytes = std::exchange(other.bytes, nullptr);
    length = std::exchange(other.length, 0);
    mappedLength = std::exchange(other.mappedLength, 0);
  }
  return *this;
}
