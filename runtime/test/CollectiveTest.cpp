//===- CollectiveTest.cpp - Tests of the host collective group ------------===//

#include "fdc/runtime/Collective.h"

#include "fdc/runtime/Packing.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace fdc::runtime;

namespace {

/// Runs `body(rank)` on one thread per rank and joins them.
void onRanks(int64_t ranks, const std::function<void(int64_t)> &body) {
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < ranks; ++r)
    threads.emplace_back(body, r);
  for (std::thread &t : threads)
    t.join();
}

int allReduce(const CollectiveGroup &group, int64_t rank, const void *input,
              void *output, int64_t count, int64_t dtype) {
  const FdcCollectiveApi *api = group.api(rank);
  return api->all_reduce_sum(api->context, input, output, count, dtype);
}

int allGather(const CollectiveGroup &group, int64_t rank, const void *input,
              void *output, int64_t rows, int64_t columns, int64_t dtype) {
  const FdcCollectiveApi *api = group.api(rank);
  return api->all_gather_columns(api->context, input, output, nullptr, rows,
                                 columns, dtype);
}

/// Rank `rank`'s input of `count` elements of `dtype`, as bytes.
std::vector<uint8_t> randomInput(int64_t rank, int64_t count, int64_t dtype) {
  std::mt19937 rng(static_cast<uint32_t>(1234 + 77 * rank + dtype));
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  uint64_t size = collectiveDTypeSize(dtype);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) {
    float v = value(rng);
    if (dtype == FDC_DTYPE_F32) {
      std::memcpy(bytes.data() + i * 4, &v, 4);
    } else {
      uint16_t bits =
          dtype == FDC_DTYPE_F16 ? floatToF16Bits(v) : floatToBF16Bits(v);
      std::memcpy(bytes.data() + i * 2, &bits, 2);
    }
  }
  return bytes;
}

