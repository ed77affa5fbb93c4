//===- StepGraph.cpp - A GPU step captured as graphs ----------------------===//

#include "StepGraph.h"

using namespace fdc::runtime;

StepGraph::~StepGraph() {
  for (Segment &segment : segments)
    device.destroyGraph(segment.graph);
}

Expected<std::unique_ptr<StepGraph>>
StepGraph::capture(GpuDevice &device, KernelLauncher &launcher,
                   FdcModelStepFn step, const FdcStepArgs &onDevice,
                   Collectives collectives) {
  std::unique_ptr<StepGraph> graph(new StepGraph(device));
  DeviceStatus began = device.beginCapture();
  if (began == GpuDevice::kNotSupported)
    return std::unique_ptr<StepGraph>();
  if (began)
    return device.fail(device.vendor().beginCaptureCall, began);
  graph->capturing = true;
  // Unless they are captured, the step calls this in place of its rank's
  // collectives: each call cuts the capture.
  FdcStepArgs captured = onDevice;
  FdcCollectiveApi cutter = {};
  if (onDevice.collective && collectives == Collectives::CutTheCapture) {
    cutter = *onDevice.collective;
    cutter.context = graph.get();
    cutter.all_reduce_sum = &StepGraph::captureAllReduceSum;
    cutter.all_gather_columns = &StepGraph::captureAllGatherColumns;
    captured.collective = &cutter;
  }
  launcher.beginStep();
  step(&captured);
  if (graph->capturing) {
    // The last segment (the only one without a collective after it); ended
    // even after a failed launch, so the stream leaves capture mode.
    GpuDevice::GraphHandle last = nullptr;
    DeviceStatus ended = device.endCapture(last);
    graph->capturing = false;
    if (ended && graph->captureError.empty())
      graph->captureError =
          device
              .fail(concat("ending the capture (",
                           device.vendor().endCaptureCalls, ")"),
                    ended)
              .message();
    if (ended || !graph->captureError.empty() ||
        !launcher.launchError().empty())
      device.destroyGraph(last);
    else
      graph->segments.push_back({last, false, {}});
  }
  if (!launcher.launchError().empty())
    return createError(launcher.launchError());
  if (!graph->captureError.empty())
    return createError(graph->captureError);
  graph->launched = launcher.launchedList();
  return graph;
}

int StepGraph::cut(const CollectiveCall &call) {
  if (!captureError.empty() || !capturing)
    return 1;
  size_t collective = segments.size() + 1;
  GpuDevice::GraphHandle segment = nullptr;
  DeviceStatus ended = device.endCapture(segment);
  capturing = false;
  if (ended) {
    device.destroyGraph(segment);
    captureError =
        device
            .fail(concat("ending the capture before collective call ",
                         collective, " (", device.vendor().endCaptureCalls,
                         ")"),
                  ended)
            .message();
    return 1;
  }
  segments.push_back({segment, true, call});
  if (DeviceStatus began = device.beginCapture()) {
    captureError = device
                       .fail(concat(device.vendor().beginCaptureCall,
                                    " after collective call ", collective),
                             began)
                       .message();
    return 1;
  }
  capturing = true;
  return 0;
}

int StepGraph::captureAllReduceSum(void *context, const void *input,
                                   void *output, int64_t count, int64_t dtype) {
  CollectiveCall call{
      CollectiveCall::AllReduceSum, input, output, nullptr, {count, dtype, 0}};
  return static_cast<StepGraph *>(context)->cut(call);
}

int StepGraph::captureAllGatherColumns(void *context, const void *input,
                                       void *output, void *workspace,
                                       int64_t rows, int64_t columns,
                                       int64_t dtype) {
  CollectiveCall call{CollectiveCall::AllGatherColumns,
                      input,
                      output,
                      workspace,
                      {rows, columns, dtype}};
  return static_cast<StepGraph *>(context)->cut(call);
}

Error StepGraph::replay(const FdcCollectiveApi *collective) {
  for (const Segment &segment : segments) {
    if (DeviceStatus status = device.replay(segment.graph))
      return device.fail(device.vendor().replayCall, status);
    if (!segment.callsAfter)
      continue;
    if (!collective)
      return createError("the step's graph calls a collective, but the step "
                         "has no tensor-parallel group");
    const CollectiveCall &call = segment.call;
    int failed =
        call.kind == CollectiveCall::AllReduceSum
            ? collective->all_reduce_sum(collective->context, call.input,
                                         call.output, call.sizes[0],
                                         call.sizes[1])
            : collective->all_gather_columns(
                  collective->context, call.input, call.output, call.workspace,
                  call.sizes[0], call.sizes[1], call.sizes[2]);
    if (failed)
      return createError("a collective call of the step graph failed (the "
                         "tensor-parallel group recorded why)");
  }
  return Error::success();
}
