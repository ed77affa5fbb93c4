//===- Engine.cpp - Batched generation over a loaded model ----------------===//

#include "fdc/runtime/Engine.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

using namespace fdc::runtime;

namespace {
/// Whether environment variable `name` is set to "0".
bool envIsZero(const char *name) {
  const char *value = std::getenv(name);
  return value && std::string_view(value) == "0";
}
} // namespace

const char *fdc::runtime::finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Length:
    return "length";
  case FinishReason::Eos:
    return "eos";
  case FinishReason::ContextFull:
    return "context_full";
  case FinishReason::Rejected:
    return "rejected";
  case FinishReason::Error:
    return "error";
  case FinishReason::Cancelled:
    return "cancelled";
  }
  return "?";
}

Engine::Engine(Model &model, EngineOptions options)
    : model(model),
      tokenBudget(std::clamp(options.maxStepTokens == 0 ? model.maxStepRows()
                                                        : options.maxStepTokens,
                             model.numSlots(), model.maxStepRows())),
      waitForSlot(options.waitForSlot),
      overlapSteps(options.overlapSteps && !envIsZero("FDC_OVERLAP_STEPS")) {}

Engine::~Engine() {
  drainAhead();
  for (Sequence &sequence : live)
    model.kvCache().releaseSlot(sequence.slot);
}

Error Engine::validate(const GenerationRequest &request) const {
  const std::vector<int32_t> &prompt = request.prompt;
  if (prompt.empty())
    return createError("request has an empty prompt");
  int64_t vocab = model.vocabSize();
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocab)
      return createError("prompt token ", i, " is ", prompt[i],
                         ", outside the vocabulary [0, ", vocab, ")");
  int64_t promptLength = static_cast<int64_t>(prompt.size());
  int64_t maxContext = model.maxContext();
  if (promptLength > maxContext)
    return createError("prompt of ", promptLength,
                       " tokens exceeds max_context ", maxContext);
  if (request.maxNewTokens > maxContext - promptLength)
    return createError("prompt of ", promptLength, " tokens + max_new_tokens ",
                       request.maxNewTokens, " exceeds max_context ",
                       maxContext);
  const SamplingParams &s = request.sampling;
  if (!(s.temperature >= 0))
    return createError("temperature must be >= 0, got ", s.temperature);
  if (s.topK < 0)
    return createError("top_k must be >= 0, got ", s.topK);
  if (!(s.topP > 0 && s.topP <= 1))
    return createError("top_p must be in (0, 1], got ", s.topP);
  return Error::success();
}

Expected<RequestId> Engine::submit(GenerationRequest request) {
  if (Error err = validate(request))
    return err;
  RequestId id = nextId++;
  if (request.maxNewTokens == 0) {
    finished.push_back({id, {}, FinishReason::Length, ""});
    return id;
  }
  uint64_t seed = request.sampling.seed;
  std::shared_ptr<const TokenCallback> onToken;
  if (request.onToken)
    onToken = std::make_shared<const TokenCallback>(std::move(request.onToken));
  request.onToken = nullptr;
  Sequence sequence{/*id=*/id,
                    /*request=*/std::move(request),
                    /*slot=*/-1,
                    /*position=*/0,
                    /*generated=*/{},
                    /*random=*/Xoshiro256(seed),
                    /*launchedRows=*/0,
                    /*onToken=*/std::move(onToken)};
  queued.push_back(std::move(sequence));
  return id;
}

void Engine::finish(Sequence &sequence, FinishReason reason,
                    std::string error) {
  if (sequence.slot >= 0)
    model.kvCache().releaseSlot(sequence.slot);
  sequence.slot = -1;
  finished.push_back(
      {sequence.id, std::move(sequence.generated), reason, std::move(error)});
}

void Engine::admitQueued() {
  while (!queued.empty()) {
    std::optional<int32_t> slot = model.kvCache().acquireSlot();
    if (!slot && waitForSlot)
      return; // It and the ones behind it wait for a slot to free.
    Sequence sequence = std::move(queued.front());
    queued.pop_front();
    if (!slot) {
      finish(
          sequence, FinishReason::Rejected,
          concat("no free KV-cache slot (num_slots = ", model.numSlots(), ")"));
      continue;
    }
    sequence.slot = *slot;
    live.push_back(std::move(sequence));
    ++tableVersion;
  }
}

