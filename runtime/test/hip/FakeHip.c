/*===- FakeHip.c - A HIP runtime stand-in for tests without a GPU ---------===*\
|*                                                                            *|
|* Exports the libamdhip64 entry points the runtime's HIP backend resolves,   *|
|* with "device memory" in host memory (../fake/FakeDevice.c, shared with     *|
|* FakeCuda.c), so the backend runs end to end on a machine without a GPU or  *|
|* ROCm (the tests point FDC_HIP_RUNTIME here). Every copy and emulated       *|
|* kernel access is bounds-checked against the live allocations. Streams are  *|
|* synchronous. Needs no HIP header: it implements the ABI, with the error    *|
|* codes of hip_runtime_api.h.                                                *|
|*                                                                            *|
|* Code objects are TestHipModel.c's fake ones: a 64-byte ELF header, then   *|
|* "FAKEHSACO <arch>", then the kernel names, each NUL-terminated, ending     *|
|* with an empty name. Loading one                                            *|
|* for another arch than the device's fails with hipErrorNoBinaryForGpu.      *|
|*                                                                            *|
|* Device properties: built as is, it exports hipGetDevicePropertiesR0600     *|
|* (ROCm 6) and puts gcnArchName where no layout-dependent reader would look  *|
|* for it; built with FAKE_HIP_ROCM5, hipGetDeviceProperties (ROCm 5), with   *|
|* gcnArchName at yet another offset.                                         *|
|*                                                                            *|
|* Stream capture and graphs (hipStreamBeginCapture ... hipGraphLaunch): a    *|
|* capturing stream records launches (../fake/FakeDevice.h) and refuses       *|
|* copies, fills and synchronizes (hipErrorStreamCaptureUnsupported; the      *|
|* capture's end then fails with hipErrorStreamCaptureInvalidated). Built     *|
|* with FAKE_HIP_NO_GRAPHS, it exports none of them (a runtime without        *|
|* graphs: the backend runs eagerly).                                         *|
|*                                                                            *|
|* Behaviour is steered by environment variables read at each call:           *|
|*   FDC_FAKE_HIP_NO_DEVICE=1     hipInit fails with hipErrorNoDevice         *|
|*   FDC_FAKE_HIP_ARCH=gfx...     the gcnArchName (gfx90a:sramecc+:xnack-)    *|
|*   FDC_FAKE_HIP_DEVICES=1       device count                                *|
|*   FDC_FAKE_HIP_MAX_ALLOC=N     allocations over N bytes fail (OOM)         *|
|*   FDC_FAKE_HIP_LDS=N           dynamic shared memory per block (65536)     *|
|*   FDC_FAKE_HIP_FAIL=name[@N]   entry point `name` fails with               *|
|*                                hipErrorNotSupported (@N: the capture and   *|
|*                                graph-launch calls, only the N-th on a      *|
|*                                stream)                                     *|
|* An emulated out-of-bounds access makes later launches, copies and          *|
|* hipStreamSynchronize fail with hipErrorIllegalAddress until the last       *|
|* stream is destroyed (sticky, like a real fault).                           *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "FakeDevice.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

/* hipError_t, with the values of hip_runtime_api.h. */
typedef int hipError_t;
enum {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorNoBinaryForGpu = 209,
  hipErrorInvalidHandle = 400,
  hipErrorNotFound = 500,
  hipErrorIllegalAddress = 700,
  hipErrorNotSupported = 801,
  hipErrorStreamCaptureUnsupported = 900,
  hipErrorStreamCaptureInvalidated = 901,
};
enum { hipStreamCaptureModeThreadLocal = 1 };

/*===--- Bookkeeping, visible to the tests --------------------------------===*/

typedef struct FakeHipStats {
  int64_t liveAllocations;
  int64_t liveModules;
  int64_t liveStreams;
  int64_t launches;
  int64_t bytesToDevice;
  int64_t bytesToHost;
  int64_t livePinnedAllocations;
  int64_t pinnedCopies; /* copies whose host side is pinned memory */
  int64_t streamWaits;  /* hipStreamWaitEvent */
  int64_t liveEvents;
  int64_t liveUntimedEvents; /* hipEventDisableTiming */
  int64_t currentDevice;
  char lastImageArch[16]; /* the arch of the last code object loaded */
  FakeGraphStats graphs;  /* filled in by fdc_fake_hip_stats */
} FakeHipStats;

