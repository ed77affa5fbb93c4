//===- DeviceBuffers.cpp - Sizes of a GPU library's device buffers --------===//

#include "fdc/runtime/DeviceBuffers.h"

using namespace fdc::runtime;

namespace {
uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}
} // namespace

uint64_t fdc::runtime::stepInputStride(int64_t batch) {
  return alignUp(static_cast<uint64_t>(batch) * 4, 256);
}

uint64_t fdc::runtime::stepInputBytes(int64_t batch) {
  return (kNumStepInputs - 1) * stepInputStride(batch) +
         static_cast<uint64_t>(batch) * 4;
}

Expected<ScratchSpec> fdc::runtime::parseScratch(const json::Value &manifest,
                                                 std::string_view origin) {
  ScratchSpec spec;
  const json::Value *scratch = manifest.get("scratch");
  if (!scratch)
    return spec;
  auto fail = [&](const auto &...args) {
    return createError("manifest of ", origin, ": ", args...);
  };
  if (!scratch->isObject())
    return fail("field 'scratch' is not an object");
  for (auto [key, out] :
       {std::pair{"bytes_per_sequence", &spec.bytesPerSequence},
        std::pair{"fixed_bytes", &spec.fixedBytes}}) {
    const json::Value *value = scratch->get(key);
    if (!value)
      return fail("missing field 'scratch.", key, "'");
    std::optional<int64_t> i = value->getInt64();
    if (!i || *i < 0)
      return fail("field 'scratch.", key, "' is not a non-negative integer");
    *out = static_cast<uint64_t>(*i);
  }
  return spec;
}

Expected<ScratchSpec> fdc::runtime::parseScratch(std::string_view manifestText,
                                                 std::string_view origin) {
  Expected<json::Value> root = json::parse(manifestText);
  if (!root)
    return createError("manifest of ", origin, ": ", root.error().message());
  return parseScratch(*root, origin);
}

Expected<uint64_t> fdc::runtime::scratchBytes(const ScratchSpec &spec,
                                              int64_t maxBatch) {
  auto overflow = [&] {
    return createError("scratch of ", spec.fixedBytes, " + ",
                       spec.bytesPerSequence, " x ", maxBatch,
                       " bytes overflows 64 bits");
  };
  if (maxBatch < 0)
    return createError("max_batch must be >= 0, got ", maxBatch);
  uint64_t batch = static_cast<uint64_t>(maxBatch);
  if (batch != 0 && spec.bytesPerSequence > UINT64_MAX / batch)
    return overflow();
  uint64_t total = spec.bytesPerSequence * batch;
  if (total > UINT64_MAX - spec.fixedBytes)
    return overflow();
  total += spec.fixedBytes;
  if (total > UINT64_MAX - 255)
    return overflow();
  return alignUp(total, 256);
}

Expected<DeviceBufferSizes> fdc::runtime::computeDeviceBufferSizes(
    uint64_t kvCacheBytes, int64_t maxBatch, int64_t vocabSize,
    const ScratchSpec &scratch, std::string_view backendName) {
  if (maxBatch < 1 || maxBatch > INT32_MAX)
    return createError(backendName, ": max_batch must be in [1, 2^31), got ",
                       maxBatch);
  if (vocabSize < 1 || vocabSize > INT32_MAX)
    return createError(backendName, ": vocab_size must be in [1, 2^31), got ",
                       vocabSize);
  if (kvCacheBytes > kMaxDeviceBufferBytes)
    return createError(backendName, ": a KV cache of ", kvCacheBytes,
                       " bytes is too large");
  Expected<uint64_t> scratchSize = scratchBytes(scratch, maxBatch);
  if (!scratchSize)
    return scratchSize.takeError();
  if (*scratchSize > kMaxDeviceBufferBytes)
    return createError(backendName, ": a scratch buffer of ", *scratchSize,
                       " bytes is too large");
  uint64_t batch = static_cast<uint64_t>(maxBatch);
  uint64_t vocab = static_cast<uint64_t>(vocabSize);
  if (vocab > kMaxDeviceBufferBytes / 4 / batch)
    return createError("logits of ", maxBatch, " x ", vocabSize,
                       " floats overflow 64 bits");
  // batch < 2^31: the inputs and next_tokens are far from overflowing.
  DeviceBufferSizes sizes;
  sizes.kvCache = kvCacheBytes;
  sizes.scratch = *scratchSize;
  sizes.inputStride = stepInputStride(maxBatch);
  sizes.inputs = sizes.inputStride * kNumStepInputs;
  sizes.logits = batch * vocab * 4;
  sizes.nextTokens = batch * 4;
  return sizes;
}
