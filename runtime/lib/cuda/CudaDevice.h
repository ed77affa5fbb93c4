//===- CudaDevice.h - GpuDevice over the CUDA driver API --------*- C++ -*-===//
//
// One CUDA device opened for a model: its primary context, a non-blocking
// stream and the loaded module, all released by the destructor. The device
// calls of GpuDevice map one to one onto driver calls on that stream.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_CUDA_CUDADEVICE_H
#define FDC_RUNTIME_LIB_CUDA_CUDADEVICE_H

#include "../GpuDevice.h"
#include "CudaDriver.h"

#include <memory>

namespace fdc::runtime::cuda {

/// How messages and settings name CUDA: FDC_CUDA_DEVICE, cuMemAlloc_v2, ...
extern const GpuVendor kCudaVendor;

class CudaDevice final : public GpuDevice {
public:
  /// Retains the primary context of `device`, makes it current and creates
  /// the stream.
  static Expected<std::unique_ptr<CudaDevice>> open(const DriverApi &api,
                                                    CUdevice device);
  ~CudaDevice() override;

  const DriverApi &driver() const { return api; }
  /// The stream every copy, fill and launch goes to (the step's).
  CUstream nativeStream() const { return stream; }

  /// Loads `image` (a cubin or PTX) as the module; on failure `jitLog`
  /// holds what the JIT said, if anything.
  CUresult loadModule(const void *image, std::string &jitLog);

  const GpuVendor &vendor() const override { return kCudaVendor; }
  int deviceOrdinal() const override { return static_cast<int>(device); }
  /// NCCL over the devices (Nccl.h).
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
  DeviceStatus getKernel(const char *name, KernelHandle &kernel) override;
  DeviceStatus setSharedLimit(KernelHandle kernel, uint32_t bytes) override;
  DeviceStatus launch(KernelHandle kernel, const LaunchShape &shape,
                      void **params) override;
  DeviceStatus enableDependentLaunch() override;
  const char *launchCall() const override {
    return dependentLaunch ? "cuLaunchKernelEx" : "cuLaunchKernel";
  }
  DeviceStatus cacheBytes(uint64_t &bytes) override;
  DeviceStatus beginCapture() override;
  DeviceStatus endCapture(GraphHandle &graph) override;
  DeviceStatus replay(GraphHandle graph) override;
  void destroyGraph(GraphHandle graph) override;
  DeviceStatus createEvent(EventHandle &event, EventUse use) override;
  void destroyEvent(EventHandle event) override;
  DeviceStatus recordEvent(EventHandle event) override;
  DeviceStatus elapsedMilliseconds(EventHandle start, EventHandle end,
                                   float &milliseconds) override;

private:
  CudaDevice(const DriverApi &api, CUdevice device)
      : api(api), device(device) {}

  const DriverApi &api;
  CUdevice device;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  /// Overlapped steps' copies in and out (openCopyStreams), or null.
  CUstream copyStreams[kCopyStreams] = {};
  CUstream streamOf(Stream which) const;
  CUmodule module = nullptr;
  /// Launches through cuLaunchKernelEx with programmatic stream
  /// serialization (enableDependentLaunch).
  bool dependentLaunch = false;
};

} // namespace fdc::runtime::cuda

#endif // FDC_RUNTIME_LIB_CUDA_CUDADEVICE_H