static FakeHipStats stats;

/* Copies the counters to `out` (a FakeHipStats); void * so the tests can
 * declare their own copy of the struct. */
EXPORT void fdc_fake_hip_stats(void *out) {
  fakeGraphStats(&stats.graphs);
  memcpy(out, &stats, sizeof(stats));
}

/* Whether FDC_FAKE_HIP_FAIL names `call` (the `nth` on its stream). */
static int injectedFailure(const char *call, long nth) {
  return fakeInjected("FDC_FAKE_HIP_FAIL", call, nth);
}

#define FAIL_IF_INJECTED()                                                     \
  do {                                                                         \
    if (injectedFailure(__func__, 0))                                          \
      return hipErrorNotSupported;                                             \
  } while (0)

static hipError_t hipStatus(FakeStatus status) {
  switch (status) {
  case kFakeOk:
    return hipSuccess;
  case kFakeOutOfMemory:
    return hipErrorOutOfMemory;
  case kFakeIllegalAddress:
    return hipErrorIllegalAddress;
  case kFakeCaptureUnsupported:
    return hipErrorStreamCaptureUnsupported;
  case kFakeCaptureInvalidated:
    return hipErrorStreamCaptureInvalidated;
  case kFakeInvalidValue:
  default:
    return hipErrorInvalidValue;
  }
}

/* Copies, fills and synchronizes fail on a capturing stream. */
#define REFUSE_WHILE_CAPTURING(stream)                                         \
  do {                                                                         \
    FakeStatus refused = fakeUncapturable((FakeStream *)(stream));             \
    if (refused != kFakeOk)                                                    \
      return hipStatus(refused);                                               \
  } while (0)

static int deviceCount(void) {
  return (int)fakeEnvLong("FDC_FAKE_HIP_DEVICES", 1);
}

static const char *gcnArchName(void) {
  const char *arch = getenv("FDC_FAKE_HIP_ARCH");
  return arch && *arch ? arch : "gfx90a:sramecc+:xnack-";
}

/*===--- Errors -----------------------------------------------------------===*/

EXPORT const char *hipGetErrorName(hipError_t error) {
  switch (error) {
#define NAME(e)                                                                \
  case e:                                                                      \
    return #e;
    NAME(hipSuccess)
    NAME(hipErrorInvalidValue)
    NAME(hipErrorOutOfMemory)
    NAME(hipErrorNoDevice)
    NAME(hipErrorInvalidDevice)
    NAME(hipErrorInvalidImage)
    NAME(hipErrorNoBinaryForGpu)
    NAME(hipErrorInvalidHandle)
    NAME(hipErrorNotFound)
    NAME(hipErrorIllegalAddress)
    NAME(hipErrorNotSupported)
    NAME(hipErrorStreamCaptureUnsupported)
    NAME(hipErrorStreamCaptureInvalidated)
#undef NAME
  default:
    return "hipErrorUnknown";
  }
}

EXPORT const char *hipGetErrorString(hipError_t error) {
  switch (error) {
  case hipSuccess:
    return "no error";
  case hipErrorInvalidValue:
    return "invalid argument";
  case hipErrorOutOfMemory:
    return "out of memory";
  case hipErrorNoDevice:
    return "no ROCm-capable device is detected";
  case hipErrorInvalidDevice:
    return "invalid device ordinal";
  case hipErrorInvalidImage:
    return "device kernel image is invalid";
  case hipErrorNoBinaryForGpu:
    return "no kernel image is available for execution on the device";
  case hipErrorNotFound:
    return "named symbol not found";
  case hipErrorIllegalAddress:
    return "an illegal memory access was encountered";
  case hipErrorNotSupported:
    return "operation not supported";
  case hipErrorStreamCaptureUnsupported:
    return "operation not permitted when stream is capturing";
  case hipErrorStreamCaptureInvalidated:
    return "operation failed due to a previous error during capture";
  default:
    return "unknown error";
  }
}

/*===--- Devices ----------------------------------------------------------===*/

EXPORT hipError_t hipInit(unsigned flags) {
  (void)flags;
  FAIL_IF_INJECTED();
  return fakeEnvLong("FDC_FAKE_HIP_NO_DEVICE", 0) ? hipErrorNoDevice
                                                  : hipSuccess;
}

EXPORT hipError_t hipGetDeviceCount(int *count) {
  FAIL_IF_INJECTED();
  *count = deviceCount();
  return *count > 0 ? hipSuccess : hipErrorNoDevice;
}

