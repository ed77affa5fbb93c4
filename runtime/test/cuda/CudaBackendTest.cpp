//===- CudaBackendTest.cpp - Running cuda:sm_90 model libraries -----------===//
//
// CudaBackendTest runs twice: "Fake/" against FakeCuda.c (no GPU needed) and
// "Gpu/" against the real driver, where every test skips when libcuda.so.1
// cannot be loaded or cuInit fails. CudaFakeDriverTest injects faults only
// the fake can (no device, a fault inside a kernel, out of memory, other
// compute capabilities, failing captures) and counts what only the fake
// counts (captures and replays of the step graphs). CudaNoDriverTest checks
// the message when there is no driver at all.
//
// The test library (TestCudaModel.c) computes on the GPU what the host test
// library (../TestModel.c) computes on the CPU, so a workload must give the
// same tokens and bit-identical logits on both.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/Collective.h"
#include "fdc/runtime/Engine.h"
#include "fdc/runtime/RunCommand.h"
#include "fdc/runtime/StepArrays.h"
#include "fdc_runtime.h"

#include "GpuTestUtil.h"
#include "TestUtil.h"
#include "fake/FakeDevice.h"
#include "fake/OverlapTest.h"
#include "fake/StagingTest.h"
#include "fake/StepGraphTest.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <optional>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

constexpr int kVocab = kTestVocab;

/// The fake driver's counters (FakeCuda.c).
struct FakeCudaStats {
  int64_t liveAllocations;
  int64_t liveModules;
  int64_t liveStreams;
  int64_t contextRefs;
  int64_t launches;
  int64_t setAttributeCalls;
  int64_t bytesToDevice;
  int64_t bytesToHost;
  int64_t livePinnedAllocations;
  int64_t pinnedCopies;
  int64_t streamWaits;
  int64_t liveEvents;
  int64_t liveUntimedEvents;
  int64_t dependentLaunches;
  char lastImageKind[8];
  FakeGraphStats graphs;
};

/// The fake NCCL's counters (FakeNccl.c).
struct FakeNcclStats {
  int64_t allReduces;
  int64_t allGathers;
  int64_t captured;
  int64_t destroyedWithLiveGraphs;
  int64_t memAllocs;
  int64_t memFrees;
  int64_t windowsRegistered;
  int64_t windowsDeregistered;
  int64_t inWindows;
};

#ifdef FDC_FAKE_CUDA_DRIVER
FakeCudaStats fakeStats() {
  // Already loaded by the backend: this only finds the same handle.
  void *handle = ::dlopen(FDC_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << ::dlerror();
  FakeCudaStats stats = {};
  if (!handle)
    return stats;
  auto read = reinterpret_cast<void (*)(void *)>(
      ::dlsym(handle, "fdc_fake_cuda_stats"));
  EXPECT_NE(read, nullptr);
  if (read)
    read(&stats);
  ::dlclose(handle);
  return stats;
}
#endif

#ifdef FDC_FAKE_NCCL
FakeNcclStats fakeNcclStats() {
  void *handle = ::dlopen(FDC_FAKE_NCCL, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << ::dlerror();
  FakeNcclStats stats = {};
  if (!handle)
    return stats;
  auto read = reinterpret_cast<void (*)(void *)>(
      ::dlsym(handle, "fdc_fake_nccl_stats"));
  EXPECT_NE(read, nullptr);
  if (read)
    read(&stats);
  ::dlclose(handle);
  return stats;
}
#endif

/// What a failed capture adds to its error.
std::string captureSuffix(int64_t batch) {
  return " (capturing the step graph of batch size " + std::to_string(batch) +
         "; FDC_CUDA_GRAPHS=0 runs every step eagerly)";
}

//===----------------------------------------------------------------------===//
// CudaBackendTest: on the fake driver and on a real GPU
//===----------------------------------------------------------------------===//

enum class Driver { Fake, Real };

void PrintTo(Driver driver, std::ostream *os) {
  *os << (driver == Driver::Fake ? "fake driver" : "real driver");
}

class CudaBackendTest : public ::testing::TestWithParam<Driver> {
protected:
  void SetUp() override {
    if (!cuda::backendAvailable())
      GTEST_SKIP() << "this runtime was built without the CUDA backend";
    if (GetParam() == Driver::Fake) {
#ifdef FDC_FAKE_CUDA_DRIVER
      driver.emplace("FDC_CUDA_DRIVER", FDC_FAKE_CUDA_DRIVER);
#else
      GTEST_SKIP() << "the fake driver was not built";
#endif
    } else {
      driver.emplace("FDC_CUDA_DRIVER", nullptr);
      // Probe: no driver or no GPU skips every real-GPU test.
      Expected<std::unique_ptr<Model>> probe = load(FDC_TEST_CUDA_PTX);
      if (!probe) {
        const std::string &message = probe.error().message();
        if (contains(message, "cannot load the CUDA driver") ||
            contains(message, "cuInit failed"))
          GTEST_SKIP() << "no usable GPU: " << message;
      }
    }
  }

  bool fake() const { return GetParam() == Driver::Fake; }

  Expected<std::unique_ptr<Model>>
  load(const char *library, int64_t numSlots = 3, int64_t maxContext = 16) {
    ModelOptions options;
    options.numSlots = numSlots;
    options.maxContext = maxContext;
    return Model::load(library, checkpoint.path(), options);
  }

  std::unique_ptr<Model> mustLoad(const char *library, int64_t numSlots = 3,
                                  int64_t maxContext = 16) {
    Expected<std::unique_ptr<Model>> model =
        load(library, numSlots, maxContext);
    EXPECT_TRUE(model) << model.error().message();
    return model ? std::move(*model) : nullptr;
  }

  struct Checkpoint {
    Checkpoint() { writeTestCheckpoint(dir.path()); }
    const std::string &path() const { return dir.path(); }
    TempDir dir;
  } checkpoint;
  std::optional<ScopedEnv> driver;
};

TEST_P(CudaBackendTest, GeneratesTokenPlusOne) {
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model);
  ASSERT_NE(model->deviceBackend(), nullptr);
  EXPECT_EQ(model->deviceBackend()->kernelImage(), "fdc_ptx");
  EXPECT_EQ(model->weights().size(), 0u); // uploaded, host copy dropped
  EXPECT_EQ(model->kvCache().data(), nullptr);
  EXPECT_EQ(model->kvCache().size(), 3u * 1 * 2 * 1 * 16 * 4);
  if (fake())
    EXPECT_EQ(model->deviceBackend()->deviceDescription(),
              "Fake GPU 0 (device 0, sm_90)");

  GenerationResult result = generate(*model, {1, 2, 3}, 4);
  EXPECT_EQ(result.reason, FinishReason::Length) << result.error;
  EXPECT_EQ(result.tokens, (std::vector<int32_t>{4, 5, 6, 7}));
  result = generate(*model, {31}, 2);
  EXPECT_EQ(result.tokens, (std::vector<int32_t>{0, 1}));
}

TEST_P(CudaBackendTest, MatchesTheHostLibrary) {
  std::unique_ptr<Model> gpu = mustLoad(FDC_TEST_CUDA_PTX);
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
  // The workload does reach the interesting cases.
  EXPECT_EQ(expected[0].tokens, (std::vector<int32_t>{4, 5, 6, 7, 8}));
  EXPECT_EQ(expected[2].reason, FinishReason::Error);
  EXPECT_CONTAINS(expected[2].error, "returned token 37");
  EXPECT_EQ(expected[0].logits[0][31], 1 + 2 + 3);
  EXPECT_EQ(expected[0].logits[0][30], 0.5f);
}

TEST_P(CudaBackendTest, LoadsTheCubinForItsArch) {
#ifndef FDC_TEST_CUDA_CUBIN
  GTEST_SKIP() << "ptxas was not found at configure time";
#else
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_CUDA_CUBIN);
  ASSERT_TRUE(model);
  const std::string &device = model->deviceBackend()->deviceDescription();
  bool sm90 = contains(device, "sm_90)");
  EXPECT_EQ(model->deviceBackend()->kernelImage(),
            sm90 ? "fdc_cubin_sm_90" : "fdc_ptx")
      << device;
  EXPECT_EQ(generate(*model, {7}, 3).tokens, (std::vector<int32_t>{8, 9, 10}));
#ifdef FDC_FAKE_CUDA_DRIVER
  if (fake())
    EXPECT_STREQ(fakeStats().lastImageKind, "cubin");
#endif
#endif
}

