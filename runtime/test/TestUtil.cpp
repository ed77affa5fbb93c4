//===- TestUtil.cpp - Helpers for the runtime's unit tests ----------------===//

#include "TestUtil.h"

#include "fdc/runtime/ModelLibrary.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

using namespace fdc::runtime::test;

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern =
      std::string(base && *base ? base : "/tmp") + "/fdc-runtime-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data()))
    throw std::runtime_error("mkdtemp failed");
  dirPath = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(dirPath, ec);
}

std::vector<uint8_t>
fdc::runtime::test::f32Bytes(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t>
fdc::runtime::test::makeSafetensorsRaw(const std::string &header,
                                       size_t dataSize) {
  std::vector<uint8_t> bytes(8);
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(length >> (8 * i));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + dataSize, 0);
  return bytes;
}

std::vector<uint8_t>
fdc::runtime::test::makeSafetensors(const std::vector<TestTensor> &tensors,
                                    const std::string &metadata) {
  std::string header = "{\"__metadata__\": " + metadata;
  std::vector<uint8_t> data;
  for (const TestTensor &t : tensors) {
    header +=
        ", \"" + t.name + "\": {\"dtype\": \"" + t.dtype + "\", \"shape\": [";
    for (size_t i = 0; i < t.shape.size(); ++i)
      header += (i ? ", " : "") + std::to_string(t.shape[i]);
    header += "], \"data_offsets\": [" + std::to_string(data.size()) + ", " +
              std::to_string(data.size() + t.bytes.size()) + "]}";
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  header += "}";
  // Pad the header with spaces to a multiple of 8, as the writers do.
  while ((header.size() % 8) != 0)
    header += ' ';
  std::vector<uint8_t> bytes = makeSafetensorsRaw(header, 0);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

void fdc::runtime::test::writeFile(const std::string &path,
                                   const std::vector<uint8_t> &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

void fdc::runtime::test::writeFile(const std::string &path,
                                   const std::string &text) {
  writeFile(path, std::vector<uint8_t>(text.begin(), text.end()));
}

std::vector<TestTensor> fdc::runtime::test::testModelTensors() {
  // bf16 1.0, 2.0, 3.0, 4.0.
  std::vector<uint8_t> n = {0x80, 0x3f, 0x00, 0x40, 0x40, 0x40, 0x80, 0x40};
  return {{"a", "F32", {1, 4}, f32Bytes({0.5f, 1, 2, 3})},
          {"b", "F32", {1, 4}, f32Bytes({4, 5, 6, 7})},
          {"n", "BF16", {4}, n}};
}

void fdc::runtime::test::writeTestCheckpoint(const std::string &dir) {
  writeFile(dir + "/model.safetensors", makeSafetensors(testModelTensors()));
}

std::string fdc::runtime::test::joinedSupportedTargets() {
  std::string joined;
  for (const std::string &target : supportedTargets())
    joined += (joined.empty() ? "" : ", ") + target;
  return joined;
}
