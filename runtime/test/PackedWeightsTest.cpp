//===- PackedWeightsTest.cpp - fdc pack's packed-weights files ------------===//

#include "fdc/runtime/PackedWeights.h"

#include "fdc/runtime/Json.h"
#include "fdc/runtime/Packing.h"
#include "fdc/runtime/ToolCommands.h"
#include "fdc/runtime/WeightLoader.h"

#include "TestUtil.h"

#include <cstring>
#include <dirent.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

namespace {

/// An int4 weight "q" (sources a, b), a tiled_csl weight "s" in 2 x 2 tiles
/// of [4, 4] (PackingTest's TiledCSLKnownMatrix) and a dense weight "d".
const char *kManifest = R"({"abi_version": 1, "target": "host",
    "config": {"vocab_size": 8},
    "kv_cache": {"layers": 1, "kv_heads": 1, "head_dim": 4, "dtype": "f32",
                 "row_bytes": 16},
    "weights_bytes": 1024, "weights": [
  {"name": "q", "dtype": "int4", "shape": [2, 8], "layout": "int4",
   "group_size": 4, "scale_dtype": "f16", "offset": 0, "bytes": 24,
   "sources": ["a", "b"]},
  {"name": "s", "dtype": "f16", "shape": [4, 4], "layout": "tiled_csl",
   "tile": [2, 2], "csl_version": 3, "offset": 256, "bytes": 96},
  {"name": "d", "dtype": "f32", "shape": [2], "offset": 512, "bytes": 8}]})";

/// The descriptions fdc pack writes for kManifest's packed weights.
const char *kDescriptions =
    R"({"q": {"layout": "int4", "shape": [2, 8], "sources": ["a", "b"], )"
    R"("group_size": 4, "scale_dtype": "f16"}, "s": {"layout": "tiled_csl", )"
    R"("shape": [4, 4], "sources": ["s"], "dtype": "f16", "tile": [2, 2], )"
    R"("csl_version": 3}})";

std::vector<TestTensor> checkpointTensors() {
  return {{"a", "F32", {1, 8}, f32Bytes({0, 15, 7.5f, 8.5f, -1, 1, 1, -1})},
          {"b", "F32", {1, 8}, f32Bytes({5, 5, 5, 5, 1, 2, 3, 4})},
          {"s",
           "F32",
           {4, 4},
           f32Bytes({1, 0, 0, 2, 0, 0, 3, 0, 0, 0, 0, 0, 0, -1, 0, 0})},
          {"d", "F32", {2}, f32Bytes({7, 8})}};
}

std::vector<uint8_t> wordBytes(const std::vector<uint32_t> &words) {
  std::vector<uint8_t> bytes(words.size() * 4);
  std::memcpy(bytes.data(), words.data(), bytes.size());
  return bytes;
}

/// TiledCSLKnownMatrix's packed words (f16): the header of 4 tiles, then
/// each tile's run.
std::vector<uint32_t> knownWords() {
  return {0,          4,          8,          12,         12,
          0,          0,          0,          0x00003c00, 0x00010000,
          0x00010000, 0x00010000, 0x00014000, 0x00024200, 0,
          0,          0,          0x0003bc00, 0,          0};
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  DIR *dir = ::opendir(path.c_str());
  while (struct dirent *entry = dir ? ::readdir(dir) : nullptr)
    if (std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, ".."))
      names.push_back(entry->d_name);
  if (dir)
    ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

class PackedWeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    Expected<Manifest> parsed = Manifest::parse(kManifest, "test");
    ASSERT_TRUE(parsed) << parsed.error().message();
    manifest = std::move(*parsed);
    writeFile(checkpointDir.file("model.safetensors"),
              makeSafetensors(checkpointTensors()));
    Expected<std::unique_ptr<Checkpoint>> opened =
        Checkpoint::open(checkpointDir.path());
    ASSERT_TRUE(opened) << opened.error().message();
    checkpoint = std::move(*opened);
    packedPath = outDir.file("tiny.packed");
  }

  /// Loads the arena with `packed` (a file path, or "" to pack); returns the
  /// error or "".
  std::string load(const std::string &packed, HostBuffer *arena = nullptr,
                   const Checkpoint *from = nullptr) {
    std::unique_ptr<PackedWeights> file;
    if (!packed.empty()) {
      Expected<std::unique_ptr<PackedWeights>> opened =
          PackedWeights::open(packed);
      if (!opened)
        return opened.error().message();
      file = std::move(*opened);
    }
    Expected<HostBuffer> loaded =
        loadWeights(manifest, from ? *from : *checkpoint, 0, file.get());
    if (!loaded)
      return loaded.error().message();
    if (arena)
      *arena = std::move(*loaded);
    return "";
  }

  /// Writes a packed-weights file of `tensors` whose metadata "weights" is
  /// `descriptions`; returns its path.
  std::string craft(const std::string &descriptions,
                    const std::vector<TestTensor> &tensors,
                    const std::string &version = "1") {
    std::string metadata = R"({"format": "fdc-packed-weights", "version": )" +
                           json::quote(version) + R"(, "weights": )" +
                           json::quote(descriptions) + "}";
    std::string path = outDir.file("crafted.packed");
    writeFile(path, makeSafetensors(tensors, metadata));
    return path;
  }

  /// The packed tensors fdc pack writes for kManifest.
  std::vector<TestTensor> packedTensors() {
    HostBuffer arena;
    EXPECT_EQ(load("", &arena), "");
    std::vector<uint8_t> q(arena.data(), arena.data() + 24);
    return {{"q", "U8", {24}, q}, {"s", "U8", {80}, wordBytes(knownWords())}};
  }

  /// The error of loading the crafted file (descriptions, tensors).
  std::string loadCrafted(const std::string &descriptions,
                          const std::vector<TestTensor> &tensors) {
    return load(craft(descriptions, tensors));
  }

  Manifest manifest;
  TempDir checkpointDir, outDir;
  std::unique_ptr<Checkpoint> checkpoint;
  std::string packedPath;
};

TEST_F(PackedWeightsTest, LoadsWhatTheLoaderPacks) {
  Expected<PackSummary> summary =
      writePackedWeights(manifest, *checkpoint, packedPath);
  ASSERT_TRUE(summary) << summary.error().message();
  EXPECT_EQ(summary->int4Weights, 1);
  EXPECT_EQ(summary->tiledCSLWeights, 1);
  EXPECT_EQ(summary->bytes, 24u + 80u);

  HostBuffer packedArena, plainArena;
  ASSERT_EQ(load(packedPath, &packedArena), "");
  ASSERT_EQ(load("", &plainArena), "");
  ASSERT_EQ(packedArena.size(), plainArena.size());
  EXPECT_EQ(
      std::memcmp(packedArena.data(), plainArena.data(), plainArena.size()), 0);

  // The checkpoint then need not hold the packed weights' sources.
  TempDir denseOnly;
  writeFile(denseOnly.file("model.safetensors"),
            makeSafetensors({checkpointTensors()[3]}));
  Expected<std::unique_ptr<Checkpoint>> dense =
      Checkpoint::open(denseOnly.path());
  ASSERT_TRUE(dense);
  HostBuffer fromPacked;
  ASSERT_EQ(load(packedPath, &fromPacked, dense->get()), "");
  EXPECT_EQ(
      std::memcmp(fromPacked.data(), plainArena.data(), plainArena.size()), 0);
  // Without it, the loader packs and so needs them.
  EXPECT_EQ(load("", nullptr, dense->get()),
            "weight 'q': source 'a': checkpoint '" + denseOnly.path() +
                "' has no tensor 'a'");
}

