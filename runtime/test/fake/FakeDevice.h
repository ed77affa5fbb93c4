/*===- FakeDevice.h - Device memory and kernels of the fake GPUs --*- C -*-===*\
|*                                                                            *|
|* What FakeCuda.c and FakeHip.c share: "device memory" in host memory, with  *|
|* every access bounds-checked against the live allocations, a sticky fault   *|
|* flag (set by an emulated out-of-bounds access, like a real fault), and the *|
|* two kernels of the GPU test libraries (TestGpuStep.h), emulated in C, and  *|
|* the streams' graph capture: while a stream captures, a launch is recorded  *|
|* (its kernel and a copy of its parameter values) instead of run; a graph    *|
|* launch runs the recorded launches, reading device memory as it is then.    *|
|* Compiled into each fake, so each has its own state.                        *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H
#define FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H

#include <stddef.h>
#include <stdint.h>

/* Environment variable `name` as a decimal number, or `fallback`. */
long fakeEnvLong(const char *name, long fallback);

/* `bytes` > 0 of device memory, filled with 0xCD (garbage, like a real
 * allocation); NULL when the host is out of memory. */
void *fakeAllocate(size_t bytes);
/* Frees an allocation; 0 when `base` is not one. */
int fakeFree(void *base);
/* Whether [p, p + bytes) lies inside one live allocation. */
int fakeInBounds(const void *p, size_t bytes);

/* `bytes` > 0 of "pinned" host memory (cuMemHostAlloc, hipHostMalloc): a
 * list of its own, which kernels cannot reach; NULL when out of memory. */
void *fakeAllocatePinned(size_t bytes);
/* Frees a pinned allocation; 0 when `base` is not one. */
int fakeFreePinned(void *base);
/* Whether [p, p + bytes) lies inside one live pinned allocation. */
int fakeIsPinned(const void *p, size_t bytes);

/* Set by an emulated out-of-bounds access; cleared by fakeClearFault. */
int fakeFaulted(void);
void fakeClearFault(void);

/* Runs kernel `name` over `grid` sequences with `params` (one pointer per
 * 8-byte parameter, as for cuLaunchKernel). Returns 0 when the kernel is not
 * one of the test kernels (it then does nothing). */
int fakeRunKernel(const char *name, uint32_t grid, void **params);

/* Whether environment variable `variable` injects a failure into `call`:
 * "call" fails every call of it, "call@N" only the N-th on a stream (`nth`,
 * counted by the caller from 1; 0 for a call that is not counted). */
int fakeInjected(const char *variable, const char *call, long nth);

/*===--- Streams and graphs -----------------------------------------------===*/

/* What a stream or graph call did; each fake maps these to its codes. */
typedef enum FakeStatus {
  kFakeOk,
  kFakeInvalidValue,
  kFakeOutOfMemory,
  kFakeIllegalAddress,     /* the sticky fault */
  kFakeCaptureUnsupported, /* not allowed while the stream captures */
  kFakeCaptureInvalidated, /* the capture was invalidated by such a call */
} FakeStatus;

/* Recorded launches: a captured graph, or (exec set) an instantiated one. */
typedef struct FakeGraph FakeGraph;

typedef struct FakeStream {
  FakeGraph *capture; /* non-NULL while the stream captures */
  int invalidated;    /* an uncapturable call came during the capture */
  /* Calls made on the stream, for "call@N" injections. */
  long beginCaptures, endCaptures, graphLaunches;
} FakeStream;

/* The graph counters, copied into each fake's stats. */
typedef struct FakeGraphStats {
  int64_t captures;         /* captures begun */
  int64_t capturedLaunches; /* launches recorded instead of run */
  int64_t instantiations;
  int64_t graphLaunches;
  int64_t replayedLaunches; /* kernels run by graph launches */
  int64_t liveGraphs;       /* captured, not destroyed */
  int64_t liveGraphExecs;   /* instantiated, not destroyed */
} FakeGraphStats;
void fakeGraphStats(FakeGraphStats *out);

/* A zeroed stream; NULL when out of memory. */
FakeStream *fakeStreamCreate(void);
/* Drops a capture in progress too. */
void fakeStreamDestroy(FakeStream *stream);

FakeStatus fakeBeginCapture(FakeStream *stream);
/* Leaves capture mode whatever happened; `*graph` is the captured graph,
 * or NULL on failure (kFakeCaptureInvalidated after an uncapturable call;
 * kFakeInvalidValue when the stream was not capturing). */
FakeStatus fakeEndCapture(FakeStream *stream, FakeGraph **graph);
/* Ends the capture with nothing captured (an injected failure). */
void fakeAbandonCapture(FakeStream *stream);
/* A copy, fill or synchronize on `stream`: refused while it captures, and
 * the capture is then invalidated (as CUDA does for a synchronize). */
FakeStatus fakeUncapturable(FakeStream *stream);
/* Records the launch while the stream captures, else runs it (after the
 * caller's checks). The parameter values are copied when recorded. */
FakeStatus fakeLaunch(FakeStream *stream, const char *kernel, uint32_t grid,
                      void **params);

/* A host function in a graph (a copy, or a collective of FakeNccl.c): a
 * capturing stream records `run` with a copy of `values` (at most
 * kFakeHostValues), and every replay calls it with them, in order with the
 * launches; `release` (NULL: none) is called with them once no graph holds
 * the record. Returns kFakeOk with *recorded = 1 when recorded, with
 * *recorded = 0 when the stream does not capture (the caller runs it now). */
enum { kFakeHostValues = 8 };
typedef void (*FakeHostFn)(const uint64_t *values);
FakeStatus fakeCaptureHost(FakeStream *stream, FakeHostFn run,
                           FakeHostFn release, const uint64_t *values,
                           int count, int *recorded);

FakeStatus fakeInstantiate(FakeGraph *graph, FakeGraph **exec);
/* Runs the exec's launches in order on `stream` (stopping at a fault, like
 * a device); refused while the stream captures or after a fault. */
FakeStatus fakeGraphLaunch(FakeStream *stream, const FakeGraph *exec);
FakeStatus fakeGraphDestroy(FakeGraph *graph);
FakeStatus fakeGraphExecDestroy(FakeGraph *exec);

#endif /* FDC_RUNTIME_TEST_FAKE_FAKEDEVICE_H */
