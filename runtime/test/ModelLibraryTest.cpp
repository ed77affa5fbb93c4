//===- ModelLibraryTest.cpp - Tests of the model library loader -----------===//

#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/hip/HipBackend.h"

#include "TestUtil.h"

#include <cstring>
#include <elf.h>
#include <fstream>
#include <gtest/gtest.h>
#include <sys/stat.h>

using namespace fdc::runtime;
using namespace fdc::runtime::test;

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
  EXPECT_EQ(m.abiVersion, FDC_MODEL_ABI_VERSION);
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
  EXPECT_EQ(openError(FDC_TEST_MODEL_OLD_ABI),
            std::string("model library ") + FDC_TEST_MODEL_OLD_ABI +
                " was built for ABI version 1, this runtime supports 3");
}

TEST(ModelLibraryTest, RefusesEditedManifest) {
  EXPECT_EQ(openError(FDC_TEST_MODEL_BADHASH),
            std::string("model library ") + FDC_TEST_MODEL_BADHASH +
                ": the manifest does not match the library (it was edited "
                "after compilation)");
}

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

/// `path` written with `bytes`, then opened as a model library.
std::string openBytes(const std::string &path,
                      const std::vector<uint8_t> &bytes) {
  writeFile(path, bytes);
  return openError(path);
}

TEST(ModelLibraryTest, RefusesTruncatedLibraries) {
  // dlopen of a cut-short library faults (SIGBUS) inside the loader; the
  // ELF headers are checked first.
  TempDir dir;
  std::vector<uint8_t> good = readBytes(FDC_TEST_MODEL_GOOD);
  ASSERT_GT(good.size(), 5000u);
  std::string path = dir.file("t.so");
  auto cut = [&](size_t size) {
    return openBytes(path,
                     std::vector<uint8_t>(good.begin(), good.begin() + size));
  };
  EXPECT_EQ(cut(0), "cannot load model library " + path +
                        ": not an ELF file (bad magic)");
  EXPECT_EQ(cut(40), "cannot load model library " + path +
                         ": the file is truncated: the ELF header at byte 0 "
                         "needs 64 bytes but the file has 40 bytes");
  std::string message = cut(5000);
  EXPECT_EQ(message.rfind("cannot load model library " + path +
                              ": the file is truncated: ",
                          0),
            0u)
      << message;
  EXPECT_NE(message.find("but the file has 5000 bytes"), std::string::npos)
      << message;

  // Only the section header table is cut off; then only the last bytes of
  // the last loadable segment.
  Elf64_Ehdr header;
  std::memcpy(&header, good.data(), sizeof(header));
  ASSERT_EQ(header.e_shoff + header.e_shnum * sizeof(Elf64_Shdr), good.size());
  EXPECT_EQ(cut(good.size() - 1),
            concat("cannot load model library ", path,
                   ": the file is truncated: the section header table at "
                   "byte ",
                   header.e_shoff, " needs ",
                   header.e_shnum * sizeof(Elf64_Shdr),
                   " bytes but the file has ", good.size() - 1, " bytes"));
  std::vector<uint8_t> noSections = good;
  Elf64_Ehdr *edited = reinterpret_cast<Elf64_Ehdr *>(noSections.data());
  edited->e_shoff = 0;
  edited->e_shnum = 0;
  uint64_t loadEnd = 0;
  Elf64_Phdr last = {};
  size_t lastLoad = 0;
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, good.data() + header.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(segment));
    if (segment.p_type == PT_LOAD &&
        segment.p_offset + segment.p_filesz >= loadEnd) {
      loadEnd = segment.p_offset + segment.p_filesz;
      last = segment;
      lastLoad = i;
    }
  }
  noSections.resize(loadEnd - 1);
  EXPECT_EQ(openBytes(path, noSections),
            concat("cannot load model library ", path,
                   ": the file is truncated: loadable segment ", lastLoad,
                   " at byte ", last.p_offset, " needs ", last.p_filesz,
                   " bytes but the file has ", loadEnd - 1, " bytes"));
}

TEST(ModelLibraryTest, RefusesOtherElfFiles) {
  TempDir dir;
  std::vector<uint8_t> good = readBytes(FDC_TEST_MODEL_GOOD);
  std::string path = dir.file("e.so");
  auto edited = [&](auto edit) {
    std::vector<uint8_t> bytes = good;
    edit(*reinterpret_cast<Elf64_Ehdr *>(bytes.data()));
    return openBytes(path, bytes);
  };
  std::string prefix = "cannot load model library " + path + ": ";
  EXPECT_EQ(edited([](Elf64_Ehdr &h) { h.e_ident[EI_CLASS] = ELFCLASS32; }),
            prefix + "not a 64-bit ELF file (class 1)");
  EXPECT_EQ(edited([](Elf64_Ehdr &h) { h.e_ident[EI_DATA] = ELFDATA2MSB; }),
            prefix + "the ELF file is not little endian like this host");
  EXPECT_EQ(edited([](Elf64_Ehdr &h) { h.e_type = ET_EXEC; }),
            prefix + "not a shared object (ELF type 2)");
  EXPECT_EQ(edited([](Elf64_Ehdr &h) { h.e_machine = EM_SPARC; }),
            prefix +
                concat("built for ELF machine 2, this host is ",
                       reinterpret_cast<Elf64_Ehdr *>(good.data())->e_machine));
  uint16_t phnum = reinterpret_cast<Elf64_Ehdr *>(good.data())->e_phnum;
  EXPECT_EQ(edited([](Elf64_Ehdr &h) { h.e_phoff = UINT64_MAX - 8; }),
            prefix + concat("the file is truncated: the program header table "
                            "at byte ",
                            UINT64_MAX - 8, " needs ",
                            phnum * sizeof(Elf64_Phdr),
                            " bytes but the file has ", good.size(), " bytes"));
}

