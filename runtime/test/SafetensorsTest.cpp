//===- SafetensorsTest.cpp - Tests of the safetensors reader --------------===//

#include "fdc/runtime/Safetensors.h"

#include "TestUtil.h"

#include <cstring>
#include <gtest/gtest.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

/// Opens `bytes` written to a temp file; returns the error message or "".
std::string openError(const std::vector<uint8_t> &bytes) {
  TempDir dir;
  std::string path = dir.file("t.safetensors");
  writeFile(path, bytes);
  Expected<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  return file ? "" : file.error().message();
}

/// The error for a header over `dataSize` data bytes.
std::string headerError(const std::string &header, size_t dataSize) {
  return openError(makeSafetensorsRaw(header, dataSize));
}

#define EXPECT_ERROR_HAS(message, text)                                        \
  do {                                                                         \
    std::string m = (message);                                                 \
    EXPECT_NE(m.find(text), std::string::npos)                                 \
        << "message '" << m << "' lacks '" << text << "'";                     \
  } while (false)

TEST(SafetensorsTest, RoundTrip) {
  TempDir dir;
  std::string path = dir.file("model.safetensors");
  std::vector<TestTensor> tensors = testModelTensors();
  tensors.push_back({"empty", "I32", {0, 3}, {}});
  tensors.push_back({"scalar", "I64", {}, std::vector<uint8_t>(8, 7)});
  writeFile(path, makeSafetensors(tensors));

  Expected<std::unique_ptr<SafetensorsFile>> file = SafetensorsFile::open(path);
  ASSERT_TRUE(file) << file.error().message();
  const SafetensorsHeader &header = (*file)->header();
  EXPECT_EQ(header.tensors.size(), 5u);
  EXPECT_EQ(header.metadata.at("format"), "pt");
  EXPECT_EQ(header.dataOffset % 8, 0u);
  for (const TestTensor &t : tensors) {
    const SafetensorsTensorInfo *info = (*file)->find(t.name);
    ASSERT_TRUE(info) << t.name;
    EXPECT_EQ(safetensorsDTypeName(info->dtype), t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    ASSERT_EQ(info->byteSize(), t.bytes.size());
    if (!t.bytes.empty()) {
      EXPECT_EQ(std::memcmp((*file)->tensorData(*info), t.bytes.data(),
                            t.bytes.size()),
                0);
    }
  }
  EXPECT_EQ((*file)->find("nope"), nullptr);
}

TEST(SafetensorsTest, TruncatedFile) {
  EXPECT_ERROR_HAS(openError({}), "too short for the 8-byte header length");
  EXPECT_ERROR_HAS(openError({1, 2, 3}), "too short");
  // A good file cut inside its data section.
  std::vector<uint8_t> bytes = makeSafetensors(testModelTensors());
  bytes.resize(bytes.size() - 3);
  std::string message = openError(bytes);
  EXPECT_ERROR_HAS(message, "tensor 'n'");
  EXPECT_ERROR_HAS(message, "run past the data section");
}

TEST(SafetensorsTest, HeaderLengthPastEndOfFile) {
  std::vector<uint8_t> bytes = makeSafetensorsRaw("{}", 0);
  bytes[0] = 200;
  std::string message = openError(bytes);
  EXPECT_ERROR_HAS(message, "header length 200 runs past the end");
  EXPECT_ERROR_HAS(message, "t.safetensors");
}

TEST(SafetensorsTest, AbsurdHeaderLength) {
  std::vector<uint8_t> bytes = makeSafetensorsRaw("{}", 0);
  for (int i = 0; i < 8; ++i)
    bytes[i] = 0xff;
  EXPECT_ERROR_HAS(openError(bytes), "exceeds the limit");
}

TEST(SafetensorsTest, BadJson) {
  EXPECT_ERROR_HAS(headerError("{\"a\": ", 0),
                   "bad header: JSON error at byte");
  EXPECT_ERROR_HAS(headerError("[]", 0), "header is not a JSON object");
  EXPECT_ERROR_HAS(headerError("{\"a\": 1}", 0), "tensor 'a': entry is not");
}

TEST(SafetensorsTest, EmptyHeaderObjectIsValid) {
  EXPECT_EQ(headerError("{}", 0), "");
  EXPECT_EQ(headerError("{}   ", 5), "");
}

TEST(SafetensorsTest, UnknownDType) {
  std::string message = headerError(
      R"({"x": {"dtype": "F31", "shape": [1], "data_offsets": [0, 4]}})", 4);
  EXPECT_ERROR_HAS(message, "tensor 'x': unknown dtype 'F31'");
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4),
      "non-string \"dtype\"");
  // Lower case is the manifest's spelling, not safetensors'.
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "f32", "shape": [1], "data_offsets": [0, 4]}})",
          4),
      "unknown dtype 'f32'");
}

