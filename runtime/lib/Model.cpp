//===- Model.cpp - A model library with its weights and KV cache ----------===//

#include "fdc/runtime/Model.h"

#include "fdc/runtime/Collective.h"
#include "fdc/runtime/PackedWeights.h"
#include "fdc/runtime/WeightLoader.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_set>

using namespace fdc::runtime;

/// Ranks 1..N-1 of a tensor-parallel model (rank 0 is the Model's own
/// weights, cache and backend), the group joining all N, and the workers:
/// one persistent thread per rank 1..N-1, woken for every step (or
/// overlapped step's launch and finish).
struct Model::TensorParallel {
  /// What a worker runs when woken: a whole step, or an overlapped step's
  /// launch or finish (DeviceBackend::launchStep / finishStep).
  enum class Task { Step, Launch, Finish };

  struct Rank {
    int64_t index = 0;
    /// A host library's weight arena and KV cache.
    HostBuffer weights;
    std::optional<KVCache> cache;
    /// A GPU library's backend.
    std::unique_ptr<DeviceBackend> backend;
    /// The rank's host outputs: [maxStepRows][vocab] f32, [maxStepRows]
    /// (an overlapped step's ids reach it when the step finishes).
    HostBuffer logits;
    HostBuffer nextTokens;
    /// This task's arguments (set before the workers are woken) and outcome.
    Task task = Task::Step;
    FdcStepArgs args = {};
    /// A launch's rows whose tokens are the last step's ids.
    int64_t fed = 0;
    Error result = Error::success();
    std::thread thread;
    /// The arguments of the overlapped steps launched and not finished,
    /// oldest first (at most two).
    std::deque<FdcStepArgs> launched;

    int32_t *ids() { return reinterpret_cast<int32_t *>(nextTokens.data()); }
  };

  TensorParallel(const ModelLibrary &library, int64_t ranks)
      : library(library), ranks(ranks) {}
  ~TensorParallel();

  /// Runs `args` on a rank: a host library's step over `weights` and
  /// `cache`, or the rank's backend.
  Error runRank(FdcStepArgs &args, HostBuffer &weights, KVCache *cache,
                DeviceBackend *backend);
  /// Runs a worker's task.
  Error runTask(Rank &rank);
  /// Runs `task` on every rank: `prepare` sets each worker's arguments
  /// before the workers are woken, `rankZero` runs rank 0's here; then
  /// waits for the workers. Returns the group's failure (after aborting the
  /// group for it, so the model refuses later steps), or success.
  Error run(Task task, const std::function<void(Rank &)> &prepare,
            const std::function<Error()> &rankZero);
  /// Fails, naming the row, unless every worker's ids equal rank 0's,
  /// `batch` rows.
  Error checkIds(const int32_t *rankZero, int64_t batch);
  /// A worker's loop.
  void work(Rank &rank);
  Error startWorkers();
  /// Aborts the group for rank `rank`'s failure `err`.
  void rankFailed(int64_t rank, const Error &err);

  const ModelLibrary &library;
  int64_t ranks;
  /// Ranks 1..N-1 (rank r at r - 1).
  std::vector<std::unique_ptr<Rank>> workers;
  /// Declared after the workers, whose backends its collectives use: it is
  /// destroyed first.
  std::unique_ptr<CollectiveGroup> group;

  std::mutex mutex;
  std::condition_variable wake, done;
  /// Counts the steps handed to the workers.
  uint64_t generation = 0;
  /// Workers still running the current step.
  int64_t pending = 0;
  bool stopping = false;
  /// Set once a step failed: why the model refuses to step.
  std::string abortReason;
};

Model::TensorParallel::~TensorParallel() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::unique_ptr<Rank> &rank : workers)
    if (rank->thread.joinable())
      rank->thread.join();
}