EXPORT hipError_t hipDeviceGet(int *device, int ordinal) {
  FAIL_IF_INJECTED();
  if (ordinal < 0 || ordinal >= deviceCount())
    return hipErrorInvalidDevice;
  *device = ordinal;
  return hipSuccess;
}

EXPORT hipError_t hipDeviceGetName(char *name, int length, int device) {
  FAIL_IF_INJECTED();
  snprintf(name, (size_t)length, "Fake AMD GPU %d", device);
  return hipSuccess;
}

EXPORT hipError_t hipSetDevice(int ordinal) {
  FAIL_IF_INJECTED();
  if (ordinal < 0 || ordinal >= deviceCount())
    return hipErrorInvalidDevice;
  stats.currentDevice = ordinal;
  return hipSuccess;
}

/* Writes name and gcnArchName at the given offsets, and bytes that a
 * careless reader could take for an arch name in between. */
static hipError_t writeProperties(char *properties, int device,
                                  size_t archOffset) {
  if (device < 0 || device >= deviceCount())
    return hipErrorInvalidDevice;
  snprintf(properties, 256, "Fake AMD GPU %d", device);
  memset(properties + 256, 0x5A, 16);      /* a uuid */
  memcpy(properties + 300, "xgfx942", 8);  /* not NUL-preceded */
  memcpy(properties + 320, "\0gfx9 0", 8); /* not an arch name */
  snprintf(properties + archOffset, 256, "%s", gcnArchName());
  return hipSuccess;
}

#ifdef FAKE_HIP_ROCM5
EXPORT hipError_t hipGetDeviceProperties(void *properties, int device) {
  FAIL_IF_INJECTED();
  return writeProperties((char *)properties, device, 396);
}
#else
EXPORT hipError_t hipGetDevicePropertiesR0600(void *properties, int device) {
  FAIL_IF_INJECTED();
  return writeProperties((char *)properties, device, 1160);
}
#endif

/*===--- Memory -----------------------------------------------------------===*/

EXPORT hipError_t hipMalloc(void **pointer, size_t bytes) {
  FAIL_IF_INJECTED();
  long limit = fakeEnvLong("FDC_FAKE_HIP_MAX_ALLOC", 0);
  if (bytes == 0 || (limit > 0 && bytes > (size_t)limit))
    return bytes == 0 ? hipErrorInvalidValue : hipErrorOutOfMemory;
  void *base = fakeAllocate(bytes);
  if (!base)
    return hipErrorOutOfMemory;
  ++stats.liveAllocations;
  *pointer = base;
  return hipSuccess;
}

EXPORT hipError_t hipFree(void *pointer) {
  if (!fakeFree(pointer))
    return hipErrorInvalidValue;
  --stats.liveAllocations;
  return hipSuccess;
}

EXPORT hipError_t hipMemcpyHtoDAsync(void *dst, void *src, size_t bytes,
                                     void *stream) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  if (fakeFaulted())
    return hipErrorIllegalAddress;
  if (!fakeInBounds(dst, bytes))
    return hipErrorInvalidValue;
  memcpy(dst, src, bytes);
  stats.bytesToDevice += (int64_t)bytes;
  if (fakeIsPinned(src, bytes))
    ++stats.pinnedCopies;
  return hipSuccess;
}

EXPORT hipError_t hipMemcpyDtoHAsync(void *dst, void *src, size_t bytes,
                                     void *stream) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  if (fakeFaulted())
    return hipErrorIllegalAddress;
  if (!fakeInBounds(src, bytes))
    return hipErrorInvalidValue;
  memcpy(dst, src, bytes);
  stats.bytesToHost += (int64_t)bytes;
  if (fakeIsPinned(dst, bytes))
    ++stats.pinnedCopies;
  return hipSuccess;
}

/*===--- Events: the stream is synchronous, so each is done when recorded ===*/

typedef struct FakeEvent {
  int recorded;
  unsigned flags;
} FakeEvent;

enum { kEventDisableTiming = 0x2 }; /* hipEventDisableTiming */

EXPORT hipError_t hipEventCreateWithFlags(void **event, unsigned flags) {
  FAIL_IF_INJECTED();
  if (flags & ~(unsigned)kEventDisableTiming)
    return hipErrorInvalidValue;
  FakeEvent *created = (FakeEvent *)calloc(1, sizeof(FakeEvent));
  if (!created)
    return hipErrorOutOfMemory;
  created->flags = flags;
  ++stats.liveEvents;
  if (flags & kEventDisableTiming)
    ++stats.liveUntimedEvents;
  *event = created;
  return hipSuccess;
}

