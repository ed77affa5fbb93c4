//===- HostCollective.cpp - The collectives of host ranks on threads ------===//
//
// Every collective has two phases. Each rank publishes its call (its input
// pointer and sizes) and waits at a barrier until every rank has; then each
// reads every rank's input (checking first that the calls agree), writes
// what it computed into a private buffer, and waits until every rank has
// finished reading before it writes its output (which may be its input) and
// returns. A rank never leaves a collective while another may still read its
// input, not even after an abort: the read phase never waits, so that wait
// is short.
//
//===----------------------------------------------------------------------===//

#include "fdc/runtime/Collective.h"

#include "fdc/runtime/Packing.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>

using namespace fdc::runtime;

CollectiveGroup::~CollectiveGroup() = default;
CollectiveMemory::~CollectiveMemory() = default;

namespace {

enum class Op { AllReduceSum, AllGatherColumns };

/// What one rank asked for.
struct Call {
  Op op = Op::AllReduceSum;
  const void *input = nullptr;
  /// all_reduce_sum: count, 0; all_gather_columns: rows, columns.
  int64_t size0 = 0;
  int64_t size1 = 0;
  int64_t dtype = 0;

  bool agrees(const Call &other) const {
    return op == other.op && size0 == other.size0 && size1 == other.size1 &&
           dtype == other.dtype;
  }
};

const char *dtypeName(int64_t dtype) {
  switch (dtype) {
  case FDC_DTYPE_F32:
    return "f32";
  case FDC_DTYPE_F16:
    return "f16";
  case FDC_DTYPE_BF16:
    return "bf16";
  default:
    return "?";
  }
}

std::string describe(const Call &call) {
  if (call.op == Op::AllReduceSum)
    return concat("all_reduce_sum(count ", call.size0, ", ",
                  dtypeName(call.dtype), ")");
  return concat("all_gather_columns(rows ", call.size0, ", columns ",
                call.size1, ", ", dtypeName(call.dtype), ")");
}

float halfToFloat(uint16_t bits, bool bf16) {
  return bf16 ? bf16BitsToFloat(bits) : f16BitsToFloat(bits);
}

class HostCollectiveGroup;

/// A host rank's record.
struct HostRank : CollectiveRank<HostCollectiveGroup> {
  /// The rank's current call, published under the mutex.
  Call call;
  /// The rank's result before it is copied out (all_reduce_sum).
  std::vector<uint8_t> result;
};

class HostCollectiveGroup final
    : public CollectiveGroupImpl<HostCollectiveGroup, HostRank> {
public:
  explicit HostCollectiveGroup(int64_t ranks);

  void abort(std::string reason) override;
  std::string error() const override;

private:
  friend CollectiveGroupImpl;
  using Rank = HostRank;

  /// The FdcCollectiveApi entry points; `context` is the calling rank's
  /// record. Each computes on the calling thread from every rank's input.
  static int allReduceSum(void *context, const void *input, void *output,
                          int64_t count, int64_t dtype) noexcept;
  static int allGatherColumns(void *context, const void *input, void *output,
                              void *workspace, int64_t rows, int64_t columns,
                              int64_t dtype) noexcept;

  /// Publishes `call` and waits until every rank has published its own; then
  /// every rank is a reader. False when the group was aborted first.
  bool arrive(Rank &rank, const Call &call);
  /// Checks that every rank's call agrees with rank 0's; on a mismatch
  /// records it (aborting the group) and returns false.
  bool callsAgree();
  /// Marks `rank` done reading and waits until every rank is; true unless
  /// the group was aborted.
  bool leave();
  /// Records `message` (the first one wins) and aborts the group.
  void fail(std::string message);

  void sum(Rank &rank, uint64_t elements);

  mutable std::mutex mutex;
  std::condition_variable changed;
  /// Ranks that have published the current call.
  int64_t arrived = 0;
  /// Counts the completed arrivals.
  uint64_t generation = 0;
  /// Ranks that may still read the inputs of the last completed arrival.
  int64_t readers = 0;
  bool aborted = false;
  std::string firstError;
};

HostCollectiveGroup::HostCollectiveGroup(int64_t ranks)
    : CollectiveGroupImpl(this, ranks) {}

void HostCollectiveGroup::abort(std::string reason) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (firstError.empty())
      firstError = std::move(reason);
    aborted = true;
  }
  changed.notify_all();
}

std::string HostCollectiveGroup::error() const {
  std::lock_guard<std::mutex> lock(mutex);
  return firstError;
}

void HostCollectiveGroup::fail(std::string message) {
  abort(std::move(message));
}

bool HostCollectiveGroup::arrive(Rank &rank, const Call &call) {
  std::unique_lock<std::mutex> lock(mutex);
  if (aborted)
    return false;
  rank.call = call;
  uint64_t mine = generation;
  if (++arrived == count) {
    arrived = 0;
    ++generation;
    readers = count;
    lock.unlock();
    changed.notify_all();
    return true;
  }
  changed.wait(lock, [&] { return generation != mine || aborted; });
  // Once the arrival completed this rank is a reader, aborted or not.
  return generation != mine;
}

bool HostCollectiveGroup::leave() {
  std::unique_lock<std::mutex> lock(mutex);
  if (--readers == 0) {
    lock.unlock();
    changed.notify_all();
    lock.lock();
  } else {
    // Never waits for anything but the other readers' copies.
    changed.wait(lock, [&] { return readers == 0; });
  }
  return !aborted;
}

bool HostCollectiveGroup::callsAgree() {
  const Call &first = rankStates[0].call;
  for (int64_t r = 1; r < count; ++r) {
    const Call &other = rankStates[static_cast<size_t>(r)].call;
    if (!other.agrees(first)) {
      fail(concat("tensor-parallel ranks disagree on a collective: rank ", r,
                  " calls ", describe(other), ", rank 0 ", describe(first)));
      return false;
    }
  }
  return true;
}

