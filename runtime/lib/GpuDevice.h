//===- GpuDevice.h - The few device calls a GPU vendor provides -*- C++ -*-===//
//
// The vendor-neutral GPU backend (GpuBackend.h) runs a model library's step
// through this interface; CUDA (cuda/CudaDevice.h) and HIP (hip/HipDevice.h)
// each implement only these calls, on one device, one stream and one loaded
// kernel image. Every call returns the vendor's status code (0 = success);
// the caller names the call in its message with GpuVendor's call names and
// describe().
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_GPUDEVICE_H
#define FDC_RUNTIME_LIB_GPUDEVICE_H

#include "fdc/runtime/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime {

class CollectiveGroup;

/// A vendor status code: CUresult, hipError_t. 0 is success.
using DeviceStatus = int;
/// A device address (CUdeviceptr, or a HIP device pointer as an integer).
using DeviceAddress = uint64_t;
/// A kernel resolved in the loaded image (CUfunction, hipFunction_t).
using KernelHandle = void *;

/// How messages and settings name a vendor and its calls.
struct GpuVendor {
  /// "CUDA", "HIP".
  const char *name;
  /// Environment variables: the device ordinal, synchronizing after every
  /// launch, filling the outputs with 0xFF bytes before every step, and
  /// step graphs.
  const char *deviceVariable;
  const char *syncLaunchesVariable;
  const char *poisonVariable;
  /// Set to 0 to launch every step's kernels one by one instead of
  /// replaying the step's graph for its batch size (FDC_CUDA_GRAPHS,
  /// FDC_HIP_GRAPHS).
  const char *graphsVariable;
  /// The call behind each GpuDevice operation, as errors name it.
  const char *makeCurrentCall;
  const char *allocateCall;
  const char *copyToDeviceCall;
  const char *copyToHostCall;
  const char *fillCall;
  const char *synchronizeCall;
  const char *getKernelCall;
  const char *setSharedLimitCall;
  const char *launchCall;
  /// The calls behind beginCapture, endCapture (two, comma-separated) and
  /// replay.
  const char *beginCaptureCall;
  const char *endCaptureCalls;
  const char *replayCall;
  /// The calls behind allocatePinned, openCopyStreams, recordEvent, waitOn
  /// and waitForEvent.
  const char *allocatePinnedCall;
  const char *openCopyStreamsCall;
  const char *recordEventCall;
  const char *waitOnCall;
  const char *waitForEventCall;
  /// Dynamic shared memory a kernel may use before it must be opted into
  /// more with setSharedLimit (CUDA: 48 KiB; HIP has no opt-in: UINT32_MAX).
  uint32_t defaultSharedLimit;
};

/// A kernel launch's grid, block and dynamic shared memory.
struct LaunchShape {
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t sharedBytes;
};

/// One device of one vendor, opened: its context, a stream and the loaded
/// kernel image, released by the destructor. The copies, fills and launches
/// are ordered on the stream; synchronize() waits for them.
class GpuDevice {
public:
  /// An executable graph of captured launches, an event on the stream.
  using GraphHandle = void *;
  using EventHandle = void *;

  virtual ~GpuDevice();

  virtual const GpuVendor &vendor() const = 0;
  /// The device's ordinal ($FDC_CUDA_DEVICE / $FDC_HIP_DEVICE numbering).
  virtual int deviceOrdinal() const = 0;
  /// The status's name and text: "CUDA_ERROR_INVALID_VALUE: invalid
  /// argument".
  virtual std::string describe(DeviceStatus status) const = 0;

  /// Makes the device current for the calling thread.
  virtual DeviceStatus makeCurrent() = 0;
  /// `bytes` > 0.
  virtual DeviceStatus allocate(DeviceAddress &address, uint64_t bytes) = 0;
  virtual void deallocate(DeviceAddress address) = 0;
  virtual DeviceStatus copyToDevice(DeviceAddress destination,
                                    const void *source, uint64_t bytes) = 0;
  virtual DeviceStatus copyToHost(void *destination, DeviceAddress source,
                                  uint64_t bytes) = 0;
  virtual DeviceStatus fill(DeviceAddress destination, uint8_t value,
                            uint64_t bytes) = 0;
  /// Waits for everything enqueued, on both streams.
  virtual DeviceStatus synchronize() = 0;

  /// Page-locked host memory, which copies reach without a bounce buffer
  /// and which copies to the host fill asynchronously (the step's inputs and
  /// sampled ids). kNotSupported: the vendor's backend has none, and the
  /// caller uses ordinary memory.
  virtual DeviceStatus allocatePinned(void *&pointer, uint64_t bytes);
  virtual void freePinned(void *pointer);

  // Overlapped steps (GpuBackend::launchStep): the step's kernels run on
  // the main stream, its input and output copies on two others, each
  // stream waiting for the other's events where it must, so that a step's
  // copies run beside the kernels of the steps around it; the host waits
  // for a step's end by an event. A vendor that lacks a call returns
  // kNotSupported.