std::vector<int64_t>
Engine::planRows(const std::vector<size_t> &arrival) const {
  // Every live request feeds one token (live <= num_slots <= budget); what
  // is left of the budget goes to prompt chunks in order of arrival (the
  // live table is not: compaction reorders it).
  std::vector<int64_t> rows(live.size(), 1);
  int64_t used = static_cast<int64_t>(live.size());
  for (size_t k = 0; k < arrival.size() && used < tokenBudget; ++k) {
    const Sequence &s = live[arrival[k]];
    int64_t remaining =
        static_cast<int64_t>(s.request.prompt.size()) - s.position;
    int64_t extra = std::min(remaining - 1, tokenBudget - used);
    if (extra > 0) {
      rows[arrival[k]] += extra;
      used += extra;
    }
  }
  return rows;
}

void Engine::compactLive() {
  // Flover's minimal move: m rows stay; fill each hole below m with the
  // last staying row. The staying rows at or above m are exactly as many
  // as the holes below m, so `last` never drops below m.
  size_t staying = 0;
  for (size_t i = 0; i < live.size(); ++i)
    staying += leaving[i] ? 0 : 1;
  size_t last = live.size();
  int64_t moved = 0;
  for (size_t hole = 0; hole < staying; ++hole) {
    if (!leaving[hole])
      continue;
    do
      --last;
    while (leaving[last]);
    live[hole] = std::move(live[last]);
    ++moved;
  }
  if (staying != live.size())
    ++tableVersion;
  live.erase(live.begin() + static_cast<std::ptrdiff_t>(staying), live.end());
  shuffleLast.rowsMoved += moved;
  shuffleLast.bytesMoved += moved * kShuffleRowBytes;
  shuffleTotal.rowsMoved += moved;
  shuffleTotal.bytesMoved += moved * kShuffleRowBytes;
}

void Engine::plan(PlannedStep &step, bool ahead) {
  step.plannedAt = tableVersion;
  // Request ids increase with arrival.
  arrival.resize(live.size());
  for (size_t i = 0; i < live.size(); ++i)
    arrival[i] = i;
  std::sort(arrival.begin(), arrival.end(),
            [&](size_t a, size_t b) { return live[a].id < live[b].id; });
  std::vector<int64_t> rowsOf =
      ahead ? std::vector<int64_t>(live.size(), 1) : planRows(arrival);
  size_t batch = 0;
  for (int64_t rows : rowsOf)
    batch += static_cast<size_t>(rows);
  StepArrays &arrays = step.arrays;
  arrays.tokens.resize(batch);
  arrays.positions.resize(batch);
  arrays.slots.resize(batch);
  arrays.temperature.resize(batch);
  arrays.topK.resize(batch);
  arrays.topP.resize(batch);
  arrays.uniform.resize(batch);
  arrays.nextTokens.assign(batch, -1);
  step.batch = static_cast<int64_t>(batch);
  // Logits come back to the host only when a request that produces a token
  // in this step reads them.
  step.withLogits = false;

  // The row of each sequence whose token it keeps (its chunk's last), or -1
  // when its rows only read prompt tokens.
  std::vector<int64_t> producingRow(live.size(), -1);
  size_t row = 0;
  for (size_t i = 0; i < live.size(); ++i) {
    Sequence &s = live[i];
    int64_t promptLength = static_cast<int64_t>(s.request.prompt.size());
    for (int64_t j = 0; j < rowsOf[i]; ++j, ++row) {
      int64_t position = s.position + s.launchedRows + j;
      // Ahead, a decode row's token is the one the step in flight samples:
      // the step reads it on the device (this placeholder is not used).
      arrays.tokens[row] = position < promptLength ? s.request.prompt[position]
                           : ahead                 ? 0
                                                   : s.generated.back();
      arrays.positions[row] = static_cast<int32_t>(position);
      arrays.slots[row] = s.slot;
      arrays.temperature[row] = s.request.sampling.temperature;
      arrays.topK[row] = s.request.sampling.topK;
      arrays.topP[row] = s.request.sampling.topP;
      // Only rows that produce a token consume a draw, so a request's draws
      // do not depend on its prompt length or chunking.
      bool produces = position >= promptLength - 1;
      arrays.uniform[row] = produces ? s.random.nextUniform() : 0.0f;
      if (produces) {
        producingRow[i] = static_cast<int64_t>(row);
        step.withLogits |= s.onToken && s.request.wantsLogits;
      }
    }
  }
  step.rowsOfLive = rowsOf;
  step.entries.clear();
  for (size_t i : arrival)
    step.entries.push_back({live[i].id, rowsOf[i], producingRow[i]});
  if (step.withLogits)
    arrays.logits.resize(batch * static_cast<size_t>(model.vocabSize()));
}

