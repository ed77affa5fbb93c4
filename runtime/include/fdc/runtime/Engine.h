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
// arrival (request ids increase with arrival).
// Requests join at the next iteration and finish independently (EOS,
// max_new_tokens, or a full context).
//
// The live requests form a dense table of rows 0..n-1 (a request's step
// rows follow the table's order; new requests are appended). When rows
// leave (finished, EOS, full context, a bad token, cancelled) the table is
// compacted with Flover's minimal move: with m rows staying, every hole
// below m is filled by the last staying row of the table, so rows already
// below m never move and the moves are exactly the holes below m (the
// fewest that make rows 0..m-1 dense; none when the rows that leave are
// the last ones). Flover's sliding window also picks where the dense rows
// start; a step's rows start at row 0, so here they are rows 0..m-1. The
// table is then no longer in order of arrival: what must follow arrival
// (prompt chunks' share of the budget, onToken calls and finishing order
// within a step) goes by request id.
// KV never moves: a request keeps its KV-cache slot from admission to
// finish and attention reads rows through their slot index, so no K/V
// byte is copied. What moves is the row's step state: slot, position,
// token, temperature, top_k, top_p and the request's RNG state, i.e. what
// a device-resident per-row table would hold; one move costs
// kShuffleRowBytes. The host's heavier per-request vectors (prompt,
// generated tokens) move with their rows by pointer (std::move). Counts:
// lastShuffle() and totalShuffle().
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_ENGINE_H
#define FDC_RUNTIME_ENGINE_H

#include "fdc/runtime/Model.h"
#include "fdc/runtime/Random.h"
#include "fdc/runtime/StepArrays.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
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
  /// Called for every generated token with that step's logits [vocab_size]
  /// (nullptr when wantsLogits is false).
  std::function<void(int32_t token, const float *logits)> onToken;
  /// Whether onToken reads the logits. A step whose token-producing requests
  /// want none runs without logits (Model::step with logits = nullptr): a
  /// GPU step then copies only the sampled ids back to the host, not
  /// vocab_size floats per row.
  bool wantsLogits = true;
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

/// The bytes one row of the live table moves in a compaction: its slot,
/// position and token (int32 each, as in FdcStepArgs), temperature, top_k,
/// top_p and the request's RNG state.
inline constexpr int64_t kShuffleRowBytes = sizeof(int32_t)       // slot
                                            + sizeof(int32_t)     // position
                                            + sizeof(int32_t)     // token
                                            + sizeof(float)       // temperature
                                            + sizeof(int32_t)     // top_k
                                            + sizeof(float)       // top_p
                                            + sizeof(Xoshiro256); // RNG
static_assert(kShuffleRowBytes == 56);

/// Rows moved by compacting the live table, and their bytes (rowsMoved *
/// kShuffleRowBytes).
struct ShuffleStats {
  int64_t rowsMoved = 0;
  int64_t bytesMoved = 0;
};

struct EngineOptions {
  /// Rows one step runs at most (decode tokens + prompt chunks); 0 = the
  /// model's max_step_rows. Kept within [num_slots, max_step_rows], so
  /// every live request gets a row in every step.
  int64_t maxStepTokens = 0;
  /// A request that finds no free KV-cache slot waits in the queue (in
  /// order) until one frees, instead of finishing as Rejected.
  bool waitForSlot = false;
  /// Overlapped steps, where the model can (Model::canOverlapSteps): while
  /// step t runs, step t + 1 of the same rows is launched with its tokens
  /// taken on the device from t's sampled ids, so the device does not wait
  /// for the host between steps. Only when t + 1 is sure to hold exactly
  /// t's rows: every live request decodes one row in t, none reaches its
  /// length or context limit at t, none wants logits, none waits in the
  /// queue. A request that ends at t by its EOS id (or is cancelled) has a
  /// row in t + 1 whose token is dropped. Tokens and sampling draws are
  /// those of steps run one by one. Every other step (its rows change:
  /// prompt chunks, joins, leaves) is launched as soon as the step before
  /// it is read, before that step's tokens reach onToken, so the callbacks
  /// run while it does (not when a live request wants logits: that step
  /// runs whole); a request submitted meanwhile joins the step after. A
  /// launch that fails makes the engine go on one step at a time.
  /// $FDC_OVERLAP_STEPS=0 turns it off.
  bool overlapSteps = true;
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
  /// Steps launched before the one before them was read (overlapped).
  int64_t stepsLaunchedAhead() const { return launchedAhead; }
  /// The compaction after the last step, plus the cancels since it.
  ShuffleStats lastShuffle() const { return shuffleLast; }
  /// Every compaction of this engine.
  ShuffleStats totalShuffle() const { return shuffleTotal; }

  /// If set, sees the arguments of every step after it ran (for tests and
  /// tracing).
  std::function<void(const FdcStepArgs &)> stepObserver;

private:
  using TokenCallback = std::function<void(int32_t token, const float *logits)>;

