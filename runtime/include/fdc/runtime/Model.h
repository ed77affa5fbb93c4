//===- Model.h - A model library with its weights and KV cache --*- C++ -*-===//

#ifndef FDC_RUNTIME_MODEL_H
#define FDC_RUNTIME_MODEL_H

#include "fdc/runtime/Checkpoint.h"
#include "fdc/runtime/DeviceBackend.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/KVCache.h"
#include "fdc/runtime/ModelLibrary.h"

#include <memory>
#include <string>

namespace fdc::runtime {

struct ModelOptions {
  /// Tokens per KV-cache slot. 0 picks config.max_position_embeddings capped
  /// at kDefaultMaxContext, or kDefaultMaxContext when the config lacks it.
  int64_t maxContext = 0;
  /// Sequences that can run at once.
  int64_t numSlots = 1;
  /// Rows one step may run: decode tokens and prompt chunks (several rows
  /// of one sequence at consecutive positions) together. 0 = numSlots;
  /// otherwise at least numSlots and at most 2^20. Sizes a GPU library's
  /// step buffers.
  int64_t maxStepRows = 0;
  /// For a GPU library: the device ordinal; -1 = the backend's
  /// $FDC_CUDA_DEVICE / $FDC_HIP_DEVICE, or 0.
  int device = -1;
};

constexpr int64_t kDefaultMaxContext = 2048;
/// The most rows ModelOptions::maxStepRows may ask for.
constexpr int64_t kMaxStepRows = int64_t(1) << 20;

/// A loaded model: the library, its filled weight arena and a KV cache. For
/// a GPU library ("cuda:...", "rocm:...") the weights, KV cache and step
/// buffers live on the device, in the DeviceBackend that createDeviceBackend()
/// picks from the target; the host keeps only the KV-cache slot bookkeeping.
class Model {
public:
  /// Opens the library, loads the weights from the checkpoint at
  /// `checkpointPath` (then closes it) and allocates the KV cache.
  static Expected<std::unique_ptr<Model>>
  load(const std::string &libraryPath, const std::string &checkpointPath,
       const ModelOptions &options);
  static Expected<std::unique_ptr<Model>>
  create(std::unique_ptr<ModelLibrary> library, const Checkpoint &checkpoint,
         const ModelOptions &options);

  const ModelLibrary &library() const { return *lib; }
  const Manifest &manifest() const { return lib->manifest(); }
  int64_t vocabSize() const { return manifest().vocabSize; }
  int64_t maxContext() const { return cache.maxContext(); }
  int64_t numSlots() const { return cache.numSlots(); }
  int64_t maxStepRows() const { return stepRows; }
  KVCache &kvCache() { return cache; }
  /// The host weight arena (empty for a GPU library: it was uploaded).
  const HostBuffer &weights() const { return weightArena; }
  /// The device side of a GPU library, else nullptr.
  const DeviceBackend *deviceBackend() const { return backend.get(); }

  /// Checks the step inputs the generated code indexes with, refusing by
  /// row and value: 1 <= batch <= max_step_rows; no NULL array; token ids
  /// in [0, vocab_size); slots in [0, num_slots); positions in
  /// [0, max_context); a slot's rows one run of consecutive rows at
  /// consecutive positions (one sequence's decode token or prompt chunk); a
  /// finite temperature >= 0, top_k >= 0, top_p in (0, 1] and uniform in
  /// [0, 1).
  Error checkStepInputs(const FdcStepArgs &args) const;

  /// Checks the inputs (checkStepInputs), fills in batch-independent fields
  /// (num_slots, max_context, and for a host library weights and kv_cache)
  /// and runs one step. `args` holds host arrays either way; for a GPU
  /// library the backend copies them to and from the device (weights and
  /// kv_cache stay null here). Fails for invalid inputs (nothing runs), or for
  /// a GPU library a failed launch or copy, or a fault found at the end of
  /// the step.
  Error step(FdcStepArgs &args);

private:
  Model(std::unique_ptr<ModelLibrary> library, HostBuffer weights,
        KVCache cache, int64_t stepRows, std::unique_ptr<DeviceBackend> backend)
      : lib(std::move(library)), weightArena(std::move(weights)),
        cache(std::move(cache)), stepRows(stepRows),
        backend(std::move(backend)) {}

  std::unique_ptr<ModelLibrary> lib;
  HostBuffer weightArena;
  KVCache cache;
  int64_t stepRows;
  /// Declared last so it is destroyed before the library it calls into.
  std::unique_ptr<DeviceBackend> backend;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MODEL_H
