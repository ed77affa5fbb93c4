//===- GpuBackend.cpp - A GPU library's device state and step -------------===//

#include "GpuBackend.h"

#include "fdc/runtime/DeviceBuffers.h"
#include "fdc/runtime/ModelLibrary.h"

#include <cstdlib>
#include <cstring>
#include <tuple>

using namespace fdc::runtime;

namespace {
uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

void *pointerTo(DeviceAddress address) {
  return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
}
} // namespace

GpuBackend::GpuBackend(const ModelLibrary &library,
                       std::unique_ptr<GpuDevice> device,
                       std::string description, std::string image)
    : device(std::move(device)), vendor(this->device->vendor()),
      library(library), description(std::move(description)),
      image(std::move(image)), name(concat(vendor.name, " backend")),
      poison(envFlag(vendor.poisonVariable)),
      launcher(*this->device, envFlag(vendor.syncLaunchesVariable)) {
  // Graphs unless turned off; never around per-launch synchronization or
  // the poisoning of every step.
  const char *graphSetting = std::getenv(vendor.graphsVariable);
  useGraphs = !(graphSetting && std::strcmp(graphSetting, "0") == 0) &&
              !poison && !envFlag(vendor.syncLaunchesVariable);
}

Expected<std::unique_ptr<DeviceBackend>>
GpuBackend::create(const ModelLibrary &library,
                   std::unique_ptr<GpuDevice> device, std::string description,
                   std::string image) {
  std::unique_ptr<GpuBackend> backend(new GpuBackend(
      library, std::move(device), std::move(description), std::move(image)));
  if (Error err = backend->launcher.resolveKernels(library, backend->image))
    return err;
  return std::unique_ptr<DeviceBackend>(std::move(backend));
}

GpuBackend::~GpuBackend() {
  device->makeCurrent();
  device->synchronize();
  destroyStepGraphs();
  releaseOverlap();
  for (Allocation *a :
       {&weights, &kvCache, &scratch, &inputs, &logits, &nextTokens})
    release(*a);
}

Error GpuBackend::makeCurrent() {
  if (DeviceStatus status = device->makeCurrent())
    return device->fail(vendor.makeCurrentCall, status);
  return Error::success();
}

Error GpuBackend::allocate(Allocation &allocation, uint64_t bytes,
                           const char *what, CollectiveMemory *memory) {
  // cuMemAlloc refuses 0 bytes; every buffer gets at least 256.
  uint64_t size = bytes == 0 ? 256 : alignUp(bytes, 256);
  if (memory) {
    if (Error err = memory->allocate(size, allocation.address, what))
      return err;
  } else if (DeviceStatus status = device->allocate(allocation.address, size)) {
    return device->fail(
        concat(vendor.allocateCall, "(", what, ", ", size, " bytes)"), status);
  }
  allocation.bytes = bytes;
  allocation.memory = memory;
  return Error::success();
}

void GpuBackend::release(Allocation &allocation) {
  if (allocation.address && allocation.memory)
    allocation.memory->release(allocation.address);
  else if (allocation.address)
    device->deallocate(allocation.address);
  allocation = {};
}

DeviceRange GpuBackend::scratchRange() const {
  if (!scratch.address)
    return {};
  // What allocate() allocated.
  return {scratch.address,
          scratch.bytes == 0 ? 256 : alignUp(scratch.bytes, 256)};
}

Error GpuBackend::uploadWeights(const HostBuffer &arena) {
  if (Error err = makeCurrent())
    return err;
  destroyStepGraphs(); // they hold the old buffers' addresses
  release(weights);
  if (Error err = allocate(weights, arena.size(), "weight arena"))
    return err;
  if (arena.size() == 0)
    return Error::success();
  // On the step's stream, and finished before the caller frees `arena`.
  if (DeviceStatus status =
          device->copyToDevice(weights.address, arena.data(), arena.size()))
    return device->fail(concat(vendor.copyToDeviceCall, "(weight arena, ",
                               arena.size(), " bytes)"),
                        status);
  if (DeviceStatus status = device->synchronize())
    return device->fail(concat(vendor.synchronizeCall, "(weight upload)"),
                        status);
  return Error::success();
}