  /// Main: the stream of every other call; CopiesIn, CopiesOut: the
  /// streams of the inputs' copies and of the outputs' (apart, so that a
  /// step's inputs never wait behind the last step's outputs).
  enum class Stream { Main, CopiesIn, CopiesOut };
  /// The vendors keep the copy streams in an array indexed by `which - 1`.
  static constexpr int kCopyStreams = 2;
  static_assert(static_cast<int>(Stream::CopiesOut) == kCopyStreams);
  /// Whether the calls below, createEvent and recordEvent work.
  virtual bool canOverlapSteps() const;
  /// Creates the two copy streams (once), released with the device.
  virtual DeviceStatus openCopyStreams();
  virtual DeviceStatus copyToDeviceOn(Stream stream, DeviceAddress destination,
                                      const void *source, uint64_t bytes);
  virtual DeviceStatus copyToHostOn(Stream stream, void *destination,
                                    DeviceAddress source, uint64_t bytes);
  virtual DeviceStatus recordEventOn(Stream stream, EventHandle event);
  /// Work enqueued on `stream` later runs after what `event` recorded.
  virtual DeviceStatus waitOn(Stream stream, EventHandle event);
  /// Waits (the host) until what `event` recorded has run.
  virtual DeviceStatus waitForEvent(EventHandle event);

  /// Looks kernel `name` up in the loaded image.
  virtual DeviceStatus getKernel(const char *name, KernelHandle &kernel) = 0;
  /// Lets `kernel` use `bytes` of dynamic shared memory (only called above
  /// vendor().defaultSharedLimit).
  virtual DeviceStatus setSharedLimit(KernelHandle kernel, uint32_t bytes) = 0;
  /// `params` as for cuLaunchKernel: one pointer per kernel parameter.
  virtual DeviceStatus launch(KernelHandle kernel, const LaunchShape &shape,
                              void **params) = 0;
  /// Makes every later launch a dependent launch, whose launch overlaps the
  /// end of the kernel before it on the stream (for a library whose kernels
  /// wait for that one at their start: manifest "dependent_launch").
  /// kNotSupported: the vendor's backend, its driver or the device has no
  /// such launch, and launches stay ordinary (which is also correct).
  virtual DeviceStatus enableDependentLaunch();
  /// The call behind launch, as errors name it (vendor().launchCall unless
  /// launches are dependent).
  virtual const char *launchCall() const { return vendor().launchCall; }

  // Timing (fdc tune). A vendor that lacks one returns kNotSupported.

  /// The status of a call the vendor's backend does not implement.
  static constexpr DeviceStatus kNotSupported = -1;
  /// The device's last-level (L2) cache size.
  virtual DeviceStatus cacheBytes(uint64_t &bytes);
  /// Starts recording the stream's work (launches) instead of running it.
  virtual DeviceStatus beginCapture();
  /// Ends the recording and instantiates it; on failure nothing is left
  /// to destroy and the stream records no more.
  virtual DeviceStatus endCapture(GraphHandle &graph);
  /// Runs the recorded work on the stream.
  virtual DeviceStatus replay(GraphHandle graph);
  virtual void destroyGraph(GraphHandle graph);
  /// What an event is for: timing (elapsedMilliseconds) or only ordering
  /// streams and the host (waitOn, waitForEvent), which is cheaper.
  enum class EventUse { Timing, Ordering };
  virtual DeviceStatus createEvent(EventHandle &event, EventUse use);
  virtual void destroyEvent(EventHandle event);
  /// Records `event` on the stream.
  virtual DeviceStatus recordEvent(EventHandle event);
  /// Waits for `end` and returns the milliseconds between the two events.
  virtual DeviceStatus elapsedMilliseconds(EventHandle start, EventHandle end,
                                           float &milliseconds);

  /// "<call> failed: <describe(status)>", or "<call> is not supported by
  /// the <vendor> backend" for kNotSupported.
  Error fail(std::string_view call, DeviceStatus status) const;

  /// The collective group of the tensor-parallel ranks `devices` (distinct
  /// devices of this vendor, `this` among them; rank r is devices[r]), its
  /// collectives enqueued on each device's stream. The default refuses:
  /// the vendor does not support tensor parallelism.
  virtual Expected<std::unique_ptr<CollectiveGroup>>
  createCollectiveGroup(const std::vector<GpuDevice *> &devices);
};

class ModelLibrary;

/// A device opened for a library, its kernel image loaded, without the
/// model's buffers (fdc tune).
struct OpenedGpuDevice {
  std::unique_ptr<GpuDevice> device;
  /// "NVIDIA H100 80GB HBM3 (device 0, sm_90)", and "sm_90".
  std::string description;
  std::string arch;
  /// The image loaded: "fdc_cubin_sm_90".
  std::string image;
};

/// Opens device `device` (-1: the vendor's variable, else 0) for
/// `library`'s target and loads its kernel image (CUDA; HIP: not supported
/// yet).
Expected<OpenedGpuDevice> openGpuDevice(const ModelLibrary &library,
                                        int device);
namespace cuda {
Expected<OpenedGpuDevice> openCudaDevice(const ModelLibrary &library,
                                         int device);
} // namespace cuda

/// The device to open: `requested` when >= 0, else the vendor's device
/// variable ($FDC_CUDA_DEVICE) when set, else 0.
Expected<int> requestedDeviceOrdinal(int requested, const GpuVendor &vendor);

/// Fails unless 0 <= ordinal < count: "CUDA device 2 does not exist: the
/// machine has 2 CUDA devices (FDC_CUDA_DEVICE chooses one)".
Error checkDeviceOrdinal(int ordinal, int count, const GpuVendor &vendor);

/// Whether environment variable `name` is set to something other than ""
/// or "0".
bool envFlag(const char *name);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_GPUDEVICE_H
