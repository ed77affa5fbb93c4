//===- CudaTargetTest.cpp - cuda:sm_XX targets, no GPU needed -------------===//

#include "fdc/runtime/cuda/CudaTarget.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/hip/HipBackend.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;
using namespace fdc::runtime::test;

namespace {

std::vector<std::string> archNames(const std::string &target) {
  Expected<CudaTarget> parsed = parseCudaTarget(target);
  EXPECT_TRUE(parsed) << parsed.error().message();
  std::vector<std::string> names;
  if (parsed)
    for (const CudaArch &arch : parsed->archs)
      names.push_back(arch.name());
  return names;
}

std::string parseError(const std::string &target) {
  Expected<CudaTarget> parsed = parseCudaTarget(target);
  return parsed ? "" : parsed.error().message();
}

TEST(CudaTargetTest, IsCudaTarget) {
  EXPECT_TRUE(isCudaTarget("cuda:sm_90"));
  EXPECT_TRUE(isCudaTarget("cuda:"));
  EXPECT_FALSE(isCudaTarget("host"));
  EXPECT_FALSE(isCudaTarget("cuda"));
  EXPECT_FALSE(isCudaTarget("rocm:gfx942"));
}

TEST(CudaTargetTest, ParsesArchLists) {
  EXPECT_EQ(archNames("cuda:sm_90"), std::vector<std::string>{"sm_90"});
  EXPECT_EQ(archNames("cuda:sm_90,sm_80"),
            (std::vector<std::string>{"sm_90", "sm_80"}));
  EXPECT_EQ(archNames("cuda:sm_90a,sm_100f,sm_120"),
            (std::vector<std::string>{"sm_90a", "sm_100f", "sm_120"}));
  Expected<CudaTarget> parsed = parseCudaTarget("cuda:sm_90a,sm_86");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->archs[0].smVersion, 90);
  EXPECT_EQ(parsed->archs[0].suffix, "a");
  EXPECT_EQ(parsed->archs[1].smVersion, 86);
  EXPECT_EQ(parsed->archs[1].suffix, "");
}

TEST(CudaTargetTest, RefusesMalformedTargets) {
  EXPECT_EQ(parseError("cuda:"),
            "malformed cuda target 'cuda:': no architecture after 'cuda:' "
            "(expected e.g. cuda:sm_90)");
  EXPECT_EQ(parseError("host"),
            "malformed cuda target 'host': it does not start with 'cuda:'");
  EXPECT_EQ(parseError("cuda:sm90"),
            "malformed cuda target 'cuda:sm90': 'sm90' is not an "
            "architecture like sm_90 or sm_90a");
  EXPECT_EQ(parseError("cuda:sm_90,sm_90"),
            "malformed cuda target 'cuda:sm_90,sm_90': 'sm_90' is listed "
            "twice");
  for (const char *bad :
       {"cuda:sm_9", "cuda:sm_90,", "cuda:,sm_90", "cuda:sm_90 ,sm_80",
        "cuda:sm_090", "cuda:sm_90b", "cuda:sm_90aa", "cuda:compute_90",
        "cuda:SM_90", "cuda:sm_12345", "cuda:sm_"})
    EXPECT_NE(parseError(bad).find("is not an architecture"), std::string::npos)
        << bad << ": " << parseError(bad);
}

std::vector<std::string> candidates(const std::string &target, int major,
                                    int minor) {
  Expected<CudaTarget> parsed = parseCudaTarget(target);
  EXPECT_TRUE(parsed) << parsed.error().message();
  std::vector<std::string> symbols;
  if (parsed)
    for (const KernelImageCandidate &c :
         kernelImageCandidates(*parsed, major, minor))
      symbols.push_back(c.symbol);
  return symbols;
}

TEST(CudaTargetTest, KernelImageCandidates) {
  using V = std::vector<std::string>;
  // The cubin of the device's arch, then the PTX.
  EXPECT_EQ(candidates("cuda:sm_90,sm_80", 9, 0),
            (V{"fdc_cubin_sm_90", "fdc_ptx"}));
  EXPECT_EQ(candidates("cuda:sm_90,sm_80", 8, 0),
            (V{"fdc_cubin_sm_80", "fdc_ptx"}));
  // A device the target does not list still gets its own cubin tried.
  EXPECT_EQ(candidates("cuda:sm_90,sm_80", 8, 6),
            (V{"fdc_cubin_sm_86", "fdc_ptx"}));
  EXPECT_EQ(candidates("cuda:sm_90", 10, 0),
            (V{"fdc_cubin_sm_100", "fdc_ptx"}));
  EXPECT_EQ(candidates("cuda:sm_120", 12, 0),
            (V{"fdc_cubin_sm_120", "fdc_ptx"}));
  // Arch-specific cubins first when listed first, the plain one after.
  EXPECT_EQ(candidates("cuda:sm_90a", 9, 0),
            (V{"fdc_cubin_sm_90a", "fdc_cubin_sm_90", "fdc_ptx"}));
  EXPECT_EQ(candidates("cuda:sm_90,sm_90a", 9, 0),
            (V{"fdc_cubin_sm_90", "fdc_cubin_sm_90a", "fdc_ptx"}));
  EXPECT_EQ(candidates("cuda:sm_90a", 8, 0), (V{"fdc_cubin_sm_80", "fdc_ptx"}));

  Expected<CudaTarget> parsed = parseCudaTarget("cuda:sm_90");
  ASSERT_TRUE(parsed);
  std::vector<KernelImageCandidate> list = kernelImageCandidates(*parsed, 9, 0);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].kind, KernelImageCandidate::Cubin);
  EXPECT_EQ(list[0].sizeSymbol, "fdc_cubin_sm_90_size");
  EXPECT_EQ(list[1].kind, KernelImageCandidate::Ptx);
}

