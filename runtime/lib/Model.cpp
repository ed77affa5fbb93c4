//===- Model.cpp - A model library with its weights and KV cache ----------===//

#include "fdc/runtime/Model.h"

#include "fdc/runtime/WeightLoader.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

using namespace fdc::runtime;

Expected<std::unique_ptr<Model>> Model::load(const std::string &libraryPath,
                                             const std::string &checkpointPath,
                                             const ModelOptions &options) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(libraryPath);
  if (!library)
    return library.takeError();
  Expected<std::unique_ptr<Checkpoint>> checkpoint =
      Checkpoint::open(checkpointPath);
  if (!checkpoint)
    return checkpoint.takeError();
  return create(std::move(*library), **checkpoint, options);
}

Expected<std::unique_ptr<Model>>
Model::create(std::unique_ptr<ModelLibrary> library,
              const Checkpoint &checkpoint, const ModelOptions &options) {
  const Manifest &manifest = library->manifest();
  int64_t maxContext = options.maxContext;
  if (maxContext == 0)
    maxContext =
        manifest.maxPositionEmbeddings > 0
            ? std::min(manifest.maxPositionEmbeddings, kDefaultMaxContext)
            : kDefaultMaxContext;
  if (maxContext < 0)
    return createError("max_context must be positive, got ", maxContext);
  if (manifest.maxPositionEmbeddings > 0 &&
      maxContext > manifest.maxPositionEmbeddings)
    return createError("max_context ", maxContext,
                       " exceeds the model's max_position_embeddings ",
                       manifest.maxPositionEmbeddings);

  // A GPU library sets up the device first: no GPU fails fast.
  std::unique_ptr<DeviceBackend> backend;
  if (!library->runsOnHost()) {
    Expected<std::unique_ptr<DeviceBackend>> created =
        createDeviceBackend(*library, options.device);
    if (!created)
      return created.takeError();
    backend = std::move(*created);
  }

  // The KV cache first: absurd sizes fail before the weights are read.
  Expected<KVCache> cache = KVCache::create(
      manifest.kvCache, options.numSlots, maxContext, /*hostStorage=*/!backend);
  if (!cache)
    return cache.takeError();
  int64_t stepRows = options.maxStepRows;
  if (stepRows == 0) {
    stepRows = options.numSlots;
  } else if (stepRows < options.numSlots || stepRows > kMaxStepRows) {
    return createError(
        "max_step_rows must be 0 or in [num_slots = ", options.numSlots, ", ",
        kMaxStepRows, "], got ", options.maxStepRows);
  }
  // GPU kernels put the batch on a grid dimension of at most 65535 blocks.
  constexpr int64_t kMaxGpuStepRows = 65535;
  if (backend && stepRows > kMaxGpuStepRows)
    return createError("a GPU library runs at most ", kMaxGpuStepRows,
                       " rows a step: max_step_rows (or num_slots) ", stepRows,
                       " is too many");
  Expected<HostBuffer> weights = loadWeights(manifest, checkpoint);
  if (!weights)
    return weights.takeError();
  if (backend) {
    if (Error err = backend->uploadWeights(*weights))
      return err;
    *weights = HostBuffer(); // The device holds them now.
    // A step runs at most stepRows rows.
    if (Error err =
            backend->allocateState(cache->size(), stepRows, manifest.vocabSize))
      return err;
  }
  return std::unique_ptr<Model>(
      new Model(std::move(library), std::move(*weights), std::move(*cache),
                stepRows, std::move(backend)));
}

Error Model::checkStepInputs(const FdcStepArgs &args) const {
  int64_t batch = args.batch;
  int64_t slotCount = cache.numSlots();
  int64_t contextLength = cache.maxContext();
  int64_t vocab = vocabSize();
  if (batch < 1 || batch > stepRows)
    return createError("model step: batch ", batch,
                       " is outside [1, max_step_rows = ", stepRows, "]");
  struct Array {
    const void *pointer;
    const char *name;
  };
  for (Array array :
       {Array{args.tokens, "tokens"}, Array{args.positions, "positions"},
        Array{args.slots, "slots"}, Array{args.temperature, "temperature"},
        Array{args.top_k, "top_k"}, Array{args.top_p, "top_p"},
        Array{args.uniform, "uniform"}, Array{args.logits, "logits"},
        Array{args.next_tokens, "next_tokens"}})
    if (!array.pointer)
      return createError("model step: '", array.name, "' is NULL");
  // A slot's rows are one run of consecutive rows at consecutive positions
  // (a prompt chunk or one decode row): the step writes each row's K/V at
  // its position before attention reads up to it.
  std::unordered_set<int32_t> slotsSeen;
  for (int64_t i = 0; i < batch; ++i) {
    int32_t token = args.tokens[i];
    if (token < 0 || token >= vocab)
      return createError("model step: row ", i, ": token ", token,
                         " is outside the vocabulary [0, ", vocab, ")");
    int32_t slot = args.slots[i];
    if (slot < 0 || slot >= slotCount)
      return createError("model step: row ", i, ": slot ", slot,
                         " is outside [0, num_slots = ", slotCount, ")");
    int32_t position = args.positions[i];
    if (position < 0 || position >= contextLength)
      return createError("model step: row ", i, ": position ", position,
                         " is outside [0, max_context = ", contextLength, ")");
    if (i > 0 && slot == args.slots[i - 1]) {
      if (position != args.positions[i - 1] + 1)
        return createError("model step: row ", i, ": slot ", slot, " position ",
                           position, " does not follow the position ",
                           args.positions[i - 1], " of row ", i - 1);
    } else if (!slotsSeen.insert(slot).second) {
      return createError("model step: row ", i, ": slot ", slot,
                         " is in two runs of rows (a slot's rows must be "
                         "consecutive)");
    }
    float temperature = args.temperature[i];
    if (!std::isfinite(temperature) || temperature < 0)
      return createError("model step: row ", i, ": temperature ", temperature,
                         " is not a finite number >= 0");
    if (args.top_k[i] < 0)
      return createError("model step: row ", i, ": top_k ", args.top_k[i],
                         " is negative");
    float topP = args.top_p[i];
    if (!(topP > 0 && topP <= 1))
      return createError("model step: row ", i, ": top_p ", topP,
                         " is outside (0, 1]");
    float uniform = args.uniform[i];
    if (!(uniform >= 0 && uniform < 1))
      return createError("model step: row ", i, ": uniform draw ", uniform,
                         " is outside [0, 1)");
  }
  return Error::success();
}

Error Model::step(FdcStepArgs &args) {
  if (Error err = checkStepInputs(args))
    return err;
  args.num_slots = cache.numSlots();
  args.max_context = cache.maxContext();
  if (backend)
    return backend->step(args);
  args.weights = weightArena.data();
  args.kv_cache = cache.data();
  lib->stepFunction()(&args);
  return Error::success();
}