TEST_P(CudaBackendTest, NoImageForTheDevice) {
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_NOIMAGE);
  ASSERT_FALSE(model);
  const std::string &message = model.error().message();
  EXPECT_CONTAINS(message, std::string("model library ") +
                               FDC_TEST_CUDA_NOIMAGE +
                               " has no kernel image this GPU can load: ");
  EXPECT_CONTAINS(message,
                  "the library targets 'cuda:sm_90' (no fdc_cubin_sm_");
  EXPECT_CONTAINS(message, "; no fdc_ptx)");
}

TEST_P(CudaBackendTest, MissingKernelIsNamed) {
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_EXTRA_KERNEL);
  ASSERT_FALSE(model);
  EXPECT_EQ(model.error().message(),
            std::string("model library ") + FDC_TEST_CUDA_EXTRA_KERNEL +
                ": kernel 'fdc_test_absent' of the manifest is not in "
                "fdc_ptx: cuModuleGetFunction(fdc_test_absent) failed: "
                "CUDA_ERROR_NOT_FOUND: named symbol not found");
}

TEST_P(CudaBackendTest, FailedLaunchNamesTheKernel) {
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model);
  {
    ScopedEnv mode("FDC_TEST_CUDA_STEP", "bad_block");
    GenerationResult result = generate(*model, {1}, 2);
    EXPECT_EQ(result.reason, FinishReason::Error);
    EXPECT_CONTAINS(result.error,
                    "cuLaunchKernel(fdc_test_next_token) failed: "
                    "CUDA_ERROR_INVALID_VALUE: invalid argument (grid 1x1x1, "
                    "block 4096x1x1, 0 bytes of shared memory)");
    EXPECT_EQ(model->kvCache().freeSlots(), 3);
  }
  // A launch error does not poison the context.
  EXPECT_EQ(generate(*model, {1}, 2).tokens, (std::vector<int32_t>{2, 3}));
}

TEST_P(CudaBackendTest, LaunchOfUnlistedKernelIsRefused) {
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_CUDA_STEP", "unknown_kernel");
  GenerationResult result = generate(*model, {1}, 2);
  EXPECT_EQ(result.reason, FinishReason::Error);
  // Found while capturing the step's graph (step graphs are on).
  EXPECT_EQ(result.error,
            "the model step launched kernel 'fdc_test_not_in_manifest', which "
            "the manifest's \"kernels\" does not list" +
                captureSuffix(1));
}

TEST_P(CudaBackendTest, LargeSharedMemoryIsOptedInto) {
  std::unique_ptr<Model> model = mustLoad(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model);
  ScopedEnv mode("FDC_TEST_CUDA_STEP", "big_shared");
#ifdef FDC_FAKE_CUDA_DRIVER
  int64_t before = fake() ? fakeStats().setAttributeCalls : 0;
#endif
  GenerationResult result = generate(*model, {5, 6}, 3);
  EXPECT_EQ(result.reason, FinishReason::Length) << result.error;
  EXPECT_EQ(result.tokens, (std::vector<int32_t>{7, 8, 9}));
#ifdef FDC_FAKE_CUDA_DRIVER
  if (fake()) // Once, not once per launch.
    EXPECT_EQ(fakeStats().setAttributeCalls - before, 1);
#endif
}

TEST_P(CudaBackendTest, CApi) {
  char *error = nullptr;
  fdc_model *model = fdc_model_load(FDC_TEST_CUDA_PTX,
                                    checkpoint.path().c_str(), 16, 2, &error);
  ASSERT_NE(model, nullptr) << error;
  int32_t prompt[] = {10, 11};
  int32_t ids[3];
  float logits[3 * kVocab];
  int64_t length = 0;
  ASSERT_EQ(fdc_generate(model, prompt, 2, 3, nullptr, ids, &length, logits), 0)
      << fdc_last_error();
  EXPECT_EQ(length, 3);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 3),
            (std::vector<int32_t>{12, 13, 14}));
  EXPECT_EQ(logits[12], 1.0f);
  EXPECT_EQ(logits[31], 10 + 11);
  EXPECT_EQ(logits[kVocab + 31], 10 + 11 + 12);
  fdc_model_free(model);
}

std::string driverName(const ::testing::TestParamInfo<Driver> &info) {
  return info.param == Driver::Fake ? "FakeDriver" : "RealDriver";
}

TEST_P(CudaBackendTest, RunCommand) {
  std::vector<std::string> args = {"fdc-run",           FDC_TEST_CUDA_PTX,
                                   "--weights",         checkpoint.path(),
                                   "--prompt-ids",      "3,7",
                                   "--max-new-tokens=3"};
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

/// Loads the tensor-parallel test library (3 slots, 16 tokens, device
/// buffers poisoned); nullptr with `skip` set when this machine cannot run
/// it (fewer than 2 devices, or no NCCL).
std::unique_ptr<Model> loadTensorParallel(const std::string &checkpoint,
                                          std::string &skip) {
  ModelOptions options;
  options.numSlots = 3;
  options.maxContext = 16;
  Expected<std::unique_ptr<Model>> model =
      Model::load(FDC_TEST_CUDA_TP, checkpoint, options);
  if (!model) {
    const std::string &message = model.error().message();
    if (contains(message, "does not exist: the machine has") ||
        contains(message, "cannot load NCCL"))
      skip = message;
    else
      ADD_FAILURE() << message;
    return nullptr;
  }
  return std::move(*model);
}

/// Two fake devices and the fake NCCL (Fake/), or the machine's (Gpu/).
struct TensorParallelEnv {
  explicit TensorParallelEnv(bool fake) {
#if defined(FDC_FAKE_CUDA_DRIVER) && defined(FDC_FAKE_NCCL)
    if (fake) {
      devices.emplace("FDC_FAKE_CUDA_DEVICES", "2");
      nccl.emplace("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
    }
#else
    (void)fake;
#endif
  }
  std::optional<ScopedEnv> devices, nccl;
};

TEST_P(CudaBackendTest, TensorParallelGathersAndSums) {
  ScopedEnv poison("FDC_CUDA_POISON", "1");
  TensorParallelEnv env(fake());
  std::string skip;
  std::unique_ptr<Model> model = loadTensorParallel(checkpoint.path(), skip);
  if (!skip.empty())
    GTEST_SKIP() << skip;
  ASSERT_TRUE(model);
  EXPECT_EQ(model->tensorParallel(), 2);
  EXPECT_EQ(model->vocabSize(), 2 * kVocab);

  // Two requests, so the gather moves several rows.
  Engine engine(*model);
  std::map<int32_t, std::vector<std::vector<float>>> logits;
  auto submit = [&](std::vector<int32_t> prompt, int64_t maxNew) {
    GenerationRequest r;
    int32_t first = prompt[0];
    r.prompt = std::move(prompt);
    r.maxNewTokens = maxNew;
    r.onToken = [&logits, first](int32_t, const float *row) {
      logits[first].emplace_back(row, row + 2 * kVocab);
    };
    Expected<RequestId> id = engine.submit(std::move(r));
    EXPECT_TRUE(id) << id.error().message();
  };
  submit({1, 2, 3}, 4);
  submit({20, 21}, 3);
  std::vector<GenerationResult> results = engine.runToCompletion();
  ASSERT_EQ(results.size(), 2u);
  for (const GenerationResult &r : results) {
    EXPECT_EQ(r.reason, FinishReason::Length) << r.error;
    std::vector<int32_t> tokens = {4, 5, 6, 7};
    if (r.tokens.size() != 4)
      tokens = {22, 23, 24};
    EXPECT_EQ(r.tokens, tokens);
  }
  // Rank r's logits of a row: one-hot of next, w[0] of the rank (0.5, 2) at
  // 30, the slot's K sum at 31; gathered into columns [32 r, 32 r + 32),
  // then doubled by the sum over the two ranks.
  auto expected = [](int32_t next, float kSum) {
    std::vector<float> row(2 * kVocab, 0.0f);
    for (int r = 0; r < 2; ++r) {
      row[r * kVocab + next] = 2;
      row[r * kVocab + 30] += 2 * (r == 0 ? 0.5f : 2.0f);
      row[r * kVocab + 31] += 2 * kSum;
    }
    return row;
  };
  ASSERT_EQ(logits[1].size(), 4u);
  EXPECT_EQ(logits[1][0], expected(4, 1 + 2 + 3));
  EXPECT_EQ(logits[1][3], expected(7, 1 + 2 + 3 + 4 + 5 + 6));
  ASSERT_EQ(logits[20].size(), 3u);
  EXPECT_EQ(logits[20][2], expected(24, 20 + 21 + 22 + 23));
}

TEST_P(CudaBackendTest, TensorParallelRankFailureAbortsTheGroup) {
  TensorParallelEnv env(fake());
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "step graphs" : "eager steps");
    ScopedEnv graphSetting("FDC_CUDA_GRAPHS", graphs ? "1" : "0");
    std::string skip;
    std::unique_ptr<Model> model = loadTensorParallel(checkpoint.path(), skip);
    if (!skip.empty())
      GTEST_SKIP() << skip;
    ASSERT_TRUE(model);
    // With graphs, a step of batch size 1 would replay this step's graph
    // without calling the library again: the failing step comes first.
    if (!graphs)
      EXPECT_EQ(generate(*model, {1}, 2).tokens, (std::vector<int32_t>{2, 3}));
    {
      // Rank 1 fails before its collectives, which rank 0 waits for on the
      // GPU (eager) or in its replay (graphs): the abort frees it.
      ScopedEnv mode("FDC_TEST_CUDA_STEP", "unknown_kernel");
      GenerationResult result = generate(*model, {1}, 2);
      EXPECT_EQ(result.reason, FinishReason::Error);
      EXPECT_EQ(result.error,
                "tensor-parallel rank 1 of 2 failed: the model step launched "
                "kernel 'fdc_test_not_in_manifest', which the manifest's "
                "\"kernels\" does not list" +
                    (graphs ? captureSuffix(1) : ""));
    }
    GenerationResult result = generate(*model, {1}, 2);
    EXPECT_EQ(result.reason, FinishReason::Error);
    EXPECT_CONTAINS(result.error, "tensor-parallel group aborted: tensor-"
                                  "parallel rank 1 of 2 failed: ");
  }
}