TEST_F(PackedWeightsTest, FileLayout) {
  ASSERT_TRUE(writePackedWeights(manifest, *checkpoint, packedPath));
  std::vector<uint8_t> bytes = readBytes(packedPath);
  Expected<SafetensorsHeader> header =
      parseSafetensorsHeader(bytes.data(), bytes.size(), packedPath);
  ASSERT_TRUE(header) << header.error().message();
  EXPECT_EQ(header->dataOffset % 8, 0u);
  EXPECT_EQ(header->metadata.at("format"), "fdc-packed-weights");
  EXPECT_EQ(header->metadata.at("version"), "1");
  EXPECT_EQ(header->metadata.at("weights"), kDescriptions);
  ASSERT_EQ(header->tensors.size(), 2u);
  const SafetensorsTensorInfo *q = header->find("q");
  const SafetensorsTensorInfo *s = header->find("s");
  ASSERT_TRUE(q && s);
  EXPECT_EQ(q->shape, std::vector<int64_t>{24});
  EXPECT_EQ(q->begin, 0u);
  // The tiled_csl tensor is its header and runs, not the 96-byte capacity.
  EXPECT_EQ(s->shape, std::vector<int64_t>{80});
  EXPECT_EQ(s->begin, 24u);
  EXPECT_EQ(bytes.size(), header->dataOffset + 104);
  std::vector<uint8_t> sBytes(bytes.begin() + header->dataOffset + 24,
                              bytes.end());
  EXPECT_EQ(sBytes, wordBytes(knownWords()));
  // No temporary file is left beside it.
  EXPECT_EQ(listDir(outDir.path()), std::vector<std::string>{"tiny.packed"});
}

TEST_F(PackedWeightsTest, WriteRefusals) {
  Expected<Manifest> denseOnly = Manifest::parse(
      R"({"abi_version": 1, "target": "host", "config": {"vocab_size": 8},
          "kv_cache": {"layers": 1, "kv_heads": 1, "head_dim": 4,
                       "dtype": "f32", "row_bytes": 16},
          "weights_bytes": 256, "weights": [{"name": "d", "dtype": "f32",
          "shape": [2], "offset": 0, "bytes": 8}]})",
      "test");
  ASSERT_TRUE(denseOnly);
  Expected<PackSummary> none =
      writePackedWeights(*denseOnly, *checkpoint, packedPath);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().message(),
            "the library has no int4 or tiled_csl weight to pack");

  Expected<PackSummary> dir =
      writePackedWeights(manifest, *checkpoint, outDir.path());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message(),
            "'" + outDir.path() + "' is not a regular file");

  std::string inside = checkpointDir.file("packed.safetensors");
  Expected<PackSummary> inCheckpoint =
      writePackedWeights(manifest, *checkpoint, inside);
  ASSERT_FALSE(inCheckpoint);
  EXPECT_EQ(inCheckpoint.error().message(),
            "'" + inside + "' would be read as a file of checkpoint '" +
                checkpointDir.path() +
                "': write it to another directory or give it another suffix");
  // Another suffix is fine there.
  EXPECT_TRUE(writePackedWeights(manifest, *checkpoint,
                                 checkpointDir.file("model.packed")));

  // A failure leaves an existing file as it was and no temporary file.
  writeFile(packedPath, std::string("old"));
  TempDir partial;
  writeFile(partial.file("model.safetensors"),
            makeSafetensors({checkpointTensors()[0], checkpointTensors()[1]}));
  Expected<std::unique_ptr<Checkpoint>> missing =
      Checkpoint::open(partial.path());
  ASSERT_TRUE(missing);
  Expected<PackSummary> failed =
      writePackedWeights(manifest, **missing, packedPath);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().message(), "weight 's': checkpoint '" +
                                          partial.path() +
                                          "' has no tensor 's'");
  EXPECT_EQ(readBytes(packedPath), std::vector<uint8_t>({'o', 'l', 'd'}));
  EXPECT_EQ(listDir(outDir.path()), std::vector<std::string>{"tiny.packed"});
}

