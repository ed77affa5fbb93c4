//===- HipBackendTest.cpp - Running rocm:gfxXXX model libraries -----------===//
//
// HipBackendTest runs the HIP backend end to end against FakeHip.c (no GPU
// or ROCm needed; FDC_HIP_RUNTIME points the backend at it): the backend the
// target picks, the code object of the device's arch, the step and its
// errors, poisoning, the step graphs (captured and replayed by the fake),
// and what is released. The test library (TestHipModel.c) has fake code
// objects, so nothing here runs on a real GPU.
// HipNoRuntimeTest checks what a user without the HIP runtime sees.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/hip/HipBackend.h"
#include "fdc/runtime/Collective.h"
#include "fdc/runtime/Engine.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/RunCommand.h"
#include "fdc_runtime.h"

#include "GpuTestUtil.h"
#include "TestUtil.h"
#include "fake/FakeDevice.h"
#include "fake/OverlapTest.h"
#include "fake/StagingTest.h"
#include "fake/StepGraphTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <memory>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

const std::string kLibrary = std::string("model library ") + FDC_TEST_HIP;

//===----------------------------------------------------------------------===//
// HipNoRuntimeTest: no libamdhip64, or a runtime without the HIP backend
//===----------------------------------------------------------------------===//

TEST(HipNoRuntimeTest, MissingRuntimeGivesAClearMessage) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ScopedEnv runtime("FDC_HIP_RUNTIME", "/nonexistent/libamdhip64.so");
  Expected<std::unique_ptr<Model>> model =
      Model::load(FDC_TEST_HIP, dir.path(), ModelOptions());
  ASSERT_FALSE(model);
  const std::string &message = model.error().message();
  if (!hip::backendAvailable()) {
    EXPECT_CONTAINS(message, "built without the HIP backend");
    return;
  }
  EXPECT_CONTAINS(message, kLibrary +
                               " targets 'rocm:gfx90a,gfx1100' and needs the "
                               "HIP runtime: cannot load the HIP runtime "
                               "/nonexistent/libamdhip64.so: ");
  EXPECT_CONTAINS(message, "(is ROCm installed and a GPU visible?)");
}

TEST(HipNoRuntimeTest, FdcRunExitsNonZero) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  std::string errors;
  int rc = runFdcRun(
      FDC_RUN, "FDC_HIP_RUNTIME=/nonexistent/libamdhip64.so",
      {FDC_TEST_HIP, "--weights", dir.path(), "--prompt-ids", "1"}, errors);
  EXPECT_NE(rc, 0);
  if (hip::backendAvailable())
    EXPECT_CONTAINS(errors, "needs the HIP runtime: cannot load the HIP "
                            "runtime /nonexistent/libamdhip64.so: ");
  else
    EXPECT_CONTAINS(errors, "built without the HIP backend");
}

TEST(HipNoRuntimeTest, ThisMachine) {
  // What a user of this machine sees: a clear refusal (the test library's
  // code objects are fake, so even a GPU could not run them).
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ScopedEnv runtime("FDC_HIP_RUNTIME", nullptr);
  char *error = nullptr;
  fdc_model *model =
      fdc_model_load(FDC_TEST_HIP, dir.path().c_str(), 16, 1, &error);
  ASSERT_EQ(model, nullptr);
  ASSERT_NE(error, nullptr);
  std::string message = error;
  fdc_string_free(error);
  if (!hip::backendAvailable()) {
    EXPECT_CONTAINS(message, "(it was built without the HIP backend");
    return;
  }
  EXPECT_TRUE(
      contains(message, "cannot load the HIP runtime libamdhip64.so: ") ||
      contains(message, "hipInit failed") ||
      contains(message, "hipModuleLoadData(fdc_hsaco_"))
      << message;
}

//===----------------------------------------------------------------------===//
// HipBackendTest: the backend on FakeHip.c
//===----------------------------------------------------------------------===//

#ifdef FDC_FAKE_HIP_RUNTIME

/// The fake runtime's counters (FakeHip.c).
struct FakeHipStats {
  int64_t liveAllocations;
  int64_t liveModules;
  int64_t liveStreams;
  int64_t launches;
  int64_t bytesToDevice;
  int64_t bytesToHost;
  int64_t livePinnedAllocations;
  int64_t pinnedCopies;
  int64_t streamWaits;
  int64_t liveEvents;
  int64_t liveUntimedEvents;
  int64_t currentDevice;
  char lastImageArch[16];
  FakeGraphStats graphs;
};