INSTANTIATE_TEST_SUITE_P(Fake, CudaBackendTest, ::testing::Values(Driver::Fake),
                         driverName);
INSTANTIATE_TEST_SUITE_P(Gpu, CudaBackendTest, ::testing::Values(Driver::Real),
                         driverName);

//===----------------------------------------------------------------------===//
// CudaFakeDriverTest: what only the fake can do
//===----------------------------------------------------------------------===//

#ifdef FDC_FAKE_CUDA_DRIVER

class CudaFakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cuda::backendAvailable())
      GTEST_SKIP() << "this runtime was built without the CUDA backend";
  }

  std::string loadError(const char *library, int64_t numSlots = 3,
                        int64_t maxContext = 16) {
    Expected<std::unique_ptr<Model>> model =
        load(library, numSlots, maxContext);
    return model ? "" : model.error().message();
  }

  Expected<std::unique_ptr<Model>>
  load(const char *library, int64_t numSlots = 3, int64_t maxContext = 16) {
    ModelOptions options;
    options.numSlots = numSlots;
    options.maxContext = maxContext;
    return Model::load(library, dir.path(), options);
  }

  /// The PTX test library's model, or null (a failure of the test).
  std::unique_ptr<Model> mustLoadPtx() {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    EXPECT_TRUE(model) << model.error().message();
    return model ? std::move(*model) : nullptr;
  }

  void expectNothingLeaked() {
    FakeCudaStats stats = fakeStats();
    EXPECT_EQ(stats.liveAllocations, 0);
    EXPECT_EQ(stats.livePinnedAllocations, 0);
    EXPECT_EQ(stats.liveEvents, 0);
    EXPECT_EQ(stats.liveModules, 0);
    EXPECT_EQ(stats.liveStreams, 0);
    EXPECT_EQ(stats.contextRefs, 0);
    EXPECT_EQ(stats.graphs.liveGraphs, 0);
    EXPECT_EQ(stats.graphs.liveGraphExecs, 0);
  }

  /// The outputs of steps of batch sizes 1, 3, 1, 3 on `library` (graphs
  /// on or off), and the fake's counters before and after them.
  struct BatchSizesRun {
    std::vector<StepRows> outputs;
    FakeCudaStats before, after;
  };
  BatchSizesRun runBatchSizesOn(const char *library, bool graphs) {
    ScopedEnv graphSetting("FDC_CUDA_GRAPHS", graphs ? nullptr : "0");
    BatchSizesRun run;
    Expected<std::unique_ptr<Model>> model = load(library);
    EXPECT_TRUE(model) << model.error().message();
    if (!model)
      return run;
    run.before = fakeStats();
    Expected<std::vector<StepRows>> outputs =
        runBatchSizes(**model, {1, 3, 1, 3});
    run.after = fakeStats();
    EXPECT_TRUE(outputs) << outputs.error().message();
    if (outputs)
      run.outputs = std::move(*outputs);
    return run;
  }

  struct Dir {
    Dir() { writeTestCheckpoint(dir.path()); }
    const std::string &path() const { return dir.path(); }
    TempDir dir;
  } dir;
  ScopedEnv driver{"FDC_CUDA_DRIVER", FDC_FAKE_CUDA_DRIVER};
};

TEST_F(CudaFakeDriverTest, NoDevice) {
  ScopedEnv noDevice("FDC_FAKE_CUDA_NO_DEVICE", "1");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_PTX),
            std::string("model library ") + FDC_TEST_CUDA_PTX +
                " targets 'cuda:sm_90': cuInit failed: CUDA_ERROR_NO_DEVICE: "
                "no CUDA-capable device is detected (CUDA driver " +
                FDC_FAKE_CUDA_DRIVER + ")");
}

TEST_F(CudaFakeDriverTest, ChoosesTheDevice) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  {
    ScopedEnv device("FDC_CUDA_DEVICE", "1");
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ((*model)->deviceBackend()->deviceDescription(),
              "Fake GPU 1 (device 1, sm_90)");
  }
  {
    ScopedEnv device("FDC_CUDA_DEVICE", "2");
    EXPECT_EQ(loadError(FDC_TEST_CUDA_PTX),
              "CUDA device 2 does not exist: the machine has 2 CUDA devices "
              "(FDC_CUDA_DEVICE chooses one)");
  }
  {
    ScopedEnv device("FDC_CUDA_DEVICE", "first");
    EXPECT_EQ(loadError(FDC_TEST_CUDA_PTX),
              "FDC_CUDA_DEVICE='first' is not a device ordinal (0, 1, ...)");
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, OtherArchJitsThePtx) {
#ifdef FDC_TEST_CUDA_CUBIN
  ScopedEnv cc("FDC_FAKE_CUDA_CC", "86");
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_CUBIN);
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ((*model)->deviceBackend()->kernelImage(), "fdc_ptx");
  EXPECT_EQ((*model)->deviceBackend()->deviceDescription(),
            "Fake GPU 0 (device 0, sm_86)");
#else
  GTEST_SKIP() << "ptxas was not found at configure time";
#endif
}

TEST_F(CudaFakeDriverTest, RejectedCubinFallsBackToPtx) {
#ifdef FDC_TEST_CUDA_CUBIN
  ScopedEnv reject("FDC_FAKE_CUDA_REJECT_CUBIN", "1");
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_CUBIN);
  ASSERT_TRUE(model) << model.error().message();
  EXPECT_EQ((*model)->deviceBackend()->kernelImage(), "fdc_ptx");
#else
  GTEST_SKIP() << "ptxas was not found at configure time";
#endif
}