float element(const std::vector<uint8_t> &bytes, int64_t i, int64_t dtype) {
  if (dtype == FDC_DTYPE_F32) {
    float v;
    std::memcpy(&v, bytes.data() + i * 4, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, bytes.data() + i * 2, 2);
  return dtype == FDC_DTYPE_F16 ? f16BitsToFloat(bits) : bf16BitsToFloat(bits);
}

/// The sum in rank order, in f32, rounded once to `dtype`.
std::vector<uint8_t> expectedSum(const std::vector<std::vector<uint8_t>> &in,
                                 int64_t count, int64_t dtype) {
  std::vector<uint8_t> out(in[0].size());
  for (int64_t i = 0; i < count; ++i) {
    float acc = element(in[0], i, dtype);
    for (size_t r = 1; r < in.size(); ++r)
      acc += element(in[r], i, dtype);
    if (dtype == FDC_DTYPE_F32) {
      std::memcpy(out.data() + i * 4, &acc, 4);
    } else {
      uint16_t bits =
          dtype == FDC_DTYPE_F16 ? floatToF16Bits(acc) : floatToBF16Bits(acc);
      std::memcpy(out.data() + i * 2, &bits, 2);
    }
  }
  return out;
}

TEST(CollectiveTest, SumsAreTheSameOnEveryRank) {
  for (int64_t ranks : {1, 2, 3, 4}) {
    for (int64_t dtype : {FDC_DTYPE_F32, FDC_DTYPE_F16, FDC_DTYPE_BF16}) {
      SCOPED_TRACE(testing::Message() << ranks << " ranks, dtype " << dtype);
      // More than one of the f16 path's blocks.
      constexpr int64_t kCount = 2500;
      std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(ranks);
      ASSERT_EQ(group->ranks(), ranks);
      std::vector<std::vector<uint8_t>> inputs, outputs;
      for (int64_t r = 0; r < ranks; ++r) {
        inputs.push_back(randomInput(r, kCount, dtype));
        outputs.emplace_back(inputs.back().size(), 0xAB);
      }
      std::atomic<int> failures{0};
      onRanks(ranks, [&](int64_t r) {
        EXPECT_EQ(group->api(r)->rank, r);
        EXPECT_EQ(group->api(r)->ranks, ranks);
        if (allReduce(*group, r, inputs[r].data(), outputs[r].data(), kCount,
                      dtype))
          ++failures;
      });
      EXPECT_EQ(failures.load(), 0);
      EXPECT_EQ(group->error(), "");
      std::vector<uint8_t> expected = expectedSum(inputs, kCount, dtype);
      for (int64_t r = 0; r < ranks; ++r)
        EXPECT_TRUE(outputs[r] == expected) << "rank " << r;
    }
  }
}

TEST(CollectiveTest, HalfSumsRoundOnce) {
  // bf16: 1 + 2^-8 + 2^-8 is 1 + 2^-7 (representable) when rounded once;
  // rounding after each addition would give 1 (the tie 1 + 2^-8 goes to 1).
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(3);
  uint16_t inputs[3] = {floatToBF16Bits(1.0f), floatToBF16Bits(0.00390625f),
                        floatToBF16Bits(0.00390625f)};
  uint16_t outputs[3] = {};
  onRanks(3, [&](int64_t r) {
    EXPECT_EQ(allReduce(*group, r, &inputs[r], &outputs[r], 1, FDC_DTYPE_BF16),
              0);
  });
  for (uint16_t out : outputs)
    EXPECT_EQ(bf16BitsToFloat(out), 1.0078125f);
}

TEST(CollectiveTest, SumInPlace) {
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(3);
  std::vector<std::vector<float>> buffers = {
      {1, 2, 3, 4}, {10, 20, 30, 40}, {100, 200, 300, 400}};
  onRanks(3, [&](int64_t r) {
    EXPECT_EQ(allReduce(*group, r, buffers[r].data(), buffers[r].data(), 4,
                        FDC_DTYPE_F32),
              0);
  });
  for (const std::vector<float> &buffer : buffers)
    EXPECT_EQ(buffer, (std::vector<float>{111, 222, 333, 444}));
}

TEST(CollectiveTest, GatherColumns) {
  constexpr int64_t kRanks = 3, kRows = 2, kColumns = 2;
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(kRanks);
  // Rank r's input[i][j] = 100 r + 10 i + j.
  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks);
  for (int64_t r = 0; r < kRanks; ++r) {
    for (int64_t i = 0; i < kRows; ++i)
      for (int64_t j = 0; j < kColumns; ++j)
        inputs[r].push_back(100.0f * r + 10.0f * i + j);
    outputs[r].assign(kRows * kRanks * kColumns, -1.0f);
  }
  onRanks(kRanks, [&](int64_t r) {
    EXPECT_EQ(allGather(*group, r, inputs[r].data(), outputs[r].data(), kRows,
                        kColumns, FDC_DTYPE_F32),
              0);
  });
  std::vector<float> expected = {0,  1,  100, 101, 200, 201,
                                 10, 11, 110, 111, 210, 211};
  for (int64_t r = 0; r < kRanks; ++r)
    EXPECT_EQ(outputs[r], expected) << "rank " << r;

  // 2-byte elements.
  group = createHostCollectiveGroup(2);
  uint16_t in16[2][2] = {{1, 2}, {3, 4}};
  uint16_t out16[2][4] = {};
  onRanks(2, [&](int64_t r) {
    EXPECT_EQ(allGather(*group, r, in16[r], out16[r], 2, 1, FDC_DTYPE_BF16), 0);
  });
  for (auto &out : out16)
    EXPECT_EQ(std::vector<uint16_t>(out, out + 4),
              (std::vector<uint16_t>{1, 3, 2, 4}));
}

