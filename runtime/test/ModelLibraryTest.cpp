//===- ModelLibraryTest.cpp - Tests of the model library loader -----------===//

#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaBackend.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;

namespace {

std::string openError(const std::string &path) {
  Expected<std::unique_ptr<ModelLibrary>> library = ModelLibrary::open(path);
  return library ? "" : library.error().message();
}

TEST(ModelLibraryTest, LoadsGoodLibrary) {
  Expected<std::unique_ptr<ModelLibrary>> library =
      ModelLibrary::open(FDC_TEST_MODEL_GOOD);
  ASSERT_TRUE(library) << library.error().message();
  const Manifest &m = (*library)->manifest();
  EXPECT_EQ((*library)->target(), "host");
  EXPECT_EQ(m.abiVersion, 1);
  EXPECT_EQ(m.model, "test_model");
  EXPECT_EQ(m.vocabSize, 32);
  EXPECT_EQ(m.maxPositionEmbeddings, 64);
  EXPECT_EQ(*m.config.get("architecture")->getString(), "Test");
  EXPECT_EQ(m.kvCache.layers, 1);
  EXPECT_EQ(m.kvCache.rowBytes, 4);
  EXPECT_EQ(m.weightsBytes, 512u);
  ASSERT_EQ(m.weights.size(), 2u);
  EXPECT_EQ(m.weights[0].name, "w");
  EXPECT_EQ(m.weights[0].sources, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.weights[1].dtype, DType::BF16);
  EXPECT_EQ(m.weights[1].offset, 256u);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].op, "test.step");
  EXPECT_NE((*library)->stepFunction(), nullptr);
}

TEST(ModelLibraryTest, RefusesOtherAbiVersion) {
  EXPECT_EQ(openError(FDC_TEST_MODEL_ABI2),
            std::string("model library ") + FDC_TEST_MODEL_ABI2 +
                " was built for ABI version 2, this runtime supports 1");
}

TEST(ModelLibraryTest, CudaTargetNeedsTheCudaBackend) {
  // With the backend the library opens (its kernel images and the GPU are
  // checked by Model::load); without it, it is refused. cuda/ tests the rest.
  if (cuda::backendAvailable())
    EXPECT_EQ(openError(FDC_TEST_MODEL_CUDA), "");
  else
    EXPECT_EQ(openError(FDC_TEST_MODEL_CUDA),
              std::string("model library ") + FDC_TEST_MODEL_CUDA +
                  " targets 'cuda:sm_90'; this runtime runs: host (it was "
                  "built without the CUDA backend: cuda.h was not found, or "
                  "FDC_RUNTIME_CUDA=OFF)");
}

TEST(ModelLibraryTest, RefusesMissingStep) {
  EXPECT_EQ(openError(FDC_TEST_MODEL_NOSTEP),
            std::string("model library ") + FDC_TEST_MODEL_NOSTEP +
                " lacks symbol fdc_model_step");
}

TEST(ModelLibraryTest, RefusesMissingFile) {
  std::string message = openError("/nonexistent/model.so");
  EXPECT_EQ(
      message.rfind("cannot load model library /nonexistent/model.so: ", 0), 0u)
      << message;
}

//===----------------------------------------------------------------------===//
// Manifest validation
//===----------------------------------------------------------------------===//

std::string manifestError(const std::string &text) {
  Expected<Manifest> m = Manifest::parse(text, "test");
  return m ? "" : m.error().message();
}

std::string manifestWith(const std::string &kv, const std::string &weights,
                         const std::string &weightsBytes = "512") {
  return R"({"abi_version": 1, "target": "host", "config": {"vocab_size": 8},
             "kv_cache": )" +
         kv + R"(, "weights_bytes": )" + weightsBytes + R"(, "weights": [)" +
         weights + "]}";
}

const char *goodKV = R"({"layers": 1, "kv_heads": 1, "head_dim": 4,
                         "dtype": "f32", "int4_groups": 0, "row_bytes": 16})";

TEST(ManifestTest, Valid) {
  EXPECT_EQ(manifestError(manifestWith(goodKV, "")), "");
  EXPECT_EQ(manifestError(manifestWith(
                R"({"layers": 1, "kv_heads": 1, "head_dim": 32, "dtype": "int4",
                    "int4_groups": 2, "row_bytes": 24})",
                "")),
            "");
  // Sources default to the weight's own name.
  Expected<Manifest> m = Manifest::parse(
      manifestWith(goodKV, R"({"name": "x", "dtype": "f16", "shape": [3],
                               "offset": 0, "bytes": 6})"),
      "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->weights[0].sources, std::vector<std::string>{"x"});
}

TEST(ManifestTest, Errors) {
  EXPECT_NE(manifestError("{").find("manifest of test: JSON error"),
            std::string::npos);
  EXPECT_NE(manifestError("{}").find("missing field 'abi_version'"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(
                              R"({"layers": 1, "kv_heads": 1, "head_dim": 4,
                    "dtype": "f32", "row_bytes": 8})",
                              ""))
                .find("row_bytes is 8, expected 16"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f64",
                              "shape": [1], "offset": 0, "bytes": 8})"))
                .find("weight 'x': dtype 'f64'"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f32",
                              "shape": [2], "offset": 0, "bytes": 4})"))
                .find("does not match shape"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f32",
                              "shape": [2], "offset": 8, "bytes": 8})"))
                .find("not a multiple of 256"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f32",
                              "shape": [256], "offset": 256, "bytes": 1024})"))
                .find("outside the 512-byte weight arena"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f32",
                        "shape": [128], "offset": 0, "bytes": 512},
                       {"name": "y", "dtype": "f32", "shape": [1],
                        "offset": 256, "bytes": 4})"))
                .find("weights 'x' and 'y' overlap"),
            std::string::npos);
  EXPECT_NE(manifestError(manifestWith(goodKV, R"({"name": "x", "dtype": "f32",
                              "shape": [1], "layout": "int4_tiled",
                              "offset": 0, "bytes": 4})"))
                .find("layout 'int4_tiled' is not supported"),
            std::string::npos);
}

} // namespace
