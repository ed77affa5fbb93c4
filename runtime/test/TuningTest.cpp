//===- TuningTest.cpp - Winners, merging, the tuning file, inspect --------===//
//
// The plain functions behind fdc tune and fdc inspect; no GPU needed.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Tuning.h"

#include <gtest/gtest.h>

using namespace fdc::runtime;

namespace {

KernelChoice kernel(const std::string &family, int64_t value) {
  return {family, {{"a", value}}};
}

TEST(TuningTest, SelectWinnerTakesTheFastestThatRan) {
  EXPECT_EQ(selectWinner({}), -1);
  EXPECT_EQ(selectWinner({std::nullopt, std::nullopt}), -1);
  EXPECT_EQ(selectWinner({3.0, std::nullopt, 2.0, 2.5}), 2);
  // Ties go to the earlier candidate.
  EXPECT_EQ(selectWinner({std::nullopt, 1.0, 1.0}), 1);
}

TEST(TuningTest, MergeWinnersMergesRunsAndLeavesTheLastUnbounded) {
  std::vector<int64_t> buckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  auto [bounds, kernels] = mergeWinners(buckets, {0, 3, 3, 3, 5, 5, 7, 7, 7});
  EXPECT_EQ(bounds, (std::vector<int64_t>{1, 8, 32}));
  EXPECT_EQ(kernels, (std::vector<int>{0, 3, 5, 7}));
  // One winner everywhere: one kernel, no bound.
  auto [oneBounds, oneKernels] = mergeWinners(buckets, std::vector<int>(9, 4));
  EXPECT_TRUE(oneBounds.empty());
  EXPECT_EQ(oneKernels, (std::vector<int>{4}));
  // A winner that comes back is a new entry (tables are ranges).
  auto [backBounds, backKernels] = mergeWinners({1, 2, 4}, {1, 2, 1});
  EXPECT_EQ(backBounds, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(backKernels, (std::vector<int>{1, 2, 1}));
}

TuningResult sampleResult() {
  TuningResult result;
  result.library = "m\"x.so";
  result.target = "cuda:sm_90";
  result.device = "NVIDIA H100 (device 0, sm_90)";
  result.arch = "sm_90";
  SignatureTimings timings;
  timings.signature.signature = {4096, 4096, "bf16", "none", false, true};
  timings.signature.candidates = {kernel("gemv", 1), kernel("flat_gemm", 2),
                                  kernel("flat_gemm", 3)};
  timings.buckets = {1, 2, 4};
  timings.micros = {{1.0, 2.0, std::nullopt}, {5.0, 2.0, 3.0}, {9.0, 4.0, 3.5}};
  result.signatures.push_back(timings);
  return result;
}

TEST(TuningTest, TuningFileHasTheMergedTableAndTheTimings) {
  Expected<std::string> text = writeTuningFile(sampleResult());
  ASSERT_TRUE(text) << text.error().message();
  Expected<json::Value> root = json::parse(*text);
  ASSERT_TRUE(root) << root.error().message() << "\n" << *text;
  EXPECT_EQ(root->get("fdc_tuning_version")->getInt64(), 1);
  EXPECT_EQ(*root->get("arch")->getString(), "sm_90");
  EXPECT_EQ(*root->get("library")->getString(), "m\"x.so");
  const json::Value &signature = (*root->get("signatures")->getArray())[0];
  EXPECT_EQ(signature.get("n")->getInt64(), 4096);
  EXPECT_EQ(signature.get("residual")->getBool(), true);
  const json::Value &dispatch = *signature.get("dispatch");
  const json::Array &bounds = *dispatch.get("max_batch")->getArray();
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].getInt64(), 1);
  EXPECT_EQ(bounds[1].getInt64(), 2);
  const json::Array &kernels = *dispatch.get("kernels")->getArray();
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(*kernels[0].get("family")->getString(), "gemv");
  EXPECT_EQ(kernels[2].get("config")->get("a")->getInt64(), 3);
  const json::Array &timings = *signature.get("timings")->getArray();
  ASSERT_EQ(timings.size(), 3u);
  EXPECT_EQ(timings[0].get("best")->getInt64(), 0);
  EXPECT_TRUE((*timings[0].get("us")->getArray())[2].isNull());
  EXPECT_EQ(timings[2].get("best")->getInt64(), 2);
}

