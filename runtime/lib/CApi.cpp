//===- CApi.cpp - C API of the fdc runtime --------------------------------===//

#include "fdc_runtime.h"

#include "fdc/runtime/AsyncEngine.h"
#include "fdc/runtime/Engine.h"
#include "fdc/runtime/Model.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

using namespace fdc::runtime;

struct fdc_model {
  std::unique_ptr<Model> model;
  /// Set while an fdc_engine holds the model (busy is set too).
  std::atomic<bool> engineOpen{false};
  /// Set while fdc_generate or fdc_generate_batch runs on this model: a
  /// second call (from a token callback, or another thread) is refused
  /// instead of corrupting the KV-cache slots and step buffers.
  std::atomic<bool> busy{false};
  /// Whether token callbacks get logits (fdc_model_set_callback_logits).
  std::atomic<bool> callbackLogits{true};
};

namespace {

thread_local std::string lastError;

void setLastError(std::string message) { lastError = std::move(message); }

char *duplicateString(const std::string &s) {
  char *copy = static_cast<char *>(std::malloc(s.size() + 1));
  if (copy)
    std::memcpy(copy, s.c_str(), s.size() + 1);
  return copy;
}

void setRequestError(fdc_request &request, fdc_finish_reason reason,
                     const std::string &message) {
  request.status = 1;
  request.finish_reason = reason;
  size_t length = std::min(message.size(), sizeof(request.error) - 1);
  std::memcpy(request.error, message.data(), length);
  request.error[length] = '\0';
}

fdc_finish_reason toCReason(FinishReason reason) {
  switch (reason) {
  case FinishReason::Length:
    return FDC_FINISH_LENGTH;
  case FinishReason::Eos:
    return FDC_FINISH_EOS;
  case FinishReason::ContextFull:
    return FDC_FINISH_CONTEXT_FULL;
  case FinishReason::Rejected:
    return FDC_FINISH_REJECTED;
  case FinishReason::Error:
    return FDC_FINISH_ERROR;
  case FinishReason::Cancelled:
    return FDC_FINISH_CANCELLED;
  }
  return FDC_FINISH_ERROR;
}

/// Checks the C-level fields of a request and builds the engine request that
/// streams its outputs into it.
Expected<GenerationRequest> toEngineRequest(fdc_request &r, int64_t vocab,
                                            bool callbackLogits) {
  if (r.prompt_len < 0 || (r.prompt_len > 0 && !r.prompt))
    return createError("prompt is NULL or prompt_len is negative");
  if (r.max_new_tokens < 0)
    return createError("max_new_tokens must be >= 0, got ", r.max_new_tokens);
  if (r.max_new_tokens > 0 && !r.out_ids)
    return createError("out_ids is NULL");
  GenerationRequest request;
  request.prompt.assign(r.prompt, r.prompt + r.prompt_len);
  request.maxNewTokens = r.max_new_tokens;
  request.sampling.temperature = r.params.temperature;
  request.sampling.topK = r.params.top_k;
  request.sampling.topP = r.params.top_p;
  request.sampling.seed = r.params.seed;
  request.eosId = r.params.eos_id;
  request.wantsLogits = r.out_logits || (r.callback && callbackLogits);
  fdc_request *out = &r;
  request.onToken = [out, vocab](int32_t token, const float *logits) {
    int64_t step = out->out_len++;
    out->out_ids[step] = token;
    if (out->out_logits)
      std::memcpy(out->out_logits + step * vocab, logits,
                  static_cast<size_t>(vocab) * sizeof(float));
    if (out->callback)
      out->callback(out->user_data, step, token, logits, vocab);
  };
  return request;
}

/// fdc_generate and fdc_generate_batch: the requests go to an AsyncEngine
/// on the model together (tokens stream into them from its loop thread), and
/// the call waits for each.
int64_t generateBatch(Model &model, fdc_request *requests, int64_t count,
                      bool callbackLogits) {
  int64_t failures = 0;
  std::vector<fdc_request *> submitted;
  std::vector<GenerationRequest> engineRequests;
  for (int64_t i = 0; i < count; ++i) {
    fdc_request &r = requests[i];
    r.out_len = 0;
    r.finish_reason = FDC_FINISH_NONE;
    r.status = 0;
    r.error[0] = '\0';
    Expected<GenerationRequest> request =
        toEngineRequest(r, model.vocabSize(), callbackLogits);
    if (!request) {
      setRequestError(r, FDC_FINISH_REJECTED, request.error().message());
      ++failures;
      continue;
    }
    submitted.push_back(&r);
    engineRequests.push_back(std::move(*request));
  }
  if (submitted.empty())
    return failures;

  // The model is busy for this call, so no other engine holds a slot: a
  // request waits only for the ones before it to finish. Should every slot
  // be held elsewhere all the same, WhileRunning rejects what waits instead
  // of waiting for ever.
  AsyncEngine engine(model, EngineOptions(), SlotWait::WhileRunning);
  std::vector<Expected<RequestId>> ids =
      engine.submitAll(std::move(engineRequests));
  for (size_t i = 0; i < submitted.size(); ++i) {
    fdc_request &r = *submitted[i];
    if (!ids[i]) { // refused by the engine's checks, alone
      setRequestError(r, FDC_FINISH_REJECTED, ids[i].error().message());
      ++failures;
      continue;
    }
    Expected<GenerationResult> result = engine.wait(*ids[i]);
    if (!result) {
      setRequestError(r, FDC_FINISH_ERROR, result.error().message());
      ++failures;
      continue;
    }
    r.finish_reason = toCReason(result->reason);
    if (!result->error.empty()) {
      setRequestError(r, toCReason(result->reason), result->error);
      ++failures;
    }
  }
  return failures;
}

/// Marks a model busy for the scope of a generate call.
class BusyScope {
public:
  explicit BusyScope(fdc_model &model) : model(model) {
    acquired = !model.busy.exchange(true);
  }
  ~BusyScope() {
    if (acquired)
      model.busy.store(false);
  }
  bool acquired;

private:
  fdc_model &model;
};

constexpr const char *kBusyMessage =
    "the model is already generating (a token callback or another thread "
    "called into it); one fdc_generate or fdc_generate_batch at a time per "
    "model";
constexpr const char *kEngineMessage =
    "the model is already generating: an fdc_engine holds it (free the "
    "engine first)";

const char *busyMessage(const fdc_model &model) {
  return model.engineOpen.load() ? kEngineMessage : kBusyMessage;
}

template <typename Fn> auto guarded(Fn fn, decltype(fn()) onException) {
  try {
    return fn();
  } catch (const std::exception &e) {
    setLastError(concat("fdc runtime: ", e.what()));
  } catch (...) {
    setLastError("fdc runtime: unknown exception");
  }
  return onException;
}

} // namespace

