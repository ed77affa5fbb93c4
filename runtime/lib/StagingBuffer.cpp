//===- StagingBuffer.cpp - Host memory a step's copies go through ---------===//

#include "StagingBuffer.h"

#include "GpuDevice.h"

#include <cstring>

using namespace fdc::runtime;

void StagingBuffer::allocate(GpuDevice &device, uint64_t bytes) {
  release();
  void *pinnedBytes = nullptr;
  if (device.allocatePinned(pinnedBytes, bytes) == 0 && pinnedBytes) {
    pinnedOn = &device;
    this->bytes = static_cast<uint8_t *>(pinnedBytes);
    std::memset(this->bytes, 0, bytes);
  } else {
    // kNotSupported, or a failure (e.g. a locked-memory limit).
    pageable.assign(bytes, 0);
    this->bytes = pageable.data();
  }
  size_ = bytes;
}

void StagingBuffer::release() {
  if (pinnedOn)
    pinnedOn->freePinned(bytes);
  pinnedOn = nullptr;
  pageable.clear();
  pageable.shrink_to_fit();
  bytes = nullptr;
  size_ = 0;
}
