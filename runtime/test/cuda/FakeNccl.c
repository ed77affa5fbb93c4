/*===- FakeNccl.c - An NCCL stand-in for tests without GPUs ---------------===*\
|*                                                                            *|
|* Exports the NCCL entry points the runtime's NCCL group resolves            *|
|* (../../lib/cuda/Nccl.h), for the "device memory" of FakeCuda.c, which is   *|
|* host memory: the tests point FDC_NCCL_LIBRARY here. Like FakeCuda's        *|
|* streams, every collective is synchronous: a rank's ncclAllReduce or        *|
|* ncclAllGather returns once every rank of its clique has called it and the  *|
|* data has moved (ranks call from their own threads). Inside ncclGroupStart/ *|
|* End one thread may issue one collective per rank of a clique (the          *|
|* runtime's warm-up); they run at ncclGroupEnd. ncclCommAbort wakes every    *|
|* rank waiting in its clique, whose calls then fail. fdc_fake_nccl_stats     *|
|* counts the calls (the tests check that replayed step graphs make them).    *|
|* A collective called on a capturing stream of the fake driver               *|
|* (FDC_CUDA_DRIVER) is recorded into the graph and runs at each replay; as   *|
|* in NCCL 2.26 and later, destroying or aborting a communicator waits until  *|
|* no graph holds a collective of it (here for at most 10 s, then it counts   *|
|* destroyedWithLiveGraphs and goes on).                                      *|
|*                                                                            *|
|* ncclMemAlloc hands out host memory; ncclCommWindowRegister records the     *|
|* window (the stats count the collectives whose buffers all lie in windows   *|
|* of their communicator) and ncclCommWindowDeregister drops it.              *|
|*                                                                            *|
|* Environment, read at each call:                                            *|
|*   FDC_FAKE_NCCL_INIT_FAIL=1     ncclCommInitAll fails (ncclSystemError)    *|
|*   FDC_FAKE_NCCL_WINDOW_FAIL=1   ncclCommWindowRegister fails               *|
|*                                 (ncclSystemError)                          *|
|*   FDC_FAKE_NCCL_ASYNC_ERROR=1   ncclCommGetAsyncError reports              *|
|*                                 ncclRemoteError                            *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  kSuccess = 0,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
};
enum { kFloat16 = 6, kFloat32 = 7, kBfloat16 = 9 };
enum { kMaxRanks = 64 };

typedef enum { kAllReduce, kAllGather } Op;

typedef struct Call {
  Op op;
  const void *send;
  void *recv;
  size_t count;
  int type;
} Call;

typedef struct Clique {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int ranks;
  int arrived;
  unsigned long generation;
  int readers;
  int aborted;
  int failed;
  /* Communicators not yet destroyed or aborted, and threads inside. */
  int refs;
  int inside;
  Call calls[kMaxRanks];
} Clique;

struct ncclComm {
  Clique *clique;
  int rank;
  /* Collectives of this communicator that graphs hold (clique mutex). */
  int graphRefs;
};

/* Collectives run, every rank's (inside groups and graphs too); captured
 * into graphs; communicators destroyed or aborted while graphs held some
 * of their collectives. */
typedef struct FakeNcclStats {
  int64_t allReduces;
  int64_t allGathers;
  int64_t captured;
  int64_t destroyedWithLiveGraphs;
  /* ncclMemAlloc / ncclMemFree calls, windows registered / deregistered,
   * and collectives (as counted above) whose buffers lie in windows. */
  int64_t memAllocs;
  int64_t memFrees;
  int64_t windowsRegistered;
  int64_t windowsDeregistered;
  int64_t inWindows;
} FakeNcclStats;

static FakeNcclStats stats;

/* Copies the counters to `out` (a FakeNcclStats). */
EXPORT void fdc_fake_nccl_stats(void *out) {
  FakeNcclStats copy;
  copy.allReduces = __atomic_load_n(&stats.allReduces, __ATOMIC_RELAXED);
  copy.allGathers = __atomic_load_n(&stats.allGathers, __ATOMIC_RELAXED);
  copy.captured = __atomic_load_n(&stats.captured, __ATOMIC_RELAXED);
  copy.destroyedWithLiveGraphs =
      __atomic_load_n(&stats.destroyedWithLiveGraphs, __ATOMIC_RELAXED);
  copy.memAllocs = __atomic_load_n(&stats.memAllocs, __ATOMIC_RELAXED);
  copy.memFrees = __atomic_load_n(&stats.memFrees, __ATOMIC_RELAXED);
  copy.windowsRegistered =
      __atomic_load_n(&stats.windowsRegistered, __ATOMIC_RELAXED);
  copy.windowsDeregistered =
      __atomic_load_n(&stats.windowsDeregistered, __ATOMIC_RELAXED);
  copy.inWindows = __atomic_load_n(&stats.inWindows, __ATOMIC_RELAXED);
  memcpy(out, &copy, sizeof(copy));
}