TEST(SafetensorsTest, OffsetsPastData) {
  std::string message = headerError(
      R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4);
  EXPECT_ERROR_HAS(message, "tensor 'x'");
  EXPECT_ERROR_HAS(message, "run past the data section (4 bytes)");
}

TEST(SafetensorsTest, EndBeforeBegin) {
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})",
          8),
      "tensor 'x': data_offsets end 4 is before begin 8");
}

TEST(SafetensorsTest, SizeMismatch) {
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
          8),
      "tensor 'x': holds 8 bytes but shape and dtype F32 need 12");
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 4]}})",
          4),
      "need 8");
}

TEST(SafetensorsTest, ShapeOverflow) {
  EXPECT_ERROR_HAS(
      headerError(R"({"x": {"dtype": "F64", "shape": [4294967296, 4294967296],
                            "data_offsets": [0, 0]}})",
                  0),
      "more bytes than fit in 64 bits");
  EXPECT_ERROR_HAS(
      headerError(R"({"x": {"dtype": "F64", "shape": [2305843009213693952],
                            "data_offsets": [0, 0]}})",
                  0),
      "more bytes than fit in 64 bits");
  // A zero dimension makes any shape empty.
  EXPECT_EQ(headerError(R"({"x": {"dtype": "F64", "shape": [4294967296, 0,
                            4294967296], "data_offsets": [0, 0]}})",
                        0),
            "");
}

TEST(SafetensorsTest, BadShapeAndOffsetsFields) {
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})",
          0),
      "shape entries must be non-negative integers");
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 0]}})",
          0),
      "shape entries");
  EXPECT_ERROR_HAS(
      headerError(
          R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
      "\"data_offsets\" must be an array [begin, end]");
  EXPECT_ERROR_HAS(headerError(R"({"x": {"dtype": "F32", "shape": [1]}})", 4),
                   "\"data_offsets\"");
  EXPECT_ERROR_HAS(headerError(R"({"x": {"dtype": "F32", "shape": [1],
                            "data_offsets": [-4, 0]}})",
                               4),
                   "non-negative");
  EXPECT_ERROR_HAS(headerError(R"({"x": {"dtype": "F32", "shape": [1],
                            "data_offsets": [0, 4], "extra": 1}})",
                               4),
                   "unknown field 'extra'");
}

TEST(SafetensorsTest, OverlappingTensors) {
  std::string message = headerError(
      R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
      12);
  EXPECT_ERROR_HAS(message, "tensors 'x' and 'y' overlap");
  // Touching ranges and empty tensors do not overlap.
  EXPECT_EQ(headerError(
                R"({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                    "y": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]},
                    "z": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}})",
                12),
            "");
}

TEST(SafetensorsTest, Metadata) {
  EXPECT_ERROR_HAS(headerError(R"({"__metadata__": {"a": 1}})", 0),
                   "__metadata__ value of 'a' is not a string");
  EXPECT_ERROR_HAS(headerError(R"({"__metadata__": []})", 0),
                   "__metadata__ is not an object");
}

TEST(SafetensorsTest, MissingFile) {
  Expected<std::unique_ptr<SafetensorsFile>> file =
      SafetensorsFile::open("/nonexistent/x.safetensors");
  ASSERT_FALSE(file);
  EXPECT_ERROR_HAS(file.error().message(),
                   "cannot open '/nonexistent/x.safetensors'");
}

} // namespace
