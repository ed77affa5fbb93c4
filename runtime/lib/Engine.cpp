//===- Engine.cpp - Batched generation over a loaded model ----------------===//

#include "fdc/runtime/Engine.h"

#include <algorithm>

using namespace fdc::runtime;

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
  }
  return "?";
}

Engine::Engine(Model &model) : model(model) {}

Engine::~Engine() {
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
  queued.push_back(
      Sequence{id, std::move(request), -1, 0, {}, Xoshiro256(seed)});
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
    Sequence sequence = std::move(queued.front());
    queued.pop_front();
    std::optional<int32_t> slot = model.kvCache().acquireSlot();
    if (!slot) {
      finish(
          sequence, FinishReason::Rejected,
          concat("no free KV-cache slot (num_slots = ", model.numSlots(), ")"));
      continue;
    }
    sequence.slot = *slot;
    live.push_back(std::move(sequence));
  }
}

void Engine::step() {
  admitQueued();
  if (live.empty())
    return;

  size_t batch = live.size();
  int64_t vocab = model.vocabSize();
  tokens.resize(batch);
  positions.resize(batch);
  slots.resize(batch);
  temperature.resize(batch);
  topK.resize(batch);
  topP.resize(batch);
  uniform.resize(batch);
  nextTokens.assign(batch, -1);
  logits.assign(batch * static_cast<size_t>(vocab), 0.0f);

  for (size_t i = 0; i < batch; ++i) {
    Sequence &s = live[i];
    int64_t promptLength = static_cast<int64_t>(s.request.prompt.size());
    tokens[i] = s.position < promptLength ? s.request.prompt[s.position]
                                          : s.generated.back();
    positions[i] = static_cast<int32_t>(s.position);
    slots[i] = s.slot;
    temperature[i] = s.request.sampling.temperature;
    topK[i] = s.request.sampling.topK;
    topP[i] = s.request.sampling.topP;
    // Only steps that produce a token consume a draw, so a request's draws
    // do not depend on its prompt length.
    uniform[i] = s.position >= promptLength - 1 ? s.random.nextUniform() : 0.0f;
  }

  FdcStepArgs args = {};
  args.batch = static_cast<int64_t>(batch);
  args.tokens = tokens.data();
  args.positions = positions.data();
  args.slots = slots.data();
  args.temperature = temperature.data();
  args.top_k = topK.data();
  args.top_p = topP.data();
  args.uniform = uniform.data();
  args.logits = logits.data();
  args.next_tokens = nextTokens.data();
  Error stepError = model.step(args);
  ++steps;
  if (stepError) {
    // A device failure: no sequence of this step has a valid token. Each
    // ends with the error; later steps may still succeed (or fail alike).
    for (Sequence &s : live)
      finish(s, FinishReason::Error, stepError.message());
    live.clear();
    return;
  }
  if (stepObserver)
    stepObserver(args);

  std::vector<Sequence> stillLive;
  stillLive.reserve(batch);
  for (size_t i = 0; i < batch; ++i) {
    Sequence &s = live[i];
    int64_t promptLength = static_cast<int64_t>(s.request.prompt.size());
    bool producesToken = s.position >= promptLength - 1;
    ++s.position;
    if (!producesToken) {
      stillLive.push_back(std::move(s));
      continue;
    }
    int32_t next = nextTokens[i];
    if (next < 0 || next >= vocab) {
      finish(s, FinishReason::Error,
             concat("the model step returned token ", next,
                    ", outside the vocabulary [0, ", vocab, ")"));
      continue;
    }
    s.generated.push_back(next);
    if (s.request.onToken)
      s.request.onToken(next, logits.data() + i * static_cast<size_t>(vocab));
    int64_t generated = static_cast<int64_t>(s.generated.size());
    if (s.request.eosId >= 0 && next == s.request.eosId)
      finish(s, FinishReason::Eos);
    else if (s.request.maxNewTokens >= 0 && generated >= s.request.maxNewTokens)
      finish(s, FinishReason::Length);
    else if (s.position >= model.maxContext())
      finish(s, FinishReason::ContextFull);
    else
      stillLive.push_back(std::move(s));
  }
  live = std::move(stillLive);
}

std::vector<GenerationResult> Engine::takeFinished() {
  std::vector<GenerationResult> results = std::move(finished);
  finished.clear();
  return results;
}

std::vector<GenerationResult> Engine::runToCompletion() {
  while (!idle())
    step();
  return takeFinished();
}
