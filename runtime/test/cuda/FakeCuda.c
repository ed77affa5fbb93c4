/*===- FakeCuda.c - A CUDA driver stand-in for tests without a GPU --------===*\
|*                                                                            *|
|* Exports the driver entry points the runtime's CUDA backend resolves, with  *|
|* "device memory" in host memory, so the backend runs end to end on a        *|
|* machine without a GPU (the tests point FDC_CUDA_DRIVER here). Every copy   *|
|* and every emulated kernel access is bounds-checked against the live        *|
|* allocations. Kernels: the two of TestCudaKernels.ptx, emulated in C        *|
|* (../fake/FakeDevice.c, shared with FakeHip.c). Streams are synchronous.    *|
|* Stream capture and graphs (cuStreamBeginCapture_v2 ... cuGraphLaunch):     *|
|* a capturing stream records launches, 2-D device copies and FakeNccl.c's   *|
|* collectives (FakeDevice.h) and refuses other copies, fills and             *|
|* synchronizes (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture's     *|
|* end then fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).                *|
|*                                                                            *|
|* Behaviour is steered by environment variables read at each call:           *|
|*   FDC_FAKE_CUDA_NO_DEVICE=1      cuInit fails with CUDA_ERROR_NO_DEVICE    *|
|*   FDC_FAKE_CUDA_CC=90            compute capability (major*10+minor)       *|
|*   FDC_FAKE_CUDA_DEVICES=1        device count                              *|
|*   FDC_FAKE_CUDA_REJECT_CUBIN=1   cubins fail with NO_BINARY_FOR_GPU        *|
|*   FDC_FAKE_CUDA_MAX_ALLOC=N      allocations over N bytes fail (OOM)       *|
|*   FDC_FAKE_CUDA_FAIL=call[@N]    capture, graph, pinned-allocation or      *|
|*                                  event call `call` (exported name) fails:  *|
|*                                  CUDA_ERROR_NOT_SUPPORTED                  *|
|*                                  (@N: cuStreamBeginCapture_v2,             *|
|*                                  cuStreamEndCapture and cuGraphLaunch only *|
|*                                  fail their N-th call on a stream)         *|
|* An emulated out-of-bounds access makes later launches, copies and          *|
|* cuStreamSynchronize fail with CUDA_ERROR_ILLEGAL_ADDRESS, until the        *|
|* primary context is released (sticky, like a real fault).                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "FakeDevice.h"

#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/*===--- Bookkeeping, visible to the tests --------------------------------===*/

typedef struct FakeCudaStats {
  int64_t liveAllocations;
  int64_t liveModules;
  int64_t liveStreams;
  int64_t contextRefs;
  int64_t launches;
  int64_t setAttributeCalls;
  int64_t bytesToDevice;
  int64_t bytesToHost;
  int64_t livePinnedAllocations;
  int64_t pinnedCopies;  /* copies whose host side is pinned memory */
  int64_t streamWaits;   /* cuStreamWaitEvent */
  int64_t liveEvents;
  int64_t liveUntimedEvents; /* CU_EVENT_DISABLE_TIMING */
  int64_t dependentLaunches; /* cuLaunchKernelEx with programmatic stream
                                serialization */
  char lastImageKind[8]; /* "cubin" or "ptx" */
  FakeGraphStats graphs; /* filled in by fdc_fake_cuda_stats */
} FakeCudaStats;

static FakeCudaStats stats;
/* The counters a step updates: tensor-parallel ranks step on threads. */
#define COUNT(counter, n) __atomic_fetch_add(&(counter), (n), __ATOMIC_RELAXED)

/* Copies the counters to `out` (a FakeCudaStats); void * so the tests can
 * declare their own copy of the struct. */
EXPORT void fdc_fake_cuda_stats(void *out) {
  fakeGraphStats(&stats.graphs);
  memcpy(out, &stats, sizeof(stats));
}

/* Whether FDC_FAKE_CUDA_FAIL names `call` (the `nth` on its stream). */
static int injected(const char *call, long nth) {
  return fakeInjected("FDC_FAKE_CUDA_FAIL", call, nth);
}

