//===- HipTargetTest.cpp - rocm:gfxXXX targets, no GPU needed -------------===//

#include "fdc/runtime/hip/HipTarget.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/hip/HipBackend.h"

#ifdef FDC_TEST_HIP_HEADER
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>
#endif

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

using namespace fdc::runtime;
using namespace fdc::runtime::hip;
using namespace fdc::runtime::test;

namespace {

std::vector<std::string> archs(const std::string &target) {
  Expected<HipTarget> parsed = parseHipTarget(target);
  EXPECT_TRUE(parsed) << parsed.error().message();
  return parsed ? parsed->archs : std::vector<std::string>();
}

std::string parseError(const std::string &target) {
  Expected<HipTarget> parsed = parseHipTarget(target);
  return parsed ? "" : parsed.error().message();
}

TEST(HipTargetTest, IsHipTarget) {
  EXPECT_TRUE(isHipTarget("rocm:gfx90a"));
  EXPECT_TRUE(isHipTarget("rocm:"));
  EXPECT_FALSE(isHipTarget("rocm"));
  EXPECT_FALSE(isHipTarget("host"));
  EXPECT_FALSE(isHipTarget("cuda:sm_90"));
  EXPECT_FALSE(isHipTarget("hip:gfx90a"));
}

TEST(HipTargetTest, ParsesArchLists) {
  using V = std::vector<std::string>;
  EXPECT_EQ(archs("rocm:gfx90a"), V{"gfx90a"});
  EXPECT_EQ(archs("rocm:gfx90a,gfx942,gfx1100"),
            (V{"gfx90a", "gfx942", "gfx1100"}));
  EXPECT_EQ(archs("rocm:gfx1201,gfx908"), (V{"gfx1201", "gfx908"}));
}

TEST(HipTargetTest, RefusesMalformedTargets) {
  EXPECT_EQ(parseError("rocm:"),
            "malformed rocm target 'rocm:': no architecture after 'rocm:' "
            "(expected e.g. rocm:gfx90a)");
  EXPECT_EQ(parseError("cuda:sm_90"),
            "malformed rocm target 'cuda:sm_90': it does not start with "
            "'rocm:'");
  EXPECT_EQ(parseError("rocm:gfx90a,sm_90"),
            "malformed rocm target 'rocm:gfx90a,sm_90': 'sm_90' is not an "
            "architecture like gfx90a or gfx1100");
  EXPECT_EQ(parseError("rocm:gfx90a,gfx90a"),
            "malformed rocm target 'rocm:gfx90a,gfx90a': 'gfx90a' is listed "
            "twice");
  for (const char *bad :
       {"rocm:gfx", "rocm:gfx90a,", "rocm:,gfx90a", "rocm:gfx90a ,gfx942",
        "rocm:GFX90A", "rocm:gfx90A", "rocm:gfx90a:xnack+",
        "rocm:gfx90a;gfx942", "rocm:90a", "rocm:gfx_90a"})
    EXPECT_NE(parseError(bad).find("is not an architecture"), std::string::npos)
        << bad << ": " << parseError(bad);
}

TEST(HipTargetTest, CodeObjectSymbols) {
  EXPECT_EQ(hsacoSymbol("gfx90a"), "fdc_hsaco_gfx90a");
  EXPECT_EQ(hsacoSizeSymbol("gfx1100"), "fdc_hsaco_gfx1100_size");
}

TEST(HipTargetTest, ArchOfGcnArchName) {
  EXPECT_EQ(archOfGcnArchName("gfx90a:sramecc+:xnack-"), "gfx90a");
  EXPECT_EQ(archOfGcnArchName("gfx1100"), "gfx1100");
  EXPECT_EQ(archOfGcnArchName("gfx942:sramecc+:xnack+"), "gfx942");
}

TEST(HipTargetTest, ChoosesTheImageOfTheDeviceArch) {
  Expected<HipTarget> target = parseHipTarget("rocm:gfx90a,gfx942,gfx1100");
  ASSERT_TRUE(target);
  EXPECT_EQ(hsacoSymbolFor(*target, "gfx942"), "fdc_hsaco_gfx942");
  EXPECT_EQ(hsacoSymbolFor(*target, "gfx1100"), "fdc_hsaco_gfx1100");
  // No fallback: a close arch is not the arch.
  EXPECT_EQ(hsacoSymbolFor(*target, "gfx940"), std::nullopt);
  EXPECT_EQ(hsacoSymbolFor(*target, "gfx90"), std::nullopt);
  EXPECT_EQ(hsacoSymbolFor(*target, ""), std::nullopt);
}

/// A properties buffer with `name` first and `arch` at `offset`.
std::vector<char> properties(const char *arch, size_t offset,
                             size_t size = 2048) {
  std::vector<char> buffer(size, 0);
  std::strcpy(buffer.data(), "AMD Instinct MI250X gfx90a");
  std::strcpy(buffer.data() + offset, arch);
  return buffer;
}

std::string find(const std::vector<char> &buffer) {
  return findGcnArchName(buffer.data(), buffer.size());
}

TEST(HipTargetTest, FindsGcnArchNameInAnyLayout) {
  EXPECT_EQ(find(properties("gfx90a:sramecc+:xnack-", 396)),
            "gfx90a:sramecc+:xnack-");
  EXPECT_EQ(find(properties("gfx1100", 1160)), "gfx1100");
  // The name field is skipped even when it holds an arch-like string.
  std::vector<char> named(1024, 0);
  std::strcpy(named.data(), "gfx942");
  EXPECT_EQ(find(named), "");
  // Not preceded by a NUL, not an arch, not terminated: none of them.
  std::vector<char> decoys = properties("gfx942", 900);
  std::strcpy(decoys.data() + 300, "xgfx908");
  std::strcpy(decoys.data() + 400, "gfx9 0");
  std::strcpy(decoys.data() + 500, "gfx");
  std::strcpy(decoys.data() + 600, "gfx90A");
  EXPECT_EQ(find(decoys), "gfx942");
  std::vector<char> unterminated(600, 'a');
  unterminated[299] = '\0';
  std::memcpy(unterminated.data() + 300, "gfx90a", 6);
  EXPECT_EQ(find(unterminated), "");
  EXPECT_EQ(find(std::vector<char>(4096, 0)), "");
  EXPECT_EQ(findGcnArchName(nullptr, 0), "");
}

#ifdef FDC_TEST_HIP_HEADER
TEST(HipTargetTest, FindsGcnArchNameInTheHeadersDeviceProp) {
  // The layout of the hip_runtime_api.h this runtime was built with.
  auto props = std::make_unique<hipDeviceProp_t>();
  std::memset(props.get(), 0, sizeof(hipDeviceProp_t));
  std::strcpy(props->name, "AMD Radeon RX 7900 XTX");
  props->totalGlobalMem = 24ull << 30;
  props->major = 11;
  props->multiProcessorCount = 96;
  std::strcpy(props->gcnArchName, "gfx1100");
  EXPECT_EQ(findGcnArchName(props.get(), sizeof(hipDeviceProp_t)), "gfx1100");
}
#endif

//===----------------------------------------------------------------------===//
// ModelLibrary and rocm targets
//===----------------------------------------------------------------------===//

std::string openError(const char *path) {
  Expected<std::unique_ptr<ModelLibrary>> library = ModelLibrary::open(path);
  return library ? "" : library.error().message();
}

/// How a runtime without HIP refuses `target`.
std::string withoutHip(const char *path, const std::string &target) {
  return std::string("model library ") + path + " targets '" + target +
         "'; this runtime runs: " + joinedSupportedTargets() +
         " (it was built without the HIP backend: hip/hip_runtime_api.h was "
         "not found, or FDC_RUNTIME_HIP=OFF)";
}

TEST(HipTargetTest, SupportedTargets) {
  EXPECT_EQ(isSupportedTarget("rocm:gfx90a"), backendAvailable());
  EXPECT_EQ(isSupportedTarget("rocm:gfx90a,gfx1100"), backendAvailable());
  EXPECT_FALSE(isSupportedTarget("rocm:"));
  EXPECT_FALSE(isSupportedTarget("rocm:sm_90"));
  const std::vector<std::string> &targets = supportedTargets();
  EXPECT_EQ(
      std::count(targets.begin(), targets.end(), "rocm:gfxXXX[,gfxYYY...]"),
      backendAvailable() ? 1 : 0);
}

TEST(HipTargetTest, OpensRocmLibraryWhenBuiltWithHip) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_HIP);
  if (!backendAvailable()) {
    ASSERT_FALSE(library);
    EXPECT_EQ(library.error().message(),
              withoutHip(FDC_TEST_HIP, "rocm:gfx90a,gfx1100"));
    return;
  }
  ASSERT_TRUE(library) << library.error().message();
  EXPECT_TRUE((*library)->isRocm());
  EXPECT_FALSE((*library)->isCuda());
  EXPECT_FALSE((*library)->runsOnHost());
  EXPECT_NE((*library)->symbol("fdc_hsaco_gfx1100"), nullptr);
  ASSERT_EQ((*library)->manifest().kernels.size(), 2u);
}