/// What a failed capture adds to its error.
std::string captureSuffix(int64_t batch) {
  return " (capturing the step graph of batch size " + std::to_string(batch) +
         "; FDC_HIP_GRAPHS=0 runs every step eagerly)";
}

FakeHipStats fakeStats(const char *path = FDC_FAKE_HIP_RUNTIME) {
  // Already loaded by the backend: this only finds the same handle.
  void *handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << ::dlerror();
  FakeHipStats stats = {};
  if (!handle)
    return stats;
  auto read =
      reinterpret_cast<void (*)(void *)>(::dlsym(handle, "fdc_fake_hip_stats"));
  EXPECT_NE(read, nullptr);
  if (read)
    read(&stats);
  ::dlclose(handle);
  return stats;
}

class HipBackendTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!hip::backendAvailable())
      GTEST_SKIP() << "this runtime was built without the HIP backend";
  }

  Expected<std::unique_ptr<Model>>
  load(const char *library, int64_t numSlots = 3, int64_t maxContext = 16) {
    ModelOptions options;
    options.numSlots = numSlots;
    options.maxContext = maxContext;
    return Model::load(library, checkpoint.path(), options);
  }

  std::unique_ptr<Model> mustLoad(const char *library = FDC_TEST_HIP,
                                  int64_t numSlots = 3) {
    Expected<std::unique_ptr<Model>> model = load(library, numSlots);
    EXPECT_TRUE(model) << model.error().message();
    return model ? std::move(*model) : nullptr;
  }

  std::string loadError(const char *library, int64_t numSlots = 3,
                        int64_t maxContext = 16) {
    Expected<std::unique_ptr<Model>> model =
        load(library, numSlots, maxContext);
    return model ? "" : model.error().message();
  }

  /// One request of `maxNew` tokens from {1}, on `model`.
  GenerationResult runOne(Model &model, int64_t maxNew = 2) {
    return generate(model, {1}, maxNew);
  }

  void expectNothingLeaked() {
    FakeHipStats stats = fakeStats();
    EXPECT_EQ(stats.liveAllocations, 0);
    EXPECT_EQ(stats.livePinnedAllocations, 0);
    EXPECT_EQ(stats.liveEvents, 0);
    EXPECT_EQ(stats.liveModules, 0);
    EXPECT_EQ(stats.liveStreams, 0);
    EXPECT_EQ(stats.graphs.liveGraphs, 0);
    EXPECT_EQ(stats.graphs.liveGraphExecs, 0);
  }

  /// The outputs of steps of batch sizes 1, 3, 1, 3 (graphs on or off), and
  /// the fake's counters before and after them.
  struct BatchSizesRun {
    std::vector<StepRows> outputs;
    FakeHipStats before, after;
  };
  BatchSizesRun runBatchSizesOn(bool graphs,
                                const char *runtime = FDC_FAKE_HIP_RUNTIME) {
    ScopedEnv graphSetting("FDC_HIP_GRAPHS", graphs ? nullptr : "0");
    ScopedEnv runtimeSetting("FDC_HIP_RUNTIME", runtime);
    BatchSizesRun run;
    std::unique_ptr<Model> model = mustLoad();
    if (!model)
      return run;
    run.before = fakeStats(runtime);
    Expected<std::vector<StepRows>> outputs =
        runBatchSizes(*model, {1, 3, 1, 3});
    run.after = fakeStats(runtime);
    EXPECT_TRUE(outputs) << outputs.error().message();
    if (outputs)
      run.outputs = std::move(*outputs);
    return run;
  }

  struct Checkpoint {
    Checkpoint() { writeTestCheckpoint(dir.path()); }
    const std::string &path() const { return dir.path(); }
    TempDir dir;
  } checkpoint;
  ScopedEnv runtime{"FDC_HIP_RUNTIME", FDC_FAKE_HIP_RUNTIME};
};

TEST_F(HipBackendTest, TheTargetPicksTheHipBackend) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  ASSERT_NE(model->deviceBackend(), nullptr);
  EXPECT_EQ(model->deviceBackend()->kernelImage(), "fdc_hsaco_gfx90a");
  EXPECT_EQ(model->deviceBackend()->deviceDescription(),
            "Fake AMD GPU 0 (device 0, gfx90a:sramecc+:xnack-)");
  EXPECT_NE(model->deviceBackend()->weightsAddress(), 0u);
  EXPECT_NE(model->deviceBackend()->kvCacheAddress(), 0u);
  EXPECT_EQ(model->weights().size(), 0u); // uploaded, host copy dropped
  EXPECT_EQ(model->kvCache().data(), nullptr);
  EXPECT_STREQ(fakeStats().lastImageArch, "gfx90a");

  GenerationResult result = generate(*model, {1, 2, 3}, 4);
  EXPECT_EQ(result.reason, FinishReason::Length) << result.error;
  EXPECT_EQ(result.tokens, (std::vector<int32_t>{4, 5, 6, 7}));
}

