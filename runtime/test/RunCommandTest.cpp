//===- RunCommandTest.cpp - Tests of fdc-run's command line ---------------===//

#include "fdc/runtime/RunCommand.h"

#include "TestUtil.h"

#include <cstring>
#include <fstream>
#include <gtest/gtest.h>

using namespace fdc::runtime::test;

namespace {

int runCommand(std::vector<std::string> args) {
  args.insert(args.begin(), "fdc-run");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  return fdcRunMain(static_cast<int>(args.size()), argv.data());
}

TEST(RunCommandTest, GeneratesAndDumpsLogits) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  std::string logitsPath = dir.file("logits.bin");
  testing::internal::CaptureStdout();
  int rc =
      runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(), "--prompt-ids",
                  "3,7", "--max-new-tokens=3", "--dump-logits", logitsPath});
  std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  EXPECT_NE(out.find("ids: 8,9,10\n"), std::string::npos) << out;
  EXPECT_NE(out.find("tokens/s: "), std::string::npos) << out;

  std::ifstream in(logitsPath, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 3u * 32 * 4);
  float row0[32];
  std::memcpy(row0, bytes.data(), sizeof(row0));
  EXPECT_EQ(row0[8], 1.0f);
  EXPECT_EQ(row0[31], 10.0f);
}

TEST(RunCommandTest, Errors) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path()}), 0);
  EXPECT_NE(
      testing::internal::GetCapturedStderr().find("--prompt-ids is required"),
      std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_CUDA, "--weights", dir.path(),
                        "--prompt-ids", "1"}),
            0);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("targets 'cuda:sm_90'"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                        "--prompt-ids", "1,x"}),
            0);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("'x' is not a token"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                        "--prompt-ids", "1,40"}),
            0);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("outside the vocab"),
            std::string::npos);
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_GOOD, "--bogus", "1"}), 0);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("unknown option"),
            std::string::npos);
}

} // namespace