TEST_F(CudaFakeDriverTest, CubinOnlyLibraryOnAnotherArch) {
#ifdef FDC_TEST_CUDA_CUBIN_ONLY
  ScopedEnv cc("FDC_FAKE_CUDA_CC", "80");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_CUBIN_ONLY),
            std::string("model library ") + FDC_TEST_CUDA_CUBIN_ONLY +
                " has no kernel image this GPU can load: Fake GPU 0 (device "
                "0, sm_80) is sm_80, the library targets 'cuda:sm_90' (no "
                "fdc_cubin_sm_80; no fdc_ptx)");
  ScopedEnv reject("FDC_FAKE_CUDA_REJECT_CUBIN", "1");
  ScopedEnv cc90("FDC_FAKE_CUDA_CC", "90");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_CUBIN_ONLY),
            std::string("model library ") + FDC_TEST_CUDA_CUBIN_ONLY +
                " has no kernel image this GPU can load: Fake GPU 0 (device "
                "0, sm_90) is sm_90, the library targets 'cuda:sm_90' "
                "(cuModuleLoadDataEx(fdc_cubin_sm_90) failed: "
                "CUDA_ERROR_NO_BINARY_FOR_GPU: no kernel image is available "
                "for execution on the device; no fdc_ptx)");
  expectNothingLeaked();
#else
  GTEST_SKIP() << "ptxas was not found at configure time";
#endif
}

TEST_F(CudaFakeDriverTest, PtxTooNewForTheDeviceShowsTheJitLog) {
  ScopedEnv cc("FDC_FAKE_CUDA_CC", "75");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_PTX),
            std::string("model library ") + FDC_TEST_CUDA_PTX +
                " has no kernel image this GPU can load: Fake GPU 0 (device "
                "0, sm_75) is sm_75, the library targets 'cuda:sm_90' (no "
                "fdc_cubin_sm_75; cuModuleLoadDataEx(fdc_ptx) failed: "
                "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed; JIT "
                "log: ptxas fatal   : Unsupported .target 'sm_80' for this "
                "device)");
}

TEST_F(CudaFakeDriverTest, OutOfMemoryNamesTheBuffer) {
  // KV cache: 8 slots x 1 layer x 2 x 1 head x 64 positions x 4 bytes.
  ScopedEnv limit("FDC_FAKE_CUDA_MAX_ALLOC", "2048");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_PTX, 8, 64),
            "cuMemAlloc_v2(KV cache, 4096 bytes) failed: "
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, FaultIsReportedByALaterLaunch) {
  for (bool graphs : {false, true}) {
    SCOPED_TRACE(graphs ? "step graphs" : "eager steps");
    ScopedEnv graphSetting("FDC_CUDA_GRAPHS", graphs ? "1" : "0");
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    Engine engine(**model);
    ScopedEnv mode("FDC_TEST_CUDA_STEP", "bad_pointer");
    GenerationRequest r;
    r.prompt = {1};
    r.maxNewTokens = 2;
    ASSERT_TRUE(engine.submit(r));
    std::vector<GenerationResult> results = engine.runToCompletion();
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].reason, FinishReason::Error);
    // The fake, like a GPU, may report the fault at the next launch; a
    // replayed graph's launches are not the host's, so there the fault is
    // found at the end of the step.
    EXPECT_EQ(results[0].error,
              graphs
                  ? "the model step failed: cuMemcpyDtoHAsync_v2(next_tokens): "
                    "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
                    "was encountered (the step launched fdc_test_store_kv, "
                    "fdc_test_next_token; FDC_CUDA_SYNC_LAUNCHES=1 names "
                    "the failing kernel)"
                  : "cuLaunchKernel(fdc_test_next_token) failed: "
                    "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access "
                    "was encountered (grid 1x1x1, block 32x1x1, 0 bytes of "
                    "shared memory)");
  }
}

TEST_F(CudaFakeDriverTest, FaultInTheLastKernelIsFoundAtTheEnd) {
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model) << model.error().message();
  Engine engine(**model);
  ScopedEnv mode("FDC_TEST_CUDA_STEP", "bad_pointer_last");
  GenerationRequest r;
  r.prompt = {1};
  r.maxNewTokens = 2;
  ASSERT_TRUE(engine.submit(r));
  std::vector<GenerationResult> results = engine.runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].reason, FinishReason::Error);
  EXPECT_EQ(results[0].error,
            "the model step failed: cuMemcpyDtoHAsync_v2(next_tokens): "
            "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
            "encountered (the step launched fdc_test_store_kv, "
            "fdc_test_next_token; FDC_CUDA_SYNC_LAUNCHES=1 names the failing "
            "kernel)");
}

TEST_F(CudaFakeDriverTest, SyncLaunchesNamesTheFaultingKernel) {
  ScopedEnv sync("FDC_CUDA_SYNC_LAUNCHES", "1");
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model) << model.error().message();
  ScopedEnv mode("FDC_TEST_CUDA_STEP", "bad_pointer");
  Engine engine(**model);
  GenerationRequest r;
  r.prompt = {1};
  r.maxNewTokens = 2;
  ASSERT_TRUE(engine.submit(r));
  std::vector<GenerationResult> results = engine.runToCompletion();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].error,
            "kernel fdc_test_store_kv failed: CUDA_ERROR_ILLEGAL_ADDRESS: an "
            "illegal memory access was encountered (found by "
            "cuStreamSynchronize after it, FDC_CUDA_SYNC_LAUNCHES is set)");
}

TEST_F(CudaFakeDriverTest, CopiesOnlyWhatTheStepNeeds) {
  // Eager steps: each counts its launches (a replayed graph's are not).
  ScopedEnv graphSetting("FDC_CUDA_GRAPHS", "0");
  // 100 slots: input arrays of up to 400 bytes, a stride of 512; a step of
  // 2 packs its arrays 256 bytes apart.
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX, 100);
  ASSERT_TRUE(model) << model.error().message();
  Engine engine(**model);
  // Logits come back only when a request's callback reads them.
  for (bool readsLogits : {false, true}) {
    SCOPED_TRACE(readsLogits ? "with logits" : "ids only");
    int64_t logitRows = 0;
    for (int32_t token : {1, 2}) {
      GenerationRequest r;
      r.prompt = {token};
      r.maxNewTokens = 1;
      r.wantsLogits = readsLogits;
      r.onToken = [&](int32_t, const float *logits) {
        EXPECT_EQ(logits != nullptr, readsLogits);
        logitRows += logits ? 1 : 0;
      };
      ASSERT_TRUE(engine.submit(r));
    }
    FakeCudaStats before = fakeStats();
    engine.step(); // batch 2
    FakeCudaStats after = fakeStats();
    EXPECT_EQ(after.launches - before.launches, 2);
    EXPECT_EQ(after.bytesToHost - before.bytesToHost,
              (readsLogits ? 2 * kVocab * 4 : 0) + 2 * 4);
    EXPECT_EQ(logitRows, readsLogits ? 2 : 0);
    // Seven input arrays, 256 bytes apart; the last one only as far as used.
    EXPECT_EQ(after.bytesToDevice - before.bytesToDevice, 6 * 256 + 2 * 4);
    // The inputs and the ids through pinned memory; logits straight back.
    EXPECT_EQ(after.pinnedCopies - before.pinnedCopies, 2);
    engine.takeFinished();
  }
}