TEST_F(HipBackendTest, LoadsTheCodeObjectOfTheDeviceArch) {
  ScopedEnv arch("FDC_FAKE_HIP_ARCH", "gfx1100");
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  EXPECT_EQ(model->deviceBackend()->kernelImage(), "fdc_hsaco_gfx1100");
  EXPECT_EQ(model->deviceBackend()->deviceDescription(),
            "Fake AMD GPU 0 (device 0, gfx1100)");
  EXPECT_STREQ(fakeStats().lastImageArch, "gfx1100");
  EXPECT_EQ(generate(*model, {7}, 3).tokens, (std::vector<int32_t>{8, 9, 10}));
}

TEST_F(HipBackendTest, NoCodeObjectForTheDeviceArch) {
  ScopedEnv arch("FDC_FAKE_HIP_ARCH", "gfx942:sramecc+:xnack-");
  EXPECT_EQ(loadError(FDC_TEST_HIP),
            kLibrary +
                " has no code object for this GPU: Fake AMD GPU 0 (device 0, "
                "gfx942:sramecc+:xnack-) is gfx942, the library targets "
                "'rocm:gfx90a,gfx1100' (code objects for gfx90a, gfx1100; "
                "compile it with --target=rocm:gfx90a,gfx1100,gfx942)");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, RejectedCodeObjectIsNamed) {
  ScopedEnv arch("FDC_FAKE_HIP_ARCH", "gfx1100");
  EXPECT_EQ(loadError(FDC_TEST_HIP_WRONG_IMAGE),
            std::string("model library ") + FDC_TEST_HIP_WRONG_IMAGE +
                ": hipModuleLoadData(fdc_hsaco_gfx1100) failed: "
                "hipErrorNoBinaryForGpu: no kernel image is available for "
                "execution on the device (Fake AMD GPU 0 (device 0, gfx1100))");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, MatchesTheHostLibrary) {
  std::unique_ptr<Model> gpu = mustLoad();
  ASSERT_TRUE(gpu);
  ModelOptions options;
  options.numSlots = 3;
  options.maxContext = 16;
  Expected<std::unique_ptr<Model>> host =
      Model::load(FDC_TEST_MODEL_GOOD, checkpoint.path(), options);
  ASSERT_TRUE(host) << host.error().message();
  std::vector<Outcome> expected = runWorkload(**host);
  std::vector<Outcome> actual = runWorkload(*gpu);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_EQ(actual[i], expected[i]) << "request " << i;
  EXPECT_EQ(expected[2].reason, FinishReason::Error);
  EXPECT_EQ(expected[0].logits[0][31], 1 + 2 + 3);
}

TEST_F(HipBackendTest, MissingKernelIsNamed) {
  EXPECT_EQ(loadError(FDC_TEST_HIP_EXTRA_KERNEL),
            std::string("model library ") + FDC_TEST_HIP_EXTRA_KERNEL +
                ": kernel 'fdc_test_absent' of the manifest is not in "
                "fdc_hsaco_gfx90a: hipModuleGetFunction(fdc_test_absent) "
                "failed: hipErrorNotFound: named symbol not found");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, FailedLaunchNamesTheKernel) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  {
    ScopedEnv mode("FDC_TEST_HIP_STEP", "bad_block");
    GenerationResult result = runOne(*model);
    EXPECT_EQ(result.reason, FinishReason::Error);
    // Found while capturing the step's graph (step graphs are on).
    EXPECT_EQ(result.error,
              "hipModuleLaunchKernel(fdc_test_next_token) failed: "
              "hipErrorInvalidValue: invalid argument (grid 1x1x1, block "
              "4096x1x1, 0 bytes of shared memory)" +
                  captureSuffix(1));
    EXPECT_EQ(model->kvCache().freeSlots(), 3);
  }
  // A launch error does not poison the device.
  EXPECT_EQ(runOne(*model).tokens, (std::vector<int32_t>{2, 3}));
}