TEST_F(PackedWeightsTest, OpenRefusals) {
  std::string checkpointFile = checkpointDir.file("model.safetensors");
  Expected<std::unique_ptr<PackedWeights>> plain =
      PackedWeights::open(checkpointFile);
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message(),
            "packed-weights file '" + checkpointFile +
                "': its metadata has no \"format\": \"fdc-packed-weights\" "
                "(make one with fdc pack)");

  std::vector<TestTensor> tensors = packedTensors();
  auto openError = [&](const std::string &path) {
    Expected<std::unique_ptr<PackedWeights>> opened = PackedWeights::open(path);
    return opened ? std::string() : opened.error().message();
  };
  std::string prefix =
      "packed-weights file '" + outDir.file("crafted.packed") + "': ";
  EXPECT_EQ(openError(craft(kDescriptions, tensors)), "");
  EXPECT_EQ(openError(craft(kDescriptions, tensors, "2")),
            prefix + "format version '2' is not the version this runtime "
                     "reads (1): pack the weights again with this fdc");
  EXPECT_EQ(openError(craft("[]", tensors)),
            prefix + "metadata \"weights\" is not a JSON object");
  EXPECT_EQ(openError(craft("{", tensors))
                .rfind(prefix + "metadata "
                                "\"weights\": JSON "
                                "error",
                       0),
            0u);
  EXPECT_EQ(openError(craft(R"({"q": {"layout": "int4", "shape": [2, 8],
      "sources": ["a", "b"], "group_size": 4, "scale_dtype": "f16"}})",
                            tensors)),
            prefix + "tensor 's' is not a described weight");
  std::string extra = kDescriptions;
  extra.insert(extra.size() - 1, R"(, "x": {"layout": "int4", "shape": [2, 8],
      "sources": ["x"], "group_size": 4, "scale_dtype": "f16"})");
  EXPECT_EQ(openError(craft(extra, tensors)),
            prefix + "weight 'x' is described but has no tensor");
  EXPECT_EQ(openError(craft(R"({"q": {"layout": "int4", "shape": [2, 8],
      "sources": ["a", "b"], "group_size": 4, "scale_dtype": "f16",
      "tile": [2, 2]}})",
                            {tensors[0]})),
            prefix + "weight 'q': unknown field 'tile' for layout int4");
  EXPECT_EQ(openError(craft(R"({"q": {"layout": "dense", "shape": [2, 8],
      "sources": ["a"]}})",
                            {tensors[0]})),
            prefix +
                "weight 'q': \"layout\" must be \"int4\" or \"tiled_csl\"");
  EXPECT_EQ(openError(craft(R"({"q": {"layout": "int4", "shape": [2, -8],
      "sources": ["a", "b"], "group_size": 4, "scale_dtype": "f16"}})",
                            {tensors[0]})),
            prefix + "weight 'q': \"shape\" must hold positive integers");
  EXPECT_EQ(openError(craft(R"({"q": {"layout": "int4", "shape": [2, 8],
      "sources": ["a", "b"], "group_size": 4, "scale_dtype": "f16"}})",
                            {{"q", "F32", {6}, tensors[0].bytes}})),
            prefix + "weight 'q': tensor of dtype F32 and rank 1, not a U8 "
                     "vector of packed bytes");
}

TEST_F(PackedWeightsTest, RefusesAFileForAnotherLibrary) {
  std::vector<TestTensor> tensors = packedTensors();
  std::string path = outDir.file("crafted.packed");
  std::string prefix = "packed-weights file '" + path + "': ";
  EXPECT_EQ(loadCrafted(kDescriptions, tensors), "");
  auto changed = [&](const std::string &from, const std::string &to) {
    std::string text = kDescriptions;
    size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_EQ(
      loadCrafted(changed(R"("shape": [4, 4])", R"("shape": [4, 8])"), tensors),
      prefix + "weight 's': shape [4, 8] does not match the library's [4, 4]");
  EXPECT_EQ(
      loadCrafted(changed(R"("tile": [2, 2])", R"("tile": [4, 1])"), tensors),
      prefix + "weight 's': tile [4, 1] does not match the library's [2, 2]");
  EXPECT_EQ(
      loadCrafted(changed(R"("dtype": "f16")", R"("dtype": "bf16")"), tensors),
      prefix + "weight 's': dtype bf16 does not match the library's f16");
  EXPECT_EQ(loadCrafted(changed(R"("csl_version": 3)", R"("csl_version": 2)"),
                        tensors),
            prefix +
                "weight 's': tiled_csl layout version 2 is not the version "
                "this runtime reads (3): pack the weights again");
  EXPECT_EQ(
      loadCrafted(changed(R"("group_size": 4)", R"("group_size": 8)"), tensors),
      prefix + "weight 'q': group_size 8 does not match the library's 4");
  EXPECT_EQ(
      loadCrafted(
          changed(R"("scale_dtype": "f16")", R"("scale_dtype": "bf16")"),
          tensors),
      prefix + "weight 'q': scale_dtype bf16 does not match the library's f16");
  EXPECT_EQ(loadCrafted(changed(R"(["a", "b"])", R"(["b", "a"])"), tensors),
            prefix + "weight 'q': sources [\"b\", \"a\"] does not match the "
                     "library's [\"a\", \"b\"]");
  std::string swapped =
      changed(R"("group_size": 4, "scale_dtype": "f16")",
              R"("dtype": "f16", "tile": [2, 2], "csl_version": 3)");
  swapped.replace(swapped.find(R"("layout": "int4")"), 16,
                  R"("layout": "tiled_csl")");
  EXPECT_EQ(loadCrafted(swapped, tensors),
            prefix + "weight 'q': layout tiled_csl does not match the "
                     "library's int4");
  // A weight missing, and one the library does not have.
  EXPECT_EQ(loadCrafted(R"({"q": {"layout": "int4", "shape": [2, 8],
      "sources": ["a", "b"], "group_size": 4, "scale_dtype": "f16"}})",
                        {tensors[0]}),
            "packed-weights file '" + path +
                "' has no weight 's' (tiled_csl) of the library");
  std::string extra = kDescriptions;
  extra.insert(extra.size() - 1, R"(, "d": {"layout": "int4", "shape": [2, 8],
      "sources": ["d"], "group_size": 4, "scale_dtype": "f16"})");
  EXPECT_EQ(loadCrafted(extra, {tensors[0], tensors[1], {"d", "U8", {1}, {0}}}),
            prefix + "weight 'd' is not an int4 or tiled_csl weight of the "
                     "library");
}