fdc_sampling_params fdc_sampling_params_default(void) {
  fdc_sampling_params params;
  params.temperature = 0;
  params.top_k = 0;
  params.top_p = 1;
  params.eos_id = -1;
  params.seed = 0;
  return params;
}

fdc_model_options fdc_model_options_default(void) {
  fdc_model_options options;
  options.max_context = 0;
  options.num_slots = 1;
  options.max_step_rows = 0;
  return options;
}

fdc_model *fdc_model_load(const char *library_path, const char *weights_path,
                          int64_t max_context, int64_t num_slots,
                          char **error_out) {
  fdc_model_options options = fdc_model_options_default();
  options.max_context = max_context;
  options.num_slots = num_slots;
  return fdc_model_load_with_options(library_path, weights_path, &options,
                                     error_out);
}

fdc_model *fdc_model_load_with_options(const char *library_path,
                                       const char *weights_path,
                                       const fdc_model_options *model_options,
                                       char **error_out) {
  return fdc_model_load_packed(library_path, weights_path, nullptr,
                               model_options, error_out);
}

fdc_model *fdc_model_load_packed(const char *library_path,
                                 const char *weights_path,
                                 const char *packed_weights_path,
                                 const fdc_model_options *model_options,
                                 char **error_out) {
  if (error_out)
    *error_out = nullptr;
  auto fail = [&](const std::string &message) -> fdc_model * {
    setLastError(message);
    if (error_out)
      *error_out = duplicateString(message);
    return nullptr;
  };
  if (!library_path || !weights_path)
    return fail("fdc_model_load: library_path and weights_path are required");
  fdc_model_options given =
      model_options ? *model_options : fdc_model_options_default();
  try {
    ModelOptions options;
    options.maxContext = given.max_context;
    options.numSlots = given.num_slots;
    options.maxStepRows = given.max_step_rows;
    if (packed_weights_path) {
      if (!*packed_weights_path)
        return fail("fdc_model_load_packed: packed_weights_path is empty "
                    "(NULL packs the weights from the checkpoint)");
      options.packedWeights = packed_weights_path;
    }
    Expected<std::unique_ptr<Model>> model =
        Model::load(library_path, weights_path, options);
    if (!model)
      return fail(model.error().message());
    setLastError("");
    fdc_model *handle = new fdc_model();
    handle->model = std::move(*model);
    return handle;
  } catch (const std::exception &e) {
    return fail(concat("fdc runtime: ", e.what()));
  }
}