TEST_F(HipBackendTest, SharedMemoryNeedsNoOptIn) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  {
    ScopedEnv mode("FDC_TEST_HIP_STEP", "big_shared"); // 64 KiB
    GenerationResult result = generate(*model, {5, 6}, 3);
    EXPECT_EQ(result.reason, FinishReason::Length) << result.error;
    EXPECT_EQ(result.tokens, (std::vector<int32_t>{7, 8, 9}));
  }
  // A new model: this one replays the graph captured above for a step of
  // one row, without calling the library.
  model = mustLoad();
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_HIP_STEP", "huge_shared"); // 1 MiB
  EXPECT_EQ(runOne(*model).error,
            "hipModuleLaunchKernel(fdc_test_store_kv) failed: "
            "hipErrorInvalidValue: invalid argument (grid 1x1x1, block "
            "1x1x1, 1048576 bytes of shared memory)" +
                captureSuffix(1));
}

TEST_F(HipBackendTest, LaunchOfUnlistedKernelIsRefused) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_HIP_STEP", "unknown_kernel");
  EXPECT_EQ(runOne(*model).error,
            "the model step launched kernel 'fdc_test_not_in_manifest', which "
            "the manifest's \"kernels\" does not list" +
                captureSuffix(1));
}

TEST_F(HipBackendTest, FaultIsReportedByALaterLaunch) {
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "step graphs" : "eager steps");
    ScopedEnv graphSetting("FDC_HIP_GRAPHS", graphs ? "1" : "0");
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    ScopedEnv mode("FDC_TEST_HIP_STEP", "bad_pointer");
    // A replayed graph's launches are not the host's: there the fault is
    // found at the end of the step.
    EXPECT_EQ(runOne(*model).error,
              graphs
                  ? "the model step failed: hipMemcpyDtoHAsync(next_tokens): "
                    "hipErrorIllegalAddress: an illegal memory access was "
                    "encountered (the step launched fdc_test_store_kv, "
                    "fdc_test_next_token; FDC_HIP_SYNC_LAUNCHES=1 names "
                    "the failing kernel)"
                  : "hipModuleLaunchKernel(fdc_test_next_token) failed: "
                    "hipErrorIllegalAddress: an illegal memory access was "
                    "encountered (grid 1x1x1, block 32x1x1, 0 bytes of "
                    "shared memory)");
  }
}

TEST_F(HipBackendTest, FaultInTheLastKernelIsFoundAtTheEnd) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_HIP_STEP", "bad_pointer_last");
  EXPECT_EQ(runOne(*model).error,
            "the model step failed: hipMemcpyDtoHAsync(next_tokens): "
            "hipErrorIllegalAddress: an illegal memory access was encountered "
            "(the step launched fdc_test_store_kv, fdc_test_next_token; "
            "FDC_HIP_SYNC_LAUNCHES=1 names the failing kernel)");
}

TEST_F(HipBackendTest, SyncLaunchesNamesTheFaultingKernel) {
  ScopedEnv sync("FDC_HIP_SYNC_LAUNCHES", "1");
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_HIP_STEP", "bad_pointer");
  EXPECT_EQ(runOne(*model).error,
            "kernel fdc_test_store_kv failed: hipErrorIllegalAddress: an "
            "illegal memory access was encountered (found by "
            "hipStreamSynchronize after it, FDC_HIP_SYNC_LAUNCHES is set)");
}

TEST_F(HipBackendTest, PoisonsTheOutputs) {
  // The step writes no output; what comes back is what was there before.
  ScopedEnv mode("FDC_TEST_HIP_STEP", "skip_next_token");
  {
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    Expected<StepOutput> out = stepOnce(*model, 5);
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_NE(out->nextToken, -1); // the fake's fresh memory: 0xCDCDCDCD
    EXPECT_FALSE(std::isnan(out->logits[0]));
  }
  ScopedEnv poison("FDC_HIP_POISON", "1");
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  Expected<StepOutput> out = stepOnce(*model, 5);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->nextToken, -1);
  for (float logit : out->logits) {
    uint32_t bits;
    std::memcpy(&bits, &logit, 4);
    EXPECT_EQ(bits, 0xFFFFFFFFu);
  }
}

