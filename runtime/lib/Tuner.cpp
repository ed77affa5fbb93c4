//===- Tuner.cpp - Timing a tuning library's candidate kernels ------------===//

#include "fdc/runtime/Tuner.h"

#include "GpuDevice.h"
#include "KernelLauncher.h"

#include "fdc/runtime/ModelLibrary.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>

using namespace fdc::runtime;

namespace {

/// A device allocation freed with its device.
class DeviceBuffer {
public:
  DeviceBuffer(GpuDevice &device) : device(&device) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : device(other.device), address(other.address) {
    other.address = 0;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer() {
    if (address)
      device->deallocate(address);
  }
  Error allocate(uint64_t bytes, const char *what) {
    if (DeviceStatus s =
            device->allocate(address, std::max<uint64_t>(bytes, 256)))
      return createError("cannot allocate ", bytes, " bytes of ", what, ": ",
                         device->describe(s));
    return Error::success();
  }
  DeviceAddress get() const { return address; }

private:
  GpuDevice *device;
  DeviceAddress address = 0;
};

/// Random values of `dtype` in about [-0.06, 0.06] (no NaN or infinity).
std::vector<uint8_t> randomValues(const std::string &dtype, uint64_t count,
                                  uint64_t seed) {
  int64_t bytes = dtypeBytes(dtype);
  std::vector<uint8_t> data(count * bytes);
  std::mt19937_64 rng(seed);
  for (uint64_t i = 0; i < count; i += 4) {
    uint64_t word = rng();
    for (uint64_t j = i; j < std::min(count, i + 4); ++j, word >>= 16) {
      uint16_t bits = static_cast<uint16_t>(word);
      if (dtype == "bf16") {
        // Sign, exponent 2^-8..2^-5, 7 random mantissa bits.
        uint16_t value =
            (bits & 0x8000) | ((119 + ((bits >> 7) & 3)) << 7) | (bits & 0x7f);
        std::memcpy(&data[j * 2], &value, 2);
      } else if (dtype == "f16") {
        uint16_t value =
            (bits & 0x8000) | ((7 + ((bits >> 10) & 3)) << 10) | (bits & 0x3ff);
        std::memcpy(&data[j * 2], &value, 2);
      } else {
        float value = (static_cast<float>(bits) / 65535.0f - 0.5f) * 0.12f;
        std::memcpy(&data[j * 4], &value, 4);
      }
    }
  }
  return data;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

class Tuner {
public:
  Tuner(const TuneOptions &options, const ModelLibrary &library,
        OpenedGpuDevice &opened, FdcTuneLaunchFn launchFn)
      : options(options), library(library), device(*opened.device),
        launcher(*opened.device, /*syncLaunches=*/false), launchFn(launchFn) {}

  Error init(const std::string &image) {
    if (Error err = launcher.resolveKernels(library, image))
      return err;
    if (DeviceStatus s = device.cacheBytes(l2Bytes))
      return device.fail("querying the L2 cache size", s);
    if (DeviceStatus s = device.createEvent(start, GpuDevice::EventUse::Timing))
      return device.fail("creating a timing event", s);
    if (DeviceStatus s = device.createEvent(end, GpuDevice::EventUse::Timing))
      return device.fail("creating a timing event", s);
    return Error::success();
  }
  ~Tuner() {
    device.destroyEvent(start);
    device.destroyEvent(end);
  }

  Expected<SignatureTimings> tune(size_t index, size_t total,
                                  const TuneSignature &signature);

private:
  /// One call of fdc_tune_launch; fails with the launch error.
  Error call(FdcTuneArgs args) {
    launcher.beginStep();
    args.device = launcher.deviceApi();
    launchFn(&args);
    if (!launcher.launchError().empty())
      return createError(launcher.launchError());
    return Error::success();
  }
  /// Device microseconds of one call (after a warm-up call).
  Expected<double> probe(const FdcTuneArgs &args);
  /// Median microseconds per call of `launches` calls rotating over the
  /// weight copies, captured in a graph and replayed.
  Expected<double> replayed(FdcTuneArgs args, int64_t launches);

  const TuneOptions &options;
  const ModelLibrary &library;
  GpuDevice &device;
  KernelLauncher launcher;
  FdcTuneLaunchFn launchFn;
  uint64_t l2Bytes = 0;
  GpuDevice::EventHandle start = nullptr, end = nullptr;
  std::vector<DeviceAddress> weights;
};

Expected<double> Tuner::probe(const FdcTuneArgs &args) {
  if (Error err = call(args))
    return err;
  if (DeviceStatus s = device.synchronize())
    return device.fail("running a candidate", s);
  if (DeviceStatus s = device.recordEvent(start))
    return device.fail("recording an event", s);
  if (Error err = call(args))
    return err;
  if (DeviceStatus s = device.recordEvent(end))
    return device.fail("recording an event", s);
  float ms = 0;
  if (DeviceStatus s = device.elapsedMilliseconds(start, end, ms))
    return device.fail("timing a candidate", s);
  return ms * 1000.0;
}

Expected<double> Tuner::replayed(FdcTuneArgs args, int64_t launches) {
  if (DeviceStatus s = device.beginCapture())
    return device.fail("capturing a graph", s);
  Error launchError = Error::success();
  for (int64_t i = 0; i < launches && !launchError; ++i) {
    args.weight = reinterpret_cast<const void *>(
        static_cast<uintptr_t>(weights[i % weights.size()]));
    launchError = call(args);
  }
  GpuDevice::GraphHandle graph = nullptr;
  DeviceStatus ended = device.endCapture(graph);
  if (launchError) {
    device.destroyGraph(graph);
    return launchError;
  }
  if (ended)
    return device.fail("capturing a graph", ended);
  std::vector<double> micros;
  Error err = Error::success();
  for (int r = 0; r <= options.replays && !err; ++r) {
    if (DeviceStatus s = device.recordEvent(start))
      err = device.fail("recording an event", s);
    else if (DeviceStatus s = device.replay(graph))
      err = device.fail("replaying a graph", s);
    else if (DeviceStatus s = device.recordEvent(end))
      err = device.fail("recording an event", s);
    float ms = 0;
    if (!err)
      if (DeviceStatus s = device.elapsedMilliseconds(start, end, ms))
        err = device.fail("timing a graph", s);
    if (!err && r > 0) // the first replay warms up
      micros.push_back(ms * 1000.0 / launches);
  }
  device.destroyGraph(graph);
  if (err)
    return err;
  return median(micros);
}

Expected<SignatureTimings> Tuner::tune(size_t index, size_t total,
                                       const TuneSignature &tuned) {
  const LinearSignature &sig = tuned.signature;
  uint64_t weightBytes = sig.n * sig.k * dtypeBytes(sig.dtype);
  // Enough copies that one rotation exceeds 3x the L2 cache: every launch
  // reads its weight from memory, as in a model's step.
  uint64_t copies = 3 * l2Bytes / weightBytes + 1;
  int64_t maxBatch = options.buckets.back();
  uint64_t inputBytes = maxBatch * sig.k * dtypeBytes(tuned.inputDType);
  uint64_t outBytes = maxBatch * tuned.outFeatures * dtypeBytes(tuned.outDType);

  std::vector<DeviceBuffer> weightBuffers;
  weights.clear();
  {
    std::vector<uint8_t> host = randomValues(sig.dtype, sig.n * sig.k, index);
    for (uint64_t c = 0; c < copies; ++c) {
      weightBuffers.emplace_back(device);
      if (Error err = weightBuffers.back().allocate(weightBytes, "weights"))
        return err;
      weights.push_back(weightBuffers.back().get());
      if (DeviceStatus s =
              device.copyToDevice(weights.back(), host.data(), weightBytes))
        return device.fail("uploading weights", s);
    }
    if (DeviceStatus s = device.synchronize())
      return device.fail("uploading weights", s);
  }
  DeviceBuffer input(device), out(device), bias(device), residual(device),
      workspace(device);
  std::vector<uint8_t> hostInput =
      randomValues(tuned.inputDType, maxBatch * sig.k, 1000 + index);
  // Bias and residual: zeros of the widest element type.
  uint64_t residualBytes = maxBatch * tuned.outFeatures * 4;
  if (Error err = input.allocate(inputBytes, "input"))
    return err;
  if (Error err = out.allocate(outBytes, "output"))
    return err;
  if (Error err = bias.allocate(sig.n * 4, "bias"))
    return err;
  if (Error err = residual.allocate(residualBytes, "residual"))
    return err;
  // The candidates' scratch at the largest M (none when they need none).
  uint64_t workspaceBytes = maxBatch * tuned.workspaceBytesPerRow;
  if (workspaceBytes)
    if (Error err = workspace.allocate(workspaceBytes, "workspace"))
      return err;
  if (DeviceStatus s =
          device.copyToDevice(input.get(), hostInput.data(), inputBytes))
    return device.fail("uploading the input", s);
  if (DeviceStatus s = device.fill(bias.get(), 0, sig.n * 4))
    return device.fail("zeroing the bias", s);
  if (DeviceStatus s = device.fill(residual.get(), 0, residualBytes))
    return device.fail("zeroing the residual", s);
  if (DeviceStatus s = device.synchronize())
    return device.fail("uploading the input", s);

  auto pointer = [](DeviceAddress address) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
  };
  SignatureTimings timings;
  timings.signature = tuned;
  timings.buckets = options.buckets;
  for (int64_t batch : options.buckets) {
    FdcTuneArgs args = {};
    args.signature = static_cast<int64_t>(index);
    args.batch = batch;
    args.input = pointer(input.get());
    args.weight = pointer(weights[0]);
    args.bias = sig.bias ? pointer(bias.get()) : nullptr;
    args.residual = sig.residual ? pointer(residual.get()) : nullptr;
    args.out = pointer(out.get());
    args.workspace = workspaceBytes ? pointer(workspace.get()) : nullptr;
    std::vector<std::optional<double>> micros(tuned.candidates.size());
    std::optional<double> best;
    size_t skipped = 0, failed = 0;
    std::string firstFailure;
    for (size_t c = 0; c < tuned.candidates.size(); ++c) {
      args.candidate = static_cast<int64_t>(c);
      Expected<double> probed = probe(args);
      if (!probed) {
        ++failed;
        if (firstFailure.empty())
          firstFailure = concat(tuned.candidates[c].describe(), ": ",
                                probed.error().message());
        // A fault poisons the context: later calls fail too; stop here.
        if (DeviceStatus s = device.synchronize())
          return createError(sig.describe(), " M=", batch, ": ", firstFailure,
                             " (", device.describe(s), ")");
        continue;
      }
      if (best && *probed > options.pruneFactor * *best) {
        micros[c] = *probed;
        ++skipped;
        continue;
      }
      int64_t launches = static_cast<int64_t>(
          std::ceil(options.replayMicros / std::max(*probed, 1.0)));
      launches = std::clamp<int64_t>(launches, static_cast<int64_t>(copies),
                                     std::max<int64_t>(copies, 512));
      Expected<double> measured = replayed(args, launches);
      if (!measured)
        return createError(sig.describe(), " M=", batch, " ",
                           tuned.candidates[c].describe(), ": ",
                           measured.error().message());
      micros[c] = *measured;
      if (!best || *measured < *best)
        best = *measured;
    }
    int winner = selectWinner(micros);
    if (winner < 0)
      return createError(sig.describe(), " M=", batch,
                         ": no candidate ran: ", firstFailure);
    double us = *micros[winner];
    double bytes = static_cast<double>(weightBytes) +
                   batch * sig.k * dtypeBytes(tuned.inputDType) +
                   batch * tuned.outFeatures * dtypeBytes(tuned.outDType);
    if (options.progress) {
      char numbers[64];
      std::snprintf(numbers, sizeof(numbers), "%9.2f us %7.0f GB/s", us,
                    bytes / (us * 1000.0));
      options.progress(
          concat("[", index + 1, "/", total, "] ", sig.describe(), " M=", batch,
                 ": ", numbers, "  ", tuned.candidates[winner].describe(),
                 "  (", tuned.candidates.size(), " candidates",
                 skipped ? concat(", ", skipped, " pruned") : "",
                 failed ? concat(", ", failed, " failed") : "", ")"));
    }
    timings.micros.push_back(std::move(micros));
  }
  return timings;
}

} // namespace

Expected<TuningResult> fdc::runtime::tuneLibrary(const TuneOptions &options) {
  if (options.buckets.empty() || options.buckets.front() < 1 ||
      !std::is_sorted(options.buckets.begin(), options.buckets.end()) ||
      std::adjacent_find(options.buckets.begin(), options.buckets.end()) !=
          options.buckets.end())
    return createError("the M buckets must be increasing and >= 1");
  if (options.replays < 1)
    return createError("the replays must be >= 1");
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(options.library);
  if (!library)
    return library.takeError();
  const ModelLibrary &lib = **library;
  if (!lib.isCuda())
    return createError("fdc tune needs a tuning library for cuda: ", lib.path(),
                       " targets '", lib.target(),
                       "' (compile it with fdc compile --target=cuda:sm_XX "
                       "--tuning-candidates)");
  auto launchFn = reinterpret_cast<FdcTuneLaunchFn>(
      const_cast<void *>(lib.symbol("fdc_tune_launch")));
  if (!launchFn)
    return createError(lib.path(),
                       " is not a tuning library: it does not export "
                       "fdc_tune_launch (compile it with fdc compile "
                       "--tuning-candidates)");
  Expected<json::Value> manifest = json::parse(lib.manifestText());
  if (!manifest)
    return createError(lib.path(), ": ", manifest.error().message());
  Expected<std::vector<TuneSignature>> signatures =
      parseTuneSignatures(*manifest, lib.path());
  if (!signatures)
    return signatures.takeError();

  Expected<OpenedGpuDevice> opened = openGpuDevice(lib, options.device);
  if (!opened)
    return opened.takeError();
  TuningResult result;
  result.library = lib.path();
  result.target = lib.target();
  result.device = opened->description;
  result.arch = opened->arch;
  Tuner tuner(options, lib, *opened, launchFn);
  if (Error err = tuner.init(opened->image))
    return err;
  if (options.progress)
    options.progress(concat("tuning ", lib.path(), " on ", result.device, ": ",
                            signatures->size(), " signatures x ",
                            options.buckets.size(), " batch sizes"));
  for (size_t i = 0; i < signatures->size(); ++i) {
    Expected<SignatureTimings> timings =
        tuner.tune(i, signatures->size(), (*signatures)[i]);
    if (!timings)
      return timings.takeError();
    result.signatures.push_back(std::move(*timings));
  }
  return result;
}