Error Model::TensorParallel::runRank(FdcStepArgs &args, HostBuffer &weights,
                                     KVCache *cache, DeviceBackend *backend) {
  if (backend)
    return backend->step(args);
  args.weights = weights.data();
  args.kv_cache = cache->data();
  library.stepFunction()(&args);
  return Error::success();
}

Error Model::TensorParallel::runTask(Rank &rank) {
  switch (rank.task) {
  case Task::Launch:
    return rank.backend->launchStep(rank.args, rank.fed);
  case Task::Finish:
    return rank.backend->finishStep(rank.args);
  case Task::Step:
    break;
  }
  return runRank(rank.args, rank.weights, rank.cache ? &*rank.cache : nullptr,
                 rank.backend.get());
}

Error Model::TensorParallel::run(Task task,
                                 const std::function<void(Rank &)> &prepare,
                                 const std::function<Error()> &rankZero) {
  for (std::unique_ptr<Rank> &rank : workers) {
    rank->task = task;
    rank->result = Error::success();
    prepare(*rank);
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    pending = ranks - 1;
    ++generation;
  }
  wake.notify_all();

  Error err = Error::success();
  try {
    err = rankZero();
  } catch (const std::exception &e) {
    // The workers must still be waited for.
    err = createError("the step threw: ", e.what());
  }
  if (err)
    rankFailed(0, err);
  {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return pending == 0; });
  }

  // Every failure aborted the group with its reason (the first one is kept);
  // a collective's own failure is recorded there too.
  std::string failure = group->error();
  if (failure.empty() && err)
    failure =
        concat("tensor-parallel rank 0 of ", ranks, " failed: ", err.message());
  for (std::unique_ptr<Rank> &rank : workers)
    if (failure.empty() && rank->result)
      failure = concat("tensor-parallel rank ", rank->index, " of ", ranks,
                       " failed: ", rank->result.message());
  if (failure.empty())
    return Error::success();
  // The ranks' KV caches and devices may be out of step: no more steps.
  group->abort(failure);
  abortReason = failure;
  return createError(failure);
}

Error Model::TensorParallel::checkIds(const int32_t *rankZero, int64_t batch) {
  // The ranks sample from the same logits: they must agree.
  for (std::unique_ptr<Rank> &rank : workers) {
    const int32_t *next = rank->ids();
    for (int64_t i = 0; i < batch; ++i)
      if (next[i] != rankZero[i])
        return createError("tensor-parallel ranks disagree: row ", i,
                           ": rank 0 chose token ", rankZero[i], ", rank ",
                           rank->index, " token ", next[i]);
  }
  return Error::success();
}

void Model::TensorParallel::rankFailed(int64_t rank, const Error &err) {
  group->abort(concat("tensor-parallel rank ", rank, " of ", ranks,
                      " failed: ", err.message()));
}

void Model::TensorParallel::work(Rank &rank) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    wake.wait(lock, [&] { return stopping || generation != seen; });
    if (stopping)
      return;
    seen = generation;
    lock.unlock();
    Error err = Error::success();
    try {
      err = runTask(rank);
    } catch (const std::exception &e) {
      err = createError("the step threw: ", e.what());
    }
    if (err)
      rankFailed(rank.index, err);
    lock.lock();
    rank.result = std::move(err);
    if (--pending == 0)
      done.notify_all();
  }
}

Error Model::TensorParallel::startWorkers() {
  for (std::unique_ptr<Rank> &rank : workers) {
    try {
      Rank *worker = rank.get();
      rank->thread = std::thread([this, worker] { work(*worker); });
    } catch (const std::system_error &e) {
      return createError("cannot start the thread of tensor-parallel rank ",
                         rank->index, ": ", e.what());
    }
  }
  return Error::success();
}

Model::Model(std::unique_ptr<ModelLibrary> library, HostBuffer weights,
             KVCache cache, int64_t stepRows,
             std::unique_ptr<DeviceBackend> backend,
             std::unique_ptr<TensorParallel> tp)
    : lib(std::move(library)), weightArena(std::move(weights)),
      cache(std::move(cache)), stepRows(stepRows), backend(std::move(backend)),
      tp(std::move(tp)) {}