TEST(HipTargetTest, RefusesMalformedRocmTarget) {
  std::string expected =
      backendAvailable()
          ? std::string("model library ") + FDC_TEST_HIP_BADTARGET +
                ": malformed rocm target 'rocm:gfx90a,sm_90': 'sm_90' is not "
                "an architecture like gfx90a or gfx1100"
          : withoutHip(FDC_TEST_HIP_BADTARGET, "rocm:gfx90a,sm_90");
  EXPECT_EQ(openError(FDC_TEST_HIP_BADTARGET), expected);
}

TEST(HipTargetTest, EveryListedArchNeedsItsCodeObject) {
  if (!backendAvailable())
    GTEST_SKIP() << "this runtime was built without the HIP backend";
  EXPECT_EQ(openError(FDC_TEST_HIP_NO_IMAGE),
            std::string("model library ") + FDC_TEST_HIP_NO_IMAGE +
                " lacks symbol fdc_hsaco_gfx1100 (its target "
                "'rocm:gfx90a,gfx1100' lists gfx1100)");
  EXPECT_EQ(openError(FDC_TEST_HIP_EMPTY_IMAGE),
            std::string("model library ") + FDC_TEST_HIP_EMPTY_IMAGE +
                ": fdc_hsaco_gfx1100_size is 0 (an empty kernel image "
                "fdc_hsaco_gfx1100)");
  // ../TestModel.c built for rocm:gfx942: no code object at all.
  EXPECT_EQ(openError(FDC_TEST_MODEL_ROCM),
            std::string("model library ") + FDC_TEST_MODEL_ROCM +
                " lacks symbol fdc_hsaco_gfx942 (its target 'rocm:gfx942' "
                "lists gfx942)");
}

TEST(HipTargetTest, CodeObjectSizeMustFitTheArray) {
  if (!backendAvailable())
    GTEST_SKIP() << "this runtime was built without the HIP backend";
  EXPECT_EQ(openError(FDC_TEST_HIP_OVERSIZED_IMAGE),
            std::string("model library ") + FDC_TEST_HIP_OVERSIZED_IMAGE +
                ": fdc_hsaco_gfx1100_size says 1048576 bytes but "
                "fdc_hsaco_gfx1100 has 121");
}

TEST(HipTargetTest, CodeObjectMustBeAnAMDGPUElf) {
  if (!backendAvailable())
    GTEST_SKIP() << "this runtime was built without the HIP backend";
  EXPECT_EQ(openError(FDC_TEST_HIP_NOT_ELF_IMAGE),
            std::string("model library ") + FDC_TEST_HIP_NOT_ELF_IMAGE +
                ": fdc_hsaco_gfx1100 is not a kernel image: it is 57 bytes, "
                "less than an ELF header");
}

} // namespace
