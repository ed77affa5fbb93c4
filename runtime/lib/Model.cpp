//===- Model.cpp - A model library with its weights and KV cache ----------===//

#include "fdc/runtime/Model.h"

#include "fdc/runtime/WeightLoader.h"

#include <algorithm>

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
  std::unique_ptr<cuda::CudaBackend> backend;
  if (library->isCuda()) {
    Expected<std::unique_ptr<cuda::CudaBackend>> created =
        cuda::CudaBackend::create(*library, options.cudaDevice);
    if (!created)
      return created.takeError();
    backend = std::move(*created);
  }

  Expected<HostBuffer> weights = loadWeights(manifest, checkpoint);
  if (!weights)
    return weights.takeError();
  Expected<KVCache> cache = KVCache::create(
      manifest.kvCache, options.numSlots, maxContext, /*hostStorage=*/!backend);
  if (!cache)
    return cache.takeError();
  if (backend) {
    if (Error err = backend->uploadWeights(*weights))
      return err;
    *weights = HostBuffer(); // The device holds them now.
    // The engine never runs more sequences at once than there are slots.
    if (Error err = backend->allocateState(cache->size(), options.numSlots,
                                           manifest.vocabSize))
      return err;
  }
  return std::unique_ptr<Model>(
      new Model(std::move(library), std::move(*weights), std::move(*cache),
                std::move(backend)));
}

Error Model::step(FdcStepArgs &args) {
  args.num_slots = cache.numSlots();
  args.max_context = cache.maxContext();
  if (backend)
    return backend->step(args);
  args.weights = weightArena.data();
  args.kv_cache = cache.data();
  lib->stepFunction()(&args);
  return Error::success();
}