/*===--- Symmetric windows ------------------------------------------------===*/

enum { kMaxWindows = 64 };

struct ncclWindow {
  struct ncclComm *comm;
  const char *begin;
  size_t bytes;
};

static pthread_mutex_t windowsMutex = PTHREAD_MUTEX_INITIALIZER;
static struct ncclWindow *windows[kMaxWindows];

/* Whether [pointer, pointer + bytes) lies in a window of `comm`. */
static int inWindow(struct ncclComm *comm, const void *pointer, size_t bytes) {
  const char *p = (const char *)pointer;
  int found = 0;
  pthread_mutex_lock(&windowsMutex);
  for (int i = 0; i < kMaxWindows && !found; ++i)
    found = windows[i] && windows[i]->comm == comm && p >= windows[i]->begin &&
            p + bytes <= windows[i]->begin + windows[i]->bytes;
  pthread_mutex_unlock(&windowsMutex);
  return found;
}

static size_t typeSize(int type);

/* Counts a collective of `comm` whose buffers lie in its windows. */
static void countWindows(struct ncclComm *comm, Call c, int ranks) {
  size_t bytes = c.count * typeSize(c.type);
  size_t out = c.op == kAllGather ? bytes * (size_t)ranks : bytes;
  if (inWindow(comm, c.send, bytes) && inWindow(comm, c.recv, out))
    __atomic_fetch_add(&stats.inWindows, 1, __ATOMIC_RELAXED);
}

/* Drops the windows of `comm` (its end frees them, as in NCCL). */
static void dropWindows(struct ncclComm *comm) {
  pthread_mutex_lock(&windowsMutex);
  for (int i = 0; i < kMaxWindows; ++i)
    if (windows[i] && windows[i]->comm == comm) {
      free(windows[i]);
      windows[i] = NULL;
    }
  pthread_mutex_unlock(&windowsMutex);
}

static void count(Op op) {
  __atomic_fetch_add(op == kAllReduce ? &stats.allReduces : &stats.allGathers,
                     1, __ATOMIC_RELAXED);
}

static long envLong(const char *name) {
  const char *value = getenv(name);
  return value && *value ? strtol(value, NULL, 10) : 0;
}

static size_t typeSize(int type) {
  return type == kFloat32 ? 4 : type == kFloat16 || type == kBfloat16 ? 2 : 0;
}

static float halfToFloat(uint16_t bits, int type) {
  uint32_t word;
  float f;
  if (type == kBfloat16) {
    word = (uint32_t)bits << 16;
    memcpy(&f, &word, 4);
    return f;
  }
  /* f16: exact, via the exponent. */
  uint32_t sign = (uint32_t)(bits >> 15) << 31, exponent = (bits >> 10) & 31,
           mantissa = bits & 1023;
  if (exponent == 31) {
    word = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else {
    f = (float)mantissa / 16777216.0f; /* 2^-24 */
    return sign ? -f : f;
  }
  memcpy(&f, &word, 4);
  return f;
}

static uint16_t floatToHalf(float value, int type) {
  uint32_t word;
  memcpy(&word, &value, 4);
  if (type == kBfloat16) {
    if ((word & 0x7fffffffu) > 0x7f800000u)
      return (uint16_t)((word >> 16) | 0x40);
    return (uint16_t)((word + 0x7fff + ((word >> 16) & 1)) >> 16);
  }
  /* f16 with round to nearest even; enough for the tests' small values. */
  uint16_t sign = (uint16_t)((word >> 16) & 0x8000);
  float magnitude = value < 0 ? -value : value;
  if (magnitude != magnitude)
    return sign | 0x7e00;
  if (magnitude >= 65520.0f)
    return sign | 0x7c00;
  if (magnitude < 6.103515625e-05f) { /* subnormal: units of 2^-24 */
    float units = magnitude * 16777216.0f;
    uint32_t q = (uint32_t)units;
    float rest = units - (float)q;
    if (rest > 0.5f || (rest == 0.5f && (q & 1)))
      ++q;
    return sign | (uint16_t)q;
  }
  uint32_t exponent = ((word >> 23) & 255) - 112;
  uint32_t mantissa = word & 0x7fffff;
  uint32_t q = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (q & 1)))
    ++q;
  return sign | (uint16_t)q;
}

