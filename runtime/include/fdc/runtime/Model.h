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
#include <vector>

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
  /// $FDC_CUDA_DEVICE / $FDC_HIP_DEVICE, or 0. A tensor-parallel library's
  /// rank r runs on this device + r.
  int device = -1;
  /// A packed-weights file (fdc pack; PackedWeights.h) to copy the int4 and
  /// tiled_csl weights from instead of packing them from the checkpoint;
  /// empty = pack them. It must match the library.
  std::string packedWeights;
};

constexpr int64_t kDefaultMaxContext = 2048;
/// The most rows ModelOptions::maxStepRows may ask for.
constexpr int64_t kMaxStepRows = int64_t(1) << 20;

/// A loaded model: the library, its filled weight arena and a KV cache. For
/// a GPU library ("cuda:...", "rocm:...") the weights, KV cache and step
/// buffers live on the device, in the DeviceBackend that createDeviceBackend()
/// picks from the target; the host keeps only the KV-cache slot bookkeeping.
///
/// A tensor-parallel library (manifest "tensor_parallel" = N > 1) runs as N
/// ranks, each with its own weight arena (its slices), KV cache and, for a
/// GPU library, device backend (device ordinal base + r), joined by a
/// CollectiveGroup (Collective.h). Every step runs on all ranks at once: rank
/// 0 on the calling thread, ranks 1..N-1 on worker threads the Model owns.
/// The accessors below (kvCache(), weights(), deviceBackend()) are rank 0's;
/// the KV cache's slot bookkeeping stands for every rank.
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
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

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
  /// The ranks the library runs as (manifest "tensor_parallel"; 1 = not
  /// tensor-parallel).
  int64_t tensorParallel() const { return manifest().tensorParallel; }

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
  /// the step. `args.logits` may be null when only next_tokens are wanted:
  /// a GPU step then copies no logits back.
  ///
  /// A tensor-parallel model runs the step on every rank (the logits and
  /// next_tokens in `args` are rank 0's) and fails when a rank fails (it
  /// aborts the group, so the others do not wait for it, and names the
  /// rank; every later step is refused: "tensor-parallel group aborted:
  /// ...") or when the ranks' next_tokens disagree.
  Error step(FdcStepArgs &args);

  /// Overlapped steps (DeviceBackend::launchStep): a GPU model (every rank
  /// of a tensor-parallel one) can launch a step before it has read the
  /// sampled ids of the one before. launchStep checks the inputs as step()
  /// does (the rows whose tokens come from the last step's ids on the
  /// device hold a valid placeholder) and starts the step without logits;
  /// finishStep waits for the oldest launched step and fills its
  /// args.next_tokens (tensor-parallel: after checking that the ranks
  /// agree). A rank's failure in either aborts the group, as in step().
  bool canOverlapSteps() const;
  Error launchStep(FdcStepArgs &args, int64_t tokensFromLastStep);
  Error finishStep(FdcStepArgs &args);

private:
  struct TensorParallel;

  Model(std::unique_ptr<ModelLibrary> library, HostBuffer weights,
        KVCache cache, int64_t stepRows, std::unique_ptr<DeviceBackend> backend,
        std::unique_ptr<TensorParallel> tp);

  /// Model::step after the input check, with a logits buffer for a host
  /// library.
  Error runStep(FdcStepArgs &args);
  /// Model::step of a tensor-parallel model, after the input check.
  Error stepRanks(FdcStepArgs &args);

  std::unique_ptr<ModelLibrary> lib;
  HostBuffer weightArena;
  /// A host step's logits when the caller wants none.
  std::vector<float> hostLogits;
  KVCache cache;
  int64_t stepRows;
  /// Declared after the library it calls into, so destroyed before it.
  std::unique_ptr<DeviceBackend> backend;
  /// Ranks 1..N-1, the group and the worker threads of a tensor-parallel
  /// model (null otherwise); the destructor stops the workers and destroys
  /// it first.
  std::unique_ptr<TensorParallel> tp;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MODEL_H
