/*===- TestModel.c - A trivial model library for the runtime's tests ------===*\
|*                                                                            *|
|* vocab 32, one layer, one KV head of head_dim 1 in f32 (row_bytes 4).       *|
|* Weights: "w" f32 [2, 4] = concat(a, b) at 0 and "n" bf16 [4] at 256.       *|
|* The step stores each token in K and w[0] in V at [slot][0][k|v][0][pos];   *|
|* next = (token + 1) % 32 when greedy, else (token + 1 + floor(u * 32)) % 32 *|
|* (top_k == 999 makes it return the invalid token 37). Logits: one-hot of    *|
|* next, plus w[0] at index 30 and the sum of the slot's K rows 0..pos at 31, *|
|* so tests can see the weights and whether slots and positions line up.      *|
|*                                                                            *|
|* TEST_ABI_VERSION, TEST_TARGET, TEST_NO_STEP and TEST_BAD_HASH (a           *|
|* fdc_manifest_hash that does not match) build the broken variants.          *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "fdc_model_abi.h"

#ifndef TEST_ABI_VERSION
#define TEST_ABI_VERSION FDC_MODEL_ABI_VERSION
#endif
#ifndef TEST_TARGET
#define TEST_TARGET "host"
#endif

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define VOCAB 32

#define EXPORT __attribute__((visibility("default")))

EXPORT const uint32_t fdc_abi_version = TEST_ABI_VERSION;
EXPORT const char fdc_target[] = TEST_TARGET;
EXPORT const char fdc_manifest[] = "{\"abi_version\": " STRINGIFY(
    TEST_ABI_VERSION) ", \"target\": \"" TEST_TARGET "\","
                      " \"model\": \"test_model\","
                      " \"config\": {\"vocab_size\": 32, "
                      "\"max_position_embeddings\": 64,"
                      "   \"architecture\": \"Test\", \"rms_norm_eps\": 1e-5, "
                      "\"tie\": false},"
                      " \"kv_cache\": {\"layers\": 1, \"kv_heads\": 1, "
                      "\"head_dim\": 1,"
                      "   \"dtype\": \"f32\", \"int4_groups\": 0, "
                      "\"row_bytes\": 4},"
                      " \"weights_bytes\": 512,"
                      " \"weights\": ["
                      "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": [2, "
                      "4],"
                      "   \"layout\": \"dense\", \"offset\": 0, \"bytes\": 32,"
                      "   \"sources\": [\"a\", \"b\"]},"
                      "  {\"name\": \"n\", \"dtype\": \"bf16\", \"shape\": [4],"
                      "   \"layout\": \"dense\", \"offset\": 256, \"bytes\": 8,"
                      "   \"sources\": [\"n\"]}],"
                      " \"kernels\": [{\"name\": \"step\", \"op\": "
                      "\"test.step\"}]}";

/* C has no constant expressions over a string: the hash is computed when
 * the library is loaded, before the runtime reads it. */
EXPORT uint64_t fdc_manifest_hash;
__attribute__((constructor)) static void computeManifestHash(void) {
  fdc_manifest_hash =
      fdc_manifest_hash_of(fdc_manifest, sizeof(fdc_manifest) - 1);
#ifdef TEST_BAD_HASH
  fdc_manifest_hash += 1;
#endif
}

#ifndef TEST_NO_STEP
EXPORT void fdc_model_step(const FdcStepArgs *args) {
  const float *w = (const float *)args->weights;
  float *cache = (float *)args->kv_cache;
  for (int64_t i = 0; i < args->batch; ++i) {
    int32_t slot = args->slots[i];
    int32_t pos = args->positions[i];
    int32_t token = args->tokens[i];
    /* [slot][layer 0][k|v][head 0][position], one float per row. */
    float *k = cache + ((int64_t)slot * 2 + 0) * args->max_context;
    float *v = cache + ((int64_t)slot * 2 + 1) * args->max_context;
    k[pos] = (float)token;
    v[pos] = w[0];
    float sum = 0;
    for (int32_t p = 0; p <= pos; ++p)
      sum += k[p];

    int32_t next = (token + 1) % VOCAB;
    if (args->temperature[i] > 0)
      next = (token + 1 + (int32_t)(args->uniform[i] * VOCAB)) % VOCAB;
    if (args->top_k[i] == 999)
      next = VOCAB + 5;
    float *row = args->logits + i * VOCAB;
    for (int v = 0; v < VOCAB; ++v)
      row[v] = v == next ? 1.0f : 0.0f;
    row[30] += w[0];
    row[31] += sum;
    args->next_tokens[i] = next;
  }
}
#endif