TEST(CollectiveTest, ManyCollectivesInARow) {
  constexpr int64_t kRanks = 4;
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(kRanks);
  onRanks(kRanks, [&](int64_t r) {
    std::vector<float> value(64, static_cast<float>(r + 1));
    std::vector<float> gathered(64 * kRanks);
    for (int step = 0; step < 300; ++step) {
      int64_t count = 1 + step % 64;
      ASSERT_EQ(allReduce(*group, r, value.data(), value.data(), count,
                          FDC_DTYPE_F32),
                0);
      // Each rank scales its first element so the gather shows ranks apart.
      std::vector<float> mine = {value[0] * (r + 1)};
      ASSERT_EQ(allGather(*group, r, mine.data(), gathered.data(), 1, 1,
                          FDC_DTYPE_F32),
                0);
      for (int64_t q = 0; q < kRanks; ++q)
        ASSERT_EQ(gathered[q], value[0] * (q + 1));
      for (float &v : value)
        v = v / 10.0f + static_cast<float>(r);
    }
  });
  EXPECT_EQ(group->error(), "");
}

TEST(CollectiveTest, AbortWakesAWaitingRank) {
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(2);
  float value = 1;
  std::atomic<int> result{-1};
  // Rank 0 waits for rank 1, which never comes.
  std::thread rank0(
      [&] { result = allReduce(*group, 0, &value, &value, 1, FDC_DTYPE_F32); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(result.load(), -1);
  group->abort("rank 1 failed: boom");
  group->abort("a second reason is ignored");
  rank0.join();
  EXPECT_NE(result.load(), 0);
  EXPECT_EQ(group->error(), "rank 1 failed: boom");
  // Later collectives fail at once.
  EXPECT_NE(allReduce(*group, 1, &value, &value, 1, FDC_DTYPE_F32), 0);
  EXPECT_NE(allGather(*group, 0, &value, &value, 1, 1, FDC_DTYPE_F32), 0);

  // A waiting gather too.
  group = createHostCollectiveGroup(3);
  float out[3];
  std::thread gatherer(
      [&] { result = allGather(*group, 2, &value, out, 1, 1, FDC_DTYPE_F32); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  group->abort("stop");
  gatherer.join();
  EXPECT_NE(result.load(), 0);
}

TEST(CollectiveTest, AnInvalidCallFailsEveryRank) {
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(2);
  float value = 1;
  std::atomic<int> failures{0};
  onRanks(2, [&](int64_t r) {
    // Rank 1 passes an unknown dtype: rank 0, waiting for it, fails too.
    if (allReduce(*group, r, &value, &value, 1, r == 1 ? 7 : FDC_DTYPE_F32))
      ++failures;
  });
  EXPECT_EQ(failures.load(), 2);
  EXPECT_EQ(group->error(),
            "tensor-parallel rank 1: all_reduce_sum(count 1, dtype 7) is "
            "invalid (dtype must be an FDC_DTYPE_* code, count >= 0, buffers "
            "non-null)");
}

TEST(CollectiveTest, RanksThatDisagreeFail) {
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(3);
  std::vector<float> values(8, 1.0f);
  std::vector<std::vector<float>> outputs(3, std::vector<float>(8 * 3));
  std::atomic<int> failures{0};
  onRanks(3, [&](int64_t r) {
    std::vector<float> mine = values;
    int failed = r == 2 ? allGather(*group, r, mine.data(), outputs[r].data(),
                                    2, 4, FDC_DTYPE_F32)
                        : allReduce(*group, r, mine.data(), mine.data(),
                                    r == 1 ? 4 : 8, FDC_DTYPE_F32);
    if (failed)
      ++failures;
  });
  EXPECT_EQ(failures.load(), 3);
  EXPECT_EQ(group->error(),
            "tensor-parallel ranks disagree on a collective: rank 1 calls "
            "all_reduce_sum(count 4, f32), rank 0 all_reduce_sum(count 8, "
            "f32)");
}

TEST(CollectiveTest, EmptyCollectives) {
  std::unique_ptr<CollectiveGroup> group = createHostCollectiveGroup(2);
  onRanks(2, [&](int64_t r) {
    EXPECT_EQ(allReduce(*group, r, nullptr, nullptr, 0, FDC_DTYPE_F16), 0);
    EXPECT_EQ(allGather(*group, r, nullptr, nullptr, 0, 5, FDC_DTYPE_F32), 0);
  });
  EXPECT_EQ(group->error(), "");
}

} // namespace
