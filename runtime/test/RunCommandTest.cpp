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

TEST(RunCommandTest, MaxStepRowsReadsThePromptInChunks) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  testing::internal::CaptureStdout();
  int rc = runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                       "--prompt-ids", "1,2,3,4,5,6,7", "--max-new-tokens=2",
                       "--max-step-rows", "4"});
  std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  // 7 prompt tokens in 2 steps (4 + 3 rows), then one more token.
  EXPECT_NE(out.find("ids: 8,9\n"), std::string::npos) << out;
  EXPECT_NE(out.find("3 steps"), std::string::npos) << out;
  testing::internal::CaptureStderr();
  EXPECT_NE(runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                        "--prompt-ids", "1", "--max-step-rows", "0"}),
            0);
  EXPECT_NE(testing::internal::GetCapturedStderr().find(
                "option --max-step-rows: '0' is not an integer in [1, "
                "1048576]"),
            std::string::npos);
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
  // An unknown option last on the line is unknown too (not one that lacks
  // its value).
  testing::internal::CaptureStderr();
  EXPECT_EQ(runCommand({FDC_TEST_MODEL_GOOD, "--bogus"}), 1);
  std::string lastUnknown = testing::internal::GetCapturedStderr();
  EXPECT_NE(lastUnknown.find("unknown option '--bogus'"), std::string::npos);
  EXPECT_EQ(lastUnknown.find("needs a value"), std::string::npos);
}

TEST(RunCommandTest, SamplingNumbers) {
  TempDir dir;
  writeTestCheckpoint(dir.path());
  // 1e-45 underflows to a denormal (strtof says ERANGE): still a number.
  testing::internal::CaptureStdout();
  EXPECT_EQ(runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                        "--prompt-ids", "3", "--max-new-tokens", "2",
                        "--temperature", "1e-45", "--top-p", "0.5"}),
            0);
  testing::internal::GetCapturedStdout();
  auto refusal = [&](const std::string &option, const std::string &value) {
    testing::internal::CaptureStderr();
    int rc = runCommand({FDC_TEST_MODEL_GOOD, "--weights", dir.path(),
                         "--prompt-ids", "3", option, value});
    EXPECT_EQ(rc, 1);
    // The first line (a command-line error is followed by the usage).
    std::string err = testing::internal::GetCapturedStderr();
    return err.substr(0, err.find('\n') + 1);
  };
  EXPECT_EQ(refusal("--temperature", "nan"),
            "fdc-run: error: option --temperature: 'nan' is not a finite "
            "number\n");
  EXPECT_EQ(refusal("--temperature", "-inf"),
            "fdc-run: error: option --temperature: '-inf' is not a finite "
            "number\n");
  EXPECT_EQ(refusal("--temperature", "1e39"),
            "fdc-run: error: option --temperature: '1e39' is too large for a "
            "float\n");
  EXPECT_EQ(refusal("--temperature", "0.5x"),
            "fdc-run: error: option --temperature: '0.5x' is not a number\n");
  EXPECT_EQ(refusal("--top-p", ""),
            "fdc-run: error: option --top-p: '' is not a number\n");
  EXPECT_EQ(refusal("--top-p", "1e-50"),
            "fdc-run: error: top_p must be in (0, 1], got 0\n");
}

} // namespace