Error Engine::launch(PlannedStep &step, bool ahead) {
  FdcStepArgs args = step.arrays.args(step.batch);
  if (!step.withLogits)
    args.logits = nullptr;
  // Steps with logits run whole: an overlapped step returns none.
  step.overlapped = overlapSteps && model.canOverlapSteps() && !step.withLogits;
  Error err = step.overlapped ? model.launchStep(args, ahead ? step.batch : 0)
                              : model.step(args);
  if (err && step.overlapped && !ahead) {
    // Nothing else is in flight: this engine goes on one step at a time.
    // If that fails too (a device fault), the first error says more.
    overlapSteps = false;
    step.overlapped = false;
    if (!model.step(args))
      err = Error::success();
  }
  if (err)
    return err;
  step.args = args; // as the model completed it (num_slots, max_context)
  // Right after plan(): the live table is as it was planned.
  for (size_t i = 0; i < live.size(); ++i)
    live[i].launchedRows += step.rowsOfLive[i];
  return Error::success();
}

bool Engine::canLaunchAhead(const PlannedStep &inFlight) const {
  if (!inFlight.overlapped || !queued.empty() ||
      inFlight.plannedAt != tableVersion ||
      inFlight.batch != static_cast<int64_t>(live.size()))
    return false;
  // Every live request has one row in the step in flight (batch == live
  // count, and each has at least one), which produces a token.
  for (const Sequence &s : live) {
    int64_t next = s.position + s.launchedRows; // the row ahead's position
    if (next < static_cast<int64_t>(s.request.prompt.size()))
      return false;
    // It must not end by length or context at the step in flight.
    int64_t produced = static_cast<int64_t>(s.generated.size()) + 1;
    if (s.request.maxNewTokens >= 0 && produced >= s.request.maxNewTokens)
      return false;
    if (next >= model.maxContext())
      return false;
    if (s.onToken && s.request.wantsLogits)
      return false;
  }
  return true;
}

void Engine::process(PlannedStep &step) {
  int64_t vocab = model.vocabSize();
  StepArrays &arrays = step.arrays;
  // Tokens, callbacks and finishing in order of arrival, as before any
  // compaction; then the rows that left are compacted away. Requests that
  // left since the step was planned (ended by the step before, or
  // cancelled) are not live: their rows are dropped.
  arrival.resize(live.size());
  for (size_t i = 0; i < live.size(); ++i)
    arrival[i] = i;
  std::sort(arrival.begin(), arrival.end(),
            [&](size_t a, size_t b) { return live[a].id < live[b].id; });
  leaving.assign(live.size(), 0);
  auto entry = step.entries.begin();
  for (size_t i : arrival) {
    Sequence &s = live[i];
    while (entry != step.entries.end() && entry->id < s.id)
      ++entry;
    if (entry == step.entries.end() || entry->id != s.id)
      continue; // not in this step
    s.position += entry->rows;
    s.launchedRows -= entry->rows;
    if (entry->producingRow < 0)
      continue;
    size_t at = static_cast<size_t>(entry->producingRow);
    int32_t next = arrays.nextTokens[at];
    leaving[i] = 1;
    if (next < 0 || next >= vocab) {
      finish(s, FinishReason::Error,
             concat("the model step returned token ", next,
                    ", outside the vocabulary [0, ", vocab, ")"));
      continue;
    }
    s.generated.push_back(next);
    bool logits = step.withLogits && s.request.wantsLogits;
    if (s.onToken)
      deliveries.push_back(
          {s.onToken, next,
           logits ? arrays.logits.data() + at * static_cast<size_t>(vocab)
                  : nullptr});
    int64_t generated = static_cast<int64_t>(s.generated.size());
    if (s.request.eosId >= 0 && next == s.request.eosId)
      finish(s, FinishReason::Eos);
    else if (s.request.maxNewTokens >= 0 && generated >= s.request.maxNewTokens)
      finish(s, FinishReason::Length);
    else if (s.position >= model.maxContext())
      finish(s, FinishReason::ContextFull);
    else
      leaving[i] = 0;
  }
  compactLive();
}

