//===- Model.h - A model library with its weights and KV cache --*- C++ -*-===//

#ifndef FDC_RUNTIME_MODEL_H
#define FDC_RUNTIME_MODEL_H

#include "fdc/runtime/Checkpoint.h"
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
};

constexpr int64_t kDefaultMaxContext = 2048;

/// A loaded model: the library, its filled weight arena and a KV cache.
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
  KVCache &kvCache() { return cache; }
  const HostBuffer &weights() const { return weightArena; }

  /// Fills in batch-independent fields (num_slots, max_context, weights,
  /// kv_cache) and runs one step. The caller has validated the inputs.
  void step(FdcStepArgs &args);

private:
  Model(std::unique_ptr<ModelLibrary> library, HostBuffer weights,
        KVCache cache)
      : lib(std::move(library)), weightArena(std::move(weights)),
        cache(std::move(cache)) {}

  std::unique_ptr<ModelLibrary> lib;
  HostBuffer weightArena;
  KVCache cache;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MODEL_H