// `tp` is declared last: its workers stop, and its group and ranks go, before
// rank 0's backend and the library. The ranks' step graphs go first: NCCL
// keeps a communicator until the graphs that captured it are destroyed.
Model::~Model() {
  if (!tp)
    return;
  if (backend)
    backend->releaseStepGraphs();
  for (std::unique_ptr<TensorParallel::Rank> &rank : tp->workers)
    if (rank->backend)
      rank->backend->releaseStepGraphs();
}

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

  int64_t ranks = manifest.tensorParallel;
  auto rankError = [&](int64_t rank, const Error &err) {
    if (ranks == 1)
      return err;
    return createError("tensor-parallel rank ", rank, " of ", ranks, ": ",
                       err.message());
  };
  // Declared before `tp`, whose group uses it: destroyed after it.
  std::unique_ptr<DeviceBackend> backend;
  std::unique_ptr<TensorParallel> tp;
  if (ranks > 1) {
    tp = std::make_unique<TensorParallel>(*library, ranks);
    for (int64_t r = 1; r < ranks; ++r) {
      tp->workers.push_back(std::make_unique<TensorParallel::Rank>());
      tp->workers.back()->index = r;
    }
  }

  // A GPU library sets up the devices first: no GPU fails fast. Rank r of a
  // tensor-parallel library runs on rank 0's device + r.
  if (!library->runsOnHost()) {
    Expected<std::unique_ptr<DeviceBackend>> created =
        createDeviceBackend(*library, options.device);
    if (!created)
      return rankError(0, created.error());
    backend = std::move(*created);
    if (tp) {
      std::vector<DeviceBackend *> backends = {backend.get()};
      for (std::unique_ptr<TensorParallel::Rank> &rank : tp->workers) {
        Expected<std::unique_ptr<DeviceBackend>> other = createDeviceBackend(
            *library, backend->deviceOrdinal() + static_cast<int>(rank->index));
        if (!other)
          return rankError(rank->index, other.error());
        rank->backend = std::move(*other);
        backends.push_back(rank->backend.get());
      }
      Expected<std::unique_ptr<CollectiveGroup>> group =
          createDeviceCollectiveGroup(backends);
      if (!group)
        return createError("tensor-parallel group of ", ranks,
                           " ranks: ", group.error().message());
      tp->group = std::move(*group);
      for (size_t r = 0; r < backends.size(); ++r) {
        backends[r]->setCollectivesInGraphs(tp->group->runsInGraphs());
        backends[r]->setScratchMemory(
            tp->group->scratchMemory(static_cast<int64_t>(r)));
      }
    }
  } else if (tp) {
    tp->group = createHostCollectiveGroup(ranks);
  }

  // The KV cache first: absurd sizes fail before the weights are read. The
  // manifest's is each rank's.
  Expected<KVCache> cache = KVCache::create(
      manifest.kvCache, options.numSlots, maxContext, /*hostStorage=*/!backend);
  if (!cache)
    return cache.takeError();
  if (tp && !backend) {
    for (std::unique_ptr<TensorParallel::Rank> &rank : tp->workers) {
      Expected<KVCache> rankCache =
          KVCache::create(manifest.kvCache, options.numSlots, maxContext);
      if (!rankCache)
        return rankError(rank->index, rankCache.error());
      rank->cache.emplace(std::move(*rankCache));
    }
  }
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
  std::unique_ptr<PackedWeights> packed;
  if (!options.packedWeights.empty()) {
    Expected<std::unique_ptr<PackedWeights>> opened =
        PackedWeights::open(options.packedWeights);
    if (!opened)
      return opened.takeError();
    packed = std::move(*opened);
  }
  Expected<HostBuffer> weights =
      loadWeights(manifest, checkpoint, 0, packed.get());
  if (!weights)
    return rankError(0, weights.error());
  if (backend) {
    if (Error err = backend->uploadWeights(*weights))
      return rankError(0, err);
    *weights = HostBuffer(); // The device holds them now.
    // A step runs at most stepRows rows.
    if (Error err =
            backend->allocateState(cache->size(), stepRows, manifest.vocabSize))
      return rankError(0, err);
  }
  if (tp) {
    for (std::unique_ptr<TensorParallel::Rank> &rank : tp->workers) {
      Expected<HostBuffer> rankWeights =
          loadWeights(manifest, checkpoint, rank->index, packed.get());
      if (!rankWeights)
        return rankError(rank->index, rankWeights.error());
      if (rank->backend) {
        // One rank's host arena at a time.
        if (Error err = rank->backend->uploadWeights(*rankWeights))
          return rankError(rank->index, err);
        *rankWeights = HostBuffer();
        if (Error err = rank->backend->allocateState(cache->size(), stepRows,
                                                     manifest.vocabSize))
          return rankError(rank->index, err);
      }
      rank->weights = std::move(*rankWeights);
      // Rank 0's outputs are the caller's; the others' are the Model's.
      Expected<HostBuffer> logits = HostBuffer::allocate(
          static_cast<uint64_t>(stepRows) *
              static_cast<uint64_t>(manifest.vocabSize) * sizeof(float),
          "tensor-parallel rank logits");
      if (!logits)
        return rankError(rank->index, logits.error());
      rank->logits = std::move(*logits);
      Expected<HostBuffer> nextTokens = HostBuffer::allocate(
          static_cast<uint64_t>(stepRows) * sizeof(int32_t),
          "tensor-parallel rank next_tokens");
      if (!nextTokens)
        return rankError(rank->index, nextTokens.error());
      rank->nextTokens = std::move(*nextTokens);
    }
    if (backend) {
      std::vector<DeviceRange> scratch = {backend->scratchRange()};
      for (std::unique_ptr<TensorParallel::Rank> &rank : tp->workers)
        scratch.push_back(rank->backend->scratchRange());
      if (Error err = tp->group->registerScratch(scratch))
        return createError("tensor-parallel group of ", ranks,
                           " ranks: ", err.message());
    }
    if (Error err = tp->startWorkers())
      return err;
  }
  return std::unique_ptr<Model>(
      new Model(std::move(library), std::move(*weights), std::move(*cache),
                stepRows, std::move(backend), std::move(tp)));
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
        Array{args.uniform, "uniform"}, Array{args.next_tokens, "next_tokens"}})
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
  if (args.logits || backend)
    return runStep(args);
  // No logits wanted (a GPU step copies none back): a host step writes them
  // somewhere all the same.
  hostLogits.resize(static_cast<size_t>(args.batch * vocabSize()));
  args.logits = hostLogits.data();
  Error err = runStep(args);
  args.logits = nullptr;
  return err;
}

