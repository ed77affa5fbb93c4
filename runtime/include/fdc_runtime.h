/*===- fdc_runtime.h - C API of the fdc runtime -------------------*- C -*-===*\
|*                                                                            *|
|* Loads a compiled model library (`fdc compile ... -o model.so`) with its    *|
|* weights from a safetensors checkpoint and generates tokens with it.        *|
|*                                                                            *|
|* Conventions: functions that can fail return 0 on success and non-zero on   *|
|* failure, or NULL for a handle; fdc_last_error() then describes the latest  *|
|* failure of the calling thread.                                             *|
|*                                                                            *|
|* Threads: fdc_model_load, fdc_sampling_params_default, fdc_last_error (per  *|
|* thread) and fdc_string_free may be called from any thread at any time, and *|
|* different models may be used from different threads at once. One model     *|
|* runs one generate call at a time: fdc_generate or fdc_generate_batch on a  *|
|* model that is already generating (from a token callback, or another        *|
|* thread) fails with "the model is already generating ..." and changes       *|
|* nothing. The fdc_model_* queries may be called at any time while the model *|
|* is alive. fdc_model_free called from a token callback of that model does   *|
|* nothing (fdc_last_error says so); calling it from another thread while a   *|
|* call on that model runs, or using a model after it was freed, is undefined *|
|* behaviour: the caller must serialise freeing with every other use.         *|
|*                                                                            *|
|* Token callbacks run on a thread of the runtime (an engine's loop thread),  *|
|* fdc_generate_batch's too, while its caller waits: a callback must not wait *|
|* for the calling thread (e.g. for a lock it holds), or the call never       *|
|* returns; fdc_last_error() in a callback is that thread's.                  *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef FDC_RUNTIME_H
#define FDC_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this C API (not of the model-library ABI). Functions are
 * only added within a version (fdc_model_options,
 * fdc_model_load_with_options, fdc_model_max_step_rows, the fdc_engine
 * functions, FDC_FINISH_CANCELLED and fdc_model_set_callback_logits came
 * later in version 1); a change to
 * an existing declaration would make it 2. */
#define FDC_RUNTIME_API_VERSION 1

/* A loaded model: library, weights and KV cache. Opaque. */
typedef struct fdc_model fdc_model;

/* Sampling parameters of one request. */
typedef struct fdc_sampling_params {
  float temperature; /* 0 = greedy (argmax) */
  int32_t top_k;     /* 0 = off */
  float top_p;       /* 1 = off; must be in (0, 1] */
  int32_t eos_id;    /* stop after generating this token; < 0 = none */
  uint64_t seed;     /* seeds the request's own uniform draws */
} fdc_sampling_params;

/* How a request ended. */
typedef enum fdc_finish_reason {
  FDC_FINISH_NONE = 0,         /* not run (the request was invalid) */
  FDC_FINISH_LENGTH = 1,       /* generated max_new_tokens */
  FDC_FINISH_EOS = 2,          /* generated eos_id */
  FDC_FINISH_CONTEXT_FULL = 3, /* the sequence filled max_context */
  FDC_FINISH_REJECTED = 4,     /* refused (see the request's error) */
  FDC_FINISH_ERROR = 5,        /* invalid token from the step, or it failed */
  FDC_FINISH_CANCELLED = 6     /* cancelled (fdc_engine_cancel) */
} fdc_finish_reason;

/* Called once per generated token: `step` counts generated tokens from 0,
 * `logits` holds vocab_size floats (NULL after
 * fdc_model_set_callback_logits(model, 0)) and is valid only during the
 * call. It runs on the engine's loop thread, not the thread that made the
 * call (see Threads above). */
typedef void (*fdc_token_callback)(void *user_data, int64_t step, int32_t token,
                                   const float *logits, int64_t vocab_size);

/* One request of fdc_generate_batch. Inputs first, then outputs. */
typedef struct fdc_request {
  const int32_t *prompt;       /* [prompt_len] token ids */
  int64_t prompt_len;          /* >= 1 */
  int64_t max_new_tokens;      /* >= 0; capacity of out_ids */
  fdc_sampling_params params;  /* as from fdc_sampling_params_default() */
  int32_t *out_ids;            /* [max_new_tokens] generated ids */
  float *out_logits;           /* NULL, or [max_new_tokens][vocab_size] */
  fdc_token_callback callback; /* NULL, or called per generated token */
  void *user_data;             /* passed to callback */
  int64_t out_len;             /* out: tokens written to out_ids */
  int32_t finish_reason;       /* out: an fdc_finish_reason */
  int32_t status;              /* out: 0 = ok, non-zero = see error */
  char error[256];             /* out: NUL-terminated message if status != 0 */
} fdc_request;

