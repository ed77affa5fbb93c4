//===- CheckpointTest.cpp - Tests of checkpoint directories ---------------===//

#include "fdc/runtime/Checkpoint.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

std::string openError(const std::string &path) {
  Expected<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(path);
  return checkpoint ? "" : checkpoint.error().message();
}

TEST(CheckpointTest, SingleFileDirectory) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  // A stray file that is not a safetensors file is ignored.
  writeFile(dir.file("config.json"), std::string("{}"));
  Expected<std::unique_ptr<Checkpoint>> checkpoint =
      Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error().message();
  EXPECT_EQ((*checkpoint)->tensorNames(),
            (std::vector<std::string>{"a", "b", "n"}));
  std::optional<CheckpointTensor> n = (*checkpoint)->lookup("n");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->dtype(), DType::BF16);
  EXPECT_EQ(n->shape(), std::vector<int64_t>{4});
  EXPECT_EQ(n->byteSize(), 8u);
  EXPECT_EQ(n->data[1], 0x3f);
  EXPECT_FALSE((*checkpoint)->lookup("zzz"));
}

TEST(CheckpointTest, SingleFilePath) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  Expected<std::unique_ptr<Checkpoint>> checkpoint =
      Checkpoint::open(dir.file("model.safetensors"));
  ASSERT_TRUE(checkpoint) << checkpoint.error().message();
  EXPECT_TRUE((*checkpoint)->lookup("a"));
}

TEST(CheckpointTest, ShardedWithIndex) {
  TempDir dir;
  std::vector<TestTensor> tensors = testModelTensors();
  writeFile(dir.file("model-00001-of-00002.safetensors"),
            makeSafetensors({tensors[0], tensors[1]}));
  writeFile(dir.file("model-00002-of-00002.safetensors"),
            makeSafetensors({tensors[2]}));
  // Not named by the index: never opened even though it is broken.
  writeFile(dir.file("junk.safetensors"), std::string("garbage"));
  writeFile(dir.file("model.safetensors.index.json"),
            std::string(R"({"metadata": {"total_size": 40}, "weight_map": {
              "a": "model-00001-of-00002.safetensors",
              "b": "model-00001-of-00002.safetensors",
              "n": "model-00002-of-00002.safetensors"}})"));
  Expected<std::unique_ptr<Checkpoint>> checkpoint =
      Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error().message();
  EXPECT_EQ((*checkpoint)->tensorNames().size(), 3u);
  std::optional<CheckpointTensor> b = (*checkpoint)->lookup("b");
  ASSERT_TRUE(b);
  EXPECT_NE(b->file->find("00001"), std::string::npos);
}

TEST(CheckpointTest, IndexNamingMissingTensor) {
  TempDir dir;
  writeFile(dir.file("s.safetensors"), makeSafetensors(testModelTensors()));
  writeFile(dir.file("model.safetensors.index.json"),
            std::string(R"({"weight_map": {"q": "s.safetensors"}})"));
  std::string message = openError(dir.path());
  EXPECT_NE(message.find("maps tensor 'q' to 's.safetensors', which lacks it"),
            std::string::npos)
      << message;
}

TEST(CheckpointTest, IndexErrors) {
  TempDir dir;
  writeFile(dir.file("model.safetensors.index.json"), std::string("{"));
  EXPECT_NE(openError(dir.path()).find("JSON error"), std::string::npos);
  writeFile(dir.file("model.safetensors.index.json"), std::string("{}"));
  EXPECT_NE(openError(dir.path()).find("missing object \"weight_map\""),
            std::string::npos);
  writeFile(dir.file("model.safetensors.index.json"),
            std::string(R"({"weight_map": {"a": "../x.safetensors"}})"));
  EXPECT_NE(openError(dir.path()).find("not a file of the checkpoint"),
            std::string::npos);
  writeFile(dir.file("model.safetensors.index.json"),
            std::string(R"({"weight_map": {"a": "gone.safetensors"}})"));
  EXPECT_NE(openError(dir.path()).find("cannot open"), std::string::npos);
}