Error GpuBackend::allocateState(uint64_t kvCacheBytes, int64_t maxBatch,
                                int64_t vocabSize) {
  destroyStepGraphs(); // they hold the old buffers' addresses
  Expected<ScratchSpec> spec = parseScratch(
      library.manifestText(), concat("model library ", library.path()));
  if (!spec)
    return spec.takeError();
  Expected<DeviceBufferSizes> sizes =
      computeDeviceBufferSizes(kvCacheBytes, maxBatch, vocabSize, *spec, name);
  if (!sizes)
    return sizes.takeError();
  if (Error err = makeCurrent())
    return err;
  // Until every buffer is in place the backend holds no state: a step
  // after a failed allocation is refused by the batch check (maxBatch 0).
  this->maxBatch = 0;
  device->synchronize(); // no step in flight reads the old buffers
  inFlight.clear();
  for (int i = 0; i < 2; ++i) {
    inputStaging[i].release();
    idStaging[i].release();
  }
  for (Allocation *a : {&kvCache, &scratch, &inputs, &logits, &nextTokens})
    release(*a);
  for (auto [allocation, bytes, what] :
       {std::tuple{&kvCache, sizes->kvCache, "KV cache"},
        // Two of each: one per step that may be in flight.
        std::tuple{&inputs, 2 * sizes->inputs, "per-sequence inputs"},
        std::tuple{&logits, sizes->logits, "logits"},
        std::tuple{&nextTokens, 2 * alignUp(sizes->nextTokens, 256),
                   "next_tokens"}})
    if (Error err = allocate(*allocation, bytes, what))
      return err;
  if (Error err =
          allocate(scratch, sizes->scratch, "scratch", scratchMemory.get()))
    return err;
  if (Error err = zeroKVCacheAndScratch())
    return err;
  this->maxBatch = maxBatch;
  this->vocabSize = vocabSize;
  inputsBytes = sizes->inputs;
  nextTokensBytes = alignUp(sizes->nextTokens, 256);
  for (int i = 0; i < 2; ++i) {
    inputStaging[i].allocate(*device, sizes->inputs);
    idStaging[i].allocate(*device, sizes->nextTokens);
  }
  return Error::success();
}

bool GpuBackend::canOverlapSteps() {
  if (!overlapPrepared) {
    overlapPrepared = true;
    // The stream and the events belong to the device's context, which the
    // calling thread (an engine's) may not have current yet.
    if (Error err = makeCurrent())
      return false;
    prepareOverlap();
  }
  return overlap;
}

void GpuBackend::prepareOverlap() {
  overlap = false;
  if (poison || envFlag(vendor.syncLaunchesVariable) ||
      !device->canOverlapSteps() || device->openCopyStreams() != 0)
    return;
  for (StepEvents &events : stepEvents)
    for (GpuDevice::EventHandle *event :
         {&events.inputsCopied, &events.computed, &events.idsCopied})
      if (device->createEvent(*event, GpuDevice::EventUse::Ordering) != 0) {
        releaseOverlap();
        return;
      }
  overlap = true;
}

void GpuBackend::releaseOverlap() {
  for (StepEvents &events : stepEvents)
    for (GpuDevice::EventHandle *event :
         {&events.inputsCopied, &events.computed, &events.idsCopied}) {
      if (*event)
        device->destroyEvent(*event);
      *event = nullptr;
    }
  overlap = false;
}

Error GpuBackend::zeroKVCacheAndScratch() {
  // The host KV cache starts zeroed; so does this one (and the scratch).
  for (auto [allocation, what] :
       {std::pair{&kvCache, "KV cache"}, std::pair{&scratch, "scratch"}})
    if (DeviceStatus status = device->fill(allocation->address, 0,
                                           alignUp(allocation->bytes, 256)))
      return device->fail(concat(vendor.fillCall, "(", what, ")"), status);
  if (DeviceStatus status = device->synchronize())
    return device->fail(
        concat(vendor.synchronizeCall, "(zeroing the KV cache)"), status);
  return Error::success();
}