void HostCollectiveGroup::sum(Rank &rank, uint64_t elements) {
  int64_t dtype = rank.call.dtype;
  auto input = [&](int64_t r) {
    return rankStates[static_cast<size_t>(r)].call.input;
  };
  if (dtype == FDC_DTYPE_F32) {
    // Rank order, element by element: ((in0 + in1) + in2) + ...
    float *out = reinterpret_cast<float *>(rank.result.data());
    std::memcpy(out, input(0), elements * 4);
    for (int64_t r = 1; r < count; ++r) {
      const float *in = static_cast<const float *>(input(r));
      for (uint64_t i = 0; i < elements; ++i)
        out[i] += in[i];
    }
    return;
  }
  // f16 / bf16: in f32, in rank order, rounded once.
  bool bf16 = dtype == FDC_DTYPE_BF16;
  uint16_t *out = reinterpret_cast<uint16_t *>(rank.result.data());
  constexpr uint64_t kBlock = 1024;
  float acc[kBlock];
  for (uint64_t begin = 0; begin < elements; begin += kBlock) {
    uint64_t n = std::min(kBlock, elements - begin);
    const uint16_t *in0 = static_cast<const uint16_t *>(input(0)) + begin;
    for (uint64_t i = 0; i < n; ++i)
      acc[i] = halfToFloat(in0[i], bf16);
    for (int64_t r = 1; r < count; ++r) {
      const uint16_t *in = static_cast<const uint16_t *>(input(r)) + begin;
      for (uint64_t i = 0; i < n; ++i)
        acc[i] += halfToFloat(in[i], bf16);
    }
    for (uint64_t i = 0; i < n; ++i)
      out[begin + i] = bf16 ? floatToBF16Bits(acc[i]) : floatToF16Bits(acc[i]);
  }
}

int HostCollectiveGroup::allReduceSum(void *context, const void *input,
                                      void *output, int64_t count,
                                      int64_t dtype) noexcept {
  Rank &rank = *static_cast<Rank *>(context);
  HostCollectiveGroup &group = *rank.group;
  uint64_t elementBytes = collectiveDTypeSize(dtype);
  if (elementBytes == 0 || count < 0 || (count > 0 && (!input || !output))) {
    group.fail(concat("tensor-parallel rank ", rank.index,
                      ": all_reduce_sum(count ", count, ", dtype ", dtype,
                      ") is invalid (dtype must be an FDC_DTYPE_* code, "
                      "count >= 0, buffers non-null)"));
    return 1;
  }
  uint64_t bytes = static_cast<uint64_t>(count) * elementBytes;
  try {
    if (rank.result.size() < bytes)
      rank.result.resize(bytes);
  } catch (const std::bad_alloc &) {
    group.fail(concat("tensor-parallel rank ", rank.index, ": cannot allocate ",
                      bytes, " bytes for all_reduce_sum"));
    return 1;
  }
  Call call;
  call.op = Op::AllReduceSum;
  call.input = input;
  call.size0 = count;
  call.dtype = dtype;
  if (!group.arrive(rank, call))
    return 1;
  bool agree = group.callsAgree();
  if (agree)
    group.sum(rank, static_cast<uint64_t>(count));
  if (!group.leave() || !agree)
    return 1;
  if (bytes > 0)
    std::memcpy(output, rank.result.data(), bytes);
  return 0;
}

int HostCollectiveGroup::allGatherColumns(void *context, const void *input,
                                          void *output, void * /*workspace*/,
                                          int64_t rows, int64_t columns,
                                          int64_t dtype) noexcept {
  Rank &rank = *static_cast<Rank *>(context);
  HostCollectiveGroup &group = *rank.group;
  uint64_t elementBytes = collectiveDTypeSize(dtype);
  if (elementBytes == 0 || rows < 0 || columns < 0 ||
      (rows > 0 && columns > 0 && (!input || !output))) {
    group.fail(concat("tensor-parallel rank ", rank.index,
                      ": all_gather_columns(rows ", rows, ", columns ", columns,
                      ", dtype ", dtype,
                      ") is invalid (dtype must be an FDC_DTYPE_* code, "
                      "sizes >= 0, buffers non-null)"));
    return 1;
  }
  Call call;
  call.op = Op::AllGatherColumns;
  call.input = input;
  call.size0 = rows;
  call.size1 = columns;
  call.dtype = dtype;
  if (!group.arrive(rank, call))
    return 1;
  bool agree = group.callsAgree();
  if (agree) {
    // output[i][r * columns + j] = rank r's input[i][j].
    uint64_t blockBytes = static_cast<uint64_t>(columns) * elementBytes;
    uint64_t outRowBytes = blockBytes * static_cast<uint64_t>(group.count);
    uint8_t *out = static_cast<uint8_t *>(output);
    for (int64_t r = 0; r < group.count && blockBytes > 0; ++r) {
      const uint8_t *in = static_cast<const uint8_t *>(
          group.rankStates[static_cast<size_t>(r)].call.input);
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(out + static_cast<uint64_t>(i) * outRowBytes +
                        static_cast<uint64_t>(r) * blockBytes,
                    in + static_cast<uint64_t>(i) * blockBytes, blockBytes);
    }
  }
  if (!group.leave() || !agree)
    return 1;
  return 0;
}

} // namespace

std::unique_ptr<CollectiveGroup>
fdc::runtime::createHostCollectiveGroup(int64_t ranks) {
  return std::make_unique<HostCollectiveGroup>(ranks);
}
