//===- Tuner.h - Timing a tuning library's candidate kernels ----*- C++ -*-===//
//
// fdc tune: loads a tuning library (fdc compile --tuning-candidates, a cuda
// target) on its GPU and times, for every linear signature of its manifest
// and every M bucket, each candidate kernel through fdc_tune_launch: random
// weights rotated over enough copies to exceed 3x the device's L2 cache,
// the launches captured in a graph and replayed, timed with events (the
// median of several replays). Tuning.h turns the timings into the tuning
// file.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_TUNER_H
#define FDC_RUNTIME_TUNER_H

#include "fdc/runtime/Error.h"
#include "fdc/runtime/Tuning.h"

#include <functional>
#include <string>
#include <vector>

namespace fdc::runtime {

struct TuneOptions {
  std::string library;
  /// -1: $FDC_CUDA_DEVICE, else 0.
  int device = -1;
  /// Ascending batch sizes, each >= 1.
  std::vector<int64_t> buckets = defaultTuneBuckets();
  /// Timed replays per candidate (the median counts), >= 1.
  int replays = 7;
  /// Device time one replay of a graph aims at; more launches per graph
  /// make short kernels measurable, fewer keep long ones in the budget.
  double replayMicros = 2000;
  /// A candidate whose single-launch probe is this many times slower than
  /// the bucket's best so far is not replayed (its probe time is kept).
  double pruneFactor = 3;
  /// Called with every progress line (no newline).
  std::function<void(const std::string &)> progress;
};

/// Checks that `options.library` is a tuning library for cuda (refusing
/// anything else with a message saying what it is), times every candidate
/// and returns the measurements.
Expected<TuningResult> tuneLibrary(const TuneOptions &options);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_TUNER_H