  struct Sequence {
    RequestId id;
    /// Its onToken is moved to `onToken` below.
    GenerationRequest request;
    int32_t slot = -1;
    /// Position of the token fed next.
    int64_t position = 0;
    std::vector<int32_t> generated;
    Xoshiro256 random;
    /// Rows launched in steps not yet read (overlapped steps).
    int64_t launchedRows = 0;
    /// The request's onToken (null: none), shared with the tokens of the
    /// last step not yet delivered, which outlive a sequence that finished.
    std::shared_ptr<const TokenCallback> onToken;
  };

  /// A token of the step just read, for its request's onToken.
  struct Delivery {
    std::shared_ptr<const TokenCallback> onToken;
    int32_t token;
    /// Into the step's logits (which stay until the step after next is
    /// planned), or null.
    const float *logits;
  };

  /// A step planned from the live table: its host arrays and, per request
  /// in it in order of arrival (ids increase), its rows and the row whose
  /// token it keeps (-1: its rows only read prompt tokens).
  struct PlannedStep {
    struct Entry {
      RequestId id;
      int64_t rows;
      int64_t producingRow;
    };
    StepArrays arrays;
    /// The arguments it was launched with (pointing into `arrays`).
    FdcStepArgs args = {};
    std::vector<Entry> entries;
    /// The rows of each live index when planned (for launch()).
    std::vector<int64_t> rowsOfLive;
    int64_t batch = 0;
    bool withLogits = false;
    /// Launched with Model::launchStep (finished with finishStep), not run
    /// with Model::step.
    bool overlapped = false;
    /// tableVersion when it was planned.
    uint64_t plannedAt = 0;
  };

  /// Fills `step` from the live table: every request's rows within the
  /// budget, or with `ahead` one decode row each whose token the device
  /// takes from the step in flight.
  void plan(PlannedStep &step, bool ahead);
  /// Runs or launches `step`; counts its rows as launched.
  Error launch(PlannedStep &step, bool ahead);
  /// Whether the step after `inFlight` (launched, not read) can be
  /// launched now: see EngineOptions::overlapSteps.
  bool canLaunchAhead(const PlannedStep &inFlight) const;
  /// Reads the outputs of `step` (run, or finished) into the requests still
  /// live, in order of arrival: tokens, finishing and the callbacks' tokens
  /// (`deliveries`); then compacts the table.
  void process(PlannedStep &step);
  /// With overlapped steps and no step launched ahead: admits, plans and
  /// launches the next step before the last one's tokens are delivered, so
  /// that the device runs it while the callbacks do (what a step launched
  /// ahead does for steps of unchanged rows, for every other step). Not
  /// when a live request wants logits (that step runs whole).
  void launchNext();
  /// Plans the next step into plans[current ^ 1] (with `ahead`, as for
  /// plan()) and launches it; on success it is in flight (aheadInFlight),
  /// on failure the live requests' draws are as before and false returns.
  bool planAndLaunchNext(bool ahead);
  /// Calls onToken for every token of `deliveries`, in order.
  void deliver();
  /// Waits out a step launched ahead whose requests have all left.
  void drainAhead();

  void admitQueued();
  /// The rows of each live sequence in the next step (within the budget);
  /// `arrival` holds the live indices in order of arrival.
  std::vector<int64_t> planRows(const std::vector<size_t> &arrival) const;
  /// Drops the live rows marked in `leaving` (already finished) with
  /// Flover's minimal move and counts the moves.
  void compactLive();
  void finish(Sequence &sequence, FinishReason reason, std::string error = "");

  Model &model;
  int64_t tokenBudget;
  bool waitForSlot;
  bool overlapSteps;
  /// Set while step() runs: the sequences are being moved.
  bool stepping = false;
  RequestId nextId = 1;
  std::deque<Sequence> queued;
  std::vector<Sequence> live;
  std::vector<GenerationResult> finished;
  int64_t steps = 0;
  ShuffleStats shuffleLast, shuffleTotal;

  /// The step being read and the one launched ahead of it (their host
  /// arrays reused across steps); `aheadInFlight`: plans[current ^ 1] is
  /// launched and becomes the next step() call's.
  PlannedStep plans[2];
  int current = 0;
  bool aheadInFlight = false;
  int64_t launchedAhead = 0;
  /// Changes whenever the live table does (admission, compaction, failure):
  /// a step planned at this version holds exactly the live requests.
  uint64_t tableVersion = 0;
  /// Live indices in order of arrival.
  std::vector<size_t> arrival;
  /// The last step's tokens, for their callbacks (process, then deliver).
  std::vector<Delivery> deliveries;
  /// Per live row: it leaves the table at the next compaction.
  std::vector<char> leaving;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_ENGINE_H