EXPORT hipError_t hipEventDestroy(void *event) {
  if (!event)
    return hipErrorInvalidHandle;
  if (((FakeEvent *)event)->flags & kEventDisableTiming)
    --stats.liveUntimedEvents;
  free(event);
  --stats.liveEvents;
  return hipSuccess;
}

EXPORT hipError_t hipEventRecord(void *event, void *stream) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  if (!event)
    return hipErrorInvalidHandle;
  ((FakeEvent *)event)->recorded = 1;
  return hipSuccess;
}

/* Streams are synchronous: what an event recorded has run. */
EXPORT hipError_t hipStreamWaitEvent(void *stream, void *event,
                                     unsigned flags) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  if (!event || flags != 0 || !*(int *)event)
    return hipErrorInvalidHandle;
  ++stats.streamWaits;
  return hipSuccess;
}

/* A fault on the stream surfaces here, as at hipStreamSynchronize. */
EXPORT hipError_t hipEventSynchronize(void *event) {
  FAIL_IF_INJECTED();
  if (!event)
    return hipErrorInvalidHandle;
  return fakeFaulted() ? hipErrorIllegalAddress : hipSuccess;
}

EXPORT hipError_t hipHostMalloc(void **pointer, size_t bytes, unsigned flags) {
  FAIL_IF_INJECTED();
  if (bytes == 0 || flags != 0)
    return hipErrorInvalidValue;
  *pointer = fakeAllocatePinned(bytes);
  if (!*pointer)
    return hipErrorOutOfMemory;
  ++stats.livePinnedAllocations;
  return hipSuccess;
}

EXPORT hipError_t hipHostFree(void *pointer) {
  FAIL_IF_INJECTED();
  if (!fakeFreePinned(pointer))
    return hipErrorInvalidValue;
  --stats.livePinnedAllocations;
  return hipSuccess;
}

EXPORT hipError_t hipMemsetD8Async(void *dst, unsigned char value, size_t count,
                                   void *stream) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  if (!fakeInBounds(dst, count))
    return hipErrorInvalidValue;
  memset(dst, value, count);
  return hipSuccess;
}

/*===--- Streams ----------------------------------------------------------===*/

EXPORT hipError_t hipStreamCreateWithFlags(void **stream, unsigned flags) {
  (void)flags;
  FAIL_IF_INJECTED();
  FakeStream *created = fakeStreamCreate();
  if (!created)
    return hipErrorOutOfMemory;
  *stream = created;
  ++stats.liveStreams;
  return hipSuccess;
}

EXPORT hipError_t hipStreamDestroy(void *stream) {
  fakeStreamDestroy((FakeStream *)stream);
  if (--stats.liveStreams == 0)
    fakeClearFault();
  return hipSuccess;
}

EXPORT hipError_t hipStreamSynchronize(void *stream) {
  FAIL_IF_INJECTED();
  REFUSE_WHILE_CAPTURING(stream);
  return fakeFaulted() ? hipErrorIllegalAddress : hipSuccess;
}

/*===--- Stream capture and graphs ----------------------------------------===*/

#ifndef FAKE_HIP_NO_GRAPHS
EXPORT hipError_t hipStreamBeginCapture(void *stream, int mode) {
  FakeStream *s = (FakeStream *)stream;
  if (!s || mode != hipStreamCaptureModeThreadLocal)
    return hipErrorInvalidValue;
  if (injectedFailure(__func__, ++s->beginCaptures))
    return hipErrorNotSupported;
  return hipStatus(fakeBeginCapture(s));
}

EXPORT hipError_t hipStreamEndCapture(void *stream, void **graph) {
  FakeStream *s = (FakeStream *)stream;
  *graph = NULL;
  if (!s)
    return hipErrorInvalidValue;
  if (s->capture && injectedFailure(__func__, ++s->endCaptures)) {
    fakeAbandonCapture(s); /* like an invalidated capture: no graph */
    return hipErrorNotSupported;
  }
  FakeGraph *captured = NULL;
  hipError_t r = hipStatus(fakeEndCapture(s, &captured));
  *graph = captured;
  return r;
}