static float load(const void *base, size_t i, int type) {
  if (type == kFloat32) {
    float f;
    memcpy(&f, (const char *)base + 4 * i, 4);
    return f;
  }
  uint16_t bits;
  memcpy(&bits, (const char *)base + 2 * i, 2);
  return halfToFloat(bits, type);
}

static void store(void *base, size_t i, int type, float value) {
  if (type == kFloat32) {
    memcpy((char *)base + 4 * i, &value, 4);
    return;
  }
  uint16_t bits = floatToHalf(value, type);
  memcpy((char *)base + 2 * i, &bits, 2);
}

/* What rank `rank` of a clique whose calls are `calls` receives, into
 * `out` (recv, or a temporary when it may alias a send buffer). */
static void compute(const Call *calls, int ranks, int rank, void *out) {
  const Call *mine = &calls[rank];
  size_t size = typeSize(mine->type);
  if (mine->op == kAllGather) {
    for (int r = 0; r < ranks; ++r)
      memcpy((char *)out + (size_t)r * mine->count * size, calls[r].send,
             mine->count * size);
    return;
  }
  for (size_t i = 0; i < mine->count; ++i) {
    float acc = load(calls[0].send, i, mine->type);
    for (int r = 1; r < ranks; ++r)
      acc += load(calls[r].send, i, mine->type);
    store(out, i, mine->type, acc);
  }
}

static int agree(const Call *calls, int ranks) {
  for (int r = 1; r < ranks; ++r)
    if (calls[r].op != calls[0].op || calls[r].count != calls[0].count ||
        calls[r].type != calls[0].type)
      return 0;
  return 1;
}

static void release(Clique *clique) {
  /* Called with the mutex held; frees the clique when nothing uses it. */
  if (clique->refs == 0 && clique->inside == 0) {
    pthread_mutex_unlock(&clique->mutex);
    pthread_mutex_destroy(&clique->mutex);
    pthread_cond_destroy(&clique->changed);
    free(clique);
    return;
  }
  pthread_mutex_unlock(&clique->mutex);
}

/* A blocking collective of one rank (outside a group). */
static int collective(struct ncclComm *comm, Call call) {
  Clique *clique = comm->clique;
  int rank = comm->rank;
  count(call.op);
  countWindows(comm, call, clique->ranks);
  size_t size = typeSize(call.type);
  if (!size)
    return kInvalidArgument;
  size_t outBytes =
      call.count * size * (call.op == kAllGather ? (size_t)clique->ranks : 1);
  void *temp = malloc(outBytes ? outBytes : 1);
  if (!temp)
    return kSystemError;
  pthread_mutex_lock(&clique->mutex);
  if (clique->aborted) {
    pthread_mutex_unlock(&clique->mutex);
    free(temp);
    return kInvalidUsage;
  }
  ++clique->inside;
  clique->calls[rank] = call;
  unsigned long mine = clique->generation;
  if (++clique->arrived == clique->ranks) {
    clique->arrived = 0;
    ++clique->generation;
    clique->readers = clique->ranks;
    clique->failed = !agree(clique->calls, clique->ranks);
    pthread_cond_broadcast(&clique->changed);
  } else {
    while (clique->generation == mine && !clique->aborted)
      pthread_cond_wait(&clique->changed, &clique->mutex);
  }
  int result = kSuccess;
  if (clique->generation == mine) {
    result = kRemoteError; /* aborted before every rank came */
  } else {
    int failed = clique->failed;
    pthread_mutex_unlock(&clique->mutex);
    if (!failed)
      compute(clique->calls, clique->ranks, rank, temp);
    pthread_mutex_lock(&clique->mutex);
    if (--clique->readers == 0)
      pthread_cond_broadcast(&clique->changed);
    while (clique->readers != 0)
      pthread_cond_wait(&clique->changed, &clique->mutex);
    if (failed)
      result = kInvalidUsage;
    else if (clique->aborted)
      result = kRemoteError;
    else
      memcpy(call.recv, temp, outBytes);
  }
  --clique->inside;
  release(clique);
  free(temp);
  return result;
}