bool Model::canOverlapSteps() const {
  if (!backend || !backend->canOverlapSteps())
    return false;
  // A tensor-parallel model overlaps where every rank's backend does.
  if (tp)
    for (const std::unique_ptr<TensorParallel::Rank> &rank : tp->workers)
      if (!rank->backend || !rank->backend->canOverlapSteps())
        return false;
  return true;
}

Error Model::launchStep(FdcStepArgs &args, int64_t tokensFromLastStep) {
  if (!canOverlapSteps())
    return createError("model step: this model does not overlap steps");
  if (Error err = checkStepInputs(args))
    return err;
  args.num_slots = cache.numSlots();
  args.max_context = cache.maxContext();
  if (!tp)
    return backend->launchStep(args, tokensFromLastStep);
  // Every rank launches its step (each captures and replays its graph on
  // its own thread). What a backend would refuse is refused here first: a
  // rank's refusal would abort the group. A step of new rows waits for
  // the steps in flight (NCCL_GRAPH_MIXING_SUPPORT=0: a rank never has a
  // step graph's collectives and an eager step's in flight together).
  TensorParallel &t = *tp;
  if (!t.abortReason.empty())
    return createError("tensor-parallel group aborted: ", t.abortReason);
  const std::deque<FdcStepArgs> &inFlight = t.workers.front()->launched;
  if (inFlight.size() >= 2)
    return createError("model step: a third overlapped step");
  if (tokensFromLastStep == 0
          ? !inFlight.empty()
          : tokensFromLastStep != args.batch || inFlight.empty() ||
                inFlight.back().batch != args.batch)
    return createError(
        "model step: a tensor-parallel model launches a step of new rows "
        "when none is in flight, and a step fed from the last one with all "
        "of its rows (",
        tokensFromLastStep, " of ", args.batch, " rows fed, ", inFlight.size(),
        " in flight)");
  auto prepare = [&](TensorParallel::Rank &rank) {
    rank.args = args;
    rank.args.logits = nullptr;
    rank.args.next_tokens = rank.ids();
    rank.args.collective = t.group->api(rank.index);
    rank.fed = tokensFromLastStep;
    rank.launched.push_back(rank.args);
  };
  auto rankZero = [&]() -> Error {
    args.collective = t.group->api(0);
    Error err = backend->launchStep(args, tokensFromLastStep);
    args.collective = nullptr;
    return err;
  };
  return t.run(TensorParallel::Task::Launch, prepare, rankZero);
}