TEST_F(HipBackendTest, OutOfMemoryNamesTheBuffer) {
  // KV cache: 8 slots x 1 layer x 2 x 1 head x 64 positions x 4 bytes.
  ScopedEnv limit("FDC_FAKE_HIP_MAX_ALLOC", "2048");
  EXPECT_EQ(loadError(FDC_TEST_HIP, 8, 64),
            "hipMalloc(KV cache, 4096 bytes) failed: hipErrorOutOfMemory: out "
            "of memory");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, RefusesBuffersThatOverflow) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_HIP);
  ASSERT_TRUE(library) << library.error().message();
  Expected<std::unique_ptr<DeviceBackend>> backend =
      createDeviceBackend(**library);
  ASSERT_TRUE(backend) << backend.error().message();
  int64_t before = fakeStats().liveAllocations;
  Error err = (*backend)->allocateState((uint64_t(1) << 62) + 1, 1, 32);
  EXPECT_EQ(err.message(), "HIP backend: a KV cache of 4611686018427387905 "
                           "bytes is too large");
  err = (*backend)->allocateState(0, INT32_MAX, INT32_MAX);
  EXPECT_EQ(err.message(),
            "logits of 2147483647 x 2147483647 floats overflow 64 bits");
  err = (*backend)->allocateState(0, 0, 32);
  EXPECT_EQ(err.message(),
            "HIP backend: max_batch must be in [1, 2^31), got 0");
  EXPECT_EQ(fakeStats().liveAllocations, before);
  // Nothing allocated: no step fits.
  FdcStepArgs args = {};
  args.batch = 1;
  EXPECT_EQ((*backend)->step(args).message(),
            "HIP backend: a step of 1 sequences, the device buffers hold 0");
}

TEST_F(HipBackendTest, ChoosesTheDevice) {
  ScopedEnv devices("FDC_FAKE_HIP_DEVICES", "2");
  {
    ScopedEnv device("FDC_HIP_DEVICE", "1");
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    EXPECT_EQ(model->deviceBackend()->deviceDescription(),
              "Fake AMD GPU 1 (device 1, gfx90a:sramecc+:xnack-)");
    EXPECT_EQ(runOne(*model).tokens, (std::vector<int32_t>{2, 3}));
    EXPECT_EQ(fakeStats().currentDevice, 1);
    // ModelOptions::device wins over the environment.
    ModelOptions options;
    options.device = 0;
    Expected<std::unique_ptr<Model>> first =
        Model::load(FDC_TEST_HIP, checkpoint.path(), options);
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ((*first)->deviceBackend()->deviceDescription(),
              "Fake AMD GPU 0 (device 0, gfx90a:sramecc+:xnack-)");
  }
  {
    ScopedEnv device("FDC_HIP_DEVICE", "2");
    EXPECT_EQ(loadError(FDC_TEST_HIP),
              "HIP device 2 does not exist: the machine has 2 HIP devices "
              "(FDC_HIP_DEVICE chooses one)");
  }
  {
    ScopedEnv device("FDC_HIP_DEVICE", "first");
    EXPECT_EQ(loadError(FDC_TEST_HIP),
              "FDC_HIP_DEVICE='first' is not a device ordinal (0, 1, ...)");
  }
  expectNothingLeaked();
}

TEST_F(HipBackendTest, NoDevice) {
  ScopedEnv noDevice("FDC_FAKE_HIP_NO_DEVICE", "1");
  EXPECT_EQ(loadError(FDC_TEST_HIP),
            kLibrary +
                " targets 'rocm:gfx90a,gfx1100' and needs the HIP runtime: "
                "hipInit failed: hipErrorNoDevice: no ROCm-capable device is "
                "detected (HIP runtime " FDC_FAKE_HIP_RUNTIME
                "; is an AMD GPU visible?)");
}

TEST_F(HipBackendTest, FailingCallsAreNamed) {
  struct Case {
    const char *call;
    const char *message;
  };
  for (Case c : {
           Case{"hipGetDevicePropertiesR0600",
                "hipGetDevicePropertiesR0600(0) failed"},
           Case{"hipStreamCreateWithFlags", "hipStreamCreateWithFlags failed"},
           Case{"hipMalloc", "hipMalloc(weight arena, 512 bytes) failed"},
           Case{"hipMemcpyHtoDAsync",
                "hipMemcpyHtoDAsync(weight arena, 512 bytes) failed"},
           Case{"hipMemsetD8Async", "hipMemsetD8Async(KV cache) failed"},
           Case{"hipStreamSynchronize",
                "hipStreamSynchronize(weight upload) failed"},
       }) {
    ScopedEnv fail("FDC_FAKE_HIP_FAIL", c.call);
    EXPECT_EQ(loadError(FDC_TEST_HIP),
              std::string(c.message) +
                  ": hipErrorNotSupported: operation not supported")
        << c.call;
    expectNothingLeaked();
  }
}

TEST_F(HipBackendTest, FailedCopyBackIsNamed) {
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  ScopedEnv fail("FDC_FAKE_HIP_FAIL", "hipMemcpyDtoHAsync");
  EXPECT_EQ(runOne(*model).error,
            "the model step failed: hipMemcpyDtoHAsync(next_tokens): "
            "hipErrorNotSupported: operation not supported (the step "
            "launched fdc_test_store_kv, fdc_test_next_token; "
            "FDC_HIP_SYNC_LAUNCHES=1 names the failing kernel)");
}

