/*===- FakeDevice.c - Device memory and kernels of the fake GPUs ----------===*\
|*                                                                            *|
|* See FakeDevice.h. The kernels are those of TestCudaKernels.ptx (every      *|
|* parameter 8 bytes):                                                        *|
|*   fdc_test_store_kv(kv, weights, tokens, positions, slots, scratch,        *|
|*                     max_context)                                           *|
|*   fdc_test_next_token(tokens, weights, scratch, temperature, top_k,        *|
|*                       uniform, logits, next_tokens, vocab)                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "FakeDevice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Allocation {
  uint8_t *base;
  size_t size;
  struct Allocation *next;
} Allocation;

static Allocation *allocations;
static Allocation *pinnedAllocations;
static int faulted;

long fakeEnvLong(const char *name, long fallback) {
  const char *value = getenv(name);
  return value && *value ? strtol(value, NULL, 10) : fallback;
}

static void *allocateIn(Allocation **list, size_t bytes) {
  Allocation *a = (Allocation *)malloc(sizeof(Allocation));
  uint8_t *base = (uint8_t *)malloc(bytes);
  if (!a || !base) {
    free(a);
    free(base);
    return NULL;
  }
  memset(base, 0xCD, bytes);
  a->base = base;
  a->size = bytes;
  a->next = *list;
  *list = a;
  return base;
}

static int freeIn(Allocation **list, void *base) {
  for (Allocation **a = list; *a; a = &(*a)->next) {
    if ((*a)->base == (uint8_t *)base) {
      Allocation *dead = *a;
      *a = dead->next;
      free(dead->base);
      free(dead);
      return 1;
    }
  }
  return 0;
}

static int inBoundsOf(const Allocation *list, const void *p, size_t bytes) {
  const uint8_t *q = (const uint8_t *)p;
  for (const Allocation *a = list; a; a = a->next)
    if (q >= a->base && q <= a->base + a->size &&
        bytes <= (size_t)(a->base + a->size - q))
      return 1;
  return 0;
}

void *fakeAllocate(size_t bytes) { return allocateIn(&allocations, bytes); }
int fakeFree(void *base) { return freeIn(&allocations, base); }
int fakeInBounds(const void *p, size_t bytes) {
  return inBoundsOf(allocations, p, bytes);
}

void *fakeAllocatePinned(size_t bytes) {
  return allocateIn(&pinnedAllocations, bytes);
}
int fakeFreePinned(void *base) { return freeIn(&pinnedAllocations, base); }
int fakeIsPinned(const void *p, size_t bytes) {
  return inBoundsOf(pinnedAllocations, p, bytes);
}

int fakeFaulted(void) { return faulted; }

void fakeClearFault(void) { faulted = 0; }

/*===--- Emulated accesses: out of bounds records a fault and yields 0 ----===*/

static void *deviceAccess(uint64_t address, size_t bytes) {
  void *p = (void *)(uintptr_t)address;
  if (!fakeInBounds(p, bytes)) {
    faulted = 1;
    return NULL;
  }
  return p;
}

static float loadF32(uint64_t address) {
  float *p = (float *)deviceAccess(address, 4);
  return p ? *p : 0.0f;
}

static int32_t loadI32(uint64_t address) {
  int32_t *p = (int32_t *)deviceAccess(address, 4);
  return p ? *p : 0;
}

static void storeF32(uint64_t address, float value) {
  float *p = (float *)deviceAccess(address, 4);
  if (p)
    *p = value;
}

static void storeI32(uint64_t address, int32_t value) {
  int32_t *p = (int32_t *)deviceAccess(address, 4);
  if (p)
    *p = value;
}

/*===--- Kernels ----------------------------------------------------------===*/

static uint64_t param(void **params, int i) { return *(uint64_t *)params[i]; }

