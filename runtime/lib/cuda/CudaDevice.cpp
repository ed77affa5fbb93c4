//===- CudaDevice.cpp - GpuDevice over the CUDA driver API ----------------===//

#include "CudaDevice.h"

#include "Nccl.h"

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

const GpuVendor fdc::runtime::cuda::kCudaVendor = {
    /*name=*/"CUDA",
    /*deviceVariable=*/"FDC_CUDA_DEVICE",
    /*syncLaunchesVariable=*/"FDC_CUDA_SYNC_LAUNCHES",
    /*poisonVariable=*/"FDC_CUDA_POISON",
    /*graphsVariable=*/"FDC_CUDA_GRAPHS",
    /*makeCurrentCall=*/"cuCtxSetCurrent",
    /*allocateCall=*/"cuMemAlloc_v2",
    /*copyToDeviceCall=*/"cuMemcpyHtoDAsync_v2",
    /*copyToHostCall=*/"cuMemcpyDtoHAsync_v2",
    /*fillCall=*/"cuMemsetD8Async",
    /*synchronizeCall=*/"cuStreamSynchronize",
    /*getKernelCall=*/"cuModuleGetFunction",
    /*setSharedLimitCall=*/"cuFuncSetAttribute",
    /*launchCall=*/"cuLaunchKernel",
    /*beginCaptureCall=*/"cuStreamBeginCapture_v2",
    /*endCaptureCalls=*/"cuStreamEndCapture, cuGraphInstantiateWithFlags",
    /*replayCall=*/"cuGraphLaunch",
    /*allocatePinnedCall=*/"cuMemHostAlloc",
    /*openCopyStreamsCall=*/"cuStreamCreate",
    /*recordEventCall=*/"cuEventRecord",
    /*waitOnCall=*/"cuStreamWaitEvent",
    /*waitForEventCall=*/"cuEventSynchronize",
    /*defaultSharedLimit=*/48 * 1024,
};

Expected<std::unique_ptr<CudaDevice>> CudaDevice::open(const DriverApi &api,
                                                       CUdevice device) {
  std::unique_ptr<CudaDevice> opened(new CudaDevice(api, device));
  CUcontext context = nullptr;
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&context, device))
    return api.fail(concat("cuDevicePrimaryCtxRetain(device ", device, ")"), r);
  // From here on the destructor releases what was acquired.
  opened->context = context;
  if (CUresult r = api.cuCtxSetCurrent(context))
    return api.fail("cuCtxSetCurrent", r);
  if (CUresult r = api.cuStreamCreate(&opened->stream, CU_STREAM_NON_BLOCKING))
    return api.fail("cuStreamCreate", r);
  return opened;
}

CudaDevice::~CudaDevice() {
  if (!context)
    return;
  api.cuCtxSetCurrent(context);
  if (module)
    api.cuModuleUnload(module);
  for (CUstream s : {stream, copyStreams[0], copyStreams[1]})
    if (s) {
      api.cuStreamSynchronize(s);
      api.cuStreamDestroy_v2(s);
    }
  api.cuDevicePrimaryCtxRelease_v2(device);
}

CUresult CudaDevice::loadModule(const void *image, std::string &jitLog) {
  char errorLog[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog, reinterpret_cast<void *>(
                                  static_cast<uintptr_t>(sizeof(errorLog)))};
  CUmodule loaded = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&loaded, image, 2, options, values);
  if (r == CUDA_SUCCESS) {
    module = loaded;
    return r;
  }
  errorLog[sizeof(errorLog) - 1] = '\0';
  jitLog = errorLog;
  while (!jitLog.empty() && (jitLog.back() == '\n' || jitLog.back() == ' '))
    jitLog.pop_back();
  return r;
}

std::string CudaDevice::describe(DeviceStatus status) const {
  return api.describe(static_cast<CUresult>(status));
}

DeviceStatus CudaDevice::makeCurrent() { return api.cuCtxSetCurrent(context); }

DeviceStatus CudaDevice::allocate(DeviceAddress &address, uint64_t bytes) {
  CUdeviceptr pointer = 0;
  CUresult r = api.cuMemAlloc_v2(&pointer, bytes);
  address = r == CUDA_SUCCESS ? pointer : 0;
  return r;
}

void CudaDevice::deallocate(DeviceAddress address) {
  api.cuMemFree_v2(address);
}