/* Greedy decoding, no EOS, seed 0. */
fdc_sampling_params fdc_sampling_params_default(void);

/* Loads `library_path` (a model library of ABI version 3 for a target this
 * runtime runs: "host", "cuda:sm_XX" with the CUDA backend, on GPU
 * $FDC_CUDA_DEVICE or 0, or "rocm:gfxXXX" with the HIP backend, on GPU
 * $FDC_HIP_DEVICE or 0) and its weights from `weights_path` (a checkpoint
 * directory or one .safetensors file), and allocates a KV cache of
 * `num_slots` slots of `max_context` tokens (0 = the model's
 * max_position_embeddings, at most 2048), in GPU memory for a GPU library.
 * A tensor-parallel library ("tensor_parallel": N in its manifest) loads as
 * N ranks: host threads, or GPUs d..d+N-1 (d as above) joined by NCCL.
 * num_slots must be in [1, 2^31) and max_context in [0, 2^31); a KV cache
 * whose size overflows or cannot be allocated is refused by name.
 * Returns NULL on failure; then, if `error_out` is not NULL, *error_out
 * receives a message to release with fdc_string_free. */
fdc_model *fdc_model_load(const char *library_path, const char *weights_path,
                          int64_t max_context, int64_t num_slots,
                          char **error_out);

/* What fdc_model_load_with_options loads. */
typedef struct fdc_model_options {
  int64_t max_context; /* as fdc_model_load's; 0 = the model's default */
  int64_t num_slots;   /* sequences at once, in [1, 2^31) */
  /* Rows one step may run: one per live sequence plus prompt chunks (a
   * prompt is read several tokens per step, at consecutive positions of its
   * slot: chunked prefill). 0 = num_slots; else in [num_slots, 2^20]. A GPU
   * library sizes its step buffers for it. */
  int64_t max_step_rows;
} fdc_model_options;

/* max_context 0, num_slots 1, max_step_rows 0. */
fdc_model_options fdc_model_options_default(void);

/* fdc_model_load with every option; NULL options are the defaults. */
fdc_model *fdc_model_load_with_options(const char *library_path,
                                       const char *weights_path,
                                       const fdc_model_options *options,
                                       char **error_out);

/* fdc_model_load_with_options that copies the library's int4 and tiled_csl
 * weights from the packed-weights file at `packed_weights_path` (written by
 * `fdc pack` for this library) instead of packing them from the checkpoint,
 * which then need not hold their sources. The file must hold exactly those
 * weights, with the library's shapes, dtypes, tiles, group sizes and layout
 * versions; a mismatch or a malformed weight is refused by name. NULL
 * packed_weights_path packs them from the checkpoint, as
 * fdc_model_load_with_options does. */
fdc_model *fdc_model_load_packed(const char *library_path,
                                 const char *weights_path,
                                 const char *packed_weights_path,
                                 const fdc_model_options *options,
                                 char **error_out);

/* Releases a model; NULL is ignored. Does nothing when called from a token
 * callback of this model (see Threads above). */
void fdc_model_free(fdc_model *model);

/* Whether token callbacks of this model's requests (fdc_generate,
 * fdc_generate_batch, and fdc_engine_submit after this call) get the step's
 * logits: 1, the default, or 0, when they get `logits` = NULL unless the
 * request also has out_logits. A GPU step then copies back only the sampled
 * ids of such requests, not vocab_size floats per row (what a caller that
 * streams ids saves every step). Returns 0, or 1 for a NULL model. */
int fdc_model_set_callback_logits(fdc_model *model, int enabled);

/* Properties of a loaded model. */
int64_t fdc_model_vocab_size(const fdc_model *model);
int64_t fdc_model_max_context(const fdc_model *model);
int64_t fdc_model_num_slots(const fdc_model *model);
int64_t fdc_model_max_step_rows(const fdc_model *model);
/* The manifest JSON of the model library; owned by the model. */
const char *fdc_model_manifest(const fdc_model *model);

/* Generates up to `max_new_tokens` tokens after `prompt` (greedy when
 * `params` is NULL). Writes them to `out_ids` ([max_new_tokens]) and their
 * count to *out_len; fewer are written when EOS or the context end stops
 * generation. If `out_logits` is not NULL it receives the logits of each
 * generated token, [max_new_tokens][vocab_size] floats, row-major. Returns 0
 * on success, non-zero when the request is invalid (see fdc_last_error). */
int fdc_generate(fdc_model *model, const int32_t *prompt, int64_t prompt_len,
                 int64_t max_new_tokens, const fdc_sampling_params *params,
                 int32_t *out_ids, int64_t *out_len, float *out_logits);

