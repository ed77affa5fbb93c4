//===- DeviceBackend.h - Where a GPU model library's step runs --*- C++ -*-===//
//
// The device side of a model whose library targets a GPU, in the manner of
// IREE's HAL: the Model uploads the weights, allocates the step's state once
// and then runs steps through this interface, without knowing the vendor.
// createDeviceBackend() picks the implementation from the library's target
// string: "cuda:..." -> the CUDA backend (cuda/CudaBackend.h), "rocm:..." ->
// the HIP backend (hip/HipBackend.h). A "host" library has no backend.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_DEVICEBACKEND_H
#define FDC_RUNTIME_DEVICEBACKEND_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc_model_abi.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace fdc::runtime {

class CollectiveMemory;
class GpuDevice;
class ModelLibrary;
struct DeviceRange;

class DeviceBackend {
public:
  virtual ~DeviceBackend();

  /// Allocates the device weight arena and copies `arena` (the packed host
  /// arena the weight loader built) into it; `arena` may be freed after.
  virtual Error uploadWeights(const HostBuffer &arena) = 0;

  /// Allocates the zeroed KV cache of `kvCacheBytes`, the scratch of the
  /// manifest for `maxBatch` sequences, and the per-sequence arrays, logits
  /// ([maxBatch][vocabSize] f32) and next_tokens for `maxBatch` sequences.
  /// Sizes that overflow are refused before anything is allocated.
  virtual Error allocateState(uint64_t kvCacheBytes, int64_t maxBatch,
                              int64_t vocabSize) = 0;

  /// Runs one step. `args` is the engine's: host arrays for the inputs and
  /// outputs, num_slots and max_context filled in. Copies the inputs to the
  /// device, calls the library's step with device pointers, scratch and the
  /// launch API, copies logits and next_tokens back and synchronizes. A
  /// failed launch is reported with its kernel's name.
  virtual Error step(const FdcStepArgs &args) = 0;

  // Overlapped steps: the engine launches a step before it has read the
  // sampled ids of the one before, so that the device never waits for the
  // host between steps. At most two steps are in flight; each is finished
  // (its ids copied back) in launch order, and step() is refused meanwhile.

  /// Whether launchStep / finishStep overlap steps here (else the engine
  /// calls step()); the first call may set up what they need.
  virtual bool canOverlapSteps() { return false; }
  /// Starts a step like step(), without waiting for it and without logits
  /// (`args.logits` is ignored). Rows [0, tokensFromLastStep) take as their
  /// token the id the previous step sampled in the same row, on the device;
  /// their args.tokens are ignored.
  virtual Error launchStep(const FdcStepArgs &args, int64_t tokensFromLastStep);
  /// Waits for the oldest launched step and copies its sampled ids to
  /// `args.next_tokens` (the arguments it was launched with).
  virtual Error finishStep(const FdcStepArgs &args);

  /// "NVIDIA H100 80GB HBM3 (device 0, sm_90)".
  virtual const std::string &deviceDescription() const = 0;
  /// The kernel image that was loaded: "fdc_cubin_sm_90", "fdc_ptx",
  /// "fdc_hsaco_gfx90a".
  virtual const std::string &kernelImage() const = 0;
  /// Device addresses of the weight arena and the KV cache (0 before they
  /// are allocated), for tracing.
  virtual uint64_t weightsAddress() const = 0;
  virtual uint64_t kvCacheAddress() const = 0;
  /// The ordinal of the device the backend opened ($FDC_CUDA_DEVICE
  /// numbering), or -1 when it has none.
  virtual int deviceOrdinal() const { return -1; }
  /// The runtime's own GPU device under the backend (lib/GpuDevice.h: what
  /// createDeviceCollectiveGroup() builds on), or nullptr.
  virtual GpuDevice *gpuDevice() { return nullptr; }

  // A tensor-parallel rank's backend (Collective.h).
  /// Whether the step's collectives are captured in its step graphs
  /// (CollectiveGroup::runsInGraphs) rather than cutting them; set before
  /// the first step.
  virtual void setCollectivesInGraphs(bool inGraphs) { (void)inGraphs; }
  /// Destroys the step graphs captured so far (later steps capture anew).
  /// NCCL keeps a communicator a live graph captured: the graphs go before
  /// the group.
  virtual void releaseStepGraphs() {}
  /// Takes the scratch from `memory` (CollectiveGroup::scratchMemory) rather
  /// than the device's allocator; set before allocateState().
  virtual void setScratchMemory(std::shared_ptr<CollectiveMemory> memory) {
    (void)memory;
  }
  /// The scratch allocateState() allocated ({0, 0} before, or with none).
  virtual DeviceRange scratchRange() const;
};

/// True when `target` names a GPU target some backend could run: it starts
/// with "cuda:" or "rocm:" (well-formed or not, built in or not).
bool isDeviceTarget(std::string_view target);

/// The backend for `library`'s target: loads the vendor's runtime, opens
/// device `device` (-1: the vendor's $FDC_*_DEVICE, else 0), loads the
/// library's kernel image and resolves every kernel of its manifest.
/// `library` must outlive the backend. Fails for a host target, a target no
/// backend of this runtime runs, or anything the vendor's runtime refuses
/// (missing runtime library, no device, no image for the device's arch).
Expected<std::unique_ptr<DeviceBackend>>
createDeviceBackend(const ModelLibrary &library, int device = -1);

/// Parses $FDC_CUDA_DEVICE-style text: a non-negative decimal ordinal.
/// `variable` names the setting in the error.
Expected<int> parseDeviceOrdinal(std::string_view text,
                                 std::string_view variable);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_DEVICEBACKEND_H
