//===- DeviceBuffers.h - Sizes of a GPU library's device buffers -*- C++
//-*-===//
//
// Everything about the device buffers of a GPU model library that needs no
// GPU and no vendor: the manifest's "scratch" object and the overflow-checked
// sizes of the buffers a backend allocates for a batch (KV cache, scratch,
// the per-sequence input arrays, logits and next_tokens).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_DEVICEBUFFERS_H
#define FDC_RUNTIME_DEVICEBUFFERS_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/Json.h"

#include <cstdint>
#include <string_view>

namespace fdc::runtime {

/// The manifest's "scratch" object: device memory for intermediate
/// activations.
struct ScratchSpec {
  uint64_t bytesPerSequence = 0;
  uint64_t fixedBytes = 0;
};

/// Reads "scratch": {"bytes_per_sequence": B, "fixed_bytes": F} from a
/// manifest (both non-negative integers); a manifest without "scratch" needs
/// none. `origin` names the manifest in errors.
Expected<ScratchSpec> parseScratch(const json::Value &manifest,
                                   std::string_view origin);
Expected<ScratchSpec> parseScratch(std::string_view manifestText,
                                   std::string_view origin);

/// F + B * maxBatch rounded up to a multiple of 256, or an error when that
/// overflows 64 bits.
Expected<uint64_t> scratchBytes(const ScratchSpec &spec, int64_t maxBatch);

/// The per-sequence inputs of FdcStepArgs (tokens, positions, slots,
/// temperature, top_k, top_p, uniform), 4 bytes per sequence each, staged in
/// one device buffer.
constexpr int kNumStepInputs = 7;

/// Bytes between two input arrays of a step of `batch` sequences in the
/// inputs buffer (batch * 4, 256-aligned): each step size packs its arrays
/// from the buffer's start, so its one copy moves
/// stepInputBytes(batch) bytes, however many sequences the buffer holds.
uint64_t stepInputStride(int64_t batch);
/// (kNumStepInputs - 1) * stepInputStride(batch) + batch * 4.
uint64_t stepInputBytes(int64_t batch);

/// Every device buffer is at most this large (sizes are later rounded up to
/// 256 bytes, which must not wrap).
constexpr uint64_t kMaxDeviceBufferBytes = uint64_t(1) << 62;

/// The bytes of each device buffer of a model for `maxBatch` sequences.
struct DeviceBufferSizes {
  uint64_t kvCache = 0;
  uint64_t scratch = 0;
  /// stepInputStride(maxBatch): the largest step's stride.
  uint64_t inputStride = 0;
  /// kNumStepInputs * inputStride.
  uint64_t inputs = 0;
  /// maxBatch * vocabSize floats.
  uint64_t logits = 0;
  /// maxBatch int32s.
  uint64_t nextTokens = 0;
};

/// Checks and computes the buffer sizes: maxBatch and vocabSize in
/// [1, 2^31), every buffer at most kMaxDeviceBufferBytes. `backendName`
/// ("CUDA backend") starts the errors about the arguments.
Expected<DeviceBufferSizes>
computeDeviceBufferSizes(uint64_t kvCacheBytes, int64_t maxBatch,
                         int64_t vocabSize, const ScratchSpec &scratch,
                         std::string_view backendName);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_DEVICEBUFFERS_H