TEST_F(HipBackendTest, CopiesOnlyWhatTheStepNeeds) {
  // Eager steps: each counts its launches (a replayed graph's are not).
  ScopedEnv graphSetting("FDC_HIP_GRAPHS", "0");
  // 100 slots: input arrays of up to 400 bytes, a stride of 512; a step of
  // 2 packs its arrays 256 bytes apart.
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_HIP, 100);
  ASSERT_TRUE(model);
  Engine engine(*model);
  // Logits come back only when a request's callback reads them.
  for (bool readsLogits : {false, true}) {
    SCOPED_TRACE(readsLogits ? "with logits" : "ids only");
    for (int32_t token : {1, 2}) {
      GenerationRequest r;
      r.prompt = {token};
      r.maxNewTokens = 1;
      r.wantsLogits = readsLogits;
      r.onToken = [readsLogits](int32_t, const float *logits) {
        EXPECT_EQ(logits != nullptr, readsLogits);
      };
      ASSERT_TRUE(engine.submit(r));
    }
    FakeHipStats before = fakeStats();
    engine.step(); // batch 2
    FakeHipStats after = fakeStats();
    EXPECT_EQ(after.launches - before.launches, 2);
    EXPECT_EQ(after.bytesToHost - before.bytesToHost,
              (readsLogits ? 2 * kTestVocab * 4 : 0) + 2 * 4);
    // Seven input arrays, 256 bytes apart; the last one only as far as used.
    EXPECT_EQ(after.bytesToDevice - before.bytesToDevice, 6 * 256 + 2 * 4);
    // The inputs and the ids through pinned memory; logits straight back.
    EXPECT_EQ(after.pinnedCopies - before.pinnedCopies, 2);
    engine.takeFinished();
  }
}

TEST_F(HipBackendTest, StagesStepsInPinnedMemoryWhereItCan) {
  expectStepsStagedInPinnedMemoryOrNot(
      [&] { return mustLoad(); },
      [] {
        FakeHipStats stats = fakeStats();
        return PinnedCounters{stats.livePinnedAllocations, stats.pinnedCopies};
      },
      "FDC_FAKE_HIP_FAIL", "hipHostMalloc");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, OverlappedStepsMatchStepsOneByOne) {
  expectOverlappedStepsMatchStepsOneByOne(
      [&] { return mustLoad(); },
      [] {
        auto stats = fakeStats();
        return OverlapCounters{stats.streamWaits, stats.liveStreams,
                               stats.liveEvents, stats.liveUntimedEvents};
      },
      "FDC_FAKE_HIP_FAIL", "hipStreamWaitEvent");
  expectNothingLeaked();
}

TEST_F(HipBackendTest, CallbacksRunWhileTheNextStepRuns) {
  expectCallbacksRunWhileTheNextStepRuns(
      [&] { return mustLoad(); },
      [] { return OverlapCounters{fakeStats().streamWaits}; });
  expectNothingLeaked();
}

TEST_F(HipBackendTest, ReleasesEverything) {
  {
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    FakeHipStats stats = fakeStats();
    // Weights, KV cache, scratch, inputs, logits, next_tokens.
    EXPECT_EQ(stats.liveAllocations, 6);
    // The staging of the inputs and of the ids, for each of the two steps
    // that may be in flight.
    EXPECT_EQ(stats.livePinnedAllocations, 4);
    // Overlapped steps' copy stream and events come with the first engine.
    EXPECT_EQ(stats.liveEvents, 0);
    EXPECT_EQ(stats.liveModules, 1);
    EXPECT_EQ(stats.liveStreams, 1);
  }
  expectNothingLeaked();
}

TEST_F(HipBackendTest, StepGraphsReplayWhatEagerStepsCompute) {
  BatchSizesRun eager = runBatchSizesOn(false);
  BatchSizesRun graphs = runBatchSizesOn(true);
  ASSERT_EQ(eager.outputs.size(), 4u);
  // The steps read their inputs and the KV cache the earlier ones wrote.
  EXPECT_EQ(eager.outputs[2].next[0], (7 * 2 + 1 + 1) % 32);
  EXPECT_EQ(eager.outputs[2].logits[31], 1 + 8 + 15);
  EXPECT_EQ(eager.outputs[3].logits[2 * kTestVocab + 31], 14 + 28);
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    EXPECT_EQ(graphs.outputs[i], eager.outputs[i]) << "step " << i;

  auto delta = [](const BatchSizesRun &run, int64_t FakeGraphStats::*field) {
    return run.after.graphs.*field - run.before.graphs.*field;
  };
  EXPECT_EQ(delta(eager, &FakeGraphStats::captures), 0);
  EXPECT_EQ(eager.after.launches - eager.before.launches, 8);
  // One capture per batch size, a replay for every step.
  EXPECT_EQ(delta(graphs, &FakeGraphStats::captures), 2);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::capturedLaunches), 4);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::instantiations), 2);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::graphLaunches), 4);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::replayedLaunches), 8);
  EXPECT_EQ(graphs.after.launches - graphs.before.launches, 4);
  EXPECT_EQ(graphs.after.graphs.liveGraphExecs, 2);
  expectNothingLeaked();
}