/*===--- Groups (one thread issuing for every rank) -----------------------===*/

enum { kMaxDeferred = 256 };
static __thread int groupDepth;
static __thread int deferredCount;
static __thread struct {
  struct ncclComm *comm;
  Call call;
} deferred[kMaxDeferred];

static int defer(struct ncclComm *comm, Call call) {
  count(call.op);
  countWindows(comm, call, comm->clique->ranks);
  if (deferredCount == kMaxDeferred || !typeSize(call.type))
    return kInvalidArgument;
  deferred[deferredCount].comm = comm;
  deferred[deferredCount].call = call;
  ++deferredCount;
  return kSuccess;
}

/* Runs the deferred calls: consecutive runs of one call per rank of a
 * clique, in any rank order. */
static int runDeferred(void) {
  int result = kSuccess;
  for (int begin = 0; begin < deferredCount && result == kSuccess;) {
    Clique *clique = deferred[begin].comm->clique;
    int ranks = clique->ranks;
    if (begin + ranks > deferredCount)
      return kInvalidUsage;
    Call calls[kMaxRanks];
    int seen[kMaxRanks] = {0};
    for (int i = begin; i < begin + ranks; ++i) {
      struct ncclComm *comm = deferred[i].comm;
      if (comm->clique != clique || seen[comm->rank])
        return kInvalidUsage;
      seen[comm->rank] = 1;
      calls[comm->rank] = deferred[i].call;
    }
    if (!agree(calls, ranks) || clique->aborted)
      return kInvalidUsage;
    /* Every rank's result first: a send may be another call's recv. */
    void *temps[kMaxRanks] = {0};
    size_t bytes[kMaxRanks];
    for (int r = 0; r < ranks && result == kSuccess; ++r) {
      bytes[r] = calls[r].count * typeSize(calls[r].type) *
                 (calls[r].op == kAllGather ? (size_t)ranks : 1);
      temps[r] = malloc(bytes[r] ? bytes[r] : 1);
      if (!temps[r])
        result = kSystemError;
      else
        compute(calls, ranks, r, temps[r]);
    }
    for (int r = 0; r < ranks; ++r) {
      if (result == kSuccess)
        memcpy(calls[r].recv, temps[r], bytes[r]);
      free(temps[r]);
    }
    begin += ranks;
  }
  return result;
}

/*===--- Collectives in graphs --------------------------------------------===*/

/* A captured call's values: the communicator, then the Call's fields. */
enum { kComm, kOp, kSend, kRecv, kCount, kType, kCallValues };

typedef int (*CaptureHostFn)(void *stream, void (*run)(const uint64_t *),
                             void (*release)(const uint64_t *),
                             const uint64_t *values, int count);

/* Entry point `name` of the driver the runtime loaded ($FDC_CUDA_DRIVER),
 * as NCCL's memory comes from the driver; NULL without one. */
static void *driverFunction(const char *name) {
  const char *driver = getenv("FDC_CUDA_DRIVER");
  void *handle = dlopen(driver && *driver ? driver : "libcuda.so.1",
                        RTLD_NOW | RTLD_NOLOAD);
  if (!handle)
    return NULL;
  void *fn = dlsym(handle, name);
  dlclose(handle);
  return fn;
}

/* fdc_fake_cuda_capture_host of the fake driver the runtime loaded; NULL
 * for another driver. */
static CaptureHostFn captureHost(void) {
  return (CaptureHostFn)driverFunction("fdc_fake_cuda_capture_host");
}

static void runCaptured(const uint64_t *v) {
  Call call = {(Op)v[kOp], (const void *)(uintptr_t)v[kSend],
               (void *)(uintptr_t)v[kRecv], (size_t)v[kCount], (int)v[kType]};
  /* As on a GPU, a replayed collective has no caller to fail: an aborted
   * clique's call returns at once. */
  (void)collective((struct ncclComm *)(uintptr_t)v[kComm], call);
}