void fdc_model_free(fdc_model *model) {
  if (model && model->busy.load()) {
    // Freeing it would pull the model out from under the running call. This
    // catches a token callback freeing its own model; a free racing a
    // generate on another thread is undefined (fdc_runtime.h), as the check
    // and the delete are not one atomic step.
    setLastError(concat("fdc_model_free: ", busyMessage(*model),
                        "; the model was not freed"));
    return;
  }
  delete model;
}

int64_t fdc_model_vocab_size(const fdc_model *model) {
  return model ? model->model->vocabSize() : 0;
}

int64_t fdc_model_max_context(const fdc_model *model) {
  return model ? model->model->maxContext() : 0;
}

int64_t fdc_model_num_slots(const fdc_model *model) {
  return model ? model->model->numSlots() : 0;
}

int64_t fdc_model_max_step_rows(const fdc_model *model) {
  return model ? model->model->maxStepRows() : 0;
}

int fdc_model_set_callback_logits(fdc_model *model, int enabled) {
  if (!model) {
    setLastError("fdc_model_set_callback_logits: model is NULL");
    return 1;
  }
  model->callbackLogits.store(enabled != 0);
  setLastError("");
  return 0;
}

const char *fdc_model_manifest(const fdc_model *model) {
  return model ? model->model->library().manifestText() : "";
}

int fdc_generate(fdc_model *model, const int32_t *prompt, int64_t prompt_len,
                 int64_t max_new_tokens, const fdc_sampling_params *params,
                 int32_t *out_ids, int64_t *out_len, float *out_logits) {
  if (out_len)
    *out_len = 0;
  if (!model) {
    setLastError("fdc_generate: model is NULL");
    return 1;
  }
  BusyScope busy(*model);
  if (!busy.acquired) {
    setLastError(concat("fdc_generate: ", busyMessage(*model)));
    return 1;
  }
  fdc_request request = {};
  request.prompt = prompt;
  request.prompt_len = prompt_len;
  request.max_new_tokens = max_new_tokens;
  request.params = params ? *params : fdc_sampling_params_default();
  request.out_ids = out_ids;
  request.out_logits = out_logits;
  int64_t failures = guarded(
      [&] {
        return generateBatch(*model->model, &request, 1,
                             model->callbackLogits.load());
      },
      int64_t(-1));
  if (out_len)
    *out_len = request.out_len;
  if (failures < 0)
    return 1;
  if (request.status != 0) {
    setLastError(request.error);
    return 1;
  }
  setLastError("");
  return 0;
}

int64_t fdc_generate_batch(fdc_model *model, fdc_request *requests,
                           int64_t count) {
  if (!model || count < 0 || (count > 0 && !requests)) {
    setLastError("fdc_generate_batch: invalid arguments");
    return -1;
  }
  BusyScope busy(*model);
  if (!busy.acquired) {
    setLastError(concat("fdc_generate_batch: ", busyMessage(*model)));
    return -1;
  }
  int64_t failures = guarded(
      [&] {
        return generateBatch(*model->model, requests, count,
                             model->callbackLogits.load());
      },
      int64_t(-1));
  if (failures == 0)
    setLastError("");
  else if (failures > 0)
    setLastError(concat(failures, " of ", count, " requests failed"));
  return failures;
}

const char *fdc_last_error(void) { return lastError.c_str(); }

void fdc_string_free(char *str) { std::free(str); }

struct fdc_engine {
  fdc_model *model = nullptr;
  std::unique_ptr<AsyncEngine> engine;
};

fdc_engine *fdc_engine_create(fdc_model *model, int64_t max_step_tokens) {
  if (!model) {
    setLastError("fdc_engine_create: model is NULL");
    return nullptr;
  }
  if (max_step_tokens < 0) {
    setLastError(concat("fdc_engine_create: max_step_tokens must be >= 0, got ",
                        max_step_tokens));
    return nullptr;
  }
  if (model->busy.exchange(true)) {
    setLastError(concat("fdc_engine_create: ", busyMessage(*model)));
    return nullptr;
  }
  model->engineOpen.store(true);
  fdc_engine *handle = guarded(
      [&]() -> fdc_engine * {
        EngineOptions options;
        options.maxStepTokens = max_step_tokens;
        auto created = std::make_unique<fdc_engine>();
        created->model = model;
        created->engine = std::make_unique<AsyncEngine>(*model->model, options);
        setLastError("");
        return created.release();
      },
      static_cast<fdc_engine *>(nullptr));
  if (!handle) {
    model->engineOpen.store(false);
    model->busy.store(false);
  }
  return handle;
}

