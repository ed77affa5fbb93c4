//===- AsyncEngine.cpp - Requests from any thread, one fused loop ---------===//

#include "fdc/runtime/AsyncEngine.h"

using namespace fdc::runtime;

namespace {
EngineOptions waitingForSlots(EngineOptions options) {
  options.waitForSlot = true;
  return options;
}
} // namespace

AsyncEngine::AsyncEngine(Model &model, EngineOptions options)
    : engine(model, waitingForSlots(options)), thread([this] { loop(); }) {}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  workToDo.notify_all();
  thread.join();
}

Expected<RequestId> AsyncEngine::submit(GenerationRequest request) {
  // validate() reads only the request and the model's fixed sizes.
  if (Error err = engine.validate(request))
    return err;
  RequestId id;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping)
      return createError("the engine is stopping");
    id = nextId++;
    incoming.emplace_back(id, std::move(request));
    running.insert(id);
  }
  workToDo.notify_one();
  return id;
}

bool AsyncEngine::cancel(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!running.count(id))
      return false;
    cancellations.push_back(id);
  }
  workToDo.notify_one();
  return true;
}

Expected<GenerationResult> AsyncEngine::wait(RequestId id) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!running.count(id) && !results.count(id))
    return createError("no request ", id,
                       " is running or has a result to return (each result "
                       "is returned once)");
  resultReady.wait(lock, [&] { return results.count(id) != 0; });
  auto node = results.extract(id);
  return std::move(node.mapped());
}

Expected<std::optional<GenerationResult>> AsyncEngine::poll(RequestId id) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = results.find(id);
  if (found != results.end()) {
    GenerationResult result = std::move(found->second);
    results.erase(found);
    return std::optional<GenerationResult>(std::move(result));
  }
  if (!running.count(id))
    return createError("no request ", id,
                       " is running or has a result to return (each result "
                       "is returned once)");
  return std::optional<GenerationResult>();
}

size_t AsyncEngine::pendingCount() const {
  std::lock_guard<std::mutex> lock(mutex);
  return running.size();
}

int64_t AsyncEngine::stepsRun() const {
  std::lock_guard<std::mutex> lock(mutex);
  return steps;
}

void AsyncEngine::publish(std::vector<GenerationResult> finishedNow) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (GenerationResult &result : finishedNow) {
      running.erase(result.id);
      RequestId id = result.id;
      results.emplace(id, std::move(result));
    }
    steps = engine.stepsRun();
  }
  resultReady.notify_all();
}

void AsyncEngine::loop() {
  for (;;) {
    std::deque<std::pair<RequestId, GenerationRequest>> arrived;
    std::vector<RequestId> cancelled;
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mutex);
      // The engine is this thread's alone; reading it here is safe.
      workToDo.wait(lock, [&] {
        return stopping || !incoming.empty() || !cancellations.empty() ||
               !engine.idle();
      });
      arrived.swap(incoming);
      cancelled.swap(cancellations);
      stop = stopping;
    }
    std::vector<GenerationResult> refused;
    for (auto &[id, request] : arrived) {
      Expected<RequestId> engineId = engine.submit(std::move(request));
      if (!engineId) { // validated in submit(); kept for safety
        refused.push_back(
            {id, {}, FinishReason::Rejected, engineId.error().message()});
        continue;
      }
      engineIds[id] = *engineId;
      asyncIds[*engineId] = id;
    }
    if (stop) {
      for (auto &[id, engineId] : engineIds)
        engine.cancel(engineId);
    } else {
      for (RequestId id : cancelled) {
        auto found = engineIds.find(id);
        if (found != engineIds.end())
          engine.cancel(found->second);
      }
      engine.step();
    }
    std::vector<GenerationResult> finishedNow = engine.takeFinished();
    for (GenerationResult &result : finishedNow) {
      RequestId id = asyncIds.at(result.id);
      asyncIds.erase(result.id);
      engineIds.erase(id);
      result.id = id;
    }
    finishedNow.insert(finishedNow.end(),
                       std::make_move_iterator(refused.begin()),
                       std::make_move_iterator(refused.end()));
    publish(std::move(finishedNow));
    if (stop)
      return;
  }
}
