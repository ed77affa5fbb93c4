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

//===----------------------------------------------------------------------===//
// Tensor-parallel slices
//===----------------------------------------------------------------------===//

namespace {

/// src, gate and up: f32 [4, 6] with element (i, j) = base + 10 i + j.
std::vector<float> matrix(float base) {
  std::vector<float> values;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      values.push_back(base + 10.0f * i + j);
  return values;
}

std::vector<TestTensor> sliceTensors() {
  return {{"src", "F32", {4, 6}, f32Bytes(matrix(0))},
          {"gate", "F32", {4, 6}, f32Bytes(matrix(100))},
          {"up", "F32", {4, 6}, f32Bytes(matrix(200))},
          {"n", "F32", {6}, f32Bytes({1, 2, 3, 4, 5, 6})}};
}

/// A tensor_parallel 2 manifest: "r" rows of src, "c" columns of src, "gu"
/// each rank's halves of gate and up stacked, "n" replicated; `rSlices`
/// replaces r's slices.
std::string sliceManifest(const std::string &rSlices = "") {
  std::string r = rSlices.empty()
                      ? R"([[{"source": "src", "rows": [0, 2], "cols": [0, 6]}],
                            [{"source": "src", "rows": [2, 4], "cols": [0, 6]}]])"
                      : rSlices;
  return R"({"abi_version": 3, "target": "host", "tensor_parallel": 2,
             "config": {"vocab_size": 8},
             "kv_cache": {"layers": 1, "kv_heads": 1, "head_dim": 4,
                          "dtype": "f32", "row_bytes": 16},
             "weights_bytes": 1024, "weights": [
    {"name": "r", "dtype": "f32", "shape": [2, 6], "offset": 0, "bytes": 48,
     "slices": )" +
         r + R"(},
    {"name": "c", "dtype": "f32", "shape": [4, 3], "offset": 256, "bytes": 48,
     "slices": [[{"source": "src", "rows": [0, 4], "cols": [0, 3]}],
                [{"source": "src", "rows": [0, 4], "cols": [3, 6]}]]},
    {"name": "gu", "dtype": "f32", "shape": [4, 6], "offset": 512, "bytes": 96,
     "slices": [[{"source": "gate", "rows": [0, 2], "cols": [0, 6]},
                 {"source": "up", "rows": [0, 2], "cols": [0, 6]}],
                [{"source": "gate", "rows": [2, 4], "cols": [0, 6]},
                 {"source": "up", "rows": [2, 4], "cols": [0, 6]}]]},
    {"name": "n", "dtype": "f32", "shape": [6], "offset": 768, "bytes": 24}]})";
}

class WeightLoaderSliceTest : public ::testing::Test {
protected:
  /// Loads rank `rank` of `manifestText` from a checkpoint of `tensors`;
  /// returns the error message or "" (and the arena in `arena`).
  std::string load(const std::string &manifestText,
                   const std::vector<TestTensor> &tensors, int64_t rank) {
    Expected<Manifest> manifest = Manifest::parse(manifestText, "test");
    if (!manifest)
      return manifest.error().message();
    TempDir dir;
    writeFile(dir.file("model.safetensors"), makeSafetensors(tensors));
    Expected<std::unique_ptr<Checkpoint>> checkpoint =
        Checkpoint::open(dir.path());
    if (!checkpoint)
      return checkpoint.error().message();
    Expected<HostBuffer> loaded = loadWeights(*manifest, **checkpoint, rank);
    if (!loaded)
      return loaded.error().message();
    arena = std::move(*loaded);
    return "";
  }

  std::vector<float> floats(uint64_t offset, size_t count) const {
    std::vector<float> values(count);
    std::memcpy(values.data(), arena.data() + offset, count * 4);
    return values;
  }

  HostBuffer arena;
};

/// Rows [rowBegin, rowEnd) x columns [colBegin, colEnd) of matrix(base).
std::vector<float> block(float base, int rowBegin, int rowEnd, int colBegin,
                         int colEnd) {
  std::vector<float> values;
  for (int i = rowBegin; i < rowEnd; ++i)
    for (int j = colBegin; j < colEnd; ++j)
      values.push_back(base + 10.0f * i + j);
  return values;
}