TEST_F(CudaFakeDriverTest, StagesStepsInPinnedMemoryWhereItCan) {
  expectStepsStagedInPinnedMemoryOrNot(
      [&] { return mustLoadPtx(); },
      [] {
        FakeCudaStats stats = fakeStats();
        return PinnedCounters{stats.livePinnedAllocations, stats.pinnedCopies};
      },
      "FDC_FAKE_CUDA_FAIL", "cuMemHostAlloc");
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, OverlappedStepsMatchStepsOneByOne) {
  expectOverlappedStepsMatchStepsOneByOne(
      [&] { return mustLoadPtx(); },
      [] {
        auto stats = fakeStats();
        return OverlapCounters{stats.streamWaits, stats.liveStreams,
                               stats.liveEvents, stats.liveUntimedEvents};
      },
      "FDC_FAKE_CUDA_FAIL", "cuStreamWaitEvent");
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, CallbacksRunWhileTheNextStepRuns) {
  expectCallbacksRunWhileTheNextStepRuns(
      [&] { return mustLoadPtx(); },
      [] { return OverlapCounters{fakeStats().streamWaits}; });
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, DependentLaunchWhereTheManifestAsksForIt) {
  // The same steps, eager and replayed from graphs, launched one after
  // another (the plain library, FDC_DEPENDENT_LAUNCH=0, a device before
  // compute capability 9.0) or as dependent launches (cuLaunchKernelEx with
  // programmatic stream serialization).
  struct Case {
    const char *name;
    const char *library;
    const char *setting;
    const char *cc;
    bool dependent;
  };
  const Case cases[] = {
      {"plain library", FDC_TEST_CUDA_PTX, nullptr, nullptr, false},
      {"dependent_launch", FDC_TEST_CUDA_DEPENDENT, nullptr, nullptr, true},
      {"FDC_DEPENDENT_LAUNCH=0", FDC_TEST_CUDA_DEPENDENT, "0", nullptr, false},
      {"sm_80 device", FDC_TEST_CUDA_DEPENDENT, nullptr, "80", false},
  };
  std::vector<StepRows> reference;
  for (const Case &c : cases)
    for (bool graphs : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (graphs ? ", graphs" : ", eager"));
      ScopedEnv setting("FDC_DEPENDENT_LAUNCH", c.setting);
      ScopedEnv cc("FDC_FAKE_CUDA_CC", c.cc);
      BatchSizesRun run = runBatchSizesOn(c.library, graphs);
      int64_t launches = run.after.launches - run.before.launches;
      int64_t dependent =
          run.after.dependentLaunches - run.before.dependentLaunches;
      EXPECT_GT(launches, 0);
      EXPECT_EQ(dependent, c.dependent ? launches : 0);
      if (reference.empty())
        reference = run.outputs;
      else
        EXPECT_EQ(run.outputs, reference);
    }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, PoisonsTheOutputs) {
  // The step writes no output; what comes back is what was there before.
  ScopedEnv mode("FDC_TEST_CUDA_STEP", "skip_next_token");
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    Expected<StepOutput> out = stepOnce(**model, 5);
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_NE(out->nextToken, -1); // the fake's fresh memory: 0xCDCDCDCD
  }
  ScopedEnv poison("FDC_CUDA_POISON", "1");
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(model) << model.error().message();
  Expected<StepOutput> out = stepOnce(**model, 5);
  ASSERT_TRUE(out) << out.error().message();
  EXPECT_EQ(out->nextToken, -1);
  for (float logit : out->logits)
    EXPECT_TRUE(std::isnan(logit));
}

TEST_F(CudaFakeDriverTest, ReleasesEverything) {
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    FakeCudaStats stats = fakeStats();
    // Weights, KV cache, scratch, inputs, logits, next_tokens.
    EXPECT_EQ(stats.liveAllocations, 6);
    // The staging of the inputs and of the ids, for each of the two steps
    // that may be in flight.
    EXPECT_EQ(stats.livePinnedAllocations, 4);
    // Overlapped steps' copy stream and events come with the first engine.
    EXPECT_EQ(stats.liveEvents, 0);
    EXPECT_EQ(stats.liveModules, 1);
    EXPECT_EQ(stats.liveStreams, 1);
    EXPECT_EQ(stats.contextRefs, 1);
    EXPECT_STREQ(stats.lastImageKind, "ptx");
  }
  expectNothingLeaked();
  // A failure after the context was made releases it too.
  EXPECT_NE(loadError(FDC_TEST_CUDA_EXTRA_KERNEL), "");
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, StepGraphsReplayWhatEagerStepsCompute) {
  BatchSizesRun eager = runBatchSizesOn(FDC_TEST_CUDA_PTX, false);
  BatchSizesRun graphs = runBatchSizesOn(FDC_TEST_CUDA_PTX, true);
  ASSERT_EQ(eager.outputs.size(), 4u);
  // The steps read their inputs and the KV cache the earlier ones wrote:
  // greedy row 0 gives token + 1, and logit 31 sums the slot's K rows.
  EXPECT_EQ(eager.outputs[2].next[0], (7 * 2 + 1 + 1) % 32);
  EXPECT_EQ(eager.outputs[2].logits[31], 1 + 8 + 15);
  EXPECT_EQ(eager.outputs[3].logits[2 * kVocab + 31], 14 + 28);
  for (size_t i = 0; i < eager.outputs.size(); ++i)
    EXPECT_EQ(graphs.outputs[i], eager.outputs[i]) << "step " << i;

  auto delta = [](const BatchSizesRun &run, int64_t FakeGraphStats::*field) {
    return run.after.graphs.*field - run.before.graphs.*field;
  };
  // Eager: no capture, two launches a step.
  EXPECT_EQ(delta(eager, &FakeGraphStats::captures), 0);
  EXPECT_EQ(eager.after.launches - eager.before.launches, 8);
  // Graphs: one capture per batch size (its two launches recorded, not
  // run), a replay for every step.
  EXPECT_EQ(delta(graphs, &FakeGraphStats::captures), 2);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::capturedLaunches), 4);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::instantiations), 2);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::graphLaunches), 4);
  EXPECT_EQ(delta(graphs, &FakeGraphStats::replayedLaunches), 8);
  EXPECT_EQ(graphs.after.launches - graphs.before.launches, 4);
  EXPECT_EQ(graphs.after.graphs.liveGraphExecs, 2);
  EXPECT_EQ(graphs.after.graphs.liveGraphs, 0); // instantiated, then freed
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, NoStepGraphsWhenPoisoningOrSynchronizing) {
  for (const char *variable : {"FDC_CUDA_POISON", "FDC_CUDA_SYNC_LAUNCHES"}) {
    ScopedEnv setting(variable, "1");
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    int64_t before = fakeStats().graphs.captures;
    ASSERT_TRUE(runBatchSizes(**model, {1, 3}));
    EXPECT_EQ(fakeStats().graphs.captures, before) << variable;
  }
}

TEST_F(CudaFakeDriverTest, StepGraphsAreDroppedWithTheBuffers) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_CUDA_PTX);
  ASSERT_TRUE(library) << library.error().message();
  Expected<std::unique_ptr<DeviceBackend>> created =
      createDeviceBackend(**library);
  ASSERT_TRUE(created) << created.error().message();
  expectStepGraphsDroppedWithTheBuffers(**created, kVocab,
                                        [] { return fakeStats().graphs; });
  created->reset();
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, FailedCaptureNamesTheBatchSize) {
  const std::string notSupported =
      " failed: CUDA_ERROR_NOT_SUPPORTED: operation not supported";
  struct Case {
    const char *inject;
    const char *mode;
    std::string error;
  };
  for (const Case &c : {
           Case{"cuStreamBeginCapture_v2", nullptr,
                "cuStreamBeginCapture_v2" + notSupported + captureSuffix(3)},
           Case{"cuStreamEndCapture", nullptr,
                "ending the capture (cuStreamEndCapture, "
                "cuGraphInstantiateWithFlags)" +
                    notSupported + captureSuffix(3)},
           Case{"cuGraphInstantiateWithFlags", nullptr,
                "ending the capture (cuStreamEndCapture, "
                "cuGraphInstantiateWithFlags)" +
                    notSupported + captureSuffix(3)},
           // Midway: the first launch was recorded, the second fails.
           Case{nullptr, "bad_block",
                "cuLaunchKernel(fdc_test_next_token) failed: "
                "CUDA_ERROR_INVALID_VALUE: invalid argument (grid 3x1x1, "
                "block 4096x1x1, 0 bytes of shared memory)" +
                    captureSuffix(3)},
       }) {
    SCOPED_TRACE(c.inject ? c.inject : c.mode);
    {
      Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
      ASSERT_TRUE(model) << model.error().message();
      ASSERT_TRUE(runBatchSizes(**model, {1}));
      {
        ScopedEnv inject("FDC_FAKE_CUDA_FAIL", c.inject);
        ScopedEnv mode("FDC_TEST_CUDA_STEP", c.mode);
        Expected<std::vector<StepRows>> failed = runBatchSizes(**model, {3});
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.error().message(),
                  "step 0 (batch size 3): " + c.error);
        // Batch size 1's graph is all that is left.
        EXPECT_EQ(fakeStats().graphs.liveGraphExecs, 1);
        EXPECT_EQ(fakeStats().graphs.liveGraphs, 0);
      }
      // The stream left capture mode: the next capture works.
      int64_t before = fakeStats().graphs.captures;
      Expected<std::vector<StepRows>> again = runBatchSizes(**model, {3, 1});
      EXPECT_TRUE(again) << again.error().message();
      EXPECT_EQ(fakeStats().graphs.captures - before, 1);
    }
    expectNothingLeaked();
  }
}

