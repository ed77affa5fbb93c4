//===- KVCache.cpp - The KV-cache buffer and its slots --------------------===//

#include "fdc/runtime/KVCache.h"

#include <algorithm>
#include <cassert>

using namespace fdc::runtime;

std::optional<uint64_t> fdc::runtime::kvCacheBytes(const KVCacheSpec &spec,
                                                   int64_t numSlots,
                                                   int64_t maxContext) {
  uint64_t total = 1;
  for (int64_t factor : {numSlots, spec.layers, int64_t(2), spec.kvHeads,
                         maxContext, spec.rowBytes}) {
    if (factor < 0)
      return std::nullopt;
    uint64_t f = static_cast<uint64_t>(factor);
    if (f != 0 && total > UINT64_MAX / f)
      return std::nullopt;
    total *= f;
  }
  return total;
}

Expected<KVCache> KVCache::create(const KVCacheSpec &spec, int64_t numSlots,
                                  int64_t maxContext, bool hostStorage) {
  if (numSlots < 1 || numSlots > INT32_MAX)
    return createError("num_slots must be in [1, 2^31), got ", numSlots);
  if (maxContext < 1 || maxContext > INT32_MAX)
    return createError("max_context must be in [1, 2^31), got ", maxContext);
  std::optional<uint64_t> bytes = kvCacheBytes(spec, numSlots, maxContext);
  if (!bytes)
    return createError("the KV cache for ", numSlots, " slots of ", maxContext,
                       " tokens overflows 64 bits");
  KVCache cache;
  if (hostStorage) {
    Expected<HostBuffer> buffer = HostBuffer::allocate(*bytes, "KV cache");
    if (!buffer)
      return buffer.takeError();
    cache.buffer = std::move(*buffer);
  }
  cache.byteSize = *bytes;
  cache.slotCount = numSlots;
  cache.contextLength = maxContext;
  cache.inUse.assign(static_cast<size_t>(numSlots), false);
  return cache;
}

std::optional<int32_t> KVCache::acquireSlot() {
  std::lock_guard<std::mutex> lock(*slotsMutex);
  for (size_t i = 0; i < inUse.size(); ++i) {
    if (!inUse[i]) {
      inUse[i] = true;
      return static_cast<int32_t>(i);
    }
  }
  return std::nullopt;
}

void KVCache::releaseSlot(int32_t slot) {
  std::lock_guard<std::mutex> lock(*slotsMutex);
  assert(slot >= 0 && static_cast<size_t>(slot) < inUse.size() && inUse[slot] &&
         "releasing a slot that is not in use");
  if (slot >= 0 && static_cast<size_t>(slot) < inUse.size())
    inUse[slot] = false;
}

int64_t KVCache::freeSlots() const {
  std::lock_guard<std::mutex> lock(*slotsMutex);
  return std::count(inUse.begin(), inUse.end(), false);
}