Error GpuBackend::stageInputs(GpuDevice::Stream stream, const FdcStepArgs &args,
                              int staging) {
  // Pack the inputs into one staging buffer: one copy to the device.
  size_t bytes = static_cast<size_t>(args.batch) * 4;
  uint64_t stride = stepInputStride(args.batch);
  const void *sources[kNumStepInputs] = {
      args.tokens, args.positions, args.slots,  args.temperature,
      args.top_k,  args.top_p,     args.uniform};
  uint8_t *packed = inputStaging[staging].data();
  for (int i = 0; i < kNumStepInputs; ++i)
    std::memcpy(packed + i * stride, sources[i], bytes);
  DeviceAddress destination = inputs.address + staging * inputsBytes;
  uint64_t copyBytes = stepInputBytes(args.batch);
  DeviceStatus status =
      stream == GpuDevice::Stream::Main
          ? device->copyToDevice(destination, packed, copyBytes)
          : device->copyToDeviceOn(stream, destination, packed, copyBytes);
  if (status)
    return device->fail(concat(vendor.copyToDeviceCall, "(step inputs)"),
                        status);
  return Error::success();
}

FdcStepArgs GpuBackend::deviceArgs(const FdcStepArgs &args, int staging,
                                   bool tokensFromLastStep) const {
  uint64_t stride = stepInputStride(args.batch);
  DeviceAddress base = inputs.address + staging * inputsBytes;
  auto input = [&](int i) { return pointerTo(base + i * stride); };
  FdcStepArgs a = {};
  a.batch = args.batch;
  a.num_slots = args.num_slots;
  a.max_context = args.max_context;
  a.weights = pointerTo(weights.address);
  a.kv_cache = pointerTo(kvCache.address);
  a.tokens = static_cast<const int32_t *>(input(0));
  a.positions = static_cast<const int32_t *>(input(1));
  a.slots = static_cast<const int32_t *>(input(2));
  a.temperature = static_cast<const float *>(input(3));
  a.top_k = static_cast<const int32_t *>(input(4));
  a.top_p = static_cast<const float *>(input(5));
  a.uniform = static_cast<const float *>(input(6));
  a.logits = static_cast<float *>(pointerTo(logits.address));
  a.next_tokens = static_cast<int32_t *>(
      pointerTo(nextTokens.address + staging * nextTokensBytes));
  // The last step's sampled ids, where it left them, as this one's tokens.
  if (tokensFromLastStep)
    a.tokens = static_cast<const int32_t *>(
        pointerTo(nextTokens.address + (1 - staging) * nextTokensBytes));
  a.scratch = pointerTo(scratch.address);
  a.device = launcher.deviceApi();
  // A host pointer (a tensor-parallel rank's group), passed through.
  a.collective = args.collective;
  return a;
}

Error GpuBackend::poisonOutputs() {
  // $FDC_<VENDOR>_POISON=1 (tests): fill the outputs and the scratch with
  // 0xFF bytes (NaN floats, -1 ints) before the step, so anything a kernel
  // fails to write shows up.
  for (auto [allocation, what] :
       {std::pair{&logits, "logits"}, std::pair{&nextTokens, "next_tokens"},
        std::pair{&scratch, "scratch"}})
    if (allocation->bytes > 0)
      if (DeviceStatus status =
              device->fill(allocation->address, 0xFF, allocation->bytes))
        return device->fail(concat(vendor.fillCall, "(poison ", what, ")"),
                            status);
  return Error::success();
}

Error GpuBackend::stepFailed(const std::string &call, DeviceStatus status,
                             const StepGraph *replayed) const {
  // A fault inside a kernel surfaces at a later call on the stream.
  return createError(
      "the model step failed: ", call, ": ", device->describe(status),
      " (the step launched ",
      replayed ? replayed->launchedList() : launcher.launchedList(), "; ",
      vendor.syncLaunchesVariable, "=1 names the failing kernel)");
}