TEST_F(CudaFakeDriverTest, FailedReplayNamesTheBatchSize) {
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_PTX);
    ASSERT_TRUE(model) << model.error().message();
    ASSERT_TRUE(runBatchSizes(**model, {1, 3}));
    {
      ScopedEnv inject("FDC_FAKE_CUDA_FAIL", "cuGraphLaunch");
      Expected<std::vector<StepRows>> failed = runBatchSizes(**model, {3});
      ASSERT_FALSE(failed);
      EXPECT_EQ(failed.error().message(),
                "step 0 (batch size 3): cuGraphLaunch failed: "
                "CUDA_ERROR_NOT_SUPPORTED: operation not supported (replaying "
                "the step graph of batch size 3)");
    }
    // The graph stays, and replays.
    int64_t before = fakeStats().graphs.captures;
    EXPECT_TRUE(runBatchSizes(**model, {3}));
    EXPECT_EQ(fakeStats().graphs.captures, before);
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelStepGraphsCallTheCollectives) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  // NCCL's collectives inside the graphs (the default), or between the
  // segments of a capture cut at each.
  for (bool inGraphs : {true, false}) {
    SCOPED_TRACE(inGraphs ? "collectives in the graphs" : "cut captures");
    ScopedEnv mode("FDC_NCCL_GRAPHS", inGraphs ? "1" : "0");
    // A rank's step: the gather and the sum cut it into 3 segments.
    int64_t segments = inGraphs ? 1 : 3;
    FakeNcclStats ncclBefore = fakeNcclStats();
    BatchSizesRun eager = runBatchSizesOn(FDC_TEST_CUDA_TP, false);
    FakeNcclStats ncclBetween = fakeNcclStats();
    BatchSizesRun graphs = runBatchSizesOn(FDC_TEST_CUDA_TP, true);
    FakeNcclStats ncclAfter = fakeNcclStats();
    ASSERT_EQ(eager.outputs.size(), 4u);
    // Gathered and doubled: rank 1's w[0] (2) at column 32 + 30, times 2.
    EXPECT_EQ(eager.outputs[0].logits[kVocab + 30], 4.0f);
    for (size_t i = 0; i < eager.outputs.size(); ++i)
      EXPECT_EQ(graphs.outputs[i], eager.outputs[i]) << "step " << i;

    // Each rank's step: a gather and a sum (the loads' warm-ups add the
    // same for both runs), run as often by the graphs as eagerly.
    int64_t eagerGathers = ncclBetween.allGathers - ncclBefore.allGathers;
    int64_t eagerReduces = ncclBetween.allReduces - ncclBefore.allReduces;
    EXPECT_EQ(ncclAfter.allGathers - ncclBetween.allGathers, eagerGathers);
    EXPECT_EQ(ncclAfter.allReduces - ncclBetween.allReduces, eagerReduces);
    EXPECT_EQ(ncclBetween.captured, ncclBefore.captured);
    // 2 batch sizes x 2 ranks x 2 collectives captured, or none.
    EXPECT_EQ(ncclAfter.captured - ncclBetween.captured, inGraphs ? 8 : 0);
    FakeNcclStats stepCalls = {};
    {
      Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
      ASSERT_TRUE(model) << model.error().message();
      ASSERT_TRUE(runBatchSizes(**model, {1, 3}));
      FakeNcclStats before = fakeNcclStats();
      FakeCudaStats cudaBefore = fakeStats();
      // Replays only: the collectives still run (else the logits would not
      // match the eager ones above).
      ASSERT_TRUE(runBatchSizes(**model, {1, 3, 1}));
      FakeNcclStats after = fakeNcclStats();
      FakeCudaStats cudaAfter = fakeStats();
      stepCalls.allGathers = after.allGathers - before.allGathers;
      stepCalls.allReduces = after.allReduces - before.allReduces;
      EXPECT_EQ(cudaAfter.graphs.captures, cudaBefore.graphs.captures);
      EXPECT_EQ(after.captured, before.captured);
      // 3 steps x 2 ranks x the segments.
      EXPECT_EQ(cudaAfter.graphs.graphLaunches -
                    cudaBefore.graphs.graphLaunches,
                3 * 2 * segments);
      EXPECT_EQ(cudaAfter.launches, cudaBefore.launches);
    }
    EXPECT_EQ(stepCalls.allGathers, 3 * 2);
    EXPECT_EQ(stepCalls.allReduces, 3 * 2);

    auto delta = [](const BatchSizesRun &run, int64_t FakeGraphStats::*field) {
      return run.after.graphs.*field - run.before.graphs.*field;
    };
    // 2 batch sizes x 2 ranks x the segments captured; 4 steps x 2 ranks x
    // the segments replayed.
    EXPECT_EQ(delta(eager, &FakeGraphStats::captures), 0);
    EXPECT_EQ(delta(graphs, &FakeGraphStats::captures), 2 * 2 * segments);
    EXPECT_EQ(delta(graphs, &FakeGraphStats::instantiations), 2 * 2 * segments);
    EXPECT_EQ(delta(graphs, &FakeGraphStats::graphLaunches), 4 * 2 * segments);
    // The models destroyed their graphs before their communicators.
    EXPECT_EQ(fakeNcclStats().destroyedWithLiveGraphs, 0);
    expectNothingLeaked();
  }
}

TEST_F(CudaFakeDriverTest, TensorParallelCaptureFailingMidway) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  struct Case {
    bool inGraphs;
    const char *inject;
    std::string error;
  };
  for (const Case &c : {
           // The collectives inside: the one capture fails to end.
           Case{true, "cuStreamEndCapture@1",
                "ending the capture (cuStreamEndCapture, "
                "cuGraphInstantiateWithFlags) failed: "
                "CUDA_ERROR_NOT_SUPPORTED: operation not supported"},
           // Cut captures: ending the first segment, at the gather.
           Case{false, "cuStreamEndCapture@1",
                "ending the capture before collective call 1 "
                "(cuStreamEndCapture, cuGraphInstantiateWithFlags) failed: "
                "CUDA_ERROR_NOT_SUPPORTED: operation not supported"},
           // Resuming after the gather: the first segment is dropped.
           Case{false, "cuStreamBeginCapture_v2@2",
                "cuStreamBeginCapture_v2 after collective call 1 failed: "
                "CUDA_ERROR_NOT_SUPPORTED: operation not supported"},
           // Ending the last segment, after the sum.
           Case{false, "cuStreamEndCapture@3",
                "ending the capture (cuStreamEndCapture, "
                "cuGraphInstantiateWithFlags) failed: "
                "CUDA_ERROR_NOT_SUPPORTED: operation not supported"},
       }) {
    SCOPED_TRACE(std::string(c.inject) +
                 (c.inGraphs ? ", collectives in the graphs" : ", cut"));
    ScopedEnv mode("FDC_NCCL_GRAPHS", c.inGraphs ? "1" : "0");
    {
      Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
      ASSERT_TRUE(model) << model.error().message();
      ScopedEnv inject("FDC_FAKE_CUDA_FAIL", c.inject);
      Expected<std::vector<StepRows>> failed = runBatchSizes(**model, {3});
      ASSERT_FALSE(failed);
      // Either rank may be the one named: both fail.
      EXPECT_CONTAINS(failed.error().message(),
                      " of 2 failed: " + c.error + captureSuffix(3));
      EXPECT_EQ(fakeStats().graphs.liveGraphExecs, 0);
      EXPECT_EQ(fakeStats().graphs.liveGraphs, 0);
    }
    EXPECT_EQ(fakeNcclStats().destroyedWithLiveGraphs, 0);
    expectNothingLeaked();
  }
}

