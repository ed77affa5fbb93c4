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
                           const char *what) {
  // cuMemAlloc refuses 0 bytes; every buffer gets at least 256.
  uint64_t size = bytes == 0 ? 256 : alignUp(bytes, 256);
  if (DeviceStatus status = device->allocate(allocation.address, size))
    return device->fail(
        concat(vendor.allocateCall, "(", what, ", ", size, " bytes)"), status);
  allocation.bytes = bytes;
  return Error::success();
}

void GpuBackend::release(Allocation &allocation) {
  if (allocation.address)
    device->deallocate(allocation.address);
  allocation = {};
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
  releaseOverlap();
  for (int i = 0; i < 2; ++i) {
    inputStaging[i].release();
    idStaging[i].release();
  }
  for (Allocation *a : {&kvCache, &scratch, &inputs, &logits, &nextTokens})
    release(*a);
  for (auto [allocation, bytes, what] :
       {std::tuple{&kvCache, sizes->kvCache, "KV cache"},
        std::tuple{&scratch, sizes->scratch, "scratch"},
        std::tuple{&inputs, sizes->inputs, "per-sequence inputs"},
        std::tuple{&logits, sizes->logits, "logits"},
        std::tuple{&nextTokens, sizes->nextTokens, "next_tokens"}})
    if (Error err = allocate(*allocation, bytes, what))
      return err;
  if (Error err = zeroKVCacheAndScratch())
    return err;
  this->maxBatch = maxBatch;
  this->vocabSize = vocabSize;
  for (int i = 0; i < 2; ++i) {
    inputStaging[i].allocate(*device, sizes->inputs);
    idStaging[i].allocate(*device, sizes->nextTokens);
  }
  prepareOverlap();
  return Error::success();
}

void GpuBackend::prepareOverlap() {
  overlap = false;
  if (poison || envFlag(vendor.syncLaunchesVariable) ||
      !device->canOverlapSteps())
    return;
  for (GpuDevice::EventHandle &event : stepDone)
    if (device->createEvent(event) != 0) {
      releaseOverlap();
      return;
    }
  overlap = true;
}

void GpuBackend::releaseOverlap() {
  for (GpuDevice::EventHandle &event : stepDone) {
    if (event)
      device->destroyEvent(event);
    event = nullptr;
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

Error GpuBackend::stageInputs(const FdcStepArgs &args, StagingBuffer &staging) {
  // Pack the inputs into one staging buffer: one copy to the device.
  size_t bytes = static_cast<size_t>(args.batch) * 4;
  uint64_t stride = stepInputStride(args.batch);
  const void *sources[kNumStepInputs] = {
      args.tokens, args.positions, args.slots,  args.temperature,
      args.top_k,  args.top_p,     args.uniform};
  for (int i = 0; i < kNumStepInputs; ++i)
    std::memcpy(staging.data() + i * stride, sources[i], bytes);
  if (DeviceStatus status = device->copyToDevice(inputs.address, staging.data(),
                                                 stepInputBytes(args.batch)))
    return device->fail(concat(vendor.copyToDeviceCall, "(step inputs)"),
                        status);
  return Error::success();
}

FdcStepArgs GpuBackend::deviceArgs(const FdcStepArgs &args) const {
  uint64_t stride = stepInputStride(args.batch);
  auto input = [&](int i) { return pointerTo(inputs.address + i * stride); };
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
  a.next_tokens = static_cast<int32_t *>(pointerTo(nextTokens.address));
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

Expected<const StepGraph *>
GpuBackend::enqueueStep(const FdcStepArgs &onDevice) {
  if (useGraphs && onDevice.batch <= kMaxGraphBatch) {
    Expected<const StepGraph *> replayed = replayStepGraph(onDevice);
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
  if (Error err = stageInputs(args, inputStaging[0]))
    return err;
  if (poison)
    if (Error err = poisonOutputs()) {
      // The input copy may still read the staging buffer.
      device->synchronize();
      return err;
    }
  Expected<const StepGraph *> replayed = enqueueStep(deviceArgs(args));
  if (!replayed)
    return replayed.takeError();
  return copyOutputs(args, *replayed);
}

Error GpuBackend::launchStep(const FdcStepArgs &args,
                             int64_t tokensFromLastStep) {
  if (!overlap)
    return createError(name, ": steps do not overlap here");
  if (args.batch < 1 || args.batch > maxBatch)
    return createError(name, ": a step of ", args.batch,
                       " sequences, the device buffers hold ", maxBatch);
  if (tokensFromLastStep < 0 || tokensFromLastStep > args.batch)
    return createError(name, ": ", tokensFromLastStep,
                       " rows fed from the last step of a step of ",
                       args.batch);
  if (inFlight.size() >= 2)
    return createError(name, ": a third overlapped step");
  if (Error err = makeCurrent())
    return err;
  // The staging pair of the step launched two steps ago, which is finished.
  int staging = nextStaging;
  // Anything that fails from here leaves the stream drained, so that the
  // staging buffers are free again; the step before is still finished by
  // finishStep.
  auto failed = [&](Error err) {
    device->synchronize();
    return err;
  };
  if (Error err = stageInputs(args, inputStaging[staging]))
    return failed(std::move(err));
  // The tokens array is the first input array: rows [0, n) of the last
  // step's next_tokens, which its kernels wrote before these run.
  if (tokensFromLastStep > 0)
    if (DeviceStatus status =
            device->copyOnDevice(inputs.address, nextTokens.address,
                                 static_cast<uint64_t>(tokensFromLastStep) * 4))
      return failed(device->fail(
          concat(vendor.copyOnDeviceCall, "(tokens of the last step)"),
          status));
  Expected<const StepGraph *> replayed = enqueueStep(deviceArgs(args));
  if (!replayed)
    return failed(replayed.takeError());
  uint64_t idBytes = static_cast<uint64_t>(args.batch) * 4;
  if (DeviceStatus status = device->copyToHost(idStaging[staging].data(),
                                               nextTokens.address, idBytes))
    return failed(stepFailed(concat(vendor.copyToHostCall, "(next_tokens)"),
                             status, *replayed));
  if (DeviceStatus status = device->recordEvent(stepDone[staging]))
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
  if (DeviceStatus status = device->waitForEvent(stepDone[step.staging])) {
    device->synchronize();
    inFlight.clear();
    return stepFailed(vendor.waitForEventCall, status, step.replayed);
  }
  std::memcpy(args.next_tokens, idStaging[step.staging].data(),
              static_cast<size_t>(step.batch) * 4);
  return Error::success();
}

void GpuBackend::destroyStepGraphs() { graphs.clear(); }

Expected<const StepGraph *>
GpuBackend::replayStepGraph(const FdcStepArgs &onDevice) {
  std::unique_ptr<StepGraph> &graph = graphs[onDevice.batch];
  if (!graph) {
    Expected<std::unique_ptr<StepGraph>> captured =
        StepGraph::capture(*device, launcher, library.stepFunction(), onDevice);
    if (!captured) {
      graphs.erase(onDevice.batch);
      // Let what was enqueued before the capture finish before the caller
      // reuses the buffers.
      device->synchronize();
      return createError(captured.error().message(),
                         " (capturing the step graph of batch size ",
                         onDevice.batch, "; ", vendor.graphsVariable,
                         "=0 runs every step eagerly)");
    }
    if (!*captured) {
      graphs.erase(onDevice.batch);
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
