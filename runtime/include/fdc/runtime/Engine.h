//===- Engine.h - Batched generation over a loaded model --------*- C++ -*-===//
//
// Every iteration runs one step for all live requests together. A decoding
// request feeds its last generated token (one row); a request still in its
// prompt feeds a chunk of its next prompt tokens, one row per token at
// consecutive positions of its slot (chunked prefill; the step writes every
// row's K/V before attention reads it, and each row attends up to its own
// position). Only the chunk's last row samples, and only when it is the
// prompt's last token. The rows of a step are at most the engine's token
// budget: one per live request, the rest to prompt chunks in order of
// arrival.
// Requests join at the next iteration and finish independently (EOS,
// max_new_tokens, or a full context).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_ENGINE_H
#define FDC_RUNTIME_ENGINE_H

#include "fdc/runtime/Model.h"
#include "fdc/runtime/Random.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace fdc::runtime {

using RequestId = uint64_t;

struct SamplingParams {
  /// 0 = greedy.
  float temperature = 0;
  /// 0 = off.
  int32_t topK = 0;
  /// 1 = off.
  float topP = 1;
  /// Seeds the request's own uniform draws.
  uint64_t seed = 0;
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  /// Tokens to generate at most; < 0 means until EOS or a full context.
  int64_t maxNewTokens = 0;
  SamplingParams sampling;
  /// Stop after generating this token (it is returned); < 0 means none.
  int32_t eosId = -1;
  /// Called for every generated token with that step's logits [vocab_size].
  std::function<void(int32_t token, const float *logits)> onToken;
};

enum class FinishReason {
  /// Generated max_new_tokens.
  Length,
  /// Generated the EOS token.
  Eos,
  /// The sequence filled max_context.
  ContextFull,
  /// Never ran: no free KV-cache slot at admission.
  Rejected,
  /// The step returned an invalid token id, or (GPU) the step itself failed.
  Error,
  /// Cancelled (Engine::cancel) before it finished.
  Cancelled,
};

const char *finishReasonName(FinishReason reason);

struct GenerationResult {
  RequestId id = 0;
  std::vector<int32_t> tokens;
  FinishReason reason = FinishReason::Length;
  /// Set for Rejected and Error.
  std::string error;
};

struct EngineOptions {
  /// Rows one step runs at most (decode tokens + prompt chunks); 0 = the
  /// model's max_step_rows. Kept within [num_slots, max_step_rows], so
  /// every live request gets a row in every step.
  int64_t maxStepTokens = 0;
  /// A request that finds no free KV-cache slot waits in the queue (in
  /// order) until one frees, instead of finishing as Rejected.
  bool waitForSlot = false;
};

class Engine {
public:
  explicit Engine(Model &model, EngineOptions options = {});
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// Checks a request against the model (non-empty prompt, token ids in
  /// [0, vocab_size), prompt + max_new_tokens <= max_context).
  Error validate(const GenerationRequest &request) const;

  /// Validates and queues a request; it joins the batch at the next step().
  /// An invalid request is refused here and affects no other.
  Expected<RequestId> submit(GenerationRequest request);

  /// Admits queued requests (one that finds no free slot finishes as
  /// Rejected, or waits with waitForSlot) and runs one step for every live
  /// request. When the step itself fails (a GPU launch or fault), every
  /// request in it finishes as Error with the step's message. Returns
  /// whether a step ran (false: nothing was live).
  bool step();

  /// Steps until no request is queued or live; returns every result that
  /// has not been taken yet. Requests that wait for a slot while nothing
  /// runs (every slot held outside this engine) finish as Rejected.
  std::vector<GenerationResult> runToCompletion();

  /// Results finished since the last call, in finishing order.
  std::vector<GenerationResult> takeFinished();

  /// Ends a queued or live request now: it finishes as Cancelled with the
  /// tokens generated so far, and its slot is free for the next step.
  /// False if no queued or live request has that id, or when called during
  /// a step (from onToken or stepObserver), where it changes nothing.
  bool cancel(RequestId id);

  /// Ends every queued and live request as Error with `message` (what the
  /// caller does when a step cannot go on, e.g. it ran out of memory).
  void failAll(const std::string &message);

  bool idle() const { return queued.empty() && live.empty(); }
  /// The rows one step runs at most.
  int64_t stepTokenBudget() const { return tokenBudget; }
  size_t liveCount() const { return live.size(); }
  size_t queuedCount() const { return queued.size(); }
  int64_t stepsRun() const { return steps; }

  /// If set, sees the arguments of every step after it ran (for tests and
  /// tracing).
  std::function<void(const FdcStepArgs &)> stepObserver;

private:
  struct Sequence {
    RequestId id;
    GenerationRequest request;
    int32_t slot = -1;
    /// Position of the token fed next.
    int64_t position = 0;
    std::vector<int32_t> generated;
    Xoshiro256 random;
  };

  void admitQueued();
  /// The rows of each live sequence in the next step (within the budget).
  std::vector<int64_t> planRows() const;
  void finish(Sequence &sequence, FinishReason reason, std::string error = "");

  Model &model;
  int64_t tokenBudget;
  bool waitForSlot;
  /// Set while step() runs: the sequences are being moved.
  bool stepping = false;
  RequestId nextId = 1;
  std::deque<Sequence> queued;
  std::vector<Sequence> live;
  std::vector<GenerationResult> finished;
  int64_t steps = 0;

  // Step buffers, reused across iterations.
  std::vector<int32_t> tokens, positions, slots, topK, nextTokens;
  std::vector<float> temperature, topP, uniform, logits;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_ENGINE_H
