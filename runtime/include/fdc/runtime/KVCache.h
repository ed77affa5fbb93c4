//===- KVCache.h - The KV-cache buffer and its slots ------------*- C++ -*-===//
//
// One buffer of num_slots x layers x 2 x kv_heads x max_context x row_bytes
// bytes, indexed [slot][layer][k=0|v=1][kv_head][position]. A sequence owns
// one slot while it runs. For a GPU library the buffer is device memory the
// backend owns; this object then only hands out slots.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_KVCACHE_H
#define FDC_RUNTIME_KVCACHE_H

#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/Manifest.h"

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace fdc::runtime {

/// Bytes of a cache for `numSlots` slots of `maxContext` tokens, or nullopt
/// when that overflows 64 bits.
std::optional<uint64_t> kvCacheBytes(const KVCacheSpec &spec, int64_t numSlots,
                                     int64_t maxContext);

class KVCache {
public:
  /// With `hostStorage` false no host memory is allocated (data() is null):
  /// the buffer lives on the device.
  static Expected<KVCache> create(const KVCacheSpec &spec, int64_t numSlots,
                                  int64_t maxContext, bool hostStorage = true);

  /// The host buffer, or nullptr when the cache lives on the device.
  uint8_t *data() { return buffer.data(); }
  /// Bytes of the whole cache (wherever it lives).
  uint64_t size() const { return byteSize; }
  int64_t numSlots() const { return slotCount; }
  int64_t maxContext() const { return contextLength; }
  /// Bytes one slot occupies.
  uint64_t slotBytes() const { return byteSize / slotCount; }

  // The slots' bookkeeping is thread-safe: a slot may be held and returned
  // by another thread while an engine's loop admits requests.

  /// Hands out the lowest free slot, or nullopt when all are in use.
  std::optional<int32_t> acquireSlot();
  /// Returns a slot acquired before.
  void releaseSlot(int32_t slot);
  int64_t freeSlots() const;

private:
  HostBuffer buffer;
  uint64_t byteSize = 0;
  int64_t slotCount = 0;
  int64_t contextLength = 0;
  std::vector<bool> inUse;
  /// Guards `inUse` (behind a pointer: the cache is movable).
  std::unique_ptr<std::mutex> slotsMutex = std::make_unique<std::mutex>();
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_KVCACHE_H
