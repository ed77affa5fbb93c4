/*===- fdc_model_abi.h - Model library ABI, version 3 -------------*- C -*-===*\
|*                                                                            *|
|* The C-level contract between a model library (`fdc compile ... -o m.so`)   *|
|* and the runtime; docs/model-library.md is the reference. A model library   *|
|* exports:                                                                   *|
|*   const uint32_t fdc_abi_version;   FDC_MODEL_ABI_VERSION                  *|
|*   const char fdc_target[];          "host", "cuda:sm_90[,sm_80...]" or     *|
|*                                     "rocm:gfx90a[,gfx942,...]"             *|
|*   const char fdc_manifest[];        JSON: config, weights, kv_cache, ...   *|
|*   const uint64_t fdc_manifest_hash; fdc_manifest_hash_of(the manifest)     *|
|*   void fdc_model_step(const FdcStepArgs *args);                            *|
|* and, for a tuning library (fdc compile --tuning-candidates), optionally:   *|
|*   void fdc_tune_launch(const FdcTuneArgs *args);                           *|
|* and, for a cuda target, the kernel images:                                 *|
|*   const char fdc_ptx[];             PTX of every kernel (JIT fallback)     *|
|*   const uint8_t fdc_cubin_sm_XX[];  cubin per listed arch, with            *|
|*   const uint64_t fdc_cubin_sm_XX_size;                                     *|
|* or, for a rocm target, one code object per listed arch (no fallback):      *|
|*   const uint8_t fdc_hsaco_gfxXXX[]; AMDGPU code object (ELF), with         *|
|*   const uint64_t fdc_hsaco_gfxXXX_size;                                    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FDC_MODEL_ABI_H
#define FDC_MODEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added fdc_manifest_hash; version 3 FdcStepArgs::collective. */
#define FDC_MODEL_ABI_VERSION 3

/* The 64-bit FNV-1a hash of the `length` bytes at `bytes`. A library's
 * fdc_manifest_hash is this hash of its manifest (without the NUL); the
 * runtime refuses a library whose manifest does not match it (the manifest
 * was edited after compilation, while the code still has the compiled
 * shapes). */
static inline uint64_t fdc_manifest_hash_of(const char *bytes,
                                            uint64_t length) {
  uint64_t hash = UINT64_C(14695981039346656037);
  for (uint64_t i = 0; i < length; ++i) {
    hash ^= (uint8_t)bytes[i];
    hash *= UINT64_C(1099511628211);
  }
  return hash;
}

/* How the step of a GPU library launches its kernels (the runtime's). */
typedef struct FdcDeviceApi {
  void *context; /* the runtime's, passed back to every call */
  /* Launches kernel `name` (a NUL-terminated name from the manifest's
   * "kernels") on the step's stream; `params` as for cuLaunchKernel and
   * hipModuleLaunchKernel (every kernel parameter is 8 bytes: a device
   * pointer or an int64_t). Returns 0 on success; otherwise the runtime has
   * recorded the error with the kernel's name, and the step should return
   * without launching more. */
  int (*launch)(void *context, const char *name, uint32_t gridX, uint32_t gridY,
                uint32_t gridZ, uint32_t blockX, uint32_t blockY,
                uint32_t blockZ, uint32_t sharedBytes, void **params);
} FdcDeviceApi;

/* Element types of the collectives' buffers. */
#define FDC_DTYPE_F32 0
#define FDC_DTYPE_F16 1
#define FDC_DTYPE_BF16 2

/* How the step of a tensor-parallel library (manifest "tensor_parallel" =
 * ranks > 1, `fdc compile --tensor-parallel N`) combines its values with the
 * other ranks of its group (the runtime's: NCCL on CUDA devices, an
 * in-process exchange for host ranks). Every rank of the group calls the same
 * collectives in the same order with the same sizes. Buffers are device
 * pointers for a GPU library, host pointers for a host library. Each call
 * returns 0 on success; otherwise the runtime has recorded the error (a rank
 * failed, or the group was aborted): a GPU step should return without
 * launching more (a host step may run on; its later calls fail at once). */