TEST(CheckpointTest, AllSafetensorsFiles) {
  TempDir dir;
  std::vector<TestTensor> tensors = testModelTensors();
  writeFile(dir.file("x.safetensors"), makeSafetensors({tensors[0]}));
  writeFile(dir.file("y.safetensors"),
            makeSafetensors({tensors[1], tensors[2]}));
  Expected<std::unique_ptr<Checkpoint>> checkpoint =
      Checkpoint::open(dir.path());
  ASSERT_TRUE(checkpoint) << checkpoint.error().message();
  EXPECT_EQ((*checkpoint)->tensorNames().size(), 3u);
}

TEST(CheckpointTest, DuplicateTensorAcrossFiles) {
  TempDir dir;
  std::vector<TestTensor> tensors = testModelTensors();
  writeFile(dir.file("x.safetensors"), makeSafetensors({tensors[0]}));
  writeFile(dir.file("y.safetensors"), makeSafetensors({tensors[0]}));
  std::string message = openError(dir.path());
  EXPECT_NE(message.find("tensor 'a' is in both"), std::string::npos)
      << message;
}

TEST(CheckpointTest, EmptyOrMissing) {
  TempDir dir;
  EXPECT_NE(openError(dir.path()).find("holds no .safetensors file"),
            std::string::npos);
  EXPECT_NE(openError(dir.file("nope")).find("neither a directory nor a file"),
            std::string::npos);
}

TEST(CheckpointTest, BrokenFileIsNamed) {
  TempDir dir;
  writeFile(dir.file("model.safetensors"), std::string("short"));
  std::string message = openError(dir.path());
  EXPECT_NE(message.find(dir.file("model.safetensors")), std::string::npos)
      << message;
}

TEST(CheckpointTest, NonRegularFilesAreRefused) {
  // Opening a FIFO for reading would wait for a writer forever: every file
  // is opened without blocking and refused unless it is a regular file.
  {
    TempDir dir;
    std::string fifo = dir.file("model.safetensors");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(openError(dir.path()), "'" + fifo + "' is not a regular file");
  }
  {
    TempDir dir;
    writeTestCheckpoint(dir.path());
    std::string fifo = dir.file("model.safetensors.index.json");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(openError(dir.path()), "'" + fifo + "' is not a regular file");
  }
  {
    TempDir dir;
    writeFile(dir.file("model.safetensors.index.json"),
              std::string(R"({"weight_map": {"a": "s.safetensors"}})"));
    std::string fifo = dir.file("s.safetensors");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(openError(dir.path()), "'" + fifo + "' is not a regular file");
  }
  {
    TempDir dir;
    std::vector<TestTensor> tensors = testModelTensors();
    writeFile(dir.file("x.safetensors"), makeSafetensors({tensors[0]}));
    std::string fifo = dir.file("y.safetensors");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(openError(dir.path()), "'" + fifo + "' is not a regular file");
  }
  {
    TempDir dir;
    std::string sub = dir.file("model.safetensors");
    ASSERT_EQ(::mkdir(sub.c_str(), 0700), 0);
    EXPECT_EQ(openError(dir.path()), "'" + sub + "' is not a regular file");
    ::rmdir(sub.c_str());
  }
}

} // namespace

TEST(CheckpointTest, OversizedIndexIsRefusedUnread) {
  // A sparse 64 MiB + 1 index: refused by its size, before it is read.
  TempDir dir;
  std::string index = dir.file("model.safetensors.index.json");
  writeFile(index, std::string("{}"));
  ASSERT_EQ(::truncate(index.c_str(), (64ll << 20) + 1), 0);
  EXPECT_EQ(openError(dir.path()), "'" + index +
                                       "' is 67108865 bytes, more than the "
                                       "67108864 allowed");
}