Error GpuBackend::copyOutputs(const FdcStepArgs &args,
                              const StepGraph *replayed) {
  uint64_t batch = static_cast<uint64_t>(args.batch);
  uint64_t logitBytes = batch * static_cast<uint64_t>(vocabSize) * 4;
  if (args.logits) // null: the caller wants only the sampled ids
    if (DeviceStatus status =
            device->copyToHost(args.logits, logits.address, logitBytes))
      return stepFailed(concat(vendor.copyToHostCall, "(logits)"), status,
                        replayed);
  if (DeviceStatus status = device->copyToHost(idStaging[0].data(),
                                               nextTokens.address, batch * 4))
    return stepFailed(concat(vendor.copyToHostCall, "(next_tokens)"), status,
                      replayed);
  if (DeviceStatus status = device->synchronize())
    return stepFailed(vendor.synchronizeCall, status, replayed);
  std::memcpy(args.next_tokens, idStaging[0].data(), batch * 4);
  return Error::success();
}

Expected<const StepGraph *> GpuBackend::enqueueStep(const FdcStepArgs &onDevice,
                                                    int64_t graphKey) {
  if (useGraphs && onDevice.batch <= kMaxGraphBatch) {
    Expected<const StepGraph *> replayed = replayStepGraph(onDevice, graphKey);
    if (!replayed || *replayed)
      return replayed;
  }
  launcher.beginStep();
  FdcStepArgs launched = onDevice;
  library.stepFunction()(&launched);
  if (!launcher.launchError().empty()) {
    // Let what was enqueued finish before the caller reuses the buffers.
    device->synchronize();
    return createError(launcher.launchError());
  }
  return nullptr;
}

Error GpuBackend::step(const FdcStepArgs &args) {
  if (args.batch < 1 || args.batch > maxBatch)
    return createError(name, ": a step of ", args.batch,
                       " sequences, the device buffers hold ", maxBatch);
  if (!inFlight.empty())
    return createError(name, ": a step while ", inFlight.size(),
                       " overlapped steps are in flight");
  if (Error err = makeCurrent())
    return err;
  if (Error err = stageInputs(GpuDevice::Stream::Main, args, 0))
    return err;
  if (poison)
    if (Error err = poisonOutputs()) {
      // The input copy may still read the staging buffer.
      device->synchronize();
      return err;
    }
  Expected<const StepGraph *> replayed =
      enqueueStep(deviceArgs(args, 0, false), graphKey(args.batch, 0, false));
  if (!replayed)
    return replayed.takeError();
  return copyOutputs(args, *replayed);
}