TEST(TuningTest, TuningFileRefusesABucketWithoutResults) {
  TuningResult result = sampleResult();
  result.signatures[0].micros[1] = {std::nullopt, std::nullopt, std::nullopt};
  Expected<std::string> text = writeTuningFile(result);
  ASSERT_FALSE(text);
  EXPECT_NE(text.error().message().find("no candidate ran at M = 2"),
            std::string::npos)
      << text.error().message();
}

const char *kManifest = R"({"linears": [
  {"n": 512, "k": 256, "dtype": "bf16", "activation": "none", "bias": false,
   "residual": true, "count": 2, "source": "tuned",
   "dispatch": {"max_batch": [1, 16], "kernels": [
     {"family": "gemv", "config": {"rows_per_block": 4}},
     {"family": "flat_gemm", "config": {"batch_tiles": 1, "row_tiles": 2}},
     {"family": "flat_gemm", "config": {"batch_tiles": 4}}]}}],
  "tuning": {"version": 2, "entry": "fdc_tune_launch", "signatures": [
  {"n": 512, "k": 256, "dtype": "bf16", "activation": "none", "bias": false,
   "residual": true, "count": 2, "input_dtype": "bf16", "out_dtype": "bf16",
   "out_features": 512, "workspace_bytes_per_row": 4096,
   "candidates": [{"family": "gemv", "config": {}}]}]}})";

TEST(TuningTest, InspectPrintsOneRowPerRange) {
  Expected<json::Value> root = json::parse(kManifest);
  ASSERT_TRUE(root);
  Expected<std::vector<LinearTable>> tables = parseLinearTables(*root, "m.so");
  ASSERT_TRUE(tables) << tables.error().message();
  ASSERT_EQ(tables->size(), 1u);
  std::string text = formatLinearTables("tiny", "cuda:sm_90", *tables);
  EXPECT_NE(text.find("n=512 k=256 bf16 +residual"), std::string::npos) << text;
  EXPECT_NE(text.find("tuned"), std::string::npos) << text;
  EXPECT_NE(text.find("1         gemv{rows_per_block=4}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2-16      flat_gemm{batch_tiles=1,row_tiles=2}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("17+       flat_gemm{batch_tiles=4}"), std::string::npos)
      << text;
  Expected<std::vector<TuneSignature>> tune =
      parseTuneSignatures(*root, "m.so");
  ASSERT_TRUE(tune) << tune.error().message();
  EXPECT_EQ((*tune)[0].outFeatures, 512);
  EXPECT_EQ((*tune)[0].workspaceBytesPerRow, 4096);
  std::string candidates = formatTuneSignatures(*tune);
  EXPECT_NE(candidates.find("1 signatures, 1 candidates"), std::string::npos)
      << candidates;
  EXPECT_NE(candidates.find("[0] n=512 k=256 bf16 +residual: 1 candidates, "
                            "workspace 4096 bytes per row\n"),
            std::string::npos)
      << candidates;
  EXPECT_NE(formatLinearTables("tiny", "host", {}).find("host library"),
            std::string::npos);
}

TEST(TuningTest, ManifestSectionsAreChecked) {
  auto tablesError = [](const std::string &text) {
    Expected<json::Value> root = json::parse(text);
    EXPECT_TRUE(root) << text;
    Expected<std::vector<LinearTable>> tables =
        parseLinearTables(*root, "m.so");
    return tables ? std::string() : tables.error().message();
  };
  EXPECT_EQ(tablesError("{}"), "");
  EXPECT_EQ(tablesError(R"({"linears": 3})"),
            "m.so: 'linears' must be an array");
  EXPECT_EQ(tablesError(R"({"linears": [{"n": 1}]})"),
            "m.so: linears[0]: 'k' must be a non-negative integer");
  std::string good = kManifest;
  std::string badBounds = good;
  badBounds.replace(badBounds.find("[1, 16]"), 7, "[16, 1]");
  EXPECT_EQ(tablesError(badBounds),
            "m.so: linears[0].dispatch: 'max_batch' must be increasing "
            "positive integers");
  std::string badCount = good;
  badCount.replace(badCount.find("[1, 16]"), 7, "[1]");
  EXPECT_EQ(tablesError(badCount), "m.so: linears[0].dispatch: needs one "
                                   "kernel more than bounds, got 3 kernels "
                                   "for 1 bounds");

  Expected<json::Value> noTuning = json::parse(R"({"linears": []})");
  Expected<std::vector<TuneSignature>> refused =
      parseTuneSignatures(*noTuning, "m.so");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("is not a tuning library"),
            std::string::npos);
  std::string badFeatures = good;
  badFeatures.replace(badFeatures.find("\"out_features\": 512"), 19,
                      "\"out_features\": 513");
  Expected<json::Value> root = json::parse(badFeatures);
  ASSERT_TRUE(root);
  Expected<std::vector<TuneSignature>> bad = parseTuneSignatures(*root, "m.so");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("out_features <= n"), std::string::npos)
      << bad.error().message();
}