TEST_F(CudaFakeDriverTest, TensorParallelAbortWaitsForTheGraphs) {
  // Both ranks' graphs of batch size 1 hold their collectives when rank 1
  // fails capturing the step of batch size 3 (before its collectives;
  // rank 0's capture, if it got to them first, holds them too, and its
  // replay waits in them until the abort wakes it). The abort's NCCL side
  // waits until no graph holds the communicators, which the model's
  // destruction ensures before it destroys the group.
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  FakeNcclStats before = fakeNcclStats();
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(model) << model.error().message();
    ASSERT_TRUE(runBatchSizes(**model, {1}));
    EXPECT_EQ(fakeNcclStats().captured - before.captured, 4);
    ScopedEnv inject("FDC_TEST_CUDA_STEP", "unknown_kernel");
    Expected<std::vector<StepRows>> failed = runBatchSizes(**model, {3});
    ASSERT_FALSE(failed);
    EXPECT_CONTAINS(failed.error().message(),
                    "tensor-parallel rank 1 of 2 failed: the model step "
                    "launched kernel 'fdc_test_not_in_manifest'");
    EXPECT_GE(fakeStats().graphs.liveGraphExecs, 2);
    Expected<std::vector<StepRows>> refused = runBatchSizes(**model, {1});
    ASSERT_FALSE(refused);
    EXPECT_CONTAINS(refused.error().message(),
                    "tensor-parallel group aborted: ");
  }
  EXPECT_EQ(fakeNcclStats().destroyedWithLiveGraphs,
            before.destroyedWithLiveGraphs);
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, NcclGraphMixingSupportIsTurnedOff) {
  // NCCL's support for mixing captured and uncaptured calls goes off with
  // collectives in the graphs, unless the environment sets it.
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  struct Case {
    const char *graphs, *before, *after;
  };
  for (const Case &c : {Case{"1", nullptr, "0"}, Case{"1", "1", "1"},
                        Case{"0", nullptr, "(unset)"}}) {
    SCOPED_TRACE(std::string("FDC_NCCL_GRAPHS=") + c.graphs);
    ScopedEnv graphs("FDC_NCCL_GRAPHS", c.graphs);
    ScopedEnv mixing("NCCL_GRAPH_MIXING_SUPPORT", c.before);
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(model) << model.error().message();
    const char *value = std::getenv("NCCL_GRAPH_MIXING_SUPPORT");
    EXPECT_EQ(std::string(value ? value : "(unset)"), c.after);
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelNeedsADeviceForEveryRank) {
  EXPECT_EQ(loadError(FDC_TEST_CUDA_TP),
            "tensor-parallel rank 1 of 2: CUDA device 1 does not exist: the "
            "machine has 1 CUDA device (FDC_CUDA_DEVICE chooses one)");
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv device("FDC_CUDA_DEVICE", "1");
  EXPECT_EQ(loadError(FDC_TEST_CUDA_TP),
            "tensor-parallel rank 1 of 2: CUDA device 2 does not exist: the "
            "machine has 2 CUDA devices (FDC_CUDA_DEVICE chooses one)");
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelNeedsNccl) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  {
    ScopedEnv nccl("FDC_NCCL_LIBRARY", "/nonexistent/libnccl.so.2");
    std::string message = loadError(FDC_TEST_CUDA_TP);
    EXPECT_EQ(message.rfind("tensor-parallel group of 2 ranks: cannot load "
                            "NCCL /nonexistent/libnccl.so.2: ",
                            0),
              0u)
        << message;
    EXPECT_CONTAINS(message, "pip install nvidia-nccl-cu13");
    EXPECT_CONTAINS(message, "set FDC_NCCL_LIBRARY to its libnccl.so.2");
  }
  {
    // A library that is not NCCL.
    ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_CUDA_DRIVER);
    EXPECT_EQ(loadError(FDC_TEST_CUDA_TP),
              std::string("tensor-parallel group of 2 ranks: NCCL ") +
                  FDC_FAKE_CUDA_DRIVER +
                  " lacks ncclGetVersion (NCCL 2.4 or newer is needed)");
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, CollectiveGroupNeedsDistinctGpuBackends) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_CUDA_TP);
  ASSERT_TRUE(library) << library.error().message();
  Expected<std::unique_ptr<DeviceBackend>> a =
      createDeviceBackend(**library, 0);
  Expected<std::unique_ptr<DeviceBackend>> b =
      createDeviceBackend(**library, 0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ((*a)->deviceOrdinal(), 0);
  Expected<std::unique_ptr<CollectiveGroup>> group =
      createDeviceCollectiveGroup({a->get(), b->get()});
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().message(),
            "tensor-parallel ranks 0 and 1 are both on CUDA device 0 (each "
            "rank needs a device of its own)");
  group = createDeviceCollectiveGroup({a->get(), nullptr});
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().message(),
            "tensor-parallel rank 1 has no GPU backend of this runtime");
  group = createDeviceCollectiveGroup({});
  ASSERT_FALSE(group);
  EXPECT_EQ(group.error().message(),
            "a tensor-parallel group has 1 to 64 ranks, not 0");
}

TEST_F(CudaFakeDriverTest, NcclFailuresAtLoad) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  {
    ScopedEnv fail("FDC_FAKE_NCCL_INIT_FAIL", "1");
    EXPECT_EQ(loadError(FDC_TEST_CUDA_TP),
              std::string("tensor-parallel group of 2 ranks: "
                          "ncclCommInitAll(CUDA devices 0, 1) failed: "
                          "unhandled system error (fake) (ncclResult_t 2) "
                          "(NCCL ") +
                  FDC_FAKE_NCCL + ")");
  }
  {
    ScopedEnv fail("FDC_FAKE_NCCL_ASYNC_ERROR", "1");
    EXPECT_EQ(loadError(FDC_TEST_CUDA_TP),
              std::string("tensor-parallel group of 2 ranks: the NCCL warm-up "
                          "failed on rank 0: remote process exited or there "
                          "was a network error (fake) (ncclResult_t 6) (CUDA "
                          "devices 0, 1, NCCL ") +
                  FDC_FAKE_NCCL + ")");
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, NcclAsynchronousErrorFailsTheStep) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(model) << model.error().message();
    EXPECT_EQ(generate(**model, {1}, 1).tokens, (std::vector<int32_t>{2}));
    ScopedEnv fail("FDC_FAKE_NCCL_ASYNC_ERROR", "1");
    GenerationResult result = generate(**model, {1}, 1);
    EXPECT_EQ(result.reason, FinishReason::Error);
    EXPECT_EQ(result.error, "tensor-parallel rank 0: NCCL error: remote "
                            "process exited or there was a network error "
                            "(fake) (ncclResult_t 6)");
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelReleasesEverything) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  ScopedEnv windows("FDC_NCCL_WINDOW", "1");
  FakeNcclStats before = fakeNcclStats();
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(model) << model.error().message();
    FakeCudaStats stats = fakeStats();
    // Six buffers (the scratch from ncclMemAlloc), a module and a stream
    // per rank (the warm-up's freed).
    EXPECT_EQ(stats.liveAllocations, 12);
    EXPECT_EQ(stats.liveModules, 2);
    EXPECT_EQ(stats.liveStreams, 2);
    EXPECT_EQ(generate(**model, {3}, 2).tokens, (std::vector<int32_t>{4, 5}));
  }
  expectNothingLeaked();
  FakeNcclStats after = fakeNcclStats();
  EXPECT_EQ(after.memAllocs - before.memAllocs, 2);
  EXPECT_EQ(after.memFrees - before.memFrees, 2);
  EXPECT_EQ(after.windowsDeregistered - before.windowsDeregistered, 2);
}