static void storeKV(uint32_t grid, void **params) {
  uint64_t kv = param(params, 0), weights = param(params, 1),
           tokens = param(params, 2), positions = param(params, 3),
           slots = param(params, 4), scratch = param(params, 5);
  int64_t maxContext = (int64_t)param(params, 6);
  for (uint32_t i = 0; i < grid; ++i) {
    int32_t token = loadI32(tokens + 4 * i);
    int32_t pos = loadI32(positions + 4 * i);
    int32_t slot = loadI32(slots + 4 * i);
    uint64_t k = kv + (uint64_t)((int64_t)slot * 2 * maxContext) * 4;
    uint64_t v = k + (uint64_t)maxContext * 4;
    storeF32(k + 4 * (uint64_t)pos, (float)token);
    storeF32(v + 4 * (uint64_t)pos, loadF32(weights));
    float sum = 0;
    for (int32_t p = 0; p <= pos; ++p)
      sum += loadF32(k + 4 * (uint64_t)p);
    storeF32(scratch + 4 * i, sum);
  }
}

static void nextToken(uint32_t grid, void **params) {
  uint64_t tokens = param(params, 0), weights = param(params, 1),
           scratch = param(params, 2), temperature = param(params, 3),
           topK = param(params, 4), uniform = param(params, 5),
           logits = param(params, 6), nextTokens = param(params, 7);
  int64_t vocab = (int64_t)param(params, 8);
  for (uint32_t i = 0; i < grid; ++i) {
    int32_t token = loadI32(tokens + 4 * i);
    float u = loadF32(uniform + 4 * i);
    int32_t r =
        loadF32(temperature + 4 * i) > 0 ? (int32_t)(u * (float)vocab) : 0;
    int64_t next = (int64_t)(token + 1 + r) % vocab;
    if (loadI32(topK + 4 * i) == 999)
      next = vocab + 5;
    float w0 = loadF32(weights), sum = loadF32(scratch + 4 * i);
    for (int64_t j = 0; j < vocab; ++j) {
      float value = j == next ? 1.0f : 0.0f;
      if (j == 30)
        value += w0;
      if (j == 31)
        value += sum;
      storeF32(logits + 4 * (uint64_t)(i * vocab + j), value);
    }
    storeI32(nextTokens + 4 * i, (int32_t)next);
  }
}

int fakeRunKernel(const char *name, uint32_t grid, void **params) {
  if (strcmp(name, "fdc_test_store_kv") == 0)
    storeKV(grid, params);
  else if (strcmp(name, "fdc_test_next_token") == 0)
    nextToken(grid, params);
  else
    return 0;
  return 1;
}

static int kernelParams(const char *name) {
  if (strcmp(name, "fdc_test_store_kv") == 0)
    return 7;
  if (strcmp(name, "fdc_test_next_token") == 0)
    return 9;
  return 0;
}

int fakeInjected(const char *variable, const char *call, long nth) {
  const char *value = getenv(variable);
  if (!value)
    return 0;
  size_t length = strlen(call);
  if (strncmp(value, call, length) != 0)
    return 0;
  if (value[length] == '\0')
    return 1;
  return value[length] == '@' && nth > 0 &&
         strtol(value + length + 1, NULL, 10) == nth;
}

/*===--- Streams and graphs -----------------------------------------------===*/

enum { kMaxParams = 16 };

/* A captured host function, shared by the captured graph and its execs. */
typedef struct FakeHostNode {
  int refs;
  FakeHostFn run, release;
  uint64_t values[kFakeHostValues];
} FakeHostNode;

/* A launch, or (host set) a host function. */
typedef struct FakeLaunchRecord {
  char kernel[128];
  uint32_t grid;
  int params;
  uint64_t values[kMaxParams];
  FakeHostNode *host;
} FakeLaunchRecord;

static void retainHost(FakeHostNode *node) {
  __atomic_fetch_add(&node->refs, 1, __ATOMIC_RELAXED);
}