/// The error of parseTuneSignatures on kManifest with `from` replaced by
/// `to` ("" when it parses).
std::string tuneError(const std::string &from, const std::string &to) {
  std::string text = kManifest;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos)
    return "no '" + from + "' in the manifest";
  text.replace(at, from.size(), to);
  Expected<json::Value> root = json::parse(text);
  EXPECT_TRUE(root) << text;
  if (!root)
    return root.error().message();
  Expected<std::vector<TuneSignature>> signatures =
      parseTuneSignatures(*root, "m.so");
  return signatures ? std::string() : signatures.error().message();
}

TEST(TuningTest, WorkspaceBytesPerRowIsOptionalAndBounded) {
  const std::string key = "\"workspace_bytes_per_row\": 4096";
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": 0"), "");
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": 1073741824"), "");
  const std::string bounds = "m.so: tuning.signatures[0]: "
                             "'workspace_bytes_per_row' must be an integer in "
                             "[0, 1073741824]";
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": -1"), bounds);
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": 1073741825"), bounds);
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": 2.5"), bounds);
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": null"), bounds);
  EXPECT_EQ(tuneError(key, "\"workspace_bytes_per_row\": \"64\""), bounds);

  // Absent: the candidates need no workspace (and inspect prints none).
  std::string text = kManifest;
  text.replace(text.find(key), key.size() + 1, "");
  Expected<json::Value> root = json::parse(text);
  ASSERT_TRUE(root) << text;
  Expected<std::vector<TuneSignature>> signatures =
      parseTuneSignatures(*root, "m.so");
  ASSERT_TRUE(signatures) << signatures.error().message();
  EXPECT_EQ((*signatures)[0].workspaceBytesPerRow, 0);
  std::string candidates = formatTuneSignatures(*signatures);
  EXPECT_NE(candidates.find("[0] n=512 k=256 bf16 +residual: 1 candidates\n"),
            std::string::npos)
      << candidates;
}

TEST(TuningTest, OtherTuningVersionsAreRefused) {
  const std::string version = "\"version\": 2";
  // Version 1: its fdc_tune_launch reads FdcTuneArgs without `workspace`.
  EXPECT_EQ(tuneError(version, "\"version\": 1"),
            "m.so: tuning.version is 1, but this runtime reads version 2 (its "
            "fdc_tune_launch takes other FdcTuneArgs): rebuild the library "
            "with this fdc (fdc compile --tuning-candidates)");
  EXPECT_NE(tuneError(version, "\"version\": 3")
                .find("tuning.version is 3, but this runtime reads version 2"),
            std::string::npos);
  EXPECT_EQ(tuneError(version, "\"version\": \"2\""),
            "m.so: tuning.version must be an integer");
  EXPECT_EQ(tuneError(version + ", ", ""),
            "m.so: tuning.version must be an integer");
}

} // namespace
