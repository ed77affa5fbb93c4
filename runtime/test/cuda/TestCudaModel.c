/*===- TestCudaModel.c - A trivial cuda:sm_90 model library for tests -----===*\
|*                                                                            *|
|* The GPU twin of ../TestModel.c: same manifest (vocab 32, one layer, one    *|
|* KV head of head_dim 1 in f32, weights "w" f32 [2, 4] and "n" bf16 [4]),    *|
|* same results, computed by the two kernels of TestCudaKernels.ptx that the  *|
|* host step launches through FdcDeviceApi:                                   *|
|*   greedy next = (token + 1) % 32, sampled (token + 1 + floor(u * 32)) % 32,*|
|*   top_k == 999 gives the invalid token 37; logits: one-hot of next, plus   *|
|*   w[0] at 30 and the sum of the slot's K rows 0..pos at 31.                *|
|* The sum goes through the scratch buffer (4 bytes per sequence).            *|
|*                                                                            *|
|* Variants: TEST_TARGET (default "cuda:sm_90"), TEST_WITH_PTX (fdc_ptx),     *|
|* TEST_WITH_CUBIN (fdc_cubin_sm_90, built by ptxas), TEST_EXTRA_KERNEL (the  *|
|* manifest lists a kernel the image lacks), TEST_DEPENDENT_LAUNCH (the       *|
|* manifest says "dependent_launch": for the fake driver only, whose kernels  *|
|* run one after another; the PTX's kernels do not wait).                     *|
|* $FDC_TEST_CUDA_STEP picks a misbehaving step (../fake/TestGpuStep.h).     *|
|*                                                                            *|
|* TEST_TENSOR_PARALLEL: a 2-rank library (vocab 64). Rank r's "w" is [2, 2]: *|
|* columns [2r, 2r + 2) of a and of b, stacked (w[0] = 0.5 on rank 0, 2 on    *|
|* rank 1). Each rank runs the step above for vocab 32 into scratch, gathers  *|
|* the ranks' [batch][32] logits into [batch][64] with all_gather_columns and *|
|* doubles them with all_reduce_sum: logits[i][32 r + j] = 2 * rank r's.      *|
|* $FDC_TEST_CUDA_STEP's misbehaviour is rank 1's only.                       *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#include "TestGpuStep.h"
#include "fdc_model_abi.h"

#include <stdlib.h>

#ifndef TEST_TARGET
#define TEST_TARGET "cuda:sm_90"
#endif

#ifdef TEST_EXTRA_KERNEL
#define EXTRA_KERNEL                                                           \
  ", {\"name\": \"fdc_test_absent\", \"op\": \"test.absent\"}"
#else
#define EXTRA_KERNEL ""
#endif

#ifdef TEST_DEPENDENT_LAUNCH
#define DEPENDENT_FIELD " \"dependent_launch\": true,"
#else
#define DEPENDENT_FIELD ""
#endif

#ifdef TEST_TENSOR_PARALLEL
#define VOCAB_TEXT "64"
#define TP_FIELD " \"tensor_parallel\": 2,"
#define W_SOURCES                                                              \
  "\"slices\": [[{\"source\": \"a\", \"rows\": [0, 1], \"cols\": [0, 2]},"     \
  "  {\"source\": \"b\", \"rows\": [0, 1], \"cols\": [0, 2]}],"                \
  " [{\"source\": \"a\", \"rows\": [0, 1], \"cols\": [2, 4]},"                 \
  "  {\"source\": \"b\", \"rows\": [0, 1], \"cols\": [2, 4]}]]"
#define W_SHAPE "[2, 2]"
#define W_BYTES "16"
/* 4 (the kernels' sums) + 128 (the rank's logits) + 256 (the gather's
 * workspace) per sequence; the fixed bytes cover the 256-byte alignment. */
