//===- HostBuffer.cpp - Zeroed, page-aligned host memory ------------------===//

#include "fdc/runtime/HostBuffer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

using namespace fdc::runtime;

namespace {

uint64_t pageSize() {
  static const uint64_t size = [] {
    long page = ::sysconf(_SC_PAGESIZE);
    return page > 0 ? static_cast<uint64_t>(page) : uint64_t(4096);
  }();
  return size;
}

uint64_t roundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

} // namespace

uint64_t HostBuffer::guardAlignment() {
  static const uint64_t alignment = [] {
    const char *mode = std::getenv("FDC_GUARD_PAGES");
    if (!mode || !*mode || std::strcmp(mode, "0") == 0)
      return uint64_t(0);
    return std::strcmp(mode, "tight") == 0 ? uint64_t(1) : uint64_t(256);
  }();
  return alignment;
}

Expected<HostBuffer> HostBuffer::allocate(uint64_t size, const char *what) {
  HostBuffer buffer;
  uint64_t alignment = guardAlignment();
  if (size > SIZE_MAX / 2)
    return createError("cannot allocate ", size, " bytes for the ", what);
  if (alignment) {
    // [PROT_NONE page][slack][data][PROT_NONE page]: the data ends where the
    // trailing guard page begins (to within `alignment` bytes), so generated
    // code that runs off either end of the buffer faults.
    uint64_t page = pageSize();
    uint64_t body = roundUp(roundUp(size == 0 ? 1 : size, alignment), page);
    uint64_t mapped = body + 2 * page;
    void *addr = ::mmap(nullptr, static_cast<size_t>(mapped), PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (addr == MAP_FAILED)
      return createError("cannot allocate ", size, " bytes for the ", what,
                         ": ", std::strerror(errno));
    uint8_t *base = static_cast<uint8_t *>(addr);
    if (::mprotect(base + page, static_cast<size_t>(body),
                   PROT_READ | PROT_WRITE) != 0) {
      int saved = errno;
      ::munmap(addr, static_cast<size_t>(mapped));
      return createError("cannot allocate ", size, " bytes for the ", what,
                         ": ", std::strerror(saved));
    }
    buffer.mapping = base;
    buffer.mappedLength = mapped;
    buffer.bytes = base + page + body - roundUp(size, alignment);
    buffer.length = size;
    return buffer;
  }
  // Map at least one page so data() is never null.
  uint64_t mapped = size == 0 ? 1 : size;
  void *addr =
      ::mmap(nullptr, static_cast<size_t>(mapped), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (addr == MAP_FAILED)
    return createError("cannot allocate ", size, " bytes for the ", what, ": ",
                       std::strerror(errno));
  buffer.bytes = static_cast<uint8_t *>(addr);
  buffer.mapping = buffer.bytes;
  buffer.length = size;
  buffer.mappedLength = mapped;
  return buffer;
}

HostBuffer::~HostBuffer() {
  if (mapping)
    ::munmap(mapping, static_cast<size_t>(mappedLength));
}

HostBuffer::HostBuffer(HostBuffer &&other) noexcept
    : bytes(std::exchange(other.bytes, nullptr)),
      mapping(std::exchange(other.mapping, nullptr)),
      length(std::exchange(other.length, 0)),
      mappedLength(std::exchange(other.mappedLength, 0)) {}

HostBuffer &HostBuffer::operator=(HostBuffer &&other) noexcept {
  if (this != &other) {
    if (mapping)
      ::munmap(mapping, static_cast<size_t>(mappedLength));
    bytes = std::exchange(other.bytes, nullptr);
    mapping = std::exchange(other.mapping, nullptr);
    length = std::exchange(other.length, 0);
    mappedLength = std::exchange(other.mappedLength, 0);
  }
  return *this;
}