/* Runs `count` requests together through the batching engine: a wrapper
 * that submits them all at once to an engine on the model (as fdc_engine_*,
 * the default step budget) and waits for each. All run in the same steps
 * while KV-cache slots last; a request waits for a slot when all are taken.
 * Each step runs at most the model's max_step_rows rows: one per running
 * request, the rest reading prompts in chunks. Each request's outputs
 * (out_ids, out_len, out_logits, finish_reason, status, error) are filled in
 * from the engine's loop thread, where its callback runs too, and are
 * complete when the call returns; an invalid request is refused alone
 * (status != 0) while the others run, and a failed step ends every request
 * in it with FDC_FINISH_ERROR. Returns the number of requests that failed
 * (0 = all succeeded), or -1 when the call itself is invalid (see
 * fdc_last_error). fdc_generate is this call with one request. */
int64_t fdc_generate_batch(fdc_model *model, fdc_request *requests,
                           int64_t count);

/* An asynchronous engine on a model (Flover's temporal fusion): a loop
 * thread runs one fused step for all of its running requests, and requests
 * submitted from any thread join at the next step, without waiting for the
 * others to end; they leave when they finish or are cancelled. A request
 * that finds every KV-cache slot taken waits, in order, for one to free.
 * Tokens stream to each request's callback, called on the engine's thread.
 * While an engine exists its model is busy: fdc_generate and
 * fdc_generate_batch on it are refused, and fdc_model_free does nothing.
 * fdc_engine_submit, fdc_engine_cancel, fdc_engine_poll, fdc_engine_wait and
 * fdc_engine_pending may be called from any thread; from a token callback
 * only fdc_engine_submit, fdc_engine_cancel and fdc_engine_poll. Opaque. */
typedef struct fdc_engine fdc_engine;

/* How a request of an engine ended. */
typedef struct fdc_result {
  int64_t out_len;       /* tokens generated (at most `capacity` written) */
  int32_t finish_reason; /* an fdc_finish_reason */
  int32_t status;        /* 0, or non-zero when the step failed (see error) */
  char error[256];       /* NUL-terminated message if status != 0 */
} fdc_result;

/* Starts an engine on `model`. `max_step_tokens` is the rows one step may
 * run (0 = the model's max_step_rows; kept within [num_slots,
 * max_step_rows]). NULL on failure (the model is busy or NULL). */
fdc_engine *fdc_engine_create(fdc_model *model, int64_t max_step_tokens);

/* Queues a request and returns its id (>= 1) at once, or -1 when the
 * request is invalid (see fdc_last_error; nothing is queued). `params` NULL
 * is greedy; `callback` (or NULL) gets every generated token on the engine's
 * thread, its `logits` valid only during the call. */
int64_t fdc_engine_submit(fdc_engine *engine, const int32_t *prompt,
                          int64_t prompt_len, int64_t max_new_tokens,
                          const fdc_sampling_params *params,
                          fdc_token_callback callback, void *user_data);

/* Asks to end request `id` if it is still running: at the engine's next
 * step it ends with FDC_FINISH_CANCELLED and the tokens generated so far,
 * unless the step running now finishes it first. Returns 0, or 1 when `id`
 * is not a running request of this engine. */
int fdc_engine_cancel(fdc_engine *engine, int64_t id);

/* Blocks until request `id` has finished, then writes up to `capacity` of
 * its tokens to `out_ids` and its outcome to `*result`. Each request's
 * outcome is returned once: a second waiter on the same id gets -1. Returns
 * 0, or -1 for an id that is not running and has no outcome left to return,
 * or when called from a token callback of this engine (see
 * fdc_last_error). */
int fdc_engine_wait(fdc_engine *engine, int64_t id, int32_t *out_ids,
                    int64_t capacity, fdc_result *result);

/* As fdc_engine_wait without blocking: returns 1 at once while `id` runs. */
int fdc_engine_poll(fdc_engine *engine, int64_t id, int32_t *out_ids,
                    int64_t capacity, fdc_result *result);

/* Requests submitted and not yet finished. */
int64_t fdc_engine_pending(const fdc_engine *engine);

/* Cancels every request left, stops the engine's thread and frees it; the
 * model is free again. Calls blocked in fdc_engine_wait return (with their
 * request's outcome) before it frees anything, but no call may start once
 * it has begun. From a token callback of this engine it does nothing
 * (fdc_last_error says so). NULL is ignored. */
void fdc_engine_free(fdc_engine *engine);

/* The message of the calling thread's latest failure ("" if none); valid
 * until that thread's next fdc_ call. */
const char *fdc_last_error(void);

/* Releases a string returned by this API; NULL is ignored. */
void fdc_string_free(char *str);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FDC_RUNTIME_H */
