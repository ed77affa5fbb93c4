//===- StepGraph.h - A GPU step captured as graphs -------------*- C++ -*-===//
//
// The step of one batch size, captured once and replayed. A step's launches
// depend only on the batch size (every buffer is at a fixed address; the
// per-row inputs are read from device memory), so replaying the capture is
// running the step.
//
// A tensor-parallel rank's step also calls its group's collectives. Where
// the group allows it (NCCL: every rank captures and replays from its own
// thread) they are captured with the kernels, and the step is one graph.
// Otherwise the capture is cut at each collective call into segments, and a
// replay runs each segment's graph, then the recorded call through the
// rank's real FdcCollectiveApi (the same buffers and sizes every time), on
// the same stream.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_LIB_STEPGRAPH_H
#define FDC_RUNTIME_LIB_STEPGRAPH_H

#include "GpuDevice.h"
#include "KernelLauncher.h"

#include "fdc/runtime/Error.h"
#include "fdc_model_abi.h"

#include <memory>
#include <string>
#include <vector>

namespace fdc::runtime {

class StepGraph {
public:
  ~StepGraph();
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;

  /// What a capture does with the step's collective calls.
  enum class Collectives {
    /// Calls them while capturing: they enqueue into the graph.
    Captured,
    /// Ends a segment at each, to call it between the segments' replays.
    CutTheCapture,
  };

  /// Captures `step` run with `onDevice` (its launches go through `launcher`
  /// to `device`'s stream). Null when the device cannot capture (the caller
  /// then runs steps eagerly); an error when a launch or the capture fails
  /// (the caller names the batch size), with every graph made so far
  /// destroyed and the stream out of capture mode.
  static Expected<std::unique_ptr<StepGraph>>
  capture(GpuDevice &device, KernelLauncher &launcher, FdcModelStepFn step,
          const FdcStepArgs &onDevice, Collectives collectives);

  /// Enqueues the step: every segment's graph and, after each but the last,
  /// its collective through `collective` (the rank's; null when the step
  /// has no collectives or they were captured).
  Error replay(const FdcCollectiveApi *collective);

  /// The kernels the captured step launched (KernelLauncher::launchedList),
  /// which name the suspects of a fault found after a replay.
  const std::string &launchedList() const { return launched; }

private:
  /// A collective call the step made, as it made it.
  struct CollectiveCall {
    enum Kind { AllReduceSum, AllGatherColumns } kind;
    const void *input;
    void *output;
    void *workspace;
    int64_t sizes[3]; // count, dtype | rows, columns, dtype
  };
  struct Segment {
    GpuDevice::GraphHandle graph = nullptr;
    bool callsAfter = false;
    CollectiveCall call{};
  };

  explicit StepGraph(GpuDevice &device) : device(device) {}
  /// Ends the segment being captured and, after it, records `call` and
  /// begins the next one. Returns 0, or non-zero (the step then stops)
  /// when the capture failed.
  int cut(const CollectiveCall &call);

  static int captureAllReduceSum(void *context, const void *input, void *output,
                                 int64_t count, int64_t dtype);
  static int captureAllGatherColumns(void *context, const void *input,
                                     void *output, void *workspace,
                                     int64_t rows, int64_t columns,
                                     int64_t dtype);

  GpuDevice &device;
  std::vector<Segment> segments;
  /// The first failure while capturing.
  std::string captureError;
  /// Whether the stream is capturing a segment.
  bool capturing = false;
  std::string launched;
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_LIB_STEPGRAPH_H