Error Model::finishStep(FdcStepArgs &args) {
  if (!canOverlapSteps())
    return createError("model step: this model does not overlap steps");
  if (!tp)
    return backend->finishStep(args);
  TensorParallel &t = *tp;
  if (!t.abortReason.empty())
    return createError("tensor-parallel group aborted: ", t.abortReason);
  const std::deque<FdcStepArgs> &inFlight = t.workers.front()->launched;
  if (inFlight.empty())
    return createError("model step: no overlapped step to finish");
  if (inFlight.front().batch != args.batch)
    return createError("model step: finishing a step of ",
                       inFlight.front().batch,
                       " sequences with the arguments of one of ", args.batch);
  auto prepare = [&](TensorParallel::Rank &rank) {
    rank.args = rank.launched.front();
    rank.launched.pop_front();
  };
  if (Error err = t.run(TensorParallel::Task::Finish, prepare,
                        [&] { return backend->finishStep(args); }))
    return err;
  return t.checkIds(args.next_tokens, args.batch);
}

Error Model::runStep(FdcStepArgs &args) {
  if (tp)
    return stepRanks(args);
  if (backend)
    return backend->step(args);
  args.weights = weightArena.data();
  args.kv_cache = cache.data();
  lib->stepFunction()(&args);
  return Error::success();
}

Error Model::stepRanks(FdcStepArgs &args) {
  TensorParallel &t = *tp;
  if (!t.abortReason.empty())
    return createError("tensor-parallel group aborted: ", t.abortReason);
  if (!t.workers.front()->launched.empty())
    return createError("model step: overlapped steps are in flight");
  auto prepare = [&](TensorParallel::Rank &rank) {
    rank.args = args;
    // A GPU rank copies its logits back only when rank 0's are wanted.
    rank.args.logits = args.logits || !rank.backend
                           ? reinterpret_cast<float *>(rank.logits.data())
                           : nullptr;
    rank.args.next_tokens = rank.ids();
    rank.args.collective = t.group->api(rank.index);
  };
  auto rankZero = [&]() -> Error {
    args.collective = t.group->api(0);
    Error err = t.runRank(args, weightArena, &cache, backend.get());
    args.collective = nullptr;
    return err;
  };
  if (Error err = t.run(TensorParallel::Task::Step, prepare, rankZero))
    return err;
  return t.checkIds(args.next_tokens, args.batch);
}