DeviceStatus CudaDevice::copyToDevice(DeviceAddress destination,
                                      const void *source, uint64_t bytes) {
  return api.cuMemcpyHtoDAsync_v2(destination, source, bytes, stream);
}

DeviceStatus CudaDevice::copyToHost(void *destination, DeviceAddress source,
                                    uint64_t bytes) {
  return api.cuMemcpyDtoHAsync_v2(destination, source, bytes, stream);
}

DeviceStatus CudaDevice::fill(DeviceAddress destination, uint8_t value,
                              uint64_t bytes) {
  return api.cuMemsetD8Async(destination, value, bytes, stream);
}

DeviceStatus CudaDevice::synchronize() {
  for (CUstream s : copyStreams)
    if (s)
      if (CUresult r = api.cuStreamSynchronize(s))
        return r;
  return api.cuStreamSynchronize(stream);
}

DeviceStatus CudaDevice::allocatePinned(void *&pointer, uint64_t bytes) {
  pointer = nullptr;
  if (!api.cuMemHostAlloc || !api.cuMemFreeHost)
    return kNotSupported;
  return api.cuMemHostAlloc(&pointer, bytes, 0);
}

void CudaDevice::freePinned(void *pointer) {
  if (pointer && api.cuMemFreeHost)
    api.cuMemFreeHost(pointer);
}

bool CudaDevice::canOverlapSteps() const {
  return api.cuStreamWaitEvent && api.cuEventCreate && api.cuEventDestroy_v2 &&
         api.cuEventRecord && api.cuEventSynchronize && api.cuEventElapsedTime;
}

DeviceStatus CudaDevice::openCopyStreams() {
  if (!canOverlapSteps())
    return kNotSupported;
  for (CUstream &copies : copyStreams)
    if (!copies) {
      CUstream created = nullptr;
      if (auto r = api.cuStreamCreate(&created, CU_STREAM_NON_BLOCKING))
        return r;
      copies = created;
    }
  return CUDA_SUCCESS;
}

CUstream CudaDevice::streamOf(Stream which) const {
  return which == Stream::Main ? stream
                               : copyStreams[static_cast<int>(which) - 1];
}

DeviceStatus CudaDevice::copyToDeviceOn(Stream which, DeviceAddress destination,
                                        const void *source, uint64_t bytes) {
  if (!streamOf(which))
    return kNotSupported;
  return api.cuMemcpyHtoDAsync_v2(destination, source, bytes, streamOf(which));
}

DeviceStatus CudaDevice::copyToHostOn(Stream which, void *destination,
                                      DeviceAddress source, uint64_t bytes) {
  if (!streamOf(which))
    return kNotSupported;
  return api.cuMemcpyDtoHAsync_v2(destination, source, bytes, streamOf(which));
}

DeviceStatus CudaDevice::recordEventOn(Stream which, EventHandle event) {
  if (!api.cuEventRecord || !streamOf(which))
    return kNotSupported;
  return api.cuEventRecord(static_cast<CUevent>(event), streamOf(which));
}

DeviceStatus CudaDevice::waitOn(Stream which, EventHandle event) {
  if (!api.cuStreamWaitEvent || !streamOf(which))
    return kNotSupported;
  return api.cuStreamWaitEvent(streamOf(which), static_cast<CUevent>(event), 0);
}

DeviceStatus CudaDevice::waitForEvent(EventHandle event) {
  if (!api.cuEventSynchronize)
    return kNotSupported;
  return api.cuEventSynchronize(static_cast<CUevent>(event));
}

DeviceStatus CudaDevice::getKernel(const char *name, KernelHandle &kernel) {
  CUfunction function = nullptr;
  CUresult r = api.cuModuleGetFunction(&function, module, name);
  kernel = function;
  return r;
}

DeviceStatus CudaDevice::setSharedLimit(KernelHandle kernel, uint32_t bytes) {
  return api.cuFuncSetAttribute(static_cast<CUfunction>(kernel),
                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                static_cast<int>(bytes));
}

DeviceStatus CudaDevice::enableDependentLaunch() {
  // Programmatic dependent launch: compute capability 9.0 and later.
  int major = 0;
  if (!api.cuLaunchKernelEx)
    return kNotSupported;
  if (CUresult r = api.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device))
    return r;
  if (major < 9)
    return kNotSupported;
  dependentLaunch = true;
  return CUDA_SUCCESS;
}

