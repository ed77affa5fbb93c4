//===- Collective.h - The collectives of a tensor-parallel group -*- C++
//-*-===//
//
// A library compiled with `fdc compile --tensor-parallel N` runs as N ranks,
// each with its own weight slices, KV cache and (for a GPU library) device;
// every rank's step combines its values with the others' through the
// FdcCollectiveApi of fdc_model_abi.h. A CollectiveGroup implements that API
// for the N ranks of one Model: in-process on host threads
// (createHostCollectiveGroup), or NCCL on CUDA devices
// (createDeviceCollectiveGroup).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_COLLECTIVE_H
#define FDC_RUNTIME_COLLECTIVE_H

#include "fdc/runtime/Error.h"
#include "fdc_model_abi.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fdc::runtime {

class DeviceBackend;

/// Device memory that a group's collectives run fastest on (NCCL: from
/// ncclMemAlloc, for a symmetric window), from which a rank's backend takes
/// its scratch. Thread-safe; a backend keeps it while it holds memory from
/// it, which may be after the group is gone.
class CollectiveMemory {
public:
  virtual ~CollectiveMemory();
  /// Allocates `bytes` on the calling thread's current device; the error
  /// names `what`.
  virtual Error allocate(uint64_t bytes, uint64_t &address,
                         const char *what) = 0;
  virtual void release(uint64_t address) = 0;
};

/// A range of device memory: its address and size in bytes.
struct DeviceRange {
  uint64_t address = 0;
  uint64_t bytes = 0;
};

class CollectiveGroup {
public:
  virtual ~CollectiveGroup();

  virtual int64_t ranks() const = 0;
  /// The API rank `rank`'s step calls; lives as long as the group.
  virtual const FdcCollectiveApi *api(int64_t rank) const = 0;
  /// Makes every pending and later collective of every rank fail (return
  /// non-zero) instead of waiting for a rank that failed. Thread-safe,
  /// idempotent.
  virtual void abort(std::string reason) = 0;
  /// The first error a collective recorded, or the abort reason ("" if
  /// none). Thread-safe.
  virtual std::string error() const = 0;
  /// Whether a rank's collectives may be called while its device stream
  /// captures a step graph: they are then captured with the step's kernels
  /// and run on every replay (each rank captures and replays from its own
  /// thread). Otherwise a capture is cut at each collective, which runs
  /// between the segments.
  virtual bool runsInGraphs() const { return false; }
  /// Where rank `rank`'s scratch (the step's values, the collectives'
  /// buffers among them) should come from, or null: the device's own
  /// allocator. Asked before the backends allocate their state.
  virtual std::shared_ptr<CollectiveMemory> scratchMemory(int64_t rank) {
    (void)rank;
    return nullptr;
  }
  /// Called once, after every rank allocated its state from scratchMemory
  /// (scratch[r] is rank r's scratch): readies the group's collectives on
  /// them (NCCL: registers each rank's scratch in one symmetric window,
  /// which the group's end deregisters). Every rank's scratch has the same
  /// size and layout, so a value lies at one offset on every rank.
  virtual Error registerScratch(const std::vector<DeviceRange> &scratch) {
    (void)scratch;
    return Error::success();
  }
};

/// One rank's record in a CollectiveGroupImpl; an implementation derives its
/// per-rank state from it.
template <typename Group> struct CollectiveRank {
  /// The API the rank's step calls; its context is this record.
  FdcCollectiveApi api = {};
  /// The group the rank belongs to.
  Group *group = nullptr;
  /// The rank, in [0, ranks).
  int64_t index = 0;
};

/// What every CollectiveGroup implementation shares: one `Rank` record (a
/// CollectiveRank<Group>) per rank, whose api() calls the static
/// `Group::allReduceSum` and `Group::allGatherColumns` with that record as
/// the context. `Group` derives from this class (and befriends it when the
/// entry points are private).
template <typename Group, typename Rank>
class CollectiveGroupImpl : public CollectiveGroup {
public:
  int64_t ranks() const override { return count; }
  const FdcCollectiveApi *api(int64_t rank) const override {
    return &rankStates[static_cast<size_t>(rank)].api;
  }

protected:
  /// The records of ranks 0..ranks-1 of `group`, the object being
  /// constructed.
  CollectiveGroupImpl(Group *group, int64_t ranks)
      : count(ranks), rankStates(new Rank[static_cast<size_t>(ranks)]) {
    for (int64_t r = 0; r < ranks; ++r) {
      Rank &rank = rankStates[static_cast<size_t>(r)];
      rank.group = group;
      rank.index = r;
      rank.api.context = &rank;
      rank.api.rank = r;
      rank.api.ranks = ranks;
      rank.api.all_reduce_sum = Group::allReduceSum;
      rank.api.all_gather_columns = Group::allGatherColumns;
    }
  }

  /// The ranks in the group.
  int64_t count;
  /// Rank r's record at [r].
  std::unique_ptr<Rank[]> rankStates;
};

/// The group of `ranks` host ranks of one process, each calling its api(r)
/// from its own thread. all_reduce_sum sums the ranks' inputs in rank order
/// 0..ranks-1 (f16 and bf16 in f32, rounded once to nearest even), so every
/// rank gets the same bytes; all_gather_columns copies every rank's rows into
/// its column block. Both wait for every rank (no timeout: abort() is the way
/// out) and fail on an unknown dtype, a negative size, or ranks that disagree
/// on the call or its sizes (which aborts the group). `ranks` in [1, 64].
std::unique_ptr<CollectiveGroup> createHostCollectiveGroup(int64_t ranks);

/// The group of the GPU ranks `backends` (rank r = backends[r]): NCCL over
/// their CUDA devices (distinct ones; libnccl.so.2 or $FDC_NCCL_LIBRARY is
/// dlopen()ed), the collectives enqueued on each backend's stream; they run
/// in the ranks' step graphs unless $FDC_NCCL_GRAPHS is 0. Fails
/// for backends of another vendor (ROCm: not supported yet), repeated
/// devices, a missing NCCL, or NCCL's initialization error.
Expected<std::unique_ptr<CollectiveGroup>>
createDeviceCollectiveGroup(const std::vector<DeviceBackend *> &backends);

/// Size in bytes of one element of an FDC_DTYPE_* code, or 0 for another
/// code.
inline uint64_t collectiveDTypeSize(int64_t dtype) {
  switch (dtype) {
  case FDC_DTYPE_F32:
    return 4;
  case FDC_DTYPE_F16:
  case FDC_DTYPE_BF16:
    return 2;
  default:
    return 0;
  }
}

} // namespace fdc::runtime

#endif // FDC_RUNTIME_COLLECTIVE_H