TEST(CudaTargetTest, DeviceArchName) {
  EXPECT_EQ(deviceArchName(9, 0), "sm_90");
  EXPECT_EQ(deviceArchName(8, 6), "sm_86");
  EXPECT_EQ(deviceArchName(12, 0), "sm_120");
}

TEST(CudaTargetTest, SupportedTargets) {
  EXPECT_TRUE(isSupportedTarget("host"));
  EXPECT_FALSE(isSupportedTarget("vulkan:1.3"));
  EXPECT_FALSE(isSupportedTarget("cuda:"));
  EXPECT_FALSE(isSupportedTarget("cuda:sm90"));
  EXPECT_EQ(isSupportedTarget("cuda:sm_90"), backendAvailable());
  EXPECT_EQ(isSupportedTarget("cuda:sm_90,sm_80"), backendAvailable());
  std::vector<std::string> expected = {"host"};
  if (backendAvailable())
    expected.push_back("cuda:sm_XX[,sm_YY...]");
  if (hip::backendAvailable())
    expected.push_back("rocm:gfxXXX[,gfxYYY...]");
  EXPECT_EQ(supportedTargets(), expected);
}

TEST(CudaTargetTest, OpensCudaLibraryWhenBuiltWithCuda) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_CUDA_PTX);
  if (!backendAvailable()) {
    ASSERT_FALSE(library);
    EXPECT_EQ(library.error().message(),
              std::string("model library ") + FDC_TEST_CUDA_PTX +
                  " targets 'cuda:sm_90'; this runtime runs: " +
                  joinedSupportedTargets() +
                  " (it was built without the CUDA backend: cuda.h was not "
                  "found, or FDC_RUNTIME_CUDA=OFF)");
    return;
  }
  ASSERT_TRUE(library) << library.error().message();
  EXPECT_TRUE((*library)->isCuda());
  EXPECT_EQ((*library)->target(), "cuda:sm_90");
  EXPECT_NE((*library)->symbol("fdc_ptx"), nullptr);
  EXPECT_EQ((*library)->symbol("fdc_cubin_sm_90"), nullptr);
  ASSERT_EQ((*library)->manifest().kernels.size(), 2u);
  EXPECT_EQ((*library)->manifest().kernels[1].name, "fdc_test_next_token");
}

TEST(CudaTargetTest, RefusesMalformedCudaTarget) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_CUDA_BADTARGET);
  ASSERT_FALSE(library);
  std::string expected =
      backendAvailable()
          ? std::string("model library ") + FDC_TEST_CUDA_BADTARGET +
                ": malformed cuda target 'cuda:sm90': 'sm90' is not an "
                "architecture like sm_90 or sm_90a"
          : std::string("model library ") + FDC_TEST_CUDA_BADTARGET +
                " targets 'cuda:sm90'; this runtime runs: " +
                joinedSupportedTargets() +
                " (it was built without the CUDA backend: cuda.h was not "
                "found, or FDC_RUNTIME_CUDA=OFF)";
  EXPECT_EQ(library.error().message(), expected);
}

TEST(CudaTargetTest, RefusesUnsupportedTarget) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_MODEL_VULKAN);
  ASSERT_FALSE(library);
  EXPECT_EQ(library.error().message(),
            std::string("model library ") + FDC_TEST_MODEL_VULKAN +
                " targets 'vulkan:1.3'; this runtime runs: " +
                joinedSupportedTargets());
}

TEST(CudaTargetTest, HostStyleCudaLibraryWithoutImages) {
  // ../TestModel.c built for "cuda:sm_90": no fdc_ptx, no cubin.
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_MODEL_CUDA);
  ASSERT_EQ(static_cast<bool>(library), backendAvailable());
  if (library)
    EXPECT_EQ((*library)->symbol("fdc_ptx"), nullptr);
}

TEST(CudaTargetTest, StepArgsLayout) {
  // The ABI: every field 8 bytes, scratch at [14], device at [15],
  // collective at [16].
  EXPECT_EQ(sizeof(FdcStepArgs), 17u * 8);
  EXPECT_EQ(offsetof(FdcStepArgs, scratch), 14u * 8);
  EXPECT_EQ(offsetof(FdcStepArgs, device), 15u * 8);
  EXPECT_EQ(offsetof(FdcStepArgs, collective), 16u * 8);
  EXPECT_EQ(sizeof(FdcCollectiveApi), 5u * 8);
}

} // namespace