bool Engine::step() {
  if (!aheadInFlight) {
    admitQueued();
    if (live.empty())
      return false;
  }
  stepping = true;
  struct Done {
    bool &flag;
    ~Done() { flag = false; }
  } done{stepping};
  shuffleLast = {};

  PlannedStep &step = plans[current];
  Error stepError = Error::success();
  if (aheadInFlight) {
    aheadInFlight = false; // it is this call's step now
  } else {
    plan(step, /*ahead=*/false);
    stepError = launch(step, /*ahead=*/false);
  }
  // While the step runs, the next one of the same rows goes in behind it.
  // (A device fault of a step not launched ahead shows when this one
  // finishes.)
  if (!stepError && canLaunchAhead(step) && planAndLaunchNext(/*ahead=*/true))
    ++launchedAhead;
  if (!stepError && step.overlapped)
    stepError = model.finishStep(step.args);
  ++steps;
  if (stepError) {
    // A device failure: no sequence of this step has a valid token. Each
    // ends with the error; later steps may still succeed (or fail alike).
    if (aheadInFlight) {
      // Drained: its requests end here.
      (void)model.finishStep(plans[current ^ 1].args);
      aheadInFlight = false;
    }
    for (Sequence &s : live) {
      s.launchedRows = 0;
      finish(s, FinishReason::Error, stepError.message());
    }
    live.clear();
    ++tableVersion;
    return true;
  }
  if (stepObserver)
    stepObserver(step.args);
  process(step);
  if (aheadInFlight)
    current ^= 1;
  else
    launchNext();
  deliver();
  if (live.empty())
    drainAhead();
  return true;
}

void Engine::launchNext() {
  if (!overlapSteps || !model.canOverlapSteps())
    return;
  admitQueued();
  if (live.empty())
    return;
  for (const Sequence &s : live)
    if (s.onToken && s.request.wantsLogits)
      return;
  // Not launched: the next step() plans it again and reports the error.
  if (!planAndLaunchNext(/*ahead=*/false))
    return;
  if (plans[current ^ 1].overlapped)
    ++launchedAhead;
  current ^= 1;
}

bool Engine::planAndLaunchNext(bool ahead) {
  // Planned into the other step's arrays: the step being read keeps its
  // outputs (the deliveries point into its logits).
  PlannedStep &next = plans[current ^ 1];
  std::vector<Xoshiro256> draws;
  for (const Sequence &s : live)
    draws.push_back(s.random);
  plan(next, ahead);
  if (Error err = launch(next, ahead)) {
    // Not launched: the draws are the next step's again.
    (void)err;
    for (size_t i = 0; i < live.size(); ++i)
      live[i].random = draws[i];
    return false;
  }
  aheadInFlight = true;
  return true;
}

void Engine::deliver() {
  struct Clear {
    std::vector<Delivery> &list;
    ~Clear() { list.clear(); } // also when a callback throws
  } clear{deliveries};
  for (const Delivery &delivery : deliveries)
    (*delivery.onToken)(delivery.token, delivery.logits);
}

void Engine::drainAhead() {
  if (!aheadInFlight)
    return;
  // Its requests have all left: only the device's work remains.
  (void)model.finishStep(plans[current].args);
  aheadInFlight = false;
}

bool Engine::cancel(RequestId id) {
  if (stepping)
    return false;
  auto matches = [id](const Sequence &s) { return s.id == id; };
  auto queuedAt = std::find_if(queued.begin(), queued.end(), matches);
  if (queuedAt != queued.end()) {
    finish(*queuedAt, FinishReason::Cancelled);
    queued.erase(queuedAt);
    return true;
  }
  auto liveAt = std::find_if(live.begin(), live.end(), matches);
  if (liveAt == live.end())
    return false;
  finish(*liveAt, FinishReason::Cancelled);
  leaving.assign(live.size(), 0);
  leaving[static_cast<size_t>(liveAt - live.begin())] = 1;
  compactLive();
  return true;
}

std::vector<GenerationResult> Engine::takeFinished() {
  std::vector<GenerationResult> results = std::move(finished);
  finished.clear();
  return results;
}

void Engine::failAll(const std::string &message) {
  for (Sequence &s : queued)
    finish(s, FinishReason::Error, message);
  queued.clear();
  drainAhead();
  for (Sequence &s : live)
    finish(s, FinishReason::Error, message);
  live.clear();
  ++tableVersion;
}

std::vector<GenerationResult> Engine::runToCompletion() {
  while (!idle()) {
    if (step())
      continue;
    // Nothing live and every slot taken elsewhere: none will free.
    for (Sequence &s : queued)
      finish(s, FinishReason::Rejected,
             concat("no free KV-cache slot (num_slots = ", model.numSlots(),
                    ") and none will free"));
    queued.clear();
  }
  return takeFinished();
}
