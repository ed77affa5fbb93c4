//===- AsyncEngine.h - Requests from any thread, one fused loop -*- C++ -*-===//
//
// Flover's temporal fusion: a loop thread runs the Engine's fused step over
// every live request, and requests submitted from any thread join it at the
// next iteration instead of waiting for a batch to end; they leave when they
// finish or are cancelled. A request that finds every KV-cache slot taken
// waits in the queue, in order, until one frees (SlotWait says whether also
// for one held outside the engine). Submitting returns an id at once; tokens
// stream to the request's onToken callback (on the loop thread), and its
// result is waited for or polled by id. The C API's synchronous calls
// (fdc_generate, fdc_generate_batch) submit their requests to one and wait.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_ASYNCENGINE_H
#define FDC_RUNTIME_ASYNCENGINE_H

#include "fdc/runtime/Engine.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

namespace fdc::runtime {

/// What a request that finds every KV-cache slot taken does.
enum class SlotWait {
  /// Waits, in order, until a slot frees: one of this engine's requests
  /// finishes, or a holder outside the engine releases one.
  UntilFree,
  /// Waits only while this engine runs requests (their slots free as they
  /// finish). When it runs none, every slot is held outside it and none of
  /// its own will free: the requests waiting finish as Rejected ("no free
  /// KV-cache slot ... and none will free"), as with
  /// Engine::runToCompletion, instead of waiting for that holder.
  WhileRunning,
};

class AsyncEngine {
public:
  /// Starts the loop thread over `model`, which the engine then uses alone
  /// until it is destroyed. `options.waitForSlot` is always on; `slotWait`
  /// says for which slots a request waits.
  explicit AsyncEngine(Model &model, EngineOptions options = {},
                       SlotWait slotWait = SlotWait::UntilFree);
  /// Cancels every request left, stops the loop thread and joins it, then
  /// waits for the calls still inside the engine (a wait() wakes with its
  /// request's result) to return. No call may start once it has begun, and
  /// it must not run on the loop thread (from a callback): onLoopThread().
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine &) = delete;
  AsyncEngine &operator=(const AsyncEngine &) = delete;

  /// Checks the request (Engine::validate) and queues it for the loop's
  /// next iteration; returns its id at once. Thread-safe. An invalid request
  /// is refused here and queues nothing.
  Expected<RequestId> submit(GenerationRequest request);

  /// Submits several requests at once: each is checked as by submit(), and
  /// the valid ones are queued together, in order, so they join the same
  /// iteration (its step holds as many of them as there are free slots; the
  /// rest wait in order). Returns each request's id, or why it was refused;
  /// a refused request affects no other. Thread-safe.
  std::vector<Expected<RequestId>>
  submitAll(std::vector<GenerationRequest> requests);

  /// Asks to end a request that has not finished: at the loop's next
  /// iteration it finishes as Cancelled with the tokens generated until
  /// then, unless the step running now finishes it first. False if `id` is
  /// not a request of this engine that is still running. Thread-safe, also
  /// from a callback.
  bool cancel(RequestId id);

  /// Blocks until request `id` has finished and returns its result. Each
  /// result is returned once (by wait or poll); an unknown id, or one whose
  /// result was already returned (also by another waiter), is an error, and
  /// so is a wait on the loop thread (from a callback), which could never
  /// end. Thread-safe.
  Expected<GenerationResult> wait(RequestId id);

  /// The result of request `id` if it has finished (returned once), or
  /// nullopt while it runs; an unknown id is an error. Thread-safe.
  Expected<std::optional<GenerationResult>> poll(RequestId id);

  /// Requests submitted and not yet finished.
  size_t pendingCount() const;
  /// Steps the loop has run.
  int64_t stepsRun() const;
  /// Whether the calling thread is the loop thread (inside a callback).
  bool onLoopThread() const {
    return std::this_thread::get_id() == thread.get_id();
  }

private:
  /// Counts a public call in `callers` for its duration.
  class Call;

  void loop();
  /// Moves what the loop's iteration collected into the results and wakes
  /// the waiters.
  void publish(std::vector<GenerationResult> finishedNow);

  Engine engine;
  SlotWait slotWait;
  int64_t numSlots;

  mutable std::mutex mutex;
  std::condition_variable workToDo, resultReady;
  bool stopping = false;
  /// Calls inside the engine; the destructor waits for none.
  int64_t callers = 0;
  std::condition_variable callersDone;
  RequestId nextId = 1;
  /// Submitted, not yet handed to the engine (loop thread) in order.
  std::deque<std::pair<RequestId, GenerationRequest>> incoming;
  std::vector<RequestId> cancellations;
  /// Submitted and not finished; finished and not yet returned.
  std::unordered_set<RequestId> running;
  std::unordered_map<RequestId, GenerationResult> results;
  int64_t steps = 0;

  /// The loop thread's own: the engine's id of each request and back.
  std::unordered_map<RequestId, RequestId> engineIds, asyncIds;

  std::thread thread;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_ASYNCENGINE_H
