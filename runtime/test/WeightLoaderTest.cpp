//===- WeightLoaderTest.cpp - Tests of filling the weight arena -----------===//

#include "fdc/runtime/WeightLoader.h"

#include "fdc/runtime/ModelLibrary.h"

#include "TestUtil.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

class WeightLoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    Expected<std::unique_ptr<ModelLibrary>> opened =
        ModelLibrary::open(FDC_TEST_MODEL_GOOD);
    ASSERT_TRUE(opened) << opened.error().message();
    library = std::move(*opened);
  }

  /// Loads the test model's weights from a checkpoint of `tensors`; returns
  /// the error message or "" (and the arena in `arena`).
  std::string load(const std::vector<TestTensor> &tensors) {
    TempDir dir;
    writeFile(dir.file("model.safetensors"), makeSafetensors(tensors));
    Expected<std::unique_ptr<Checkpoint>> checkpoint =
        Checkpoint::open(dir.path());
    if (!checkpoint)
      return checkpoint.error().message();
    Expected<HostBuffer> loaded =
        loadWeights(library->manifest(), **checkpoint);
    if (!loaded)
      return loaded.error().message();
    arena = std::move(*loaded);
    return "";
  }

  std::unique_ptr<ModelLibrary> library;
  HostBuffer arena;
};

TEST_F(WeightLoaderTest, ConcatenatesSources) {
  ASSERT_EQ(load(testModelTensors()), "");
  ASSERT_EQ(arena.size(), 512u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena.data()) % 256, 0u);
  float w[8];
  std::memcpy(w, arena.data(), sizeof(w));
  EXPECT_EQ(std::vector<float>(w, w + 8),
            (std::vector<float>{0.5f, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(arena.data()[256 + 1], 0x3f); // bf16 1.0 = 0x3f80
  EXPECT_EQ(arena.data()[100], 0);        // padding stays zero
}

TEST_F(WeightLoaderTest, MissingTensor) {
  std::vector<TestTensor> tensors = testModelTensors();
  tensors.erase(tensors.begin() + 1); // "b"
  std::string message = load(tensors);
  EXPECT_NE(message.find("weight 'w': source 'b': checkpoint '"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("has no tensor 'b'"), std::string::npos) << message;
}

TEST_F(WeightLoaderTest, WrongDType) {
  std::vector<TestTensor> tensors = testModelTensors();
  tensors[2] = {"n", "F32", {4}, f32Bytes({1, 2, 3, 4})};
  EXPECT_EQ(load(tensors), "weight 'n': checkpoint dtype F32, library "
                           "expects bf16");
  tensors = testModelTensors();
  tensors[0] = {"a", "F16", {1, 4}, std::vector<uint8_t>(8)};
  EXPECT_EQ(load(tensors), "weight 'w': source 'a': checkpoint dtype F16, "
                           "library expects f32");
}

TEST_F(WeightLoaderTest, BadShape) {
  std::vector<TestTensor> tensors = testModelTensors();
  tensors[2] = {"n", "BF16", {2, 2}, std::vector<uint8_t>(8)};
  EXPECT_EQ(load(tensors), "weight 'n': checkpoint shape [2, 2] does not fit "
                           "library shape [4]");
  tensors = testModelTensors();
  tensors[1] = {"b", "F32", {1, 3}, f32Bytes({1, 2, 3})};
  EXPECT_EQ(load(tensors), "weight 'w': source 'b': checkpoint shape [1, 3] "
                           "does not fit library shape [2, 4] (concatenated "
                           "along dim 0)");
  tensors = testModelTensors();
  tensors[1] = {"b", "F32", {2, 4}, f32Bytes({1, 2, 3, 4, 5, 6, 7, 8})};
  EXPECT_EQ(load(tensors), "weight 'w': its 2 sources have 3 rows in all, the "
                           "library expects 2");
}

} // namespace
