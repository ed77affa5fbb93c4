//===- CudaDevice.cpp - GpuDevice over the CUDA driver API ----------------===//

#include "CudaDevice.h"

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

const GpuVendor fdc::runtime::cuda::kCudaVendor = {
    /*name=*/"CUDA",
    /*deviceVariable=*/"FDC_CUDA_DEVICE",
    /*syncLaunchesVariable=*/"FDC_CUDA_SYNC_LAUNCHES",
    /*poisonVariable=*/"FDC_CUDA_POISON",
    /*makeCurrentCall=*/"cuCtxSetCurrent",
    /*allocateCall=*/"cuMemAlloc_v2",
    /*copyToDeviceCall=*/"cuMemcpyHtoDAsync_v2",
    /*copyToHostCall=*/"cuMemcpyDtoHAsync_v2",
    /*fillCall=*/"cuMemsetD8Async",
    /*synchronizeCall=*/"cuStreamSynchronize",
    /*getKernelCall=*/"cuModuleGetFunction",
    /*setSharedLimitCall=*/"cuFuncSetAttribute",
    /*launchCall=*/"cuLaunchKernel",
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
  if (stream) {
    api.cuStreamSynchronize(stream);
    api.cuStreamDestroy_v2(stream);
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
  return api.cuStreamSynchronize(stream);
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

DeviceStatus CudaDevice::launch(KernelHandle kernel, const LaunchShape &shape,
                                void **params) {
  return api.cuLaunchKernel(static_cast<CUfunction>(kernel), shape.grid[0],
                            shape.grid[1], shape.grid[2], shape.block[0],
                            shape.block[1], shape.block[2], shape.sharedBytes,
                            stream, params, nullptr);
}
