//===- KernelLauncher.h - How a GPU library's step launches ------*- C++
//-*-===//
//
// The kernels of a library's manifest, resolved on a GpuDevice, and the
// FdcDeviceApi through which the library's step launches them by name. Keeps
// the bookkeeping of one step: its first launch error (a failed launch makes
// every later one of the step fail without launching) and the kernels it
// launched, which name the suspects of a fault found at the end of the step.
// Vendor-neutral: the vendor only resolves and launches a kernel handle.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_KERNELLAUNCHER_H
#define FDC_RUNTIME_LIB_KERNELLAUNCHER_H

#include "GpuDevice.h"

#include "fdc_model_abi.h"

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace fdc::runtime {

class ModelLibrary;

class KernelLauncher {
public:
  /// With `syncLaunches`, every launch is followed by a synchronize, so
  /// that an asynchronous fault names its kernel.
  KernelLauncher(GpuDevice &device, bool syncLaunches);
  KernelLauncher(const KernelLauncher &) = delete;
  KernelLauncher &operator=(const KernelLauncher &) = delete;

  /// Resolves every kernel of `library`'s manifest in the loaded image,
  /// named `image` in errors, and launches them as the manifest says
  /// ("dependent_launch", unless $FDC_DEPENDENT_LAUNCH is 0).
  Error resolveKernels(const ModelLibrary &library, const std::string &image);

  /// What the library's step gets as FdcStepArgs::device.
  const FdcDeviceApi *deviceApi() const { return &api; }

  /// Forgets the previous step's error and launches.
  void beginStep();
  /// The first launch error of the step, or "" when every launch succeeded.
  const std::string &launchError() const { return error; }
  /// The distinct kernels the step launched, in order: "a, b" (at most 8
  /// names, then "and N more"), or "none".
  std::string launchedList() const;

  /// FdcDeviceApi::launch. Never throws.
  int launch(const char *name, const LaunchShape &shape,
             void **params) noexcept;

private:
  struct Kernel {
    KernelHandle handle = nullptr;
    /// The dynamic shared memory limit set so far.
    uint32_t sharedLimit = 0;
  };

  std::string launchFailure(const char *name, const LaunchShape &shape,
                            DeviceStatus status) const;

  GpuDevice &device;
  bool syncLaunches;
  FdcDeviceApi api = {};
  /// Owns the kernel names the map's keys view.
  std::deque<std::string> names;
  std::unordered_map<std::string_view, Kernel> kernels;
  std::string error;
  /// Kernels launched in the current step (names owned by `names`).
  std::vector<const char *> launched;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_KERNELLAUNCHER_H