typedef struct FdcCollectiveApi {
  void *context; /* the runtime's, passed back to every call */
  int64_t rank;  /* this rank, in [0, ranks) */
  int64_t ranks; /* ranks in the group */
  /* output[i] = the sum over the ranks of their input[i], i < count, the
   * same bytes on every rank; `output` may be `input`. */
  int (*all_reduce_sum)(void *context, const void *input, void *output,
                        int64_t count, int64_t dtype);
  /* input is [rows][columns], output [rows][ranks * columns]:
   * output[i][r * columns + j] = rank r's input[i][j]. `workspace` holds
   * ranks * rows * columns elements the call may use (GPU: device scratch);
   * none of the three overlap. */
  int (*all_gather_columns)(void *context, const void *input, void *output,
                            void *workspace, int64_t rows, int64_t columns,
                            int64_t dtype);
} FdcCollectiveApi;

/* Every field is 8 bytes; field i is at byte offset 8*i. For a GPU library
 * every pointer but `device` and `collective` is a device pointer; a host
 * library ignores fields 14 and 15. */
typedef struct FdcStepArgs {
  int64_t batch;            /* M >= 1: sequences in this step */
  int64_t num_slots;        /* KV-cache slots the cache buffer holds */
  int64_t max_context;      /* tokens per slot the cache buffer holds */
  const void *weights;      /* weight arena, laid out per the manifest */
  void *kv_cache;           /* [slot][layer][k|v][kv_head][position] rows */
  const int32_t *tokens;    /* [M] */
  const int32_t *positions; /* [M] 0 <= positions[i] < max_context */
  const int32_t *slots;     /* [M] 0 <= slots[i] < num_slots, distinct */
  const float *temperature; /* [M] 0 = greedy (argmax) */
  const int32_t *top_k;     /* [M] 0 = off */
  const float *top_p;       /* [M] 1 = off */
  const float *uniform;     /* [M] uniform draw in [0, 1) */
  float *logits;            /* [M][vocab_size] out */
  int32_t *next_tokens;     /* [M] out */
  /* GPU libraries only: */
  void *scratch;              /* [14] device scratch, manifest "scratch" */
  const FdcDeviceApi *device; /* [15] host pointer: how the step launches */
  /* Tensor-parallel libraries only (NULL otherwise): */
  const FdcCollectiveApi *collective; /* [16] host pointer: this rank's */
} FdcStepArgs;

typedef void (*FdcModelStepFn)(const FdcStepArgs *args);

/* Tuning libraries (`fdc compile --tuning-candidates`, GPU targets) also
 * export
 *   void fdc_tune_launch(const FdcTuneArgs *args);
 * and their manifest has a "tuning" object listing, per distinct
 * decode.linear signature, the candidate kernels fdc tune times
 * (docs/model-library.md). The call launches candidate `candidate` of
 * signature `signature` (indices into the manifest's lists) for `batch`
 * rows, through `device` like the step, without synchronizing; indices out
 * of range launch nothing. A library without the symbol is no tuning
 * library; the ABI version is unchanged (the symbol and the manifest
 * object are optional). Every field is 8 bytes; every pointer but `device`
 * is a device pointer. `workspace` is scratch the candidates may use (split-K
 * partial sums): at least `batch` times the signature's manifest
 * "workspace_bytes_per_row" bytes, 256-byte aligned. */
#define FDC_TUNE_ABI_VERSION 2

typedef struct FdcTuneArgs {
  int64_t signature;          /* index into manifest tuning.signatures */
  int64_t candidate;          /* index into that signature's candidates */
  int64_t batch;              /* M >= 1 */
  const void *input;          /* [M][K] of input_dtype */
  const void *weight;         /* [N][K] of dtype */
  const void *bias;           /* [N], if the signature has a bias */
  const void *residual;       /* [M][out_features], if it has a residual */
  void *out;                  /* [M][out_features] of out_dtype */
  void *workspace;            /* batch * workspace_bytes_per_row bytes */
  const FdcDeviceApi *device; /* host pointer: how the call launches */
} FdcTuneArgs;

typedef void (*FdcTuneLaunchFn)(const FdcTuneArgs *args);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FDC_MODEL_ABI_H */