TEST_F(HipBackendTest, RuntimeWithoutGraphsRunsEagerly) {
  BatchSizesRun eager = runBatchSizesOn(false);
  BatchSizesRun noGraphs =
      runBatchSizesOn(true, FDC_FAKE_HIP_RUNTIME_NO_GRAPHS);
  ASSERT_EQ(eager.outputs.size(), 4u);
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    EXPECT_EQ(noGraphs.outputs[i], eager.outputs[i]) << "step " << i;
  EXPECT_EQ(noGraphs.after.launches - noGraphs.before.launches, 8);
  EXPECT_EQ(noGraphs.after.graphs.captures, 0);
}

TEST_F(HipBackendTest, NoStepGraphsWhenPoisoningOrSynchronizing) {
  for (const char *variable : {"FDC_HIP_POISON", "FDC_HIP_SYNC_LAUNCHES"}) {
    ScopedEnv setting(variable, "1");
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    int64_t before = fakeStats().graphs.captures;
    ASSERT_TRUE(runBatchSizes(*model, {1, 3}));
    EXPECT_EQ(fakeStats().graphs.captures, before) << variable;
  }
}

TEST_F(HipBackendTest, StepGraphsAreDroppedWithTheBuffers) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_HIP);
  ASSERT_TRUE(library) << library.error().message();
  Expected<std::unique_ptr<DeviceBackend>> created =
      createDeviceBackend(**library);
  ASSERT_TRUE(created) << created.error().message();
  expectStepGraphsDroppedWithTheBuffers(**created, kTestVocab,
                                        [] { return fakeStats().graphs; });
  created->reset();
  expectNothingLeaked();
}

TEST_F(HipBackendTest, FailedCaptureNamesTheBatchSize) {
  const std::string notSupported =
      " failed: hipErrorNotSupported: operation not supported";
  struct Case {
    const char *inject;
    const char *mode;
    std::string error;
  };
  for (const Case &c : {
           Case{"hipStreamBeginCapture", nullptr,
                "hipStreamBeginCapture" + notSupported + captureSuffix(3)},
           Case{"hipStreamEndCapture", nullptr,
                "ending the capture (hipStreamEndCapture, "
                "hipGraphInstantiateWithFlags)" +
                    notSupported + captureSuffix(3)},
           Case{"hipGraphInstantiateWithFlags", nullptr,
                "ending the capture (hipStreamEndCapture, "
                "hipGraphInstantiateWithFlags)" +
                    notSupported + captureSuffix(3)},
           // Midway: the first launch was recorded, the second fails.
           Case{nullptr, "bad_block",
                "hipModuleLaunchKernel(fdc_test_next_token) failed: "
                "hipErrorInvalidValue: invalid argument (grid 3x1x1, block "
                "4096x1x1, 0 bytes of shared memory)" +
                    captureSuffix(3)},
           // The first launch of the capture fails.
           Case{"hipModuleLaunchKernel", nullptr,
                "hipModuleLaunchKernel(fdc_test_store_kv) failed: "
                "hipErrorNotSupported: operation not supported (grid 3x1x1, "
                "block 1x1x1, 0 bytes of shared memory)" +
                    captureSuffix(3)},
       }) {
    SCOPED_TRACE(c.inject ? c.inject : c.mode);
    {
      std::unique_ptr<Model> model = mustLoad();
      ASSERT_TRUE(model);
      ASSERT_TRUE(runBatchSizes(*model, {1}));
      {
        ScopedEnv inject("FDC_FAKE_HIP_FAIL", c.inject);
        ScopedEnv mode("FDC_TEST_HIP_STEP", c.mode);
        Expected<std::vector<StepRows>> failed = runBatchSizes(*model, {3});
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.error().message(),
                  "step 0 (batch size 3): " + c.error);
        // Batch size 1's graph is all that is left.
        EXPECT_EQ(fakeStats().graphs.liveGraphExecs, 1);
        EXPECT_EQ(fakeStats().graphs.liveGraphs, 0);
      }
      // The stream left capture mode: the next capture works.
      int64_t before = fakeStats().graphs.captures;
      Expected<std::vector<StepRows>> again = runBatchSizes(*model, {3, 1});
      EXPECT_TRUE(again) << again.error().message();
      EXPECT_EQ(fakeStats().graphs.captures - before, 1);
    }
    expectNothingLeaked();
  }
}