TEST_F(CudaFakeDriverTest, TensorParallelOverlappedStepsMatchStepsOneByOne) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  {
    Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(model) << model.error().message();
    OverlapRun oneByOne = runOverlapWorkload(**model, false);
    ASSERT_TRUE((*model)->canOverlapSteps());
    FakeCudaStats before = fakeStats();
    FakeNcclStats ncclBefore = fakeNcclStats();
    OverlapRun overlapped = runOverlapWorkload(**model, true);
    FakeCudaStats after = fakeStats();
    FakeNcclStats ncclAfter = fakeNcclStats();
    EXPECT_EQ(oneByOne.launchedAhead, 0);
    EXPECT_GT(overlapped.launchedAhead, 0);
    EXPECT_EQ(overlapped.steps, oneByOne.steps);
    // Every rank overlaps: per step, each rank's kernels wait for its
    // inputs' copy and its ids' copy for its kernels; each rank's gather
    // and sum run every step (replayed from the graphs).
    EXPECT_EQ(after.streamWaits - before.streamWaits, 2 * 2 * overlapped.steps);
    EXPECT_EQ(ncclAfter.allGathers - ncclBefore.allGathers,
              2 * overlapped.steps);
    EXPECT_EQ(ncclAfter.allReduces - ncclBefore.allReduces,
              2 * overlapped.steps);
    ASSERT_EQ(overlapped.results.size(), oneByOne.results.size());
    for (size_t i = 0; i < oneByOne.results.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(oneByOne.results[i].id));
      EXPECT_EQ(overlapped.results[i].tokens, oneByOne.results[i].tokens);
      EXPECT_EQ(overlapped.results[i].reason, oneByOne.results[i].reason);
      EXPECT_EQ(overlapped.results[i].error, "");
    }
    // Greedy: the fed token + 1.
    EXPECT_EQ(oneByOne.results[0].tokens,
              (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelOverlapRefusesWithoutAborting) {
  // What one backend would refuse is refused before any rank sees it, and
  // the group goes on.
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  {
    Expected<std::unique_ptr<Model>> loaded = load(FDC_TEST_CUDA_TP);
    ASSERT_TRUE(loaded) << loaded.error().message();
    Model &model = **loaded;
    ASSERT_TRUE(model.canOverlapSteps());
    auto row = [&](int32_t token, int32_t position) {
      StepArrays a = greedyFirstRow(token, model.vocabSize());
      a.positions = {position};
      a.nextTokens = {-1};
      return a;
    };
    StepArrays first = row(3, 0), second = row(0, 1), third = row(0, 2);
    FdcStepArgs a1 = first.args(), a2 = second.args(), a3 = third.args();
    Error fedFirst = model.launchStep(a1, 1);
    ASSERT_TRUE(fedFirst);
    EXPECT_CONTAINS(fedFirst.message(), "launches a step of new rows when "
                                        "none is in flight");
    ASSERT_FALSE(model.launchStep(a1, 0));
    Error newRows = model.launchStep(a2, 0);
    EXPECT_CONTAINS(newRows.message(), "(0 of 1 rows fed, 1 in flight)");
    EXPECT_EQ(model.step(a2).message(),
              "model step: overlapped steps are in flight");
    ASSERT_FALSE(model.launchStep(a2, 1)); // its token: step 1's id, 4
    EXPECT_EQ(model.launchStep(a3, 1).message(),
              "model step: a third overlapped step");
    StepArrays wide = row(0, 2);
    wide.tokens = {1, 2};
    FdcStepArgs two = wide.args();
    EXPECT_EQ(model.finishStep(two).message(),
              "model step: finishing a step of 1 sequences with the "
              "arguments of one of 2");
    ASSERT_FALSE(model.finishStep(a1));
    EXPECT_EQ(first.nextTokens[0], 4);
    ASSERT_FALSE(model.finishStep(a2));
    EXPECT_EQ(second.nextTokens[0], 5);
    EXPECT_EQ(model.finishStep(a3).message(),
              "model step: no overlapped step to finish");
    // Not aborted: a step runs.
    third.tokens = {5};
    FdcStepArgs again = third.args();
    ASSERT_FALSE(model.step(again));
    EXPECT_EQ(third.nextTokens[0], 6);
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelScratchIsASymmetricWindow) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  for (bool windows : {true, false}) {
    SCOPED_TRACE(windows ? "FDC_NCCL_WINDOW=1" : "by default");
    ScopedEnv mode("FDC_NCCL_WINDOW", windows ? "1" : "");
    FakeNcclStats before = fakeNcclStats();
    {
      Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
      ASSERT_TRUE(model) << model.error().message();
      // Each rank's scratch from ncclMemAlloc, registered once.
      FakeNcclStats loaded = fakeNcclStats();
      EXPECT_EQ(loaded.memAllocs - before.memAllocs, windows ? 2 : 0);
      EXPECT_EQ(loaded.windowsRegistered - before.windowsRegistered,
                windows ? 2 : 0);
      EXPECT_EQ(generate(**model, {3}, 2).tokens, (std::vector<int32_t>{4, 5}));
      // The step gathers from the scratch into the scratch's workspace:
      // inside the windows. Its sum is on the logits, outside.
      FakeNcclStats ran = fakeNcclStats();
      int64_t gathers = ran.allGathers - loaded.allGathers;
      EXPECT_GT(gathers, 0);
      EXPECT_EQ(ran.inWindows - loaded.inWindows, windows ? gathers : 0);
      EXPECT_EQ(ran.windowsDeregistered, loaded.windowsDeregistered);
    }
    // Deregistered with the group, freed with the backends.
    FakeNcclStats after = fakeNcclStats();
    EXPECT_EQ(after.windowsDeregistered - before.windowsDeregistered,
              windows ? 2 : 0);
    EXPECT_EQ(after.memFrees - before.memFrees, windows ? 2 : 0);
  }
  expectNothingLeaked();
}

TEST_F(CudaFakeDriverTest, TensorParallelWindowFailureIsNamed) {
  ScopedEnv devices("FDC_FAKE_CUDA_DEVICES", "2");
  ScopedEnv nccl("FDC_NCCL_LIBRARY", FDC_FAKE_NCCL);
  ScopedEnv windows("FDC_NCCL_WINDOW", "1");
  ScopedEnv fail("FDC_FAKE_NCCL_WINDOW_FAIL", "1");
  FakeNcclStats before = fakeNcclStats();
  Expected<std::unique_ptr<Model>> model = load(FDC_TEST_CUDA_TP);
  ASSERT_FALSE(model);
  EXPECT_NE(model.error().message().find("tensor-parallel group of 2 ranks: "
                                         "ncclCommWindowRegister(scratch, "),
            std::string::npos)
      << model.error().message();
  EXPECT_NE(model.error().message().find("unset FDC_NCCL_WINDOW"),
            std::string::npos);
  expectNothingLeaked();
  FakeNcclStats after = fakeNcclStats();
  EXPECT_EQ(after.memFrees - before.memFrees,
            after.memAllocs - before.memAllocs);
  EXPECT_EQ(after.windowsRegistered, before.windowsRegistered);
}

#endif // FDC_FAKE_CUDA_DRIVER

//===----------------------------------------------------------------------===//
// CudaNoDriverTest: no libcuda, or a runtime without the CUDA backend
//===----------------------------------------------------------------------===//

TEST(CudaNoDriverTest, MissingDriverGivesAClearMessage) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ScopedEnv driver("FDC_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  Expected<std::unique_ptr<Model>> model =
      Model::load(FDC_TEST_CUDA_PTX, dir.path(), ModelOptions());
  ASSERT_FALSE(model);
  const std::string &message = model.error().message();
  if (!cuda::backendAvailable()) {
    EXPECT_CONTAINS(message, "built without the CUDA backend");
    return;
  }
  EXPECT_CONTAINS(message, std::string("model library ") + FDC_TEST_CUDA_PTX +
                               " targets 'cuda:sm_90': cannot load the CUDA "
                               "driver /nonexistent/libcuda.so.1: ");
  EXPECT_CONTAINS(message,
                  "(is the NVIDIA driver installed and a GPU visible?)");
}

TEST(CudaNoDriverTest, FdcRunExitsNonZero) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  std::string errors;
  int rc = runFdcRun(
      FDC_RUN, "FDC_CUDA_DRIVER=/nonexistent/libcuda.so.1",
      {FDC_TEST_CUDA_PTX, "--weights", dir.path(), "--prompt-ids", "1"},
      errors);
  EXPECT_NE(rc, 0);
  if (cuda::backendAvailable())
    EXPECT_CONTAINS(errors, "targets 'cuda:sm_90': cannot load the CUDA "
                            "driver /nonexistent/libcuda.so.1: ");
  else
    EXPECT_CONTAINS(errors, "built without the CUDA backend");
}

TEST(CudaNoDriverTest, ThisMachine) {
  // What a user of this machine sees: a GPU run, or a clear refusal.
  TempDir dir;
  writeTestCheckpoint(dir.path());
  ScopedEnv driver("FDC_CUDA_DRIVER", nullptr);
  char *error = nullptr;
  fdc_model *model =
      fdc_model_load(FDC_TEST_CUDA_PTX, dir.path().c_str(), 16, 1, &error);
  if (model) {
    fdc_model_free(model);
    GTEST_SKIP() << "this machine has a GPU (see Gpu/CudaBackendTest)";
  }
  ASSERT_NE(error, nullptr);
  std::string message = error;
  fdc_string_free(error);
  if (!cuda::backendAvailable())
    EXPECT_CONTAINS(message, "this runtime runs: " + joinedSupportedTargets() +
                                 " (it was built without the CUDA backend");
  else
    EXPECT_TRUE(contains(message, "cannot load the CUDA driver libcuda.so.1") ||
                contains(message, "cuInit failed"))
        << message;
}

} // namespace