/* Copies, fills and synchronizes fail on a capturing stream. */
#define REFUSE_WHILE_CAPTURING(stream)                                         \
  do {                                                                         \
    FakeStatus refused = fakeUncapturable((FakeStream *)(stream));             \
    if (refused != kFakeOk)                                                    \
      return cudaStatus(refused);                                              \
  } while (0)

static CUresult cudaStatus(FakeStatus status) {
  switch (status) {
  case kFakeOk:
    return CUDA_SUCCESS;
  case kFakeOutOfMemory:
    return CUDA_ERROR_OUT_OF_MEMORY;
  case kFakeIllegalAddress:
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  case kFakeCaptureUnsupported:
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  case kFakeCaptureInvalidated:
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  case kFakeInvalidValue:
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

static int primaryContext = 1; /* its address is the CUcontext */

typedef struct FakeFunction {
  char name[128];
  int sharedLimit;
  struct FakeFunction *next;
} FakeFunction;

typedef struct FakeModule {
  const void *image;
  int isPtx;
  size_t size;
  FakeFunction *functions;
} FakeModule;

/*===--- Errors -----------------------------------------------------------===*/

EXPORT CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  switch (error) {
#define NAME(e)                                                                \
  case e:                                                                      \
    *pStr = #e;                                                                \
    return CUDA_SUCCESS;
    NAME(CUDA_SUCCESS)
    NAME(CUDA_ERROR_INVALID_VALUE)
    NAME(CUDA_ERROR_OUT_OF_MEMORY)
    NAME(CUDA_ERROR_NOT_INITIALIZED)
    NAME(CUDA_ERROR_NO_DEVICE)
    NAME(CUDA_ERROR_INVALID_DEVICE)
    NAME(CUDA_ERROR_INVALID_IMAGE)
    NAME(CUDA_ERROR_NO_BINARY_FOR_GPU)
    NAME(CUDA_ERROR_INVALID_PTX)
    NAME(CUDA_ERROR_INVALID_HANDLE)
    NAME(CUDA_ERROR_NOT_FOUND)
    NAME(CUDA_ERROR_ILLEGAL_ADDRESS)
    NAME(CUDA_ERROR_NOT_SUPPORTED)
    NAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    NAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
#undef NAME
  default:
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  switch (error) {
  case CUDA_SUCCESS:
    *pStr = "no error";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_VALUE:
    *pStr = "invalid argument";
    return CUDA_SUCCESS;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *pStr = "out of memory";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NO_DEVICE:
    *pStr = "no CUDA-capable device is detected";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
    *pStr = "no kernel image is available for execution on the device";
    return CUDA_SUCCESS;
  case CUDA_ERROR_INVALID_PTX:
    *pStr = "a PTX JIT compilation failed";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_FOUND:
    *pStr = "named symbol not found";
    return CUDA_SUCCESS;
  case CUDA_ERROR_ILLEGAL_ADDRESS:
    *pStr = "an illegal memory access was encountered";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED:
    *pStr = "operation not supported";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    *pStr = "operation not permitted when stream is capturing";
    return CUDA_SUCCESS;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    *pStr = "operation failed due to a previous error during capture";
    return CUDA_SUCCESS;
  default:
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

/*===--- Devices and contexts ---------------------------------------------===*/

EXPORT CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  return fakeEnvLong("FDC_FAKE_CUDA_NO_DEVICE", 0) ? CUDA_ERROR_NO_DEVICE
                                                   : CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDriverGetVersion(int *version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGetCount(int *count) {
  *count = (int)fakeEnvLong("FDC_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  if (ordinal < 0 || ordinal >= fakeEnvLong("FDC_FAKE_CUDA_DEVICES", 1))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGetAttribute(int *value,
                                             CUdevice_attribute attribute,
                                             CUdevice device) {
  (void)device;
  long cc = fakeEnvLong("FDC_FAKE_CUDA_CC", 90);
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *value = (int)(cc / 10);
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *value = (int)(cc % 10);
  else
    *value = 0;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDeviceGetName(char *name, int length,
                                        CUdevice device) {
  snprintf(name, (size_t)length, "Fake GPU %d", (int)device);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *context,
                                                 CUdevice device) {
  (void)device;
  ++stats.contextRefs;
  *context = (CUcontext)&primaryContext;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice device) {
  (void)device;
  if (stats.contextRefs <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (--stats.contextRefs == 0)
    fakeClearFault();
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext context) {
  return context == (CUcontext)&primaryContext ? CUDA_SUCCESS
                                               : CUDA_ERROR_INVALID_VALUE;
}

/*===--- Memory -----------------------------------------------------------===*/

EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *address, size_t bytes) {
  if (bytes == 0)
    return CUDA_ERROR_INVALID_VALUE;
  long limit = fakeEnvLong("FDC_FAKE_CUDA_MAX_ALLOC", 0);
  if (limit > 0 && bytes > (size_t)limit)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *base = fakeAllocate(bytes);
  if (!base)
    return CUDA_ERROR_OUT_OF_MEMORY;
  ++stats.liveAllocations;
  *address = (CUdeviceptr)(uintptr_t)base;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr address) {
  if (!fakeFree((void *)(uintptr_t)address))
    return CUDA_ERROR_INVALID_VALUE;
  --stats.liveAllocations;
  return CUDA_SUCCESS;
}

static CUresult copyToDevice(CUdeviceptr dst, const void *src, size_t bytes,
                             CUstream stream) {
  REFUSE_WHILE_CAPTURING(stream);
  if (fakeFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (!fakeInBounds((void *)(uintptr_t)dst, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  COUNT(stats.bytesToDevice, (int64_t)bytes);
  if (fakeIsPinned(src, bytes))
    COUNT(stats.pinnedCopies, 1);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                             size_t bytes, CUstream stream) {
  return copyToDevice(dst, src, bytes, stream);
}

EXPORT CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src,
                                             size_t bytes, CUstream stream) {
  REFUSE_WHILE_CAPTURING(stream);
  if (fakeFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (!fakeInBounds((void *)(uintptr_t)src, bytes))
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (void *)(uintptr_t)src, bytes);
  COUNT(stats.bytesToHost, (int64_t)bytes);
  if (fakeIsPinned(dst, bytes))
    COUNT(stats.pinnedCopies, 1);
  return CUDA_SUCCESS;
}

/*===--- Events: the stream is synchronous, so each is done when recorded ===*/

typedef struct FakeEvent {
  int recorded;
  unsigned int flags;
} FakeEvent;

/* Streams are synchronous: what an event recorded has run. */
EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event,
                                          unsigned int flags) {
  REFUSE_WHILE_CAPTURING(stream);
  if (injected(__func__, 0))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!event || flags != 0 || !((FakeEvent *)event)->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  COUNT(stats.streamWaits, 1);
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  if (injected(__func__, 0))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (flags & ~(unsigned int)CU_EVENT_DISABLE_TIMING)
    return CUDA_ERROR_INVALID_VALUE;
  FakeEvent *created = (FakeEvent *)calloc(1, sizeof(FakeEvent));
  if (!created)
    return CUDA_ERROR_OUT_OF_MEMORY;
  created->flags = flags;
  ++stats.liveEvents;
  if (flags & CU_EVENT_DISABLE_TIMING)
    ++stats.liveUntimedEvents;
  *event = (CUevent)created;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventDestroy_v2(CUevent event) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  if (((FakeEvent *)event)->flags & CU_EVENT_DISABLE_TIMING)
    --stats.liveUntimedEvents;
  free(event);
  --stats.liveEvents;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  REFUSE_WHILE_CAPTURING(stream);
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  ((FakeEvent *)event)->recorded = 1;
  return CUDA_SUCCESS;
}

/* A fault on the stream surfaces here, as at cuStreamSynchronize. */
EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  if (injected(__func__, 0))
    return CUDA_ERROR_NOT_SUPPORTED;
  return fakeFaulted() ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

/* cuda.h maps the name to cuEventElapsedTime_v2; the runtime resolves the
 * unversioned export, as libcuda has both. */
#undef cuEventElapsedTime
EXPORT CUresult CUDAAPI cuEventElapsedTime(float *milliseconds, CUevent start,
                                           CUevent end) {
  if (!start || !end || !((FakeEvent *)start)->recorded ||
      !((FakeEvent *)end)->recorded)
    return CUDA_ERROR_INVALID_HANDLE;
  /* As the driver: an event without timing has no time. */
  if ((((FakeEvent *)start)->flags | ((FakeEvent *)end)->flags) &
      CU_EVENT_DISABLE_TIMING)
    return CUDA_ERROR_INVALID_HANDLE;
  *milliseconds = 0.0f;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pointer, size_t bytes,
                                       unsigned int flags) {
  if (injected(__func__, 0))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (bytes == 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pointer = fakeAllocatePinned(bytes);
  if (!*pointer)
    return CUDA_ERROR_OUT_OF_MEMORY;
  ++stats.livePinnedAllocations;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuMemFreeHost(void *pointer) {
  if (!fakeFreePinned(pointer))
    return CUDA_ERROR_INVALID_VALUE;
  --stats.livePinnedAllocations;
  return CUDA_SUCCESS;
}

/* A 2-D device copy's values: source, destination, their pitches, the
 * width in bytes and the rows. */
enum {
  kCopySrc,
  kCopyDst,
  kCopySrcPitch,
  kCopyDstPitch,
  kCopyWidth,
  kCopyRows
};

static void copy2D(const uint64_t *v) {
  for (uint64_t row = 0; row < v[kCopyRows]; ++row)
    memcpy((uint8_t *)(uintptr_t)v[kCopyDst] + row * v[kCopyDstPitch],
           (const uint8_t *)(uintptr_t)v[kCopySrc] + row * v[kCopySrcPitch],
           v[kCopyWidth]);
}

/* Device to device only (what the NCCL group's gather uses); captured like
 * a launch. */
EXPORT CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *copy,
                                           CUstream stream) {
  FakeStream *s = (FakeStream *)stream;
  if (!(s && s->capture) && fakeFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  if (copy->srcMemoryType != CU_MEMORYTYPE_DEVICE ||
      copy->dstMemoryType != CU_MEMORYTYPE_DEVICE || copy->srcXInBytes ||
      copy->srcY || copy->dstXInBytes || copy->dstY ||
      copy->srcPitch < copy->WidthInBytes ||
      copy->dstPitch < copy->WidthInBytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (copy->Height == 0 || copy->WidthInBytes == 0)
    return CUDA_SUCCESS;
  size_t last = copy->Height - 1;
  if (!fakeInBounds((void *)(uintptr_t)copy->srcDevice,
                    last * copy->srcPitch + copy->WidthInBytes) ||
      !fakeInBounds((void *)(uintptr_t)copy->dstDevice,
                    last * copy->dstPitch + copy->WidthInBytes))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t values[] = {copy->srcDevice, copy->dstDevice,    copy->srcPitch,
                       copy->dstPitch,  copy->WidthInBytes, copy->Height};
  int recorded = 0;
  FakeStatus status = fakeCaptureHost(s, copy2D, NULL, values, 6, &recorded);
  if (status == kFakeOk && !recorded)
    copy2D(values);
  return cudaStatus(status);
}

EXPORT CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                        size_t count, CUstream stream) {
  REFUSE_WHILE_CAPTURING(stream);
  if (!fakeInBounds((void *)(uintptr_t)dst, count))
    return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, value, count);
  return CUDA_SUCCESS;
}

/*===--- Streams ----------------------------------------------------------===*/

EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  FakeStream *created = fakeStreamCreate();
  if (!created)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *stream = (CUstream)created;
  ++stats.liveStreams;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream stream) {
  fakeStreamDestroy((FakeStream *)stream);
  --stats.liveStreams;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  REFUSE_WHILE_CAPTURING(stream);
  return fakeFaulted() ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

/*===--- Stream capture and graphs ----------------------------------------===*/

/* For FakeNccl.c, which finds it in the library FDC_CUDA_DRIVER names:
 * records `run` with `values` into `stream`'s capture (see fakeCaptureHost).
 * 1: recorded; 0: the stream does not capture; -1: an error. */
EXPORT int fdc_fake_cuda_capture_host(CUstream stream, FakeHostFn run,
                                      FakeHostFn release,
                                      const uint64_t *values, int count) {
  int recorded = 0;
  if (fakeCaptureHost((FakeStream *)stream, run, release, values, count,
                      &recorded) != kFakeOk)
    return -1;
  return recorded;
}

EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream stream,
                                                CUstreamCaptureMode mode) {
  FakeStream *s = (FakeStream *)stream;
  if (!s || mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (injected(__func__, ++s->beginCaptures))
    return CUDA_ERROR_NOT_SUPPORTED;
  return cudaStatus(fakeBeginCapture(s));
}

EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  FakeStream *s = (FakeStream *)stream;
  *graph = NULL;
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  if (s->capture && injected(__func__, ++s->endCaptures)) {
    fakeAbandonCapture(s); /* like an invalidated capture: no graph */
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  FakeGraph *captured = NULL;
  CUresult r = cudaStatus(fakeEndCapture(s, &captured));
  *graph = (CUgraph)captured;
  return r;
}

EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *exec,
                                                    CUgraph graph,
                                                    unsigned long long flags) {
  *exec = NULL;
  if (flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (injected(__func__, 0))
    return CUDA_ERROR_NOT_SUPPORTED;
  FakeGraph *instantiated = NULL;
  CUresult r = cudaStatus(fakeInstantiate((FakeGraph *)graph, &instantiated));
  *exec = (CUgraphExec)instantiated;
  return r;
}

EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  FakeStream *s = (FakeStream *)stream;
  if (s && injected(__func__, ++s->graphLaunches))
    return CUDA_ERROR_NOT_SUPPORTED;
  return cudaStatus(fakeGraphLaunch(s, (const FakeGraph *)exec));
}

EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  return cudaStatus(fakeGraphExecDestroy((FakeGraph *)exec));
}

EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  return cudaStatus(fakeGraphDestroy((FakeGraph *)graph));
}

/*===--- Modules ----------------------------------------------------------===*/

/* The size of an ELF64 image: its section headers come last. */
static size_t elfSize(const uint8_t *image) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, image + 0x28, 8);
  memcpy(&shentsize, image + 0x3a, 2);
  memcpy(&shnum, image + 0x3c, 2);
  return (size_t)(shoff + (uint64_t)shentsize * shnum);
}

EXPORT CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                           unsigned int numOptions,
                                           CUjit_option *options,
                                           void **optionValues) {
  char *log = NULL;
  size_t logSize = 0;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
      log = (char *)optionValues[i];
    else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
      logSize = (size_t)(uintptr_t)optionValues[i];
  }
  const uint8_t *bytes = (const uint8_t *)image;
  FakeModule *m = (FakeModule *)calloc(1, sizeof(FakeModule));
  m->image = image;
  if (memcmp(bytes,
             "\x7f"
             "ELF",
             4) == 0) {
    if (fakeEnvLong("FDC_FAKE_CUDA_REJECT_CUBIN", 0)) {
      free(m);
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    m->size = elfSize(bytes);
    strcpy(stats.lastImageKind, "cubin");
  } else {
    const char *target = strstr((const char *)image, ".target sm_");
    long version = target ? strtol(target + 11, NULL, 10) : 0;
    if (!target || version > fakeEnvLong("FDC_FAKE_CUDA_CC", 90)) {
      if (log && logSize)
        snprintf(log, logSize,
                 "ptxas fatal   : Unsupported .target 'sm_%ld' for this "
                 "device\n",
                 version);
      free(m);
      return CUDA_ERROR_INVALID_PTX;
    }
    m->isPtx = 1;
    m->size = strlen((const char *)image);
    strcpy(stats.lastImageKind, "ptx");
  }
  ++stats.liveModules;
  *module = (CUmodule)m;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuModuleUnload(CUmodule module) {
  FakeModule *m = (FakeModule *)module;
  while (m->functions) {
    FakeFunction *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  free(m);
  --stats.liveModules;
  return CUDA_SUCCESS;
}

static int imageHasName(const FakeModule *m, const char *name) {
  size_t length = strlen(name);
  const uint8_t *bytes = (const uint8_t *)m->image;
  for (size_t i = 0; i + length + 1 <= m->size; ++i) {
    if (memcmp(bytes + i, name, length) != 0)
      continue;
    if (m->isPtx) {
      /* ".entry name(" */
      if (i >= 7 && memcmp(bytes + i - 7, ".entry ", 7) == 0 &&
          bytes[i + length] == '(')
        return 1;
    } else if (bytes[i + length] == '\0' && (i == 0 || bytes[i - 1] == '\0')) {
      return 1;
    }
  }
  return 0;
}

EXPORT CUresult CUDAAPI cuModuleGetFunction(CUfunction *function,
                                            CUmodule module, const char *name) {
  FakeModule *m = (FakeModule *)module;
  if (strlen(name) >= sizeof(((FakeFunction *)0)->name) ||
      !imageHasName(m, name))
    return CUDA_ERROR_NOT_FOUND;
  FakeFunction *f = (FakeFunction *)calloc(1, sizeof(FakeFunction));
  strcpy(f->name, name);
  f->sharedLimit = 48 * 1024;
  f->next = m->functions;
  m->functions = f;
  *function = (CUfunction)f;
  return CUDA_SUCCESS;
}

EXPORT CUresult CUDAAPI cuFuncSetAttribute(CUfunction function,
                                           CUfunction_attribute attribute,
                                           int value) {
  FakeFunction *f = (FakeFunction *)function;
  COUNT(stats.setAttributeCalls, 1);
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
      value > 227 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  f->sharedLimit = value;
  return CUDA_SUCCESS;
}

/*===--- Kernels ---------------------------------------------------------===*/

EXPORT CUresult CUDAAPI cuLaunchKernel(CUfunction function, unsigned int gridX,
                                       unsigned int gridY, unsigned int gridZ,
                                       unsigned int blockX, unsigned int blockY,
                                       unsigned int blockZ,
                                       unsigned int sharedBytes,
                                       CUstream stream, void **params,
                                       void **extra) {
  FakeFunction *f = (FakeFunction *)function;
  if (!f || extra || !params)
    return CUDA_ERROR_INVALID_VALUE;
  if (gridX == 0 || gridY == 0 || gridZ == 0 || blockX == 0 || blockY == 0 ||
      blockZ == 0 || (uint64_t)blockX * blockY * blockZ > 1024 ||
      (int)sharedBytes > f->sharedLimit)
    return CUDA_ERROR_INVALID_VALUE;
  if (fakeFaulted())
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  COUNT(stats.launches, 1);
  return cudaStatus(fakeLaunch((FakeStream *)stream, f->name, gridX, params));
}

/* Launches as cuLaunchKernel does (the fake's kernels run one after another
 * in any case) and counts launches with programmatic stream serialization;
 * any other attribute is refused. */
EXPORT CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config,
                                         CUfunction function, void **params,
                                         void **extra) {
  if (!config || (config->numAttrs > 0 && !config->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  int dependent = 0;
  for (unsigned int i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id !=
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return CUDA_ERROR_INVALID_VALUE;
    dependent =
        config->attrs[i].value.programmaticStreamSerializationAllowed != 0;
  }
  CUresult r = cuLaunchKernel(
      function, config->gridDimX, config->gridDimY, config->gridDimZ,
      config->blockDimX, config->blockDimY, config->blockDimZ,
      config->sharedMemBytes, config->hStream, params, extra);
  if (r == CUDA_SUCCESS && dependent)
    COUNT(stats.dependentLaunches, 1);
  return r;
}