DeviceStatus CudaDevice::launch(KernelHandle kernel, const LaunchShape &shape,
                                void **params) {
  if (dependentLaunch) {
    CUlaunchAttribute attribute = {};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = {};
    config.gridDimX = shape.grid[0];
    config.gridDimY = shape.grid[1];
    config.gridDimZ = shape.grid[2];
    config.blockDimX = shape.block[0];
    config.blockDimY = shape.block[1];
    config.blockDimZ = shape.block[2];
    config.sharedMemBytes = shape.sharedBytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    return api.cuLaunchKernelEx(&config, static_cast<CUfunction>(kernel),
                                params, nullptr);
  }
  return api.cuLaunchKernel(static_cast<CUfunction>(kernel), shape.grid[0],
                            shape.grid[1], shape.grid[2], shape.block[0],
                            shape.block[1], shape.block[2], shape.sharedBytes,
                            stream, params, nullptr);
}

DeviceStatus CudaDevice::cacheBytes(uint64_t &bytes) {
  int value = 0;
  CUresult r = api.cuDeviceGetAttribute(
      &value, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device);
  bytes = r == CUDA_SUCCESS && value > 0 ? static_cast<uint64_t>(value) : 0;
  return r;
}

DeviceStatus CudaDevice::beginCapture() {
  if (!api.cuStreamBeginCapture_v2)
    return kNotSupported;
  return api.cuStreamBeginCapture_v2(stream,
                                     CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

DeviceStatus CudaDevice::endCapture(GraphHandle &graph) {
  graph = nullptr;
  if (!api.cuStreamEndCapture || !api.cuGraphInstantiateWithFlags ||
      !api.cuGraphDestroy)
    return kNotSupported;
  CUgraph captured = nullptr;
  if (CUresult r = api.cuStreamEndCapture(stream, &captured)) {
    if (captured) // not expected after a failure, but never leaked
      api.cuGraphDestroy(captured);
    return r;
  }
  CUgraphExec exec = nullptr;
  CUresult r = api.cuGraphInstantiateWithFlags(&exec, captured, 0);
  api.cuGraphDestroy(captured);
  if (r == CUDA_SUCCESS)
    graph = exec;
  return r;
}

DeviceStatus CudaDevice::replay(GraphHandle graph) {
  if (!api.cuGraphLaunch)
    return kNotSupported;
  return api.cuGraphLaunch(static_cast<CUgraphExec>(graph), stream);
}

void CudaDevice::destroyGraph(GraphHandle graph) {
  if (graph && api.cuGraphExecDestroy)
    api.cuGraphExecDestroy(static_cast<CUgraphExec>(graph));
}

DeviceStatus CudaDevice::createEvent(EventHandle &event, EventUse use) {
  event = nullptr;
  if (!api.cuEventCreate || !api.cuEventDestroy_v2 || !api.cuEventRecord ||
      !api.cuEventSynchronize || !api.cuEventElapsedTime)
    return kNotSupported;
  CUevent created = nullptr;
  CUresult r = api.cuEventCreate(&created, use == EventUse::Timing
                                               ? CU_EVENT_DEFAULT
                                               : CU_EVENT_DISABLE_TIMING);
  event = created;
  return r;
}

void CudaDevice::destroyEvent(EventHandle event) {
  if (event && api.cuEventDestroy_v2)
    api.cuEventDestroy_v2(static_cast<CUevent>(event));
}

DeviceStatus CudaDevice::recordEvent(EventHandle event) {
  return api.cuEventRecord(static_cast<CUevent>(event), stream);
}

DeviceStatus CudaDevice::elapsedMilliseconds(EventHandle start, EventHandle end,
                                             float &milliseconds) {
  if (CUresult r = api.cuEventSynchronize(static_cast<CUevent>(end)))
    return r;
  return api.cuEventElapsedTime(&milliseconds, static_cast<CUevent>(start),
                                static_cast<CUevent>(end));
}

Expected<std::unique_ptr<CollectiveGroup>>
CudaDevice::createCollectiveGroup(const std::vector<GpuDevice *> &devices) {
  std::vector<CudaDevice *> cudaDevices;
  for (GpuDevice *device : devices) {
    if (&device->vendor() != &kCudaVendor)
      return createError("a CUDA collective group needs CUDA devices only, "
                         "not a ",
                         device->vendor().name, " device");
    cudaDevices.push_back(static_cast<CudaDevice *>(device));
  }
  return createNcclCollectiveGroup(cudaDevices);
}