#define SCRATCH "\"bytes_per_sequence\": 388, \"fixed_bytes\": 512"
#else
#define VOCAB_TEXT "32"
#define TP_FIELD ""
#define W_SOURCES "\"sources\": [\"a\", \"b\"]"
#define W_SHAPE "[2, 4]"
#define W_BYTES "32"
#define SCRATCH "\"bytes_per_sequence\": 4, \"fixed_bytes\": 0"
#endif

#define VOCAB 32
#define EXPORT __attribute__((visibility("default")))

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define ABI_VERSION_TEXT STRINGIFY(FDC_MODEL_ABI_VERSION)

EXPORT const uint32_t fdc_abi_version = FDC_MODEL_ABI_VERSION;
EXPORT const char fdc_target[] = TEST_TARGET;
EXPORT const char fdc_manifest[] =
    "{\"abi_version\": " ABI_VERSION_TEXT ", \"target\": \"" TEST_TARGET "\","
    " \"model\": \"test_cuda_model\"," TP_FIELD DEPENDENT_FIELD
    " \"config\": {\"vocab_size\": " VOCAB_TEXT
    ", \"max_position_embeddings\": 64},"
    " \"kv_cache\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 1,"
    "   \"dtype\": \"f32\", \"int4_groups\": 0, \"row_bytes\": 4},"
    " \"weights_bytes\": 512,"
    " \"weights\": ["
    "  {\"name\": \"w\", \"dtype\": \"f32\", \"shape\": " W_SHAPE ","
    "   \"layout\": \"dense\", \"offset\": 0, \"bytes\": " W_BYTES ","
    "   " W_SOURCES "},"
    "  {\"name\": \"n\", \"dtype\": \"bf16\", \"shape\": [4],"
    "   \"layout\": \"dense\", \"offset\": 256, \"bytes\": 8,"
    "   \"sources\": [\"n\"]}],"
    " \"scratch\": {" SCRATCH "},"
    " \"kernels\": [{\"name\": \"fdc_test_store_kv\", \"op\": \"test.kv\"},"
    "   {\"name\": \"fdc_test_next_token\", \"op\": \"test.next\"}" EXTRA_KERNEL
    "]}";

/* Computed at load time, before the runtime reads it (see ../TestModel.c). */
EXPORT uint64_t fdc_manifest_hash;
__attribute__((constructor)) static void computeManifestHash(void) {
  fdc_manifest_hash =
      fdc_manifest_hash_of(fdc_manifest, sizeof(fdc_manifest) - 1);
}

#ifdef TEST_WITH_PTX
EXPORT const char fdc_ptx[] = {
#include "TestCudaKernels.ptx.inc"
};
#endif

#ifdef TEST_WITH_CUBIN
EXPORT const uint8_t fdc_cubin_sm_90[] = {
#include "TestCudaKernels.sm_90.cubin.inc"
};
EXPORT const uint64_t fdc_cubin_sm_90_size = sizeof(fdc_cubin_sm_90);
#endif

#ifdef TEST_TENSOR_PARALLEL
EXPORT void fdc_model_step(const FdcStepArgs *a) {
  const FdcCollectiveApi *c = a->collective;
  if (!c || c->ranks != 2)
    return; /* The outputs stay as they were (poisoned in the tests). */
  int64_t batch = a->batch;
  char *scratch = (char *)a->scratch;
  float *partial = (float *)(scratch + ((batch * 4 + 255) / 256) * 256);
  float *workspace = partial + batch * VOCAB;
  FdcStepArgs local = *a;
  local.logits = partial;
  if (testGpuStep(&local, c->rank == 1 ? getenv("FDC_TEST_CUDA_STEP") : NULL,
                  VOCAB))
    return;
  if (c->all_gather_columns(c->context, partial, a->logits, workspace, batch,
                            VOCAB, FDC_DTYPE_F32))
    return;
  c->all_reduce_sum(c->context, a->logits, a->logits, batch * 2 * VOCAB,
                    FDC_DTYPE_F32);
}
#else
EXPORT void fdc_model_step(const FdcStepArgs *a) {
  testGpuStep(a, getenv("FDC_TEST_CUDA_STEP"), VOCAB);
}
#endif