static void releaseCaptured(const uint64_t *v) {
  struct ncclComm *comm = (struct ncclComm *)(uintptr_t)v[kComm];
  Clique *clique = comm->clique;
  pthread_mutex_lock(&clique->mutex);
  --comm->graphRefs;
  pthread_cond_broadcast(&clique->changed);
  pthread_mutex_unlock(&clique->mutex);
}

/* Records `call` into `stream`'s capture: 1 if it did, 0 if the stream does
 * not capture, -1 on failure. */
static int capture(struct ncclComm *comm, Call call, void *stream) {
  CaptureHostFn fn = captureHost();
  if (!fn)
    return 0;
  uint64_t v[kCallValues] = {
      (uint64_t)(uintptr_t)comm,      (uint64_t)call.op,
      (uint64_t)(uintptr_t)call.send, (uint64_t)(uintptr_t)call.recv,
      (uint64_t)call.count,           (uint64_t)call.type};
  /* Counted first: the release may come before this returns. */
  pthread_mutex_lock(&comm->clique->mutex);
  ++comm->graphRefs;
  pthread_mutex_unlock(&comm->clique->mutex);
  int recorded = fn(stream, runCaptured, releaseCaptured, v, kCallValues);
  if (recorded != 1) {
    pthread_mutex_lock(&comm->clique->mutex);
    --comm->graphRefs;
    pthread_mutex_unlock(&comm->clique->mutex);
    return recorded;
  }
  __atomic_fetch_add(&stats.captured, 1, __ATOMIC_RELAXED);
  return 1;
}

/* A call outside a group: captured, or run now. */
static int call(struct ncclComm *comm, Call c, void *stream) {
  if (!typeSize(c.type))
    return kInvalidArgument;
  int captured = capture(comm, c, stream);
  if (captured < 0)
    return kSystemError;
  return captured ? kSuccess : collective(comm, c);
}

/*===--- The exported API -------------------------------------------------===*/

EXPORT int ncclGetVersion(int *version) {
  *version = 22809;
  return kSuccess;
}

EXPORT const char *ncclGetErrorString(int result) {
  switch (result) {
  case kSuccess:
    return "no error";
  case kSystemError:
    return "unhandled system error (fake)";
  case kInvalidArgument:
    return "invalid argument (fake)";
  case kInvalidUsage:
    return "invalid usage (fake)";
  case kRemoteError:
    return "remote process exited or there was a network error (fake)";
  default:
    return "unknown result code";
  }
}

EXPORT const char *ncclGetLastError(struct ncclComm *comm) {
  (void)comm;
  return "";
}

EXPORT int ncclCommInitAll(struct ncclComm **comms, int count,
                           const int *devices) {
  if (envLong("FDC_FAKE_NCCL_INIT_FAIL"))
    return kSystemError;
  if (count < 1 || count > kMaxRanks)
    return kInvalidArgument;
  for (int i = 0; i < count; ++i)
    for (int j = 0; j < i; ++j)
      if (devices && devices[i] == devices[j])
        return kInvalidUsage;
  Clique *clique = (Clique *)calloc(1, sizeof(Clique));
  if (!clique)
    return kSystemError;
  pthread_mutex_init(&clique->mutex, NULL);
  pthread_cond_init(&clique->changed, NULL);
  clique->ranks = count;
  clique->refs = count;
  for (int i = 0; i < count; ++i) {
    comms[i] = (struct ncclComm *)calloc(1, sizeof(struct ncclComm));
    comms[i]->clique = clique;
    comms[i]->rank = i;
  }
  return kSuccess;
}

EXPORT int ncclGroupStart(void) {
  ++groupDepth;
  return kSuccess;
}

EXPORT int ncclGroupEnd(void) {
  if (groupDepth == 0)
    return kInvalidUsage;
  if (--groupDepth > 0)
    return kSuccess;
  int result = runDeferred();
  deferredCount = 0;
  return result;
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int type,
                         int op, struct ncclComm *comm, void *stream) {
  if (op != 0)
    return kInvalidArgument;
  Call c = {kAllReduce, send, recv, count, type};
  return groupDepth ? defer(comm, c) : call(comm, c, stream);
}

EXPORT int ncclAllGather(const void *send, void *recv, size_t count, int type,
                         struct ncclComm *comm, void *stream) {
  Call c = {kAllGather, send, recv, count, type};
  return groupDepth ? defer(comm, c) : call(comm, c, stream);
}

