//===- HostBuffer.h - Zeroed, page-aligned host memory ----------*- C++ -*-===//

#ifndef FDC_RUNTIME_HOSTBUFFER_H
#define FDC_RUNTIME_HOSTBUFFER_H

#include "fdc/runtime/Error.h"

#include <cstddef>
#include <cstdint>

namespace fdc::runtime {

/// An anonymous mapping: page-aligned (so 256-aligned), zero-filled, its
/// pages committed on first touch. Move-only.
class HostBuffer {
public:
  HostBuffer() = default;
  static Expected<HostBuffer> allocate(uint64_t size, const char *what);
  ~HostBuffer();
  HostBuffer(HostBuffer &&other) noexcept;
  HostBuffer &operator=(HostBuffer &&other) noexcept;
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  uint8_t *data() { return bytes; }
  const uint8_t *data() const { return bytes; }
  uint64_t size() const { return length; }

private:
  uint8_t *bytes = nullptr;
  uint64_t length = 0;
  uint64_t mappedLength = 0;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_HOSTBUFFER_H
