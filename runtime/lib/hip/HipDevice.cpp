//===- HipDevice.cpp - GpuDevice over the HIP runtime API -----------------===//

#include "HipDevice.h"

#include "fdc/runtime/Collective.h"

#include <cstdint>

using namespace fdc::runtime;
using namespace fdc::runtime::hip;

const GpuVendor fdc::runtime::hip::kHipVendor = {
    /*name=*/"HIP",
    /*deviceVariable=*/"FDC_HIP_DEVICE",
    /*syncLaunchesVariable=*/"FDC_HIP_SYNC_LAUNCHES",
    /*poisonVariable=*/"FDC_HIP_POISON",
    /*graphsVariable=*/"FDC_HIP_GRAPHS",
    /*makeCurrentCall=*/"hipSetDevice",
    /*allocateCall=*/"hipMalloc",
    /*copyToDeviceCall=*/"hipMemcpyHtoDAsync",
    /*copyToHostCall=*/"hipMemcpyDtoHAsync",
    /*fillCall=*/"hipMemsetD8Async",
    /*synchronizeCall=*/"hipStreamSynchronize",
    /*getKernelCall=*/"hipModuleGetFunction",
    /*setSharedLimitCall=*/"hipFuncSetAttribute",
    /*launchCall=*/"hipModuleLaunchKernel",
    /*beginCaptureCall=*/"hipStreamBeginCapture",
    /*endCaptureCalls=*/"hipStreamEndCapture, hipGraphInstantiateWithFlags",
    /*replayCall=*/"hipGraphLaunch",
    /*allocatePinnedCall=*/"hipHostMalloc",
    /*openCopyStreamsCall=*/"hipStreamCreateWithFlags",
    /*recordEventCall=*/"hipEventRecord",
    /*waitOnCall=*/"hipStreamWaitEvent",
    /*waitForEventCall=*/"hipEventSynchronize",
    /*defaultSharedLimit=*/UINT32_MAX,
};

namespace {
hipDeviceptr_t devicePointer(DeviceAddress address) {
  return reinterpret_cast<hipDeviceptr_t>(static_cast<uintptr_t>(address));
}
} // namespace

Expected<std::unique_ptr<HipDevice>> HipDevice::open(const RuntimeApi &api,
                                                     int ordinal) {
  std::unique_ptr<HipDevice> opened(new HipDevice(api, ordinal));
  if (hipError_t r = api.hipSetDevice(ordinal))
    return api.fail(concat("hipSetDevice(", ordinal, ")"), r);
  if (hipError_t r =
          api.hipStreamCreateWithFlags(&opened->stream, hipStreamNonBlocking))
    return api.fail("hipStreamCreateWithFlags", r);
  return opened;
}

HipDevice::~HipDevice() {
  // Nothing to report errors to: best effort.
  (void)api.hipSetDevice(ordinal);
  if (module)
    (void)api.hipModuleUnload(module);
  for (hipStream_t s : {stream, copyStreams[0], copyStreams[1]})
    if (s) {
      (void)api.hipStreamSynchronize(s);
      (void)api.hipStreamDestroy(s);
    }
}

hipError_t HipDevice::loadModule(const void *image) {
  hipModule_t loaded = nullptr;
  hipError_t r = api.hipModuleLoadData(&loaded, image);
  if (r == hipSuccess)
    module = loaded;
  return r;
}

std::string HipDevice::describe(DeviceStatus status) const {
  return api.describe(static_cast<hipError_t>(status));
}

DeviceStatus HipDevice::makeCurrent() { return api.hipSetDevice(ordinal); }

DeviceStatus HipDevice::allocate(DeviceAddress &address, uint64_t bytes) {
  void *pointer = nullptr;
  hipError_t r = api.hipMalloc(&pointer, bytes);
  address = r == hipSuccess ? reinterpret_cast<uintptr_t>(pointer) : 0;
  return r;
}

void HipDevice::deallocate(DeviceAddress address) {
  (void)api.hipFree(devicePointer(address));
}

DeviceStatus HipDevice::copyToDevice(DeviceAddress destination,
                                     const void *source, uint64_t bytes) {
  // hipMemcpyHtoDAsync takes a non-const source, which it only reads.
  return api.hipMemcpyHtoDAsync(devicePointer(destination),
                                const_cast<void *>(source), bytes, stream);
}

DeviceStatus HipDevice::copyToHost(void *destination, DeviceAddress source,
                                   uint64_t bytes) {
  return api.hipMemcpyDtoHAsync(destination, devicePointer(source), bytes,
                                stream);
}

DeviceStatus HipDevice::fill(DeviceAddress destination, uint8_t value,
                             uint64_t bytes) {
  return api.hipMemsetD8Async(devicePointer(destination), value, bytes, stream);
}

DeviceStatus HipDevice::synchronize() {
  for (hipStream_t s : copyStreams)
    if (s)
      if (hipError_t r = api.hipStreamSynchronize(s))
        return r;
  return api.hipStreamSynchronize(stream);
}

DeviceStatus HipDevice::allocatePinned(void *&pointer, uint64_t bytes) {
  pointer = nullptr;
  if (!api.hipHostMalloc || !api.hipHostFree)
    return kNotSupported;
  return api.hipHostMalloc(&pointer, bytes, /*hipHostMallocDefault=*/0);
}