std::vector<float> joined(std::vector<float> a, const std::vector<float> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST_F(WeightLoaderSliceTest, LoadsEachRanksSlices) {
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    ASSERT_EQ(load(sliceManifest(), sliceTensors(), rank), "");
    // Row slice: one copy of whole rows.
    EXPECT_EQ(floats(0, 12), block(0, 2 * rank, 2 * rank + 2, 0, 6));
    // Column slice: strided.
    EXPECT_EQ(floats(256, 12), block(0, 0, 4, 3 * rank, 3 * rank + 3));
    // Two pieces stacked along dimension 0 (a fused gate/up projection).
    EXPECT_EQ(floats(512, 24),
              joined(block(100, 2 * rank, 2 * rank + 2, 0, 6),
                     block(200, 2 * rank, 2 * rank + 2, 0, 6)));
    // Replicated.
    EXPECT_EQ(floats(768, 6), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST_F(WeightLoaderSliceTest, PieceWithRowsAndColumns) {
  ASSERT_EQ(load(sliceManifest(
                     R"([[{"source": "src", "rows": [1, 3], "cols": [0, 6]}],
                                   [{"source": "src", "rows": [0, 1], "cols": [0, 6]},
                                    {"source": "src", "rows": [3, 4], "cols": [0, 6]}]])"),
                 sliceTensors(), 1),
            "");
  EXPECT_EQ(floats(0, 12), joined(block(0, 0, 1, 0, 6), block(0, 3, 4, 0, 6)));
}

TEST_F(WeightLoaderSliceTest, RefusesPiecesOutsideTheSource) {
  EXPECT_EQ(
      load(
          sliceManifest(R"([[{"source": "src", "rows": [0, 2], "cols": [0, 6]}],
                             [{"source": "src", "rows": [3, 5], "cols": [0, 6]}]])"),
          sliceTensors(), 1),
      "weight 'r': rank 1 piece 0: rows [3, 5) lie outside source 'src' of "
      "shape [4, 6]");
  std::vector<TestTensor> tensors = sliceTensors();
  tensors[0] = {"src", "F32", {4, 5}, f32Bytes(std::vector<float>(20))};
  EXPECT_EQ(load(sliceManifest(), tensors, 0),
            "weight 'r': rank 0 piece 0: cols [0, 6) lie outside source 'src' "
            "of shape [4, 5]");
}

TEST_F(WeightLoaderSliceTest, RefusesWrongDTypeShapeOrMissingSource) {
  std::vector<TestTensor> tensors = sliceTensors();
  tensors[1] = {"gate", "F16", {4, 6}, std::vector<uint8_t>(48)};
  EXPECT_EQ(load(sliceManifest(), tensors, 1),
            "weight 'gu': rank 1 piece 0: source 'gate' has checkpoint dtype "
            "F16, library expects f32");
  tensors = sliceTensors();
  tensors[2] = {"up", "F32", {24}, f32Bytes(std::vector<float>(24))};
  EXPECT_EQ(
      load(sliceManifest(), tensors, 0),
      "weight 'gu': rank 0 piece 1: source 'up' of shape [24] is not 2-D");
  tensors = sliceTensors();
  tensors.erase(tensors.begin() + 2);
  std::string message = load(sliceManifest(), tensors, 0);
  EXPECT_EQ(message.rfind("weight 'gu': rank 0 piece 1: checkpoint '", 0), 0u)
      << message;
  EXPECT_NE(message.find("has no tensor 'up'"), std::string::npos) << message;
}

TEST_F(WeightLoaderSliceTest, RefusesRankOutsideTheGroup) {
  EXPECT_EQ(load(sliceManifest(), sliceTensors(), 2),
            "cannot load the weights of tensor-parallel rank 2: the library "
            "has 2 ranks");
}

} // namespace

TEST_F(WeightLoaderSliceTest, RefusesASourceOfAnotherShape) {
  // A checkpoint whose source is larger than the library was compiled for
  // would otherwise load the wrong columns without complaint.
  std::string compiledFor =
      R"([[{"source": "src", "source_shape": [4, 6], "rows": [0, 2], "cols": [0, 6]}],
          [{"source": "src", "source_shape": [4, 6], "rows": [2, 4], "cols": [0, 6]}]])";
  EXPECT_EQ(load(sliceManifest(compiledFor), sliceTensors(), 1), "");
  std::vector<TestTensor> tensors = sliceTensors();
  tensors[0] = {"src", "F32", {6, 6}, f32Bytes(std::vector<float>(36))};
  EXPECT_EQ(load(sliceManifest(compiledFor), tensors, 1),
            "weight 'r': rank 1 piece 0: source 'src' has checkpoint shape "
            "[6, 6], the library was compiled for [4, 6]");
  EXPECT_NE(
      load(
          sliceManifest(
              R"([[{"source": "src", "source_shape": [1, 6], "rows": [0, 2], "cols": [0, 6]}],
                   [{"source": "src", "rows": [2, 4], "cols": [0, 6]}]])"),
          sliceTensors(), 0)
          .find("slices[0][0]: rows [0, 2) x cols [0, 6) lie outside its "
                "source_shape [1, 6]"),
      std::string::npos);
}