EXPORT hipError_t hipGraphInstantiateWithFlags(void **exec, void *graph,
                                               unsigned long long flags) {
  *exec = NULL;
  if (flags)
    return hipErrorInvalidValue;
  FAIL_IF_INJECTED();
  FakeGraph *instantiated = NULL;
  hipError_t r = hipStatus(fakeInstantiate((FakeGraph *)graph, &instantiated));
  *exec = instantiated;
  return r;
}

EXPORT hipError_t hipGraphLaunch(void *exec, void *stream) {
  FakeStream *s = (FakeStream *)stream;
  if (s && injectedFailure(__func__, ++s->graphLaunches))
    return hipErrorNotSupported;
  return hipStatus(fakeGraphLaunch(s, (const FakeGraph *)exec));
}

EXPORT hipError_t hipGraphExecDestroy(void *exec) {
  return hipStatus(fakeGraphExecDestroy((FakeGraph *)exec));
}

EXPORT hipError_t hipGraphDestroy(void *graph) {
  return hipStatus(fakeGraphDestroy((FakeGraph *)graph));
}
#endif

/*===--- Modules ----------------------------------------------------------===*/

typedef struct FakeFunction {
  const char *name; /* inside the module's image */
  struct FakeFunction *next;
} FakeFunction;

typedef struct FakeModule {
  const char *kernels; /* the first kernel name of the image */
  FakeFunction *functions;
} FakeModule;

static const char kMagic[] = "FAKEHSACO ";

EXPORT hipError_t hipModuleLoadData(void **module, const void *image) {
  FAIL_IF_INJECTED();
  const char *text = (const char *)image;
  if (memcmp(text,
             "\x7f"
             "ELF",
             4) != 0)
    return hipErrorInvalidImage;
  text += 64; /* the ELF header */
  if (strncmp(text, kMagic, sizeof(kMagic) - 1) != 0)
    return hipErrorInvalidImage;
  const char *arch = text + sizeof(kMagic) - 1;
  const char *device = gcnArchName();
  size_t archLength = strcspn(device, ":");
  if (strlen(arch) != archLength || strncmp(arch, device, archLength) != 0)
    return hipErrorNoBinaryForGpu;
  FakeModule *m = (FakeModule *)calloc(1, sizeof(FakeModule));
  m->kernels = arch + strlen(arch) + 1;
  snprintf(stats.lastImageArch, sizeof(stats.lastImageArch), "%s", arch);
  ++stats.liveModules;
  *module = m;
  return hipSuccess;
}

EXPORT hipError_t hipModuleUnload(void *module) {
  FakeModule *m = (FakeModule *)module;
  while (m->functions) {
    FakeFunction *f = m->functions;
    m->functions = f->next;
    free(f);
  }
  free(m);
  --stats.liveModules;
  return hipSuccess;
}

EXPORT hipError_t hipModuleGetFunction(void **function, void *module,
                                       const char *name) {
  FAIL_IF_INJECTED();
  FakeModule *m = (FakeModule *)module;
  for (const char *k = m->kernels; *k; k += strlen(k) + 1) {
    if (strcmp(k, name) != 0)
      continue;
    FakeFunction *f = (FakeFunction *)calloc(1, sizeof(FakeFunction));
    f->name = k;
    f->next = m->functions;
    m->functions = f;
    *function = f;
    return hipSuccess;
  }
  return hipErrorNotFound;
}

EXPORT hipError_t hipModuleLaunchKernel(void *function, unsigned gridX,
                                        unsigned gridY, unsigned gridZ,
                                        unsigned blockX, unsigned blockY,
                                        unsigned blockZ, unsigned sharedBytes,
                                        void *stream, void **params,
                                        void **extra) {
  FAIL_IF_INJECTED();
  FakeFunction *f = (FakeFunction *)function;
  if (!f || extra || !params)
    return hipErrorInvalidValue;
  if (gridX == 0 || gridY == 0 || gridZ == 0 || blockX == 0 || blockY == 0 ||
      blockZ == 0 || (uint64_t)blockX * blockY * blockZ > 1024 ||
      sharedBytes > (unsigned long)fakeEnvLong("FDC_FAKE_HIP_LDS", 65536))
    return hipErrorInvalidValue;
  if (fakeFaulted())
    return hipErrorIllegalAddress;
  ++stats.launches;
  return hipStatus(fakeLaunch((FakeStream *)stream, f->name, gridX, params));
}
