//===- AsyncEngine.cpp - Requests from any thread, one fused loop ---------===//

#include "fdc/runtime/AsyncEngine.h"

#include <chrono>

using namespace fdc::runtime;

namespace {
EngineOptions waitingForSlots(EngineOptions options) {
  options.waitForSlot = true;
  return options;
}
} // namespace

class AsyncEngine::Call {
public:
  explicit Call(AsyncEngine &engine) : engine(engine) {
    std::lock_guard<std::mutex> lock(engine.mutex);
    ++engine.callers;
  }
  ~Call() {
    std::lock_guard<std::mutex> lock(engine.mutex);
    if (--engine.callers == 0)
      engine.callersDone.notify_all();
  }

private:
  AsyncEngine &engine;
};

AsyncEngine::AsyncEngine(Model &model, EngineOptions options, SlotWait slotWait)
    : engine(model, waitingForSlots(options)), slotWait(slotWait),
      numSlots(model.numSlots()), thread([this] { loop(); }) {}

AsyncEngine::~AsyncEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  workToDo.notify_all();
  thread.join();
  // Every request has a result now: waiters wake and return.
  std::unique_lock<std::mutex> lock(mutex);
  callersDone.wait(lock, [&] { return callers == 0; });
}

Expected<RequestId> AsyncEngine::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return std::move(submitAll(std::move(one)).front());
}

std::vector<Expected<RequestId>>
AsyncEngine::submitAll(std::vector<GenerationRequest> requests) {
  Call call(*this);
  std::vector<Expected<RequestId>> ids;
  ids.reserve(requests.size());
  // validate() reads only the request and the model's fixed sizes.
  for (const GenerationRequest &request : requests) {
    if (Error err = engine.validate(request))
      ids.emplace_back(std::move(err));
    else
      ids.emplace_back(RequestId(0)); // numbered below
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = 0; i < requests.size(); ++i) {
      if (!ids[i])
        continue;
      if (stopping) {
        ids[i] = createError("the engine is stopping");
        continue;
      }
      RequestId id = nextId++;
      ids[i] = id;
      incoming.emplace_back(id, std::move(requests[i]));
      running.insert(id);
    }
  }
  workToDo.notify_one();
  return ids;
}

bool AsyncEngine::cancel(RequestId id) {
  Call call(*this);
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
  if (onLoopThread())
    return createError("wait on the engine's own thread (from a token "
                       "callback) would never end");
  Call call(*this);
  std::unique_lock<std::mutex> lock(mutex);
  // Woken when the result is there, or when another waiter took it.
  resultReady.wait(lock,
                   [&] { return results.count(id) || !running.count(id); });
  auto node = results.extract(id);
  if (!node)
    return createError("no request ", id,
                       " is running or has a result to return (each result "
                       "is returned once)");
  return std::move(node.mapped());
}

Expected<std::optional<GenerationResult>> AsyncEngine::poll(RequestId id) {
  Call call(*this);
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
  bool stalled = false;
  /// Engine ids of the requests cancelled because no slot will free.
  std::unordered_set<RequestId> noSlot;
  for (;;) {
    std::deque<std::pair<RequestId, GenerationRequest>> arrived;
    std::vector<RequestId> cancelled;
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mutex);
      // The engine is this thread's alone; reading it here is safe.
      auto hasWork = [&] {
        return stopping || !incoming.empty() || !cancellations.empty() ||
               (!engine.idle() && !stalled);
      };
      if (stalled)
        // Requests wait for slots held outside this engine: look again
        // now and then instead of spinning.
        workToDo.wait_for(lock, std::chrono::milliseconds(1), hasWork);
      else
        workToDo.wait(lock, hasWork);
      arrived.swap(incoming);
      cancelled.swap(cancellations);
      stop = stopping;
    }
    std::vector<GenerationResult> refused;
    try {
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
        stalled = !engine.step() && !engine.idle();
        if (stalled && slotWait == SlotWait::WhileRunning) {
          // Nothing of this engine runs, so every slot is held outside it:
          // what waits ends now (as Rejected, below).
          for (auto &[id, engineId] : engineIds)
            if (engine.cancel(engineId))
              noSlot.insert(engineId);
          stalled = false;
        }
      }
    } catch (const std::exception &e) {
      // A callback threw, or the step ran out of memory: what ran cannot
      // go on.
      engine.failAll(concat("the engine's step failed: ", e.what()));
    } catch (...) {
      engine.failAll("the engine's step failed: unknown exception");
    }
    std::vector<GenerationResult> finishedNow = engine.takeFinished();
    for (GenerationResult &result : finishedNow) {
      if (noSlot.erase(result.id) && result.reason == FinishReason::Cancelled) {
        result.reason = FinishReason::Rejected;
        result.error = concat("no free KV-cache slot (num_slots = ", numSlots,
                              ") and none will free");
      }
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