void HipDevice::freePinned(void *pointer) {
  if (pointer && api.hipHostFree)
    (void)api.hipHostFree(pointer);
}

bool HipDevice::canOverlapSteps() const { return api.hasOverlap(); }

DeviceStatus HipDevice::openCopyStreams() {
  if (!api.hasOverlap())
    return kNotSupported;
  for (hipStream_t &copies : copyStreams)
    if (!copies) {
      hipStream_t created = nullptr;
      if (auto r = api.hipStreamCreateWithFlags(&created, hipStreamNonBlocking))
        return r;
      copies = created;
    }
  return hipSuccess;
}

hipStream_t HipDevice::streamOf(Stream which) const {
  return which == Stream::Main ? stream
                               : copyStreams[static_cast<int>(which) - 1];
}

DeviceStatus HipDevice::copyToDeviceOn(Stream which, DeviceAddress destination,
                                       const void *source, uint64_t bytes) {
  if (!streamOf(which))
    return kNotSupported;
  return api.hipMemcpyHtoDAsync(devicePointer(destination),
                                const_cast<void *>(source), bytes,
                                streamOf(which));
}

DeviceStatus HipDevice::copyToHostOn(Stream which, void *destination,
                                     DeviceAddress source, uint64_t bytes) {
  if (!streamOf(which))
    return kNotSupported;
  return api.hipMemcpyDtoHAsync(destination, devicePointer(source), bytes,
                                streamOf(which));
}

DeviceStatus HipDevice::recordEventOn(Stream which, EventHandle event) {
  if (!api.hasOverlap() || !streamOf(which))
    return kNotSupported;
  return api.hipEventRecord(static_cast<hipEvent_t>(event), streamOf(which));
}

DeviceStatus HipDevice::waitOn(Stream which, EventHandle event) {
  if (!api.hasOverlap() || !streamOf(which))
    return kNotSupported;
  return api.hipStreamWaitEvent(streamOf(which), static_cast<hipEvent_t>(event),
                                0);
}

DeviceStatus HipDevice::createEvent(EventHandle &event, EventUse use) {
  event = nullptr;
  if (!api.hasOverlap())
    return kNotSupported;
  hipEvent_t created = nullptr;
  hipError_t r = api.hipEventCreateWithFlags(
      &created,
      use == EventUse::Timing ? hipEventDefault : hipEventDisableTiming);
  event = created;
  return r;
}

void HipDevice::destroyEvent(EventHandle event) {
  if (event && api.hasOverlap())
    (void)api.hipEventDestroy(static_cast<hipEvent_t>(event));
}

DeviceStatus HipDevice::recordEvent(EventHandle event) {
  return recordEventOn(Stream::Main, event);
}

DeviceStatus HipDevice::waitForEvent(EventHandle event) {
  if (!api.hasOverlap())
    return kNotSupported;
  return api.hipEventSynchronize(static_cast<hipEvent_t>(event));
}

DeviceStatus HipDevice::getKernel(const char *name, KernelHandle &kernel) {
  hipFunction_t function = nullptr;
  hipError_t r = api.hipModuleGetFunction(&function, module, name);
  kernel = function;
  return r;
}

DeviceStatus HipDevice::setSharedLimit(KernelHandle, uint32_t) {
  // Never called: kHipVendor.defaultSharedLimit is unlimited (see the
  // header).
  return hipSuccess;
}

DeviceStatus HipDevice::launch(KernelHandle kernel, const LaunchShape &shape,
                               void **params) {
  return api.hipModuleLaunchKernel(
      static_cast<hipFunction_t>(kernel), shape.grid[0], shape.grid[1],
      shape.grid[2], shape.block[0], shape.block[1], shape.block[2],
      shape.sharedBytes, stream, params, nullptr);
}

DeviceStatus HipDevice::beginCapture() {
  if (!api.hasGraphs())
    return kNotSupported;
  return api.hipStreamBeginCapture(stream, hipStreamCaptureModeThreadLocal);
}

DeviceStatus HipDevice::endCapture(GraphHandle &graph) {
  graph = nullptr;
  if (!api.hasGraphs())
    return kNotSupported;
  hipGraph_t captured = nullptr;
  if (hipError_t r = api.hipStreamEndCapture(stream, &captured)) {
    // Nothing was captured, or ROCm left a graph anyway: not ours to keep.
    if (captured)
      (void)api.hipGraphDestroy(captured);
    return r;
  }
  hipGraphExec_t exec = nullptr;
  hipError_t r = api.hipGraphInstantiateWithFlags(&exec, captured, 0);
  (void)api.hipGraphDestroy(captured);
  if (r == hipSuccess)
    graph = exec;
  return r;
}

DeviceStatus HipDevice::replay(GraphHandle graph) {
  if (!api.hasGraphs())
    return kNotSupported;
  return api.hipGraphLaunch(static_cast<hipGraphExec_t>(graph), stream);
}

void HipDevice::destroyGraph(GraphHandle graph) {
  if (graph && api.hasGraphs())
    (void)api.hipGraphExecDestroy(static_cast<hipGraphExec_t>(graph));
}

Expected<std::unique_ptr<CollectiveGroup>>
HipDevice::createCollectiveGroup(const std::vector<GpuDevice *> &) {
  return createError("tensor parallelism on ROCm (RCCL) is not supported yet");
}
