//===- GpuBackend.h - A GPU library's device state and step -----*- C++ -*-===//
//
// The vendor-neutral DeviceBackend of a GPU model library: the device buffers
// (weight arena, KV cache, scratch, the per-sequence inputs, logits and
// next_tokens), the staging of a step's inputs in one copy and of its sampled
// ids (in pinned host memory where the vendor has it), the FdcStepArgs
// of device pointers, the poisoning of the outputs ($FDC_<VENDOR>_POISON) and
// the errors of a step. The vendor opens the device and loads the kernel
// image (cuda/CudaBackend.cpp, hip/HipBackend.cpp), then hands its GpuDevice
// to create().
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_GPUBACKEND_H
#define FDC_RUNTIME_LIB_GPUBACKEND_H

#include "GpuDevice.h"
#include "KernelLauncher.h"
#include "StagingBuffer.h"
#include "StepGraph.h"

#include "fdc/runtime/Collective.h"
#include "fdc/runtime/DeviceBackend.h"

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace fdc::runtime {

class GpuBackend final : public DeviceBackend {
public:
  /// Takes over `device` (its kernel image loaded, named `image`), resolves
  /// every kernel of `library`'s manifest and reads the vendor's
  /// environment settings. `description` is deviceDescription().
  static Expected<std::unique_ptr<DeviceBackend>>
  create(const ModelLibrary &library, std::unique_ptr<GpuDevice> device,
         std::string description, std::string image);
  ~GpuBackend() override;

  Error uploadWeights(const HostBuffer &arena) override;
  Error allocateState(uint64_t kvCacheBytes, int64_t maxBatch,
                      int64_t vocabSize) override;
  Error step(const FdcStepArgs &args) override;
  bool canOverlapSteps() override;
  Error launchStep(const FdcStepArgs &args,
                   int64_t tokensFromLastStep) override;
  Error finishStep(const FdcStepArgs &args) override;
  const std::string &deviceDescription() const override { return description; }
  const std::string &kernelImage() const override { return image; }
  uint64_t weightsAddress() const override { return weights.address; }
  uint64_t kvCacheAddress() const override { return kvCache.address; }
  int deviceOrdinal() const override { return device->deviceOrdinal(); }
  GpuDevice *gpuDevice() override { return device.get(); }
  void setCollectivesInGraphs(bool inGraphs) override {
    collectivesInGraphs = inGraphs;
  }
  void releaseStepGraphs() override;
  void setScratchMemory(std::shared_ptr<CollectiveMemory> memory) override {
    scratchMemory = std::move(memory);
  }
  DeviceRange scratchRange() const override;

private:
  struct Allocation {
    DeviceAddress address = 0;
    uint64_t bytes = 0;
    /// Where it came from when not from the device's allocator.
    CollectiveMemory *memory = nullptr;
  };

  GpuBackend(const ModelLibrary &library, std::unique_ptr<GpuDevice> device,
             std::string description, std::string image);

  Error makeCurrent();
  /// Allocates max(bytes, 1) rounded up to 256 bytes, from `memory` when
  /// given; `what` names the buffer in errors.
  Error allocate(Allocation &allocation, uint64_t bytes, const char *what,
                 CollectiveMemory *memory = nullptr);
  void release(Allocation &allocation);
  Error zeroKVCacheAndScratch();

  /// Copies the step's inputs in one copy on `stream`, through the staging
  /// pair `staging` into its half of `inputs`, packed at
  /// stepInputStride(args.batch).
  Error stageInputs(GpuDevice::Stream stream, const FdcStepArgs &args,
                    int staging);
  /// Runs the step's kernels on the main stream: its graph (under
  /// `graphKey`), or eagerly. Returns the graph that ran, or null.
  Expected<const StepGraph *> enqueueStep(const FdcStepArgs &onDevice,
                                          int64_t graphKey);
  /// A step graph's key: the batch size, the staging pair (the halves of
  /// `inputs` and `nextTokens` it uses) and whether its tokens are the last
  /// step's ids.
  static int64_t graphKey(int64_t batch, int staging, bool tokensFromLastStep) {
    return batch * 4 + staging * 2 + (tokensFromLastStep ? 1 : 0);
  }
  /// The error of a step whose kernels fault: `call` (the first call to
  /// report it) and the kernels the step launched.
  Error stepFailed(const std::string &call, DeviceStatus status,
                   const StepGraph *replayed) const;
  /// Opens the copy stream and creates the events of overlapped steps (on
  /// the first canOverlapSteps(): a model that never overlaps, e.g. one
  /// whose engine turned them off, has neither); `overlap` says whether it
  /// worked.
  void prepareOverlap();
  void releaseOverlap();
  /// The step's arguments on the device: the inputs as stageInputs put them
  /// in the half of `staging`, its ids to that half of `nextTokens`; with
  /// `tokensFromLastStep`, its tokens are the other half's ids.
  FdcStepArgs deviceArgs(const FdcStepArgs &args, int staging,
                         bool tokensFromLastStep) const;
  Error poisonOutputs();
  /// Runs the step of `onDevice.batch` rows as a graph, captured on the
  /// first step of that batch size, and returns it; null if the vendor
  /// cannot capture (then every step runs eagerly). Errors name the batch
  /// size.
  Expected<const StepGraph *> replayStepGraph(const FdcStepArgs &onDevice,
                                              int64_t key);
  void destroyStepGraphs();
  /// `replayed`: the graph that ran the step, if one did (its kernels name
  /// the suspects of a fault).
  Error copyOutputs(const FdcStepArgs &args, const StepGraph *replayed);

  /// Declared first: destroyed after everything allocated on it.
  std::unique_ptr<GpuDevice> device;
  const GpuVendor &vendor;
  const ModelLibrary &library;
  std::string description;
  std::string image;
  /// "CUDA backend", for errors.
  std::string name;
  bool poison = false;
  /// A tensor-parallel rank's collectives go into its step graphs (else
  /// they cut them).
  bool collectivesInGraphs = false;
  KernelLauncher launcher;

  Allocation weights, kvCache, scratch, inputs, logits, nextTokens;
  /// A tensor-parallel rank's source of scratch (setScratchMemory).
  std::shared_ptr<CollectiveMemory> scratchMemory;
  int64_t maxBatch = 0;
  int64_t vocabSize = 0;
  /// The inputs on their way to `inputs`, and the sampled ids on their way
  /// back before they reach the caller: one pair for each of the two steps
  /// that may be in flight (overlapped steps); step() uses the first.
  StagingBuffer inputStaging[2], idStaging[2];
  /// The bytes of one half of `inputs` and of `nextTokens`.
  uint64_t inputsBytes = 0, nextTokensBytes = 0;
  /// Overlapped steps: whether they run (the device can, and neither
  /// poisoning nor per-launch synchronization is on); per staging pair the
  /// events of its step: inputs copied (the copy stream; the main stream
  /// waits), kernels done (the main stream; the copy stream waits before
  /// the ids come back) and ids copied (the host waits); and the steps in
  /// flight, oldest first.
  bool overlap = false, overlapPrepared = false;
  struct StepEvents {
    GpuDevice::EventHandle inputsCopied = nullptr, computed = nullptr,
                           idsCopied = nullptr;
  };
  StepEvents stepEvents[2];
  struct InFlight {
    int staging;
    int64_t batch;
    const StepGraph *replayed;
  };
  std::vector<InFlight> inFlight;
  int nextStaging = 0;
  /// Step graphs by graphKey() ($FDC_<VENDOR>_GRAPHS=0 turns them off).
  bool useGraphs = true;
  std::unordered_map<int64_t, std::unique_ptr<StepGraph>> graphs;
  /// Larger steps launch eagerly: their kernels run long enough that the
  /// launches do not show, and a graph per size would pile up.
  static constexpr int64_t kMaxGraphBatch = 256;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_GPUBACKEND_H