TEST(ModelLibraryTest, RefusesNonRegularFiles) {
  TempDir dir;
  std::string fifo = dir.file("fifo.so");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Opening a FIFO for reading would wait for a writer forever.
  EXPECT_EQ(openError(fifo), "cannot load model library " + fifo + ": '" +
                                 fifo + "' is not a regular file");
  EXPECT_EQ(openError(dir.path()), "cannot load model library " + dir.path() +
                                       ": '" + dir.path() +
                                       "' is not a regular file");
}

TEST(ModelLibraryTest, CudaTargetNeedsTheCudaBackend) {
  // With the backend the library opens (its kernel images and the GPU are
  // checked by Model::load); without it, it is refused. cuda/ tests the rest.
  if (cuda::backendAvailable())
    EXPECT_EQ(openError(FDC_TEST_MODEL_CUDA), "");
  else
    EXPECT_EQ(openError(FDC_TEST_MODEL_CUDA),
              std::string("model library ") + FDC_TEST_MODEL_CUDA +
                  " targets 'cuda:sm_90'; this runtime runs: " +
                  joinedSupportedTargets() +
                  " (it was built without the CUDA backend: cuda.h was not "
                  "found, or FDC_RUNTIME_CUDA=OFF)");
}

TEST(ModelLibraryTest, RocmTargetNeedsTheHipBackendAndCodeObjects) {
  // ../TestModel.c built for rocm:gfx942 has no fdc_hsaco_gfx942. hip/ tests
  // the rest.
  if (hip::backendAvailable())
    EXPECT_EQ(openError(FDC_TEST_MODEL_ROCM),
              std::string("model library ") + FDC_TEST_MODEL_ROCM +
                  " lacks symbol fdc_hsaco_gfx942 (its target 'rocm:gfx942' "
                  "lists gfx942)");
  else
    EXPECT_EQ(openError(FDC_TEST_MODEL_ROCM),
              std::string("model library ") + FDC_TEST_MODEL_ROCM +
                  " targets 'rocm:gfx942'; this runtime runs: " +
                  joinedSupportedTargets() +
                  " (it was built without the HIP backend: "
                  "hip/hip_runtime_api.h was not found, or "
                  "FDC_RUNTIME_HIP=OFF)");
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

std::string tpManifest(const std::string &tensorParallel,
                       const std::string &weights) {
  return R"({"abi_version": 3, "target": "host", "config": {"vocab_size": 8},
             )" +
         tensorParallel + R"("kv_cache": )" + goodKV +
         R"(, "weights_bytes": 512, "weights": [)" + weights + "]}";
}

/// A [4, 2] f32 weight "x" with `slices`.
std::string slicedWeight(const std::string &slices,
                         const std::string &extra = "") {
  return R"({"name": "x", "dtype": "f32", "shape": [4, 2], "offset": 0,
             "bytes": 32, )" +
         extra + R"("slices": )" + slices + "}";
}

const char *goodSlices =
    R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}],
        [{"source": "a", "rows": [0, 2], "cols": [2, 4]},
         {"source": "b", "rows": [6, 8], "cols": [2, 4]}]])";