static void releaseHost(FakeHostNode *node) {
  if (__atomic_sub_fetch(&node->refs, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  if (node->release)
    node->release(node->values);
  free(node);
}

struct FakeGraph {
  int exec;
  size_t count, capacity;
  FakeLaunchRecord *launches;
};

static FakeGraphStats graphStats;
/* Tensor-parallel ranks capture and replay on threads. */
#define COUNT(counter, n) __atomic_fetch_add(&(counter), (n), __ATOMIC_RELAXED)

void fakeGraphStats(FakeGraphStats *out) {
  FakeGraphStats *s = &graphStats;
  out->captures = __atomic_load_n(&s->captures, __ATOMIC_RELAXED);
  out->capturedLaunches =
      __atomic_load_n(&s->capturedLaunches, __ATOMIC_RELAXED);
  out->instantiations = __atomic_load_n(&s->instantiations, __ATOMIC_RELAXED);
  out->graphLaunches = __atomic_load_n(&s->graphLaunches, __ATOMIC_RELAXED);
  out->replayedLaunches =
      __atomic_load_n(&s->replayedLaunches, __ATOMIC_RELAXED);
  out->liveGraphs = __atomic_load_n(&s->liveGraphs, __ATOMIC_RELAXED);
  out->liveGraphExecs = __atomic_load_n(&s->liveGraphExecs, __ATOMIC_RELAXED);
}

static void freeGraph(FakeGraph *graph) {
  if (!graph)
    return;
  for (size_t i = 0; i < graph->count; ++i)
    if (graph->launches[i].host)
      releaseHost(graph->launches[i].host);
  free(graph->launches);
  free(graph);
}

FakeStream *fakeStreamCreate(void) {
  return (FakeStream *)calloc(1, sizeof(FakeStream));
}

void fakeStreamDestroy(FakeStream *stream) {
  if (!stream)
    return;
  freeGraph(stream->capture);
  free(stream);
}

FakeStatus fakeBeginCapture(FakeStream *stream) {
  if (!stream || stream->capture)
    return kFakeInvalidValue;
  FakeGraph *graph = (FakeGraph *)calloc(1, sizeof(FakeGraph));
  if (!graph)
    return kFakeOutOfMemory;
  stream->capture = graph;
  stream->invalidated = 0;
  COUNT(graphStats.captures, 1);
  return kFakeOk;
}

FakeStatus fakeEndCapture(FakeStream *stream, FakeGraph **graph) {
  *graph = NULL;
  if (!stream || !stream->capture)
    return kFakeInvalidValue;
  FakeGraph *captured = stream->capture;
  stream->capture = NULL;
  if (stream->invalidated) {
    stream->invalidated = 0;
    freeGraph(captured);
    return kFakeCaptureInvalidated;
  }
  COUNT(graphStats.liveGraphs, 1);
  *graph = captured;
  return kFakeOk;
}

void fakeAbandonCapture(FakeStream *stream) {
  if (!stream)
    return;
  freeGraph(stream->capture);
  stream->capture = NULL;
  stream->invalidated = 0;
}

FakeStatus fakeUncapturable(FakeStream *stream) {
  if (!stream || !stream->capture)
    return kFakeOk;
  stream->invalidated = 1;
  return kFakeCaptureUnsupported;
}

/* A zeroed record at the end of `graph`; NULL when out of memory. */
static FakeLaunchRecord *append(FakeGraph *graph) {
  if (graph->count == graph->capacity) {
    size_t capacity = graph->capacity ? 2 * graph->capacity : 8;
    FakeLaunchRecord *grown = (FakeLaunchRecord *)realloc(
        graph->launches, capacity * sizeof(FakeLaunchRecord));
    if (!grown)
      return NULL;
    graph->launches = grown;
    graph->capacity = capacity;
  }
  FakeLaunchRecord *r = &graph->launches[graph->count++];
  memset(r, 0, sizeof(*r));
  return r;
}

static int record(FakeGraph *graph, const char *kernel, uint32_t grid,
                  void **params) {
  FakeLaunchRecord *r = append(graph);
  if (!r)
    return 0;
  snprintf(r->kernel, sizeof(r->kernel), "%s", kernel);
  r->grid = grid;
  r->params = kernelParams(kernel);
  /* The values, as a real capture copies them: the caller's parameter
   * array is gone by the time the graph runs. */
  for (int i = 0; i < r->params; ++i)
    memcpy(&r->values[i], params[i], 8);
  return 1;
}

FakeStatus fakeLaunch(FakeStream *stream, const char *kernel, uint32_t grid,
                      void **params) {
  if (stream && stream->capture) {
    if (!record(stream->capture, kernel, grid, params))
      return kFakeOutOfMemory;
    COUNT(graphStats.capturedLaunches, 1);
    return kFakeOk;
  }
  fakeRunKernel(kernel, grid, params);
  return kFakeOk;
}

FakeStatus fakeCaptureHost(FakeStream *stream, FakeHostFn run,
                           FakeHostFn release, const uint64_t *values,
                           int count, int *recorded) {
  *recorded = 0;
  if (!run || count < 0 || count > kFakeHostValues)
    return kFakeInvalidValue;
  if (!stream || !stream->capture)
    return kFakeOk;
  FakeHostNode *node = (FakeHostNode *)calloc(1, sizeof(FakeHostNode));
  FakeLaunchRecord *r = node ? append(stream->capture) : NULL;
  if (!r) {
    free(node);
    return kFakeOutOfMemory;
  }
  node->refs = 1;
  node->run = run;
  node->release = release;
  if (count)
    memcpy(node->values, values, (size_t)count * sizeof(uint64_t));
  snprintf(r->kernel, sizeof(r->kernel), "(host function)");
  r->host = node;
  *recorded = 1;
  return kFakeOk;
}

FakeStatus fakeInstantiate(FakeGraph *graph, FakeGraph **exec) {
  *exec = NULL;
  if (!graph || graph->exec)
    return kFakeInvalidValue;
  FakeGraph *copy = (FakeGraph *)calloc(1, sizeof(FakeGraph));
  if (!copy)
    return kFakeOutOfMemory;
  copy->exec = 1;
  if (graph->count) {
    copy->launches =
        (FakeLaunchRecord *)malloc(graph->count * sizeof(FakeLaunchRecord));
    if (!copy->launches) {
      free(copy);
      return kFakeOutOfMemory;
    }
    memcpy(copy->launches, graph->launches,
           graph->count * sizeof(FakeLaunchRecord));
    for (size_t i = 0; i < graph->count; ++i)
      if (copy->launches[i].host)
        retainHost(copy->launches[i].host);
  }
  copy->count = copy->capacity = graph->count;
  COUNT(graphStats.instantiations, 1);
  COUNT(graphStats.liveGraphExecs, 1);
  *exec = copy;
  return kFakeOk;
}

FakeStatus fakeGraphLaunch(FakeStream *stream, const FakeGraph *exec) {
  if (!exec || !exec->exec)
    return kFakeInvalidValue;
  if (stream && stream->capture)
    return fakeUncapturable(stream);
  if (faulted)
    return kFakeIllegalAddress;
  COUNT(graphStats.graphLaunches, 1);
  for (size_t i = 0; i < exec->count && !faulted; ++i) {
    const FakeLaunchRecord *r = &exec->launches[i];
    if (r->host) {
      r->host->run(r->host->values);
      continue;
    }
    void *params[kMaxParams];
    for (int p = 0; p < r->params; ++p)
      params[p] = (void *)&r->values[p];
    fakeRunKernel(r->kernel, r->grid, params);
    COUNT(graphStats.replayedLaunches, 1);
  }
  return kFakeOk;
}

FakeStatus fakeGraphDestroy(FakeGraph *graph) {
  if (!graph || graph->exec)
    return kFakeInvalidValue;
  freeGraph(graph);
  COUNT(graphStats.liveGraphs, -1);
  return kFakeOk;
}

FakeStatus fakeGraphExecDestroy(FakeGraph *exec) {
  if (!exec || !exec->exec)
    return kFakeInvalidValue;
  freeGraph(exec);
  COUNT(graphStats.liveGraphExecs, -1);
  return kFakeOk;
}