TEST_F(PackedWeightsTest, RefusesMalformedBytes) {
  std::vector<TestTensor> tensors = packedTensors();
  std::string prefix =
      "packed-weights file '" + outDir.file("crafted.packed") + "': ";
  std::vector<TestTensor> shortInt4 = tensors;
  shortInt4[0].shape = {23};
  shortInt4[0].bytes.pop_back();
  EXPECT_EQ(loadCrafted(kDescriptions, shortInt4),
            prefix + "weight 'q': holds 23 bytes, int4 [2, 8] packs to 24");
  std::vector<TestTensor> big = tensors;
  big[1].bytes.resize(100);
  big[1].shape = {100};
  EXPECT_EQ(loadCrafted(kDescriptions, big),
            prefix + "weight 's': holds 100 bytes, more than the capacity "
                     "of 96");
  std::vector<uint32_t> words = knownWords();
  words[13] = 0x00054200; // location 5 in a 2 x 2 tile
  std::vector<TestTensor> outside = tensors;
  outside[1].bytes = wordBytes(words);
  EXPECT_EQ(loadCrafted(kDescriptions, outside),
            prefix + "weight 's': tiled_csl tile 1 word 1 (location 5): "
                     "outside the 2x2 tile");
}

/// checkTiledCSL on `words` of a [n, k] matrix in 2 x 2 tiles.
std::string checkWords(const std::vector<uint32_t> &words, int64_t n = 4,
                       int64_t k = 4) {
  std::vector<uint8_t> bytes = wordBytes(words);
  Error err = checkTiledCSL(bytes.data(), bytes.size(), n, k, 2, 2);
  return err ? err.message() : "";
}

TEST(CheckTiledCSLTest, AcceptsWhatThePackerWrites) {
  EXPECT_EQ(checkWords(knownWords()), "");
  // Empty tiles: a header only.
  EXPECT_EQ(checkWords({0, 0, 0, 0, 0, 0, 0, 0}), "");
  // Randomish matrices of several shapes and partial tiles.
  for (int64_t n : {1, 3, 5})
    for (int64_t k : {1, 2, 7}) {
      std::vector<float> dense(n * k);
      for (int64_t i = 0; i < n * k; ++i)
        dense[i] = (i * 7) % 3 == 0 ? 0.0f : static_cast<float>(i);
      std::vector<uint8_t> out(tiledCSLCapacityBytes(n, k, 2, 2), 0);
      packTiledCSL(dense.data(), n, k, 2, 2, DType::F16, out.data());
      uint64_t used = tiledCSLPackedBytes(out.data(), n, k, 2, 2);
      Error err = checkTiledCSL(out.data(), used, n, k, 2, 2);
      EXPECT_FALSE(err) << n << "x" << k << ": " << err.message();
    }
}