TEST(ManifestTest, TensorParallel) {
  Expected<Manifest> m = Manifest::parse(
      tpManifest("", R"({"name": "y", "dtype": "f32", "shape": [2],
                         "offset": 0, "bytes": 8})"),
      "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->tensorParallel, 1);
  EXPECT_TRUE(m->weights[0].slices.empty());

  m = Manifest::parse(
      tpManifest(R"("tensor_parallel": 2, )", slicedWeight(goodSlices)),
      "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->tensorParallel, 2);
  const std::vector<std::vector<WeightPiece>> &slices = m->weights[0].slices;
  ASSERT_EQ(slices.size(), 2u);
  ASSERT_EQ(slices[0].size(), 1u);
  ASSERT_EQ(slices[1].size(), 2u);
  EXPECT_EQ(slices[1][1].source, "b");
  EXPECT_EQ(slices[1][1].rowBegin, 6);
  EXPECT_EQ(slices[1][1].rowEnd, 8);
  EXPECT_EQ(slices[1][1].colBegin, 2);
  EXPECT_EQ(slices[1][1].colEnd, 4);

  // A weight without slices is replicated.
  m = Manifest::parse(tpManifest(R"("tensor_parallel": 64, )",
                                 R"({"name": "y", "dtype": "f32",
                                     "shape": [2], "offset": 0, "bytes": 8})"),
                      "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_TRUE(m->weights[0].slices.empty());
}

TEST(ManifestTest, DependentLaunch) {
  // tpManifest's first argument is spliced in before "kv_cache".
  Expected<Manifest> m = Manifest::parse(tpManifest("", ""), "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_FALSE(m->dependentLaunch);
  m = Manifest::parse(tpManifest(R"("dependent_launch": true, )", ""), "test");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_TRUE(m->dependentLaunch);
  EXPECT_EQ(manifestError(tpManifest(R"("dependent_launch": 1, )", "")),
            "manifest of test: field 'dependent_launch' is not a boolean");
}

TEST(ManifestTest, TensorParallelErrors) {
  auto tp2 = [](const std::string &weight) {
    return manifestError(tpManifest(R"("tensor_parallel": 2, )", weight));
  };
  const char *prefix = "manifest of test: weights[0] ('x'): ";
  EXPECT_EQ(manifestError(tpManifest(R"("tensor_parallel": 0, )", "")),
            "manifest of test: field 'tensor_parallel' is 0, expected >= 1");
  EXPECT_EQ(manifestError(tpManifest(R"("tensor_parallel": 65, )", "")),
            "manifest of test: field 'tensor_parallel' is 65, expected at "
            "most 64");
  EXPECT_EQ(manifestError(tpManifest(R"("tensor_parallel": "2", )", "")),
            "manifest of test: field 'tensor_parallel' is not an integer");
  EXPECT_EQ(manifestError(tpManifest("", slicedWeight(goodSlices))),
            std::string(prefix) + "'slices' needs a tensor-parallel manifest "
                                  "(\"tensor_parallel\" > 1)");
  EXPECT_EQ(manifestError(tpManifest(R"("tensor_parallel": 1, )",
                                     slicedWeight(goodSlices))),
            std::string(prefix) + "'slices' needs a tensor-parallel manifest "
                                  "(\"tensor_parallel\" > 1)");
  EXPECT_EQ(tp2(slicedWeight("{}")),
            std::string(prefix) + "'slices' is not an array");
  EXPECT_EQ(
      tp2(slicedWeight(
          R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "'slices' has 1 entries, expected one per rank (tensor_parallel 2)");
  EXPECT_EQ(tp2(slicedWeight(
                R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}], []])")),
            std::string(prefix) +
                "slices[1] is not a non-empty array of pieces");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}],
                                 [{"rows": [0, 4], "cols": [0, 2]}]])")),
      std::string(prefix) + "slices[1][0]: missing string field 'source'");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}],
                                 [{"source": "a", "rows": [4, 4], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "slices[1][0]: 'rows' [4, 4] is not a range 0 <= begin < end");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [-1, 1]}],
                                 [{"source": "a", "rows": [0, 4], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "slices[0][0]: 'cols' [-1, 1] is not a range 0 <= begin < end");
  EXPECT_EQ(tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0]}],
                                 [{"source": "a", "rows": [0, 4], "cols": [0, 2]}]])")),
            std::string(prefix) +
                "slices[0][0]: 'cols' must be [begin, end] (two integers)");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0, 3]}],
                                 [{"source": "a", "rows": [0, 4], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "slices[0][0]: cols [0, 3) hold 3 columns, the weight's shape "
          "[4, 2] has 2");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}],
                                 [{"source": "a", "rows": [0, 3], "cols": [0, 2]},
                                  {"source": "a", "rows": [0, 3], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "slices[1][1]: rows [0, 3) overflow the weight's 4 rows (the "
          "rank's pieces so far hold 3)");
  EXPECT_EQ(
      tp2(slicedWeight(R"([[{"source": "a", "rows": [0, 4], "cols": [0, 2]}],
                                 [{"source": "a", "rows": [0, 3], "cols": [0, 2]}]])")),
      std::string(prefix) +
          "slices[1]: the pieces hold 3 rows in all, the weight's shape "
          "[4, 2] has 4");
  EXPECT_EQ(tp2(R"({"name": "x", "dtype": "f32", "shape": [8], "offset": 0,
                    "bytes": 32, "slices": [[{"source": "a", "rows": [0, 8], "cols": [0, 1]}],
                                            [{"source": "a", "rows": [0, 8], "cols": [0, 1]}]]})"),
            std::string(prefix) +
                "a sliced weight must be 2-D, its shape is [8]");
  EXPECT_EQ(
      tp2(R"({"name": "x", "dtype": "int4", "shape": [2, 8], "layout": "int4",
                    "group_size": 4, "scale_dtype": "f16", "offset": 0, "bytes": 24,
                    "slices": [[{"source": "a", "rows": [0, 2], "cols": [0, 8]}],
                               [{"source": "a", "rows": [2, 4], "cols": [0, 8]}]]})"),
      std::string(prefix) +
          "a sliced weight must have layout 'dense', not 'int4'");
}

} // namespace
