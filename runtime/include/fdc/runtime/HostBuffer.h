//===- HostBuffer.h - Zeroed, page-aligned host memory ----------*- C++ -*-===//

#ifndef FDC_RUNTIME_HOSTBUFFER_H
#define FDC_RUNTIME_HOSTBUFFER_H

#include "fdc/runtime/Error.h"

#include <cstddef>
#include <cstdint>

namespace fdc::runtime {

/// An anonymous mapping: page-aligned (so 256-aligned), zero-filled, its
/// pages committed on first touch. Move-only.
///
/// Guard pages (for fuzzing and debugging; docs/fuzzing.md): with
/// FDC_GUARD_PAGES set (and not "0") every buffer sits between two PROT_NONE
/// pages, its end at the start of the second one, so an access past either
/// end faults instead of reading or corrupting a neighbour. FDC_GUARD_PAGES=1
/// keeps data() 256-aligned (the end then lies within 255 bytes of the guard
/// page); FDC_GUARD_PAGES=tight ends the data exactly at the guard page
/// (data() is then only as aligned as the size is).
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

  /// The alignment of data() in guard-page mode ($FDC_GUARD_PAGES, read
  /// once): 0 when guard pages are off, 1 for "tight", else 256.
  static uint64_t guardAlignment();

private:
  uint8_t *bytes = nullptr;
  uint8_t *mapping = nullptr;
  uint64_t length = 0;
  uint64_t mappedLength = 0;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_HOSTBUFFER_H