EXPORT int ncclCommGetAsyncError(struct ncclComm *comm, int *error) {
  (void)comm;
  *error = envLong("FDC_FAKE_NCCL_ASYNC_ERROR") ? kRemoteError : kSuccess;
  return kSuccess;
}

static int drop(struct ncclComm *comm, int abort) {
  dropWindows(comm);
  Clique *clique = comm->clique;
  pthread_mutex_lock(&clique->mutex);
  if (abort) {
    clique->aborted = 1;
    pthread_cond_broadcast(&clique->changed);
  }
  /* Then, as NCCL does, wait for the graphs that hold its collectives. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  int waited = 0;
  while (comm->graphRefs > 0 && waited != ETIMEDOUT)
    waited =
        pthread_cond_timedwait(&clique->changed, &clique->mutex, &deadline);
  int orphaned = comm->graphRefs > 0;
  if (orphaned)
    __atomic_fetch_add(&stats.destroyedWithLiveGraphs, 1, __ATOMIC_RELAXED);
  /* An aborted communicator may still be inside a call on another thread
   * (it is only woken here): it is not freed. An orphaned one, which a live
   * graph still points at, keeps its clique too. */
  if (!orphaned)
    --clique->refs;
  if (!abort && !orphaned)
    free(comm);
  release(clique);
  return kSuccess;
}

EXPORT int ncclMemAlloc(void **pointer, size_t bytes) {
  int (*alloc)(uint64_t *, size_t) =
      (int (*)(uint64_t *, size_t))driverFunction("cuMemAlloc_v2");
  uint64_t address = 0;
  if (!pointer || !alloc || alloc(&address, bytes ? bytes : 1) != 0)
    return kSystemError;
  *pointer = (void *)(uintptr_t)address;
  __atomic_fetch_add(&stats.memAllocs, 1, __ATOMIC_RELAXED);
  return kSuccess;
}

EXPORT int ncclMemFree(void *pointer) {
  int (*release)(uint64_t) = (int (*)(uint64_t))driverFunction("cuMemFree_v2");
  if (!release || release((uint64_t)(uintptr_t)pointer) != 0)
    return kInvalidArgument;
  __atomic_fetch_add(&stats.memFrees, 1, __ATOMIC_RELAXED);
  return kSuccess;
}

EXPORT int ncclCommWindowRegister(struct ncclComm *comm, void *buffer,
                                  size_t bytes, struct ncclWindow **window,
                                  int flags) {
  (void)flags;
  if (envLong("FDC_FAKE_NCCL_WINDOW_FAIL"))
    return kSystemError;
  if (!comm || !buffer || !window)
    return kInvalidArgument;
  struct ncclWindow *created =
      (struct ncclWindow *)calloc(1, sizeof(struct ncclWindow));
  if (!created)
    return kSystemError;
  created->comm = comm;
  created->begin = (const char *)buffer;
  created->bytes = bytes;
  int slot = -1;
  pthread_mutex_lock(&windowsMutex);
  for (int i = 0; i < kMaxWindows && slot < 0; ++i)
    if (!windows[i])
      slot = i;
  if (slot >= 0)
    windows[slot] = created;
  pthread_mutex_unlock(&windowsMutex);
  if (slot < 0) {
    free(created);
    return kSystemError;
  }
  *window = created;
  __atomic_fetch_add(&stats.windowsRegistered, 1, __ATOMIC_RELAXED);
  return kSuccess;
}

EXPORT int ncclCommWindowDeregister(struct ncclComm *comm,
                                    struct ncclWindow *window) {
  int found = 0;
  pthread_mutex_lock(&windowsMutex);
  for (int i = 0; i < kMaxWindows && !found; ++i)
    if (windows[i] == window && window && window->comm == comm) {
      windows[i] = NULL;
      found = 1;
    }
  pthread_mutex_unlock(&windowsMutex);
  if (!found)
    return kInvalidArgument;
  free(window);
  __atomic_fetch_add(&stats.windowsDeregistered, 1, __ATOMIC_RELAXED);
  return kSuccess;
}

EXPORT int ncclCommDestroy(struct ncclComm *comm) { return drop(comm, 0); }

EXPORT int ncclCommAbort(struct ncclComm *comm) { return drop(comm, 1); }
