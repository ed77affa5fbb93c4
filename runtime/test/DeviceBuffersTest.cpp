//===- DeviceBuffersTest.cpp - GPU buffer sizes and device choice ---------===//
//
// The vendor-neutral parts of the GPU backends that need no GPU: the
// manifest's scratch, the overflow-checked buffer sizes, device ordinals and
// which targets need a device backend.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/DeviceBuffers.h"
#include "fdc/runtime/DeviceBackend.h"
#include "fdc/runtime/ModelLibrary.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;

namespace {

std::string scratchError(const std::string &scratch) {
  Expected<ScratchSpec> spec =
      parseScratch("{\"scratch\": " + scratch + "}", "test");
  return spec ? "" : spec.error().message();
}

TEST(DeviceBuffersTest, ParsesScratch) {
  Expected<ScratchSpec> none = parseScratch("{\"abi_version\": 1}", "test");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->bytesPerSequence, 0u);
  EXPECT_EQ(none->fixedBytes, 0u);
  Expected<ScratchSpec> spec = parseScratch(
      R"({"scratch": {"bytes_per_sequence": 4096, "fixed_bytes": 512}})",
      "test");
  ASSERT_TRUE(spec) << spec.error().message();
  EXPECT_EQ(spec->bytesPerSequence, 4096u);
  EXPECT_EQ(spec->fixedBytes, 512u);

  EXPECT_EQ(scratchError("[]"),
            "manifest of test: field 'scratch' is not an object");
  EXPECT_EQ(scratchError(R"({"fixed_bytes": 0})"),
            "manifest of test: missing field 'scratch.bytes_per_sequence'");
  EXPECT_EQ(scratchError(R"({"bytes_per_sequence": -1, "fixed_bytes": 0})"),
            "manifest of test: field 'scratch.bytes_per_sequence' is not a "
            "non-negative integer");
  EXPECT_EQ(scratchError(R"({"bytes_per_sequence": 1, "fixed_bytes": 0.5})"),
            "manifest of test: field 'scratch.fixed_bytes' is not a "
            "non-negative integer");
  EXPECT_NE(scratchError("{").find("JSON error"), std::string::npos);
}

TEST(DeviceBuffersTest, ScratchBytes) {
  auto bytes = [](uint64_t perSequence, uint64_t fixed, int64_t batch) {
    Expected<uint64_t> b = scratchBytes({perSequence, fixed}, batch);
    return b ? *b : UINT64_MAX;
  };
  EXPECT_EQ(bytes(0, 0, 8), 0u);
  EXPECT_EQ(bytes(4, 0, 3), 256u);
  EXPECT_EQ(bytes(300, 10, 2), 768u); // 610 rounded up
  EXPECT_EQ(bytes(256, 256, 4), 1280u);
  EXPECT_EQ(bytes(1, 0, 0), 0u);
  EXPECT_FALSE(scratchBytes({UINT64_MAX / 2, 0}, 3));
  EXPECT_FALSE(scratchBytes({1, UINT64_MAX - 10}, 8));
  EXPECT_FALSE(scratchBytes({0, UINT64_MAX - 10}, 1));
  EXPECT_FALSE(scratchBytes({1, 0}, -1));
}

TEST(DeviceBuffersTest, ComputesEveryBuffer) {
  Expected<DeviceBufferSizes> sizes =
      computeDeviceBufferSizes(4096, 3, 32, {4, 100}, "Test backend");
  ASSERT_TRUE(sizes) << sizes.error().message();
  EXPECT_EQ(sizes->kvCache, 4096u);
  EXPECT_EQ(sizes->scratch, 256u); // 100 + 4 x 3, 256-aligned
  EXPECT_EQ(sizes->inputStride, 256u);
  EXPECT_EQ(sizes->inputs, 7u * 256);
  EXPECT_EQ(sizes->logits, 3u * 32 * 4);
  EXPECT_EQ(sizes->nextTokens, 3u * 4);

  sizes = computeDeviceBufferSizes(0, 65, 1, {}, "Test backend");
  ASSERT_TRUE(sizes) << sizes.error().message();
  EXPECT_EQ(sizes->inputStride, 512u); // 260 bytes, 256-aligned
  EXPECT_EQ(sizes->scratch, 0u);
}