TEST_F(HipBackendTest, FailedReplayNamesTheBatchSize) {
  {
    std::unique_ptr<Model> model = mustLoad();
    ASSERT_TRUE(model);
    ASSERT_TRUE(runBatchSizes(*model, {1, 3}));
    {
      ScopedEnv inject("FDC_FAKE_HIP_FAIL", "hipGraphLaunch@3");
      // The stream's third graph launch.
      Expected<std::vector<StepRows>> failed = runBatchSizes(*model, {3});
      ASSERT_FALSE(failed);
      EXPECT_EQ(failed.error().message(),
                "step 0 (batch size 3): hipGraphLaunch failed: "
                "hipErrorNotSupported: operation not supported (replaying "
                "the step graph of batch size 3)");
    }
    // The graph stays, and replays.
    int64_t before = fakeStats().graphs.captures;
    EXPECT_TRUE(runBatchSizes(*model, {3}));
    EXPECT_EQ(fakeStats().graphs.captures, before);
  }
  expectNothingLeaked();
}

TEST_F(HipBackendTest, Rocm5PropertiesEntryPoint) {
  // A runtime without hipGetDevicePropertiesR0600: hipGetDeviceProperties,
  // with gcnArchName elsewhere.
  ScopedEnv rocm5("FDC_HIP_RUNTIME", FDC_FAKE_HIP_RUNTIME_ROCM5);
  ScopedEnv arch("FDC_FAKE_HIP_ARCH", "gfx1100");
  std::unique_ptr<Model> model = mustLoad();
  ASSERT_TRUE(model);
  EXPECT_EQ(model->deviceBackend()->deviceDescription(),
            "Fake AMD GPU 0 (device 0, gfx1100)");
  EXPECT_EQ(model->deviceBackend()->kernelImage(), "fdc_hsaco_gfx1100");
  EXPECT_EQ(runOne(*model).tokens, (std::vector<int32_t>{2, 3}));
  EXPECT_STREQ(fakeStats(FDC_FAKE_HIP_RUNTIME_ROCM5).lastImageArch, "gfx1100");
}

TEST_F(HipBackendTest, CApi) {
  char *error = nullptr;
  fdc_model *model =
      fdc_model_load(FDC_TEST_HIP, checkpoint.path().c_str(), 16, 2, &error);
  ASSERT_NE(model, nullptr) << error;
  int32_t prompt[] = {10, 11};
  int32_t ids[3];
  float logits[3 * kTestVocab];
  int64_t length = 0;
  ASSERT_EQ(fdc_generate(model, prompt, 2, 3, nullptr, ids, &length, logits), 0)
      << fdc_last_error();
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3),
            (std::vector<int32_t>{12, 13, 14}));
  EXPECT_EQ(logits[kTestVocab + 31], 10 + 11 + 12);
  fdc_model_free(model);
}

TEST_F(HipBackendTest, RunCommand) {
  std::vector<std::string> args = {
      "fdc-run",      FDC_TEST_HIP, "--weights",         checkpoint.path(),
      "--prompt-ids", "3,7",        "--max-new-tokens=3"};
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  testing::internal::CaptureStdout();
  int rc = fdcRunMain(static_cast<int>(args.size()), argv.data());
  std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_CONTAINS(out, "ids: 8,9,10\n");
}

TEST_F(HipBackendTest, TensorParallelIsNotSupportedYet) {
  ScopedEnv devices("FDC_FAKE_HIP_DEVICES", "2");
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_HIP);
  ASSERT_TRUE(library) << library.error().message();
  Expected<std::unique_ptr<DeviceBackend>> a =
      createDeviceBackend(**library, 0);
  Expected<std::unique_ptr<DeviceBackend>> b =
      createDeviceBackend(**library, 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ((*b)->deviceOrdinal(), 1);
  Expected<std::unique_ptr<CollectiveGroup>> group =
      createDeviceCollectiveGroup({a->get(), b->get()});
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().message(),
            "tensor parallelism on ROCm (RCCL) is not supported yet");
}

#endif // FDC_FAKE_HIP_RUNTIME

} // namespace
