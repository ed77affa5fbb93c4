//===- HipDevice.h - GpuDevice over the HIP runtime API ---------*- C++ -*-===//
//
// One AMD GPU opened for a model: the device (hipSetDevice before every
// operation, as HIP keeps the current device per thread), a non-blocking
// stream and the loaded code object, released by the destructor. The device
// calls of GpuDevice map one to one onto HIP calls on that stream.
//
// AMD GPUs need no opt-in for large dynamic shared memory (LDS): a launch
// that asks for more than the device has fails in hipModuleLaunchKernel,
// naming the kernel. So the vendor's defaultSharedLimit is unlimited and
// setSharedLimit() is never called.
//
// Step graphs: beginCapture .. destroyGraph map onto hipStreamBeginCapture
// (thread-local mode), hipStreamEndCapture + hipGraphInstantiateWithFlags,
// hipGraphLaunch and hipGraphExecDestroy, as CUDA's do onto the driver's;
// a runtime lacking any of them gets kNotSupported (steps run eagerly).
// Overlapped steps: two non-blocking streams for the copies in and out, and
// the events onto hipEventCreateWithFlags / Record / Synchronize / Destroy
// and hipStreamWaitEvent (no timing: elapsedMilliseconds stays
// kNotSupported). Pinned staging: hipHostMalloc / hipHostFree. Verified against
// the fake HIP runtime only: no AMD GPU has run them.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_HIP_HIPDEVICE_H
#define FDC_RUNTIME_LIB_HIP_HIPDEVICE_H

#include "../GpuDevice.h"
#include "HipRuntime.h"

#include <memory>

namespace fdc::runtime::hip {

/// How messages and settings name HIP: FDC_HIP_DEVICE, hipMalloc, ...
extern const GpuVendor kHipVendor;

class HipDevice final : public GpuDevice {
public:
  /// Selects device `ordinal` and creates the stream.
  static Expected<std::unique_ptr<HipDevice>> open(const RuntimeApi &api,
                                                   int ordinal);
  ~HipDevice() override;

  const RuntimeApi &runtime() const { return api; }

  /// Loads `image` (a code object) as the module.
  hipError_t loadModule(const void *image);

  const GpuVendor &vendor() const override { return kHipVendor; }
  int deviceOrdinal() const override { return ordinal; }
  /// Refuses: tensor parallelism on ROCm (RCCL) is not supported yet.
  Expected<std::unique_ptr<CollectiveGroup>>
  createCollectiveGroup(const std::vector<GpuDevice *> &devices) override;
  std::string describe(DeviceStatus status) const override;
  DeviceStatus makeCurrent() override;
  DeviceStatus allocate(DeviceAddress &address, uint64_t bytes) override;
  void deallocate(DeviceAddress address) override;
  DeviceStatus copyToDevice(DeviceAddress destination, const void *source,
                            uint64_t bytes) override;
  DeviceStatus copyToHost(void *destination, DeviceAddress source,
                          uint64_t bytes) override;
  DeviceStatus fill(DeviceAddress destination, uint8_t value,
                    uint64_t bytes) override;
  DeviceStatus synchronize() override;
  DeviceStatus allocatePinned(void *&pointer, uint64_t bytes) override;
  void freePinned(void *pointer) override;
  bool canOverlapSteps() const override;
  DeviceStatus openCopyStreams() override;
  DeviceStatus copyToDeviceOn(Stream which, DeviceAddress destination,
                              const void *source, uint64_t bytes) override;
  DeviceStatus copyToHostOn(Stream which, void *destination,
                            DeviceAddress source, uint64_t bytes) override;
  DeviceStatus recordEventOn(Stream which, EventHandle event) override;
  DeviceStatus waitOn(Stream which, EventHandle event) override;
  DeviceStatus waitForEvent(EventHandle event) override;
  DeviceStatus createEvent(EventHandle &event, EventUse use) override;
  void destroyEvent(EventHandle event) override;
  DeviceStatus recordEvent(EventHandle event) override;
  DeviceStatus getKernel(const char *name, KernelHandle &kernel) override;
  DeviceStatus setSharedLimit(KernelHandle kernel, uint32_t bytes) override;
  DeviceStatus launch(KernelHandle kernel, const LaunchShape &shape,
                      void **params) override;
  DeviceStatus beginCapture() override;
  DeviceStatus endCapture(GraphHandle &graph) override;
  DeviceStatus replay(GraphHandle graph) override;
  void destroyGraph(GraphHandle graph) override;

private:
  HipDevice(const RuntimeApi &api, int ordinal) : api(api), ordinal(ordinal) {}

  const RuntimeApi &api;
  int ordinal;
  hipStream_t stream = nullptr;
  /// Overlapped steps' copies in and out (openCopyStreams), or null.
  hipStream_t copyStreams[kCopyStreams] = {};
  hipStream_t streamOf(Stream which) const;
  hipModule_t module = nullptr;
};

} // namespace fdc::runtime::hip

#endif // FDC_RUNTIME_LIB_HIP_HIPDEVICE_H