TEST(DeviceBuffersTest, EachStepSizePacksItsInputsFromTheStart) {
  // A step copies only its own arrays, at its own stride, whatever the
  // buffer's largest step.
  EXPECT_EQ(stepInputStride(1), 256u);
  EXPECT_EQ(stepInputBytes(1), 6u * 256 + 4);
  EXPECT_EQ(stepInputStride(64), 256u);
  EXPECT_EQ(stepInputBytes(64), 6u * 256 + 256);
  EXPECT_EQ(stepInputStride(65), 512u);
  EXPECT_EQ(stepInputBytes(65), 6u * 512 + 260);
  Expected<DeviceBufferSizes> sizes =
      computeDeviceBufferSizes(0, 1024, 8, {}, "Test backend");
  ASSERT_TRUE(sizes) << sizes.error().message();
  EXPECT_EQ(sizes->inputStride, stepInputStride(1024));
  // The largest step's arrays end inside the buffer.
  EXPECT_LE(stepInputBytes(1024), sizes->inputs);
}

std::string sizeError(uint64_t kvCache, int64_t maxBatch, int64_t vocab,
                      ScratchSpec scratch = {}) {
  Expected<DeviceBufferSizes> sizes = computeDeviceBufferSizes(
      kvCache, maxBatch, vocab, scratch, "Test backend");
  return sizes ? "" : sizes.error().message();
}

TEST(DeviceBuffersTest, RefusesSizesThatOverflow) {
  EXPECT_EQ(sizeError(0, 0, 32),
            "Test backend: max_batch must be in [1, 2^31), got 0");
  EXPECT_EQ(sizeError(0, int64_t(1) << 31, 32),
            "Test backend: max_batch must be in [1, 2^31), got 2147483648");
  EXPECT_EQ(sizeError(0, 1, 0),
            "Test backend: vocab_size must be in [1, 2^31), got 0");
  EXPECT_EQ(sizeError(0, 1, int64_t(1) << 40),
            "Test backend: vocab_size must be in [1, 2^31), got 1099511627776");
  EXPECT_EQ(sizeError((uint64_t(1) << 62) + 1, 1, 32),
            "Test backend: a KV cache of 4611686018427387905 bytes is too "
            "large");
  EXPECT_EQ(sizeError(uint64_t(1) << 62, 1, 32), "");
  EXPECT_EQ(sizeError(0, 2, 32, {uint64_t(1) << 62, 0}),
            "Test backend: a scratch buffer of 9223372036854775808 bytes is "
            "too large");
  EXPECT_EQ(sizeError(0, 8, 32, {UINT64_MAX / 4, 0}),
            "scratch of 0 + 4611686018427387903 x 8 bytes overflows 64 bits");
  // 2^31 - 1 sequences of 2^31 - 1 floats: about 2^64 bytes of logits.
  EXPECT_EQ(sizeError(0, INT32_MAX, INT32_MAX),
            "logits of 2147483647 x 2147483647 floats overflow 64 bits");
}

TEST(DeviceBackendTest, DeviceOrdinal) {
  EXPECT_EQ(*parseDeviceOrdinal("0", "FDC_CUDA_DEVICE"), 0);
  EXPECT_EQ(*parseDeviceOrdinal("3", "FDC_CUDA_DEVICE"), 3);
  EXPECT_EQ(*parseDeviceOrdinal("12", "FDC_TEST_DEVICE"), 12);
  for (const char *bad : {"", "-1", "x", "1 ", "0x1", "99999999"})
    EXPECT_FALSE(parseDeviceOrdinal(bad, "FDC_CUDA_DEVICE")) << bad;
  EXPECT_EQ(parseDeviceOrdinal("gpu1", "FDC_CUDA_DEVICE").error().message(),
            "FDC_CUDA_DEVICE='gpu1' is not a device ordinal (0, 1, ...)");
  EXPECT_EQ(parseDeviceOrdinal("-2", "FDC_TEST_DEVICE").error().message(),
            "FDC_TEST_DEVICE='-2' is not a device ordinal (0, 1, ...)");
}

TEST(DeviceBackendTest, DeviceTargets) {
  EXPECT_TRUE(isDeviceTarget("cuda:sm_90"));
  EXPECT_TRUE(isDeviceTarget("rocm:gfx90a"));
  EXPECT_TRUE(isDeviceTarget("rocm:"));
  EXPECT_FALSE(isDeviceTarget("host"));
  EXPECT_FALSE(isDeviceTarget("rocm"));
  EXPECT_FALSE(isDeviceTarget("vulkan:x"));
}

TEST(DeviceBackendTest, HostLibraryHasNoBackend) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_MODEL_GOOD);
  ASSERT_TRUE(library) << library.error().message();
  EXPECT_TRUE((*library)->runsOnHost());
  Expected<std::unique_ptr<DeviceBackend>> backend =
      createDeviceBackend(**library);
  ASSERT_FALSE(backend);
  EXPECT_EQ(backend.error().message(),
            std::string("model library ") + FDC_TEST_MODEL_GOOD +
                " targets 'host', which runs on no device backend");
}

} // namespace
