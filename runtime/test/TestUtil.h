//===- TestUtil.h - Helpers for the runtime's unit tests --------*- C++ -*-===//

#ifndef FDC_RUNTIME_TEST_TESTUTIL_H
#define FDC_RUNTIME_TEST_TESTUTIL_H

#include <cstdint>
#include <string>
#include <vector>

namespace fdc::runtime::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
public:
  TempDir();
  ~TempDir();
  const std::string &path() const { return dirPath; }
  std::string file(const std::string &name) const {
    return dirPath + "/" + name;
  }

private:
  std::string dirPath;
};

struct TestTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

/// Raw bytes of `values` as little-endian float32.
std::vector<uint8_t> f32Bytes(const std::vector<float> &values);

/// A well-formed safetensors image of `tensors`, stored in order, with
/// `metadata` (a JSON object of strings) as its "__metadata__".
std::vector<uint8_t>
makeSafetensors(const std::vector<TestTensor> &tensors,
                const std::string &metadata = R"({"format": "pt"})");

/// A safetensors image with the given header text and `dataSize` zero bytes.
std::vector<uint8_t> makeSafetensorsRaw(const std::string &header,
                                        size_t dataSize);

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes);
void writeFile(const std::string &path, const std::string &text);

/// The tensors the test model library's weights come from: a [1, 4] and
/// b [1, 4] in f32 (concatenated into "w") and n [4] in bf16.
std::vector<TestTensor> testModelTensors();

/// Writes testModelTensors() as `dir`/model.safetensors.
void writeTestCheckpoint(const std::string &dir);

/// supportedTargets() as a refusal lists them: "host, cuda:sm_XX[,...]".
std::string joinedSupportedTargets();

} // namespace fdc::runtime::test

#endif // FDC_RUNTIME_TEST_TESTUTIL_H
