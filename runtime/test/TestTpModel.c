/*===- TestTpModel.c - A tensor-parallel model library for the tests -----===*\
|*                                                                            *|
|* "tensor_parallel": 2; vocab 32, one layer, one KV head per rank of         *|
|* head_dim 1 in f32. Weights (per rank):                                     *|
|*   "proj" f32 [4, 4]: rows [4r, 4r + 4) of the checkpoint's [8, 4] "proj"   *|
|*   "down" f32 [2, 4]: columns [4r, 4r + 4) of the checkpoint's [2, 8] "down"*|
|*   "bias" f32 [4]: replicated                                               *|
|* A row with token t: x[j] = (t + j) % 5 + bias[j]; the rank's h = proj x;   *|
|* all_gather_columns gives the full P x (8 values), all_reduce_sum the full  *|
|* D (P x) (2 values) from the rank's partial D_r h. Logits: [0, 8) the       *|
|* gathered values, [8, 10) the sums, 31 the sum of the slot's K rows         *|
|* 0..pos (K holds the tokens; V the rank's h[0]); next = (t + 1) % 32.       *|
|* Misbehaviour for the tests: rank 1 passes an invalid dtype instead of      *|
|* gathering when a token is 29, and picks (t + 2) % 32 when a token is 28.   *|
|* Without args->collective (or with one of another size) every next token   *|
|* is -1.                                                                     *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "fdc_model_abi.h"

#include <stdlib.h>
#include <string.h>

#define VOCAB 32
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

#define EXPORT __attribute__((visibility("default")))

EXPORT const uint32_t fdc_abi_version = FDC_MODEL_ABI_VERSION;
EXPORT const char fdc_target[] = "host";
#define ABI_VERSION_TEXT STRINGIFY(FDC_MODEL_ABI_VERSION)

EXPORT const char fdc_manifest[] =
    "{\"abi_version\": " ABI_VERSION_TEXT ", \"target\": \"host\","
    " \"model\": \"test_tp_model\", \"tensor_parallel\": 2,"
    " \"config\": {\"vocab_size\": 32, \"max_position_embeddings\": 64},"
    " \"kv_cache\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 1,"
    "   \"dtype\": \"f32\", \"int4_groups\": 0, \"row_bytes\": 4},"
    " \"weights_bytes\": 768,"
    " \"weights\": ["
    "  {\"name\": \"proj\", \"dtype\": \"f32\", \"shape\": [4, 4],"
    "   \"layout\": \"dense\", \"offset\": 0, \"bytes\": 64, \"slices\": ["
    "    [{\"source\": \"proj\", \"rows\": [0, 4], \"cols\": [0, 4]}],"
    "    [{\"source\": \"proj\", \"rows\": [4, 8], \"cols\": [0, 4]}]]},"
    "  {\"name\": \"down\", \"dtype\": \"f32\", \"shape\": [2, 4],"
    "   \"layout\": \"dense\", \"offset\": 256, \"bytes\": 32, \"slices\": ["
    "    [{\"source\": \"down\", \"rows\": [0, 2], \"cols\": [0, 4]}],"
    "    [{\"source\": \"down\", \"rows\": [0, 2], \"cols\": [4, 8]}]]},"
    "  {\"name\": \"bias\", \"dtype\": \"f32\", \"shape\": [4],"
    "   \"layout\": \"dense\", \"offset\": 512, \"bytes\": 16}],"
    " \"kernels\": []}";

EXPORT uint64_t fdc_manifest_hash;
__attribute__((constructor)) static void computeManifestHash(void) {
  fdc_manifest_hash =
      fdc_manifest_hash_of(fdc_manifest, sizeof(fdc_manifest) - 1);
}

EXPORT void fdc_model_step(const FdcStepArgs *args) {
  const FdcCollectiveApi *c = args->collective;
  int64_t batch = args->batch;
  if (!c || c->ranks != 2) {
    for (int64_t i = 0; i < batch; ++i)
      args->next_tokens[i] = -1;
    return;
  }
  const char *weights = (const char *)args->weights;
  const float *proj = (const float *)weights;
  const float *down = (const float *)(weights + 256);
  const float *bias = (const float *)(weights + 512);
  float *cache = (float *)args->kv_cache;

  /* [batch][4] h, [batch][8] gathered, [batch][2] sums, workspace. */
  float *h = (float *)calloc((size_t)batch * 16 + 16, sizeof(float));
  float *gathered = h + batch * 4;
  float *sums = gathered + batch * 8;
  float *workspace = sums + batch * 2;
  int misbehave = 0;
  for (int64_t i = 0; i < batch; ++i) {
    int32_t token = args->tokens[i];
    if (token == 29 && c->rank == 1)
      misbehave = 1;
    float x[4];
    for (int j = 0; j < 4; ++j)
      x[j] = (float)((token + j) % 5) + bias[j];
    for (int o = 0; o < 4; ++o) {
      float acc = 0;
      for (int j = 0; j < 4; ++j)
        acc += proj[o * 4 + j] * x[j];
      h[i * 4 + o] = acc;
    }
    float *k = cache + ((int64_t)args->slots[i] * 2 + 0) * args->max_context;
    float *v = cache + ((int64_t)args->slots[i] * 2 + 1) * args->max_context;
    k[args->positions[i]] = (float)token;
    v[args->positions[i]] = h[i * 4];
  }
  if (misbehave) {
    c->all_reduce_sum(c->context, h, h, batch * 4, 99);
    free(h);
    return;
  }
  if (c->all_gather_columns(c->context, h, gathered, workspace, batch, 4,
                            FDC_DTYPE_F32)) {
    free(h);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    for (int o = 0; o < 2; ++o) {
      float acc = 0;
      for (int j = 0; j < 4; ++j)
        acc += down[o * 4 + j] * h[i * 4 + j];
      sums[i * 2 + o] = acc;
    }
  if (c->all_reduce_sum(c->context, sums, sums, batch * 2, FDC_DTYPE_F32)) {
    free(h);
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    int32_t token = args->tokens[i];
    float *row = args->logits + i * VOCAB;
    memset(row, 0, VOCAB * sizeof(float));
    for (int o = 0; o < 8; ++o)
      row[o] = gathered[i * 8 + o];
    row[8] = sums[i * 2];
    row[9] = sums[i * 2 + 1];
    const float *k =
        cache + ((int64_t)args->slots[i] * 2 + 0) * args->max_context;
    float sum = 0;
    for (int32_t p = 0; p <= args->positions[i]; ++p)
      sum += k[p];
    row[31] = sum;
    int32_t next = (token + 1) % VOCAB;
    if (token == 28 && c->rank == 1)
      next = (token + 2) % VOCAB;
    args->next_tokens[i] = next;
  }
  free(h);
}