int64_t fdc_engine_submit(fdc_engine *engine, const int32_t *prompt,
                          int64_t prompt_len, int64_t max_new_tokens,
                          const fdc_sampling_params *params,
                          fdc_token_callback callback, void *user_data) {
  if (!engine) {
    setLastError("fdc_engine_submit: engine is NULL");
    return -1;
  }
  if (prompt_len < 0 || (prompt_len > 0 && !prompt)) {
    setLastError("fdc_engine_submit: prompt is NULL or prompt_len is negative");
    return -1;
  }
  if (max_new_tokens < 0) {
    setLastError(concat("fdc_engine_submit: max_new_tokens must be >= 0, got ",
                        max_new_tokens));
    return -1;
  }
  return guarded(
      [&]() -> int64_t {
        fdc_sampling_params p =
            params ? *params : fdc_sampling_params_default();
        GenerationRequest request;
        request.prompt.assign(prompt, prompt + prompt_len);
        request.maxNewTokens = max_new_tokens;
        request.sampling.temperature = p.temperature;
        request.sampling.topK = p.top_k;
        request.sampling.topP = p.top_p;
        request.sampling.seed = p.seed;
        request.eosId = p.eos_id;
        request.wantsLogits = callback && engine->model->callbackLogits.load();
        if (callback) {
          int64_t vocab = engine->model->model->vocabSize();
          auto step = std::make_shared<int64_t>(0);
          request.onToken = [callback, user_data, vocab,
                             step](int32_t token, const float *logits) {
            callback(user_data, (*step)++, token, logits, vocab);
          };
        }
        Expected<RequestId> id = engine->engine->submit(std::move(request));
        if (!id) {
          setLastError(concat("fdc_engine_submit: ", id.error().message()));
          return -1;
        }
        setLastError("");
        return static_cast<int64_t>(*id);
      },
      int64_t(-1));
}

int fdc_engine_cancel(fdc_engine *engine, int64_t id) {
  if (!engine || id < 1) {
    setLastError("fdc_engine_cancel: engine is NULL or id is not positive");
    return 1;
  }
  return guarded(
      [&] {
        return engine->engine->cancel(static_cast<RequestId>(id)) ? 0 : 1;
      },
      1);
}

namespace {
void writeResult(const GenerationResult &finished, int32_t *outIds,
                 int64_t capacity, fdc_result *result) {
  int64_t count = static_cast<int64_t>(finished.tokens.size());
  if (outIds && capacity > 0 && count > 0)
    std::memcpy(outIds, finished.tokens.data(),
                static_cast<size_t>(std::min(count, capacity)) *
                    sizeof(int32_t));
  if (!result)
    return;
  result->out_len = count;
  result->finish_reason = toCReason(finished.reason);
  result->status = finished.error.empty() ? 0 : 1;
  size_t length = std::min(finished.error.size(), sizeof(result->error) - 1);
  std::memcpy(result->error, finished.error.data(), length);
  result->error[length] = '\0';
}
} // namespace

int fdc_engine_wait(fdc_engine *engine, int64_t id, int32_t *out_ids,
                    int64_t capacity, fdc_result *result) {
  if (!engine || id < 1) {
    setLastError("fdc_engine_wait: engine is NULL or id is not positive");
    return -1;
  }
  return guarded(
      [&] {
        Expected<GenerationResult> finished =
            engine->engine->wait(static_cast<RequestId>(id));
        if (!finished) {
          setLastError(concat("fdc_engine_wait: ", finished.error().message()));
          return -1;
        }
        writeResult(*finished, out_ids, capacity, result);
        setLastError("");
        return 0;
      },
      -1);
}

int fdc_engine_poll(fdc_engine *engine, int64_t id, int32_t *out_ids,
                    int64_t capacity, fdc_result *result) {
  if (!engine || id < 1) {
    setLastError("fdc_engine_poll: engine is NULL or id is not positive");
    return -1;
  }
  return guarded(
      [&] {
        Expected<std::optional<GenerationResult>> finished =
            engine->engine->poll(static_cast<RequestId>(id));
        if (!finished) {
          setLastError(concat("fdc_engine_poll: ", finished.error().message()));
          return -1;
        }
        if (!*finished)
          return 1;
        writeResult(**finished, out_ids, capacity, result);
        setLastError("");
        return 0;
      },
      -1);
}

int64_t fdc_engine_pending(const fdc_engine *engine) {
  return engine ? static_cast<int64_t>(engine->engine->pendingCount()) : 0;
}

void fdc_engine_free(fdc_engine *engine) {
  if (!engine)
    return;
  if (engine->engine->onLoopThread()) {
    // Joining the loop from itself would never end.
    setLastError("fdc_engine_free: called from a token callback of this "
                 "engine; the engine was not freed");
    return;
  }
  fdc_model *model = engine->model;
  delete engine; // stops and joins the loop thread
  model->engineOpen.store(false);
  model->busy.store(false);
}