TEST(CheckTiledCSLTest, Refusals) {
  std::vector<uint32_t> good = knownWords();
  auto with = [&](size_t index, uint32_t value) {
    std::vector<uint32_t> words = good;
    words[index] = value;
    return checkWords(words);
  };
  std::vector<uint8_t> bytes = wordBytes(good);
  Error odd = checkTiledCSL(bytes.data(), 79, 4, 4, 2, 2);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd.message(),
            "holds 79 bytes, not a header of 32 bytes followed by 4-byte "
            "words");
  EXPECT_EQ(checkWords({0, 0, 0, 0}),
            "holds 16 bytes, not a header of 32 bytes followed by 4-byte "
            "words");
  EXPECT_EQ(with(5, 1), "header word 5 (padding after TileOffsets) is 1, "
                        "not 0");
  EXPECT_EQ(with(0, 4), "TileOffsets[0] is 4, not 0");
  EXPECT_EQ(with(4, 8), "TileOffsets[4] is 8, but 12 words follow the header");
  EXPECT_EQ(with(2, 6), "TileOffsets[2] = 6 is not a multiple of 4");
  EXPECT_EQ(with(2, 0), "TileOffsets[2] = 0 is less than TileOffsets[1] = 4");
  EXPECT_EQ(with(2, 400), "TileOffsets[2] = 400 is past the 12 words that "
                          "follow the header");
  EXPECT_EQ(with(8, 0x00043c00),
            "tile 0 word 0 (location 4): outside the 2x2 tile");
  // Tile 1 is (location 1: 2, location 2: 3, padding at 0, padding at 0);
  // its word 2 moved to location 1, as a value and as padding.
  EXPECT_EQ(with(14, 0x00014000),
            "tile 1 word 2 (location 1): a second word at one location");
  EXPECT_EQ(with(14, 0x00010000),
            "tile 1 word 2 (location 1): padding over a word with a value");
  // A run longer than its tile: tile 0 given 8 words.
  std::vector<uint32_t> longRun = {
      0,          8,          8,          8,          8,          0, 0, 0,
      0x00003c00, 0x00010000, 0x00020000, 0x00030000, 0x00003c00, 0, 0, 0};
  EXPECT_EQ(checkWords(longRun), "tile 0 has 8 words, more than its 4 "
                                 "elements");
  // [3, 3] in 2 x 2 tiles: tile 1 holds column 2 only, tile 2 row 2 only.
  std::vector<uint32_t> partial = {
      0, 0, 4, 4, 4, 0, 0, 0, 0x00003c00, 0x00013c00, 0x00020000, 0x00030000};
  EXPECT_EQ(checkWords(partial, 3, 3),
            "tile 1 word 1 (location 1): a value outside the matrix");
  partial[9] = 0x00010000; // padding outside the matrix is fine
  partial[10] = 0x00023c00;
  EXPECT_EQ(checkWords(partial, 3, 3), "");
}

TEST(PackCommandTest, Usage) {
  auto run = [](std::vector<std::string> args) {
    std::vector<char *> argv;
    for (std::string &arg : args)
      argv.push_back(arg.data());
    testing::internal::CaptureStderr();
    testing::internal::CaptureStdout();
    int code = fdcPackMain(static_cast<int>(argv.size()), argv.data());
    std::string err = testing::internal::GetCapturedStderr();
    testing::internal::GetCapturedStdout();
    return std::make_pair(code, err);
  };
  auto [noArgs, noArgsErr] = run({"fdc pack"});
  EXPECT_EQ(noArgs, 2);
  EXPECT_NE(noArgsErr.find("a model library, --weights and -o are required"),
            std::string::npos);
  auto [noValue, noValueErr] = run({"fdc pack", "m.so", "--weights"});
  EXPECT_EQ(noValue, 2);
  EXPECT_NE(noValueErr.find("option --weights needs a value"),
            std::string::npos);
  auto [missing, missingErr] =
      run({"fdc pack", "/nonexistent/m.so", "--weights", "/x", "-o", "/y"});
  EXPECT_EQ(missing, 1);
  EXPECT_EQ(missingErr.rfind("fdc pack: error: ", 0), 0u) << missingErr;
}

} // namespace
