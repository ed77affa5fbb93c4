/*===- FakeDevice.c - Device memory and kernels of the fake GPUs ----------===*\
|*                                                                            *|
|* See FakeDevice.h. The kernels are those of TestCudaKernels.ptx:            *|
|*   fdc_test_store_kv(kv, weights, tokens, positions, slots, scratch,        *|
|*                     max_context)                                           *|
|*   fdc_test_next_token(tokens, weights, scratch, temperature, top_k,        *|
|*                       uniform, logits, next_tokens, vocab)                 *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "FakeDevice.h"

#include <stdlib.h>
#include <string.h>

typedef struct Allocation {
  uint8_t *base;
  size_t size;
  struct Allocation *next;
} Allocation;

static Allocation *allocations;
static int faulted;

long fakeEnvLong(const char *name, long fallback) {
  const char *value = getenv(name);
  return value && *value ? strtol(value, NULL, 10) : fallback;
}

void *fakeAllocate(size_t bytes) {
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
  a->next = allocations;
  allocations = a;
  return base;
}

int fakeFree(void *base) {
  for (Allocation **a = &allocations; *a; a = &(*a)->next) {
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

int fakeInBounds(const void *p, size_t bytes) {
  const uint8_t *q = (const uint8_t *)p;
  for (Allocation *a = allocations; a; a = a->next)
    if (q >= a->base && q <= a->base + a->size &&
        bytes <= (size_t)(a->base + a->size - q))
      return 1;
  return 0;
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
