//===- StagingBuffer.h - Host memory a step's copies go through -*- C++ -*-===//
//
// A step copies its per-sequence inputs to the device and its sampled ids
// back through host memory of the GPU backend's own. Page-locked (pinned)
// memory, where the vendor provides it, lets both copies run on the stream
// without a bounce buffer through the driver, and lets the copy back return
// at once instead of waiting for the step. Where pinned memory is missing or
// its allocation fails, the buffer is ordinary memory: slower, never wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_STAGINGBUFFER_H
#define FDC_RUNTIME_LIB_STAGINGBUFFER_H

#include <cstdint>
#include <vector>

namespace fdc::runtime {

class GpuDevice;

class StagingBuffer {
public:
  StagingBuffer() = default;
  StagingBuffer(const StagingBuffer &) = delete;
  StagingBuffer &operator=(const StagingBuffer &) = delete;
  ~StagingBuffer() { release(); }

  /// Holds `bytes` (> 0) zeroed bytes, pinned on `device` where it can;
  /// releases what was held before. Throws only what std::vector throws.
  void allocate(GpuDevice &device, uint64_t bytes);
  void release();

  uint8_t *data() { return bytes; }
  uint64_t size() const { return size_; }
  /// Whether the bytes are page-locked.
  bool pinned() const { return pinnedOn != nullptr; }

private:
  /// The device the pinned bytes came from; null for pageable ones.
  GpuDevice *pinnedOn = nullptr;
  std::vector<uint8_t> pageable;
  uint8_t *bytes = nullptr;
  uint64_t size_ = 0;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_STAGINGBUFFER_H