Error GpuBackend::launchStep(const FdcStepArgs &args,
                             int64_t tokensFromLastStep) {
  if (!canOverlapSteps())
    return createError(name, ": steps do not overlap here");
  if (args.batch < 1 || args.batch > maxBatch)
    return createError(name, ": a step of ", args.batch,
                       " sequences, the device buffers hold ", maxBatch);
  if (inFlight.size() >= 2)
    return createError(name, ": a third overlapped step");
  // Fed rows are all of them, and the last step's: its ids are where this
  // step reads its tokens.
  bool fed = tokensFromLastStep != 0;
  if (fed && (tokensFromLastStep != args.batch || inFlight.empty() ||
              inFlight.back().batch != args.batch))
    return createError(name, ": ", tokensFromLastStep,
                       " rows fed from the last step, a step of ", args.batch,
                       " rows after one of ",
                       inFlight.empty() ? 0 : inFlight.back().batch);
  if (Error err = makeCurrent())
    return err;
  // The staging pair of the step launched two steps ago, which is finished:
  // finishStep waited for its ids to reach the host, after its kernels. So
  // the halves of `inputs` and `nextTokens` it used are free, and this
  // step's copies and kernels need not wait for anything of it.
  int staging = nextStaging;
  StepEvents &events = stepEvents[staging];
  using Stream = GpuDevice::Stream;
  // Anything that fails from here leaves every stream drained, so that the
  // buffers are free again; the step before is still finished by
  // finishStep.
  auto failed = [&](Error err) {
    device->synchronize();
    return err;
  };
  // The inputs go in on their copy stream, beside the step before.
  if (Error err = stageInputs(Stream::CopiesIn, args, staging))
    return failed(std::move(err));
  if (DeviceStatus status =
          device->recordEventOn(Stream::CopiesIn, events.inputsCopied))
    return failed(device->fail(vendor.recordEventCall, status));
  if (DeviceStatus status = device->waitOn(Stream::Main, events.inputsCopied))
    return failed(device->fail(vendor.waitOnCall, status));
  Expected<const StepGraph *> replayed = enqueueStep(
      deviceArgs(args, staging, fed), graphKey(args.batch, staging, fed));
  if (!replayed)
    return failed(replayed.takeError());
  // The ids come back on the other copy stream, beside the step after.
  uint64_t idBytes = static_cast<uint64_t>(args.batch) * 4;
  DeviceAddress ids = nextTokens.address + staging * nextTokensBytes;
  if (DeviceStatus status =
          device->recordEventOn(Stream::Main, events.computed))
    return failed(stepFailed(vendor.recordEventCall, status, *replayed));
  if (DeviceStatus status = device->waitOn(Stream::CopiesOut, events.computed))
    return failed(stepFailed(vendor.waitOnCall, status, *replayed));
  if (DeviceStatus status = device->copyToHostOn(
          Stream::CopiesOut, idStaging[staging].data(), ids, idBytes))
    return failed(stepFailed(concat(vendor.copyToHostCall, "(next_tokens)"),
                             status, *replayed));
  if (DeviceStatus status =
          device->recordEventOn(Stream::CopiesOut, events.idsCopied))
    return failed(stepFailed(vendor.recordEventCall, status, *replayed));
  inFlight.push_back({staging, args.batch, *replayed});
  nextStaging = 1 - staging;
  return Error::success();
}

Error GpuBackend::finishStep(const FdcStepArgs &args) {
  if (inFlight.empty())
    return createError(name, ": no overlapped step to finish");
  InFlight step = inFlight.front();
  if (args.batch != step.batch)
    return createError(name, ": finishing a step of ", step.batch,
                       " sequences with the arguments of one of ", args.batch);
  inFlight.erase(inFlight.begin());
  if (Error err = makeCurrent())
    return err;
  if (DeviceStatus status =
          device->waitForEvent(stepEvents[step.staging].idsCopied)) {
    device->synchronize();
    inFlight.clear();
    return stepFailed(vendor.waitForEventCall, status, step.replayed);
  }
  std::memcpy(args.next_tokens, idStaging[step.staging].data(),
              static_cast<size_t>(step.batch) * 4);
  return Error::success();
}

void GpuBackend::destroyStepGraphs() { graphs.clear(); }

void GpuBackend::releaseStepGraphs() {
  device->makeCurrent();
  device->synchronize();
  destroyStepGraphs();
}

Expected<const StepGraph *>
GpuBackend::replayStepGraph(const FdcStepArgs &onDevice, int64_t key) {
  std::unique_ptr<StepGraph> &graph = graphs[key];
  if (!graph) {
    Expected<std::unique_ptr<StepGraph>> captured = StepGraph::capture(
        *device, launcher, library.stepFunction(), onDevice,
        collectivesInGraphs ? StepGraph::Collectives::Captured
                            : StepGraph::Collectives::CutTheCapture);
    if (!captured) {
      graphs.erase(key);
      // Let what was enqueued before the capture finish before the caller
      // reuses the buffers.
      device->synchronize();
      return createError(captured.error().message(),
                         " (capturing the step graph of batch size ",
                         onDevice.batch, "; ", vendor.graphsVariable,
                         "=0 runs every step eagerly)");
    }
    if (!*captured) {
      graphs.erase(key);
      useGraphs = false; // this vendor runs every step eagerly
      return nullptr;
    }
    graph = std::move(*captured);
  }
  if (Error err = graph->replay(onDevice.collective)) {
    device->synchronize();
    return createError(err.message(), " (replaying the step graph of batch ",
                       "size ", onDevice.batch, ")");
  }
  return graph.get();
}
