//===- NcclCollectiveGroup.cpp - Collectives of CUDA ranks over NCCL ------===//
//
// One communicator per rank from ncclCommInitAll; each rank's collectives are
// enqueued from its own thread on its backend's stream (the step's), so they
// are ordered with the step's kernels and never synchronize on the host.
// all_gather_columns gathers rank-major into the caller's workspace, then
// one 2-D copy per rank moves its block into its columns of the output.
//
// The collectives run in the ranks' step graphs (runsInGraphs) unless
// $FDC_NCCL_GRAPHS is 0: each rank captures its step, NCCL calls included,
// on its own thread, as NCCL asks of one process driving several devices;
// NCCL_GRAPH_MIXING_SUPPORT is then 0 unless set.
//
// With $FDC_NCCL_WINDOW=1 and NCCL 2.27 or later each rank's scratch, where
// the step keeps its intermediate values (the partial sums it all-reduces
// among them), comes from ncclMemAlloc
// and is registered in one symmetric window: every rank's scratch has the
// same layout, so NCCL runs its symmetric-memory kernels on them (an 8 KB
// all-reduce in a graph on 2 H100s: 2.9 us, against 5.5 on cuMemAlloc
// memory). The group deregisters the windows before it destroys the
// communicators; the backends free the memory. It is not the default: with
// NCCL 2.28.9 a symmetric kernel waiting for a rank that failed before its
// collective does not see ncclCommAbort, so the other ranks' steps never
// end (on 2 H100s, the GPU rank-failure test hangs with windows, passes
// without).
//
// abort() stops new calls, waits briefly for calls being enqueued, then
// hands every communicator to ncclCommAbort() on a thread of its own,
// started with the group and parked until then: the abort flag it raises
// first makes a kernel waiting on the GPU for a rank that failed exit, so
// the streams drain; the rest of the abort waits until the graphs that
// captured the communicator are destroyed (NCCL 2.26 and later), so the
// group's destructor, which the Model runs after destroying the ranks'
// graphs, joins those threads.
//
//===----------------------------------------------------------------------===//

#include "CudaDevice.h"
#include "Nccl.h"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

namespace {

/// How long abort() waits for calls that are being enqueued before it
/// aborts the communicators under them.
constexpr std::chrono::seconds kAbortGrace{1};

bool ncclType(int64_t dtype, nccl::DataType &type) {
  switch (dtype) {
  case FDC_DTYPE_F32:
    type = nccl::kFloat32;
    return true;
  case FDC_DTYPE_F16:
    type = nccl::kFloat16;
    return true;
  case FDC_DTYPE_BF16:
    type = nccl::kBfloat16;
    return true;
  default:
    return false;
  }
}

/// The first NCCL whose calls CUDA graphs capture (ncclGetVersion's code).
constexpr int kCapturableNcclVersion = 20900;

/// Whether the ranks' collectives go into their step graphs: NCCL 2.9 or
/// later, unless $FDC_NCCL_GRAPHS is 0.
bool collectivesInGraphs(const NcclApi &nccl) {
  const char *setting = std::getenv("FDC_NCCL_GRAPHS");
  return nccl.version >= kCapturableNcclVersion &&
         !(setting && std::strcmp(setting, "0") == 0);
}

/// The first NCCL with symmetric windows (ncclGetVersion's code).
constexpr int kWindowNcclVersion = 22700;

/// Whether the ranks' scratch goes into a symmetric window: when
/// $FDC_NCCL_WINDOW is 1, with NCCL 2.27 or later and the window entry
/// points.
bool scratchInWindows(const NcclApi &nccl) {
  const char *setting = std::getenv("FDC_NCCL_WINDOW");
  return setting && std::strcmp(setting, "1") == 0 &&
         nccl.version >= kWindowNcclVersion && nccl.hasWindows();
}

/// Device memory from ncclMemAlloc, on the calling thread's device.
class NcclMemory final : public CollectiveMemory {
public:
  explicit NcclMemory(const NcclApi &nccl) : nccl(nccl) {}

  Error allocate(uint64_t bytes, uint64_t &address, const char *what) override {
    void *pointer = nullptr;
    if (nccl::Result r = nccl.ncclMemAlloc(&pointer, bytes))
      return createError("ncclMemAlloc(", what, ", ", bytes,
                         " bytes) failed: ", nccl.describe(r));
    address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer));
    return Error::success();
  }
  void release(uint64_t address) override {
    nccl.ncclMemFree(reinterpret_cast<void *>(static_cast<uintptr_t>(address)));
  }

private:
  /// Loaded for the life of the process: outlives any backend.
  const NcclApi &nccl;
};

uint64_t address(const void *pointer) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(pointer));
}

class NcclCollectiveGroup;

/// A CUDA rank's record.
struct NcclRank : CollectiveRank<NcclCollectiveGroup> {
  /// The rank's device; its stream runs the rank's collectives.
  CudaDevice *device = nullptr;
};

class NcclCollectiveGroup final
    : public CollectiveGroupImpl<NcclCollectiveGroup, NcclRank> {
public:
  NcclCollectiveGroup(const NcclApi &nccl,
                      const std::vector<CudaDevice *> &devices,
                      std::vector<nccl::Comm> comms, bool inGraphs);
  ~NcclCollectiveGroup() override;

  void abort(std::string reason) override;
  std::string error() const override;
  bool runsInGraphs() const override { return inGraphs; }
  std::shared_ptr<CollectiveMemory> scratchMemory(int64_t rank) override {
    (void)rank;
    return memory;
  }
  Error registerScratch(const std::vector<DeviceRange> &scratch) override;

  /// Starts one parked abort thread per communicator.
  Error startAborters();

private:
  friend CollectiveGroupImpl;
  using Rank = NcclRank;

  /// Starts a call of rank `rank` on its communicator; false (nothing to
  /// call) once the group is aborted.
  bool enter(int64_t rank, nccl::Comm &comm);
  void leave();
  /// Records `message` (the first one wins) and aborts the group.
  void fail(std::string message) { abort(std::move(message)); }
  /// Abort thread `rank`: waits for the abort, then aborts that rank's
  /// communicator; returns without when the group goes.
  void abortRank(size_t rank);

  /// The FdcCollectiveApi entry points; `context` is the calling rank's
  /// record. Each enqueues its work on the rank's stream.
  static int allReduceSum(void *context, const void *input, void *output,
                          int64_t count, int64_t dtype) noexcept;
  static int allGatherColumns(void *context, const void *input, void *output,
                              void *workspace, int64_t rows, int64_t columns,
                              int64_t dtype) noexcept;

  const NcclApi &nccl;

  mutable std::mutex mutex;
  std::condition_variable idle;
  /// One per rank; empty once aborted (ncclCommAbort freed them).
  std::vector<nccl::Comm> comms;
  int64_t inFlight = 0;
  bool aborted = false;
  mutable std::string firstError;
  /// The communicators being aborted, by rank (set once, by abort()).
  std::vector<nccl::Comm> aborting;
  /// Wakes the abort threads: an abort, or the group's end.
  std::condition_variable abortOrEnd;
  bool ending = false;
  /// The threads that ncclCommAbort() the communicators, one each.
  std::vector<std::thread> aborters;
  const bool inGraphs;
  /// The ranks' scratch memory when it goes into symmetric windows, and
  /// the windows once registered (rank r's at [r]).
  std::shared_ptr<NcclMemory> memory;
  std::vector<nccl::Window> windows;
};

NcclCollectiveGroup::NcclCollectiveGroup(
    const NcclApi &nccl, const std::vector<CudaDevice *> &devices,
    std::vector<nccl::Comm> comms, bool inGraphs)
    : CollectiveGroupImpl(this, static_cast<int64_t>(devices.size())),
      nccl(nccl), comms(std::move(comms)), inGraphs(inGraphs) {
  for (size_t r = 0; r < devices.size(); ++r)
    rankStates[r].device = devices[r];
  if (scratchInWindows(nccl))
    memory = std::make_shared<NcclMemory>(nccl);
}

Error NcclCollectiveGroup::registerScratch(
    const std::vector<DeviceRange> &scratch) {
  if (!memory)
    return Error::success();
  if (!windows.empty() || scratch.size() != comms.size())
    return createError("registerScratch: ", scratch.size(),
                       " scratch ranges for ", comms.size(),
                       " ranks, or called twice");
  for (size_t r = 0; r < scratch.size(); ++r)
    if (!scratch[r].address || scratch[r].bytes != scratch[0].bytes)
      return createError("the ranks' scratch differs (rank ", r, ": ",
                         scratch[r].bytes, " bytes, rank 0: ", scratch[0].bytes,
                         "): it cannot be one symmetric NCCL window");
  // Collective: one thread registers every rank's, grouped.
  std::vector<nccl::Window> registered(comms.size(), nullptr);
  nccl::Result result = nccl.ncclGroupStart();
  for (size_t r = 0; r < comms.size() && result == nccl::kSuccess; ++r)
    result = nccl.ncclCommWindowRegister(
        comms[r],
        reinterpret_cast<void *>(static_cast<uintptr_t>(scratch[r].address)),
        scratch[r].bytes, &registered[r], nccl::kWindowCollSymmetric);
  nccl::Result ended = nccl.ncclGroupEnd();
  if (result == nccl::kSuccess)
    result = ended;
  // A window some rank registered before another failed is freed with its
  // communicator (ncclCommDestroy frees the windows left registered).
  if (result != nccl::kSuccess)
    return createError("ncclCommWindowRegister(scratch, ", scratch[0].bytes,
                       " bytes a rank) failed: ", nccl.describe(result),
                       " (unset FDC_NCCL_WINDOW to keep the scratch out of "
                       "NCCL windows)");
  windows = std::move(registered);
  return Error::success();
}

NcclCollectiveGroup::~NcclCollectiveGroup() {
  // The Model destroys the group after its steps (which synchronize) and the
  // ranks' step graphs; an aborted group's communicators are being aborted.
  {
    std::lock_guard<std::mutex> lock(mutex);
    ending = true;
  }
  abortOrEnd.notify_all();
  for (std::thread &aborter : aborters)
    aborter.join();
  // An aborted group's communicators, and their windows, are gone.
  if (!windows.empty() && !comms.empty()) {
    nccl.ncclGroupStart();
    for (size_t r = 0; r < comms.size(); ++r)
      if (windows[r])
        nccl.ncclCommWindowDeregister(comms[r], windows[r]);
    nccl.ncclGroupEnd();
  }
  for (nccl::Comm comm : comms)
    nccl.ncclCommDestroy(comm);
}

Error NcclCollectiveGroup::startAborters() {
  size_t ranks = static_cast<size_t>(count);
  try {
    aborters.reserve(ranks);
    for (size_t r = 0; r < ranks; ++r)
      aborters.emplace_back([this, r] { abortRank(r); });
  } catch (const std::exception &e) {
    return createError("cannot start the threads that would abort the NCCL "
                       "communicators: ",
                       e.what());
  }
  return Error::success();
}

void NcclCollectiveGroup::abortRank(size_t rank) {
  std::unique_lock<std::mutex> lock(mutex);
  abortOrEnd.wait(lock, [&] { return ending || !aborting.empty(); });
  if (aborting.empty())
    return;
  nccl::Comm comm = aborting[rank];
  lock.unlock();
  nccl.ncclCommAbort(comm);
}

void NcclCollectiveGroup::abort(std::string reason) {
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (firstError.empty())
      firstError = std::move(reason);
    if (aborted)
      return;
    aborted = true;
    // Enqueueing does not wait for the other ranks, so this is short; the
    // bound only guards against an NCCL that blocks there.
    idle.wait_for(lock, kAbortGrace, [&] { return inFlight == 0; });
    aborting.swap(comms);
  }
  abortOrEnd.notify_all();
}

std::string NcclCollectiveGroup::error() const {
  std::lock_guard<std::mutex> lock(mutex);
  if (!firstError.empty() || aborted)
    return firstError;
  // An error found while the kernels ran (e.g. a peer's fault).
  for (size_t r = 0; r < comms.size(); ++r) {
    nccl::Result asyncError = nccl::kSuccess;
    if (nccl.ncclCommGetAsyncError(comms[r], &asyncError) == nccl::kSuccess &&
        asyncError != nccl::kSuccess && asyncError != nccl::kInProgress) {
      firstError =
          concat("tensor-parallel rank ", r,
                 ": NCCL error: ", nccl.describe(asyncError, comms[r]));
      break;
    }
  }
  return firstError;
}

bool NcclCollectiveGroup::enter(int64_t rank, nccl::Comm &comm) {
  std::lock_guard<std::mutex> lock(mutex);
  if (aborted)
    return false;
  ++inFlight;
  comm = comms[static_cast<size_t>(rank)];
  return true;
}

void NcclCollectiveGroup::leave() {
  std::lock_guard<std::mutex> lock(mutex);
  if (--inFlight == 0)
    idle.notify_all();
}

int NcclCollectiveGroup::allReduceSum(void *context, const void *input,
                                      void *output, int64_t count,
                                      int64_t dtype) noexcept {
  Rank &rank = *static_cast<Rank *>(context);
  NcclCollectiveGroup &group = *rank.group;
  nccl::DataType type;
  if (!ncclType(dtype, type) || count < 0) {
    group.fail(concat("tensor-parallel rank ", rank.index,
                      ": all_reduce_sum(count ", count, ", dtype ", dtype,
                      ") is invalid"));
    return 1;
  }
  nccl::Comm comm;
  if (!group.enter(rank.index, comm))
    return 1;
  if (count == 0) {
    group.leave();
    return 0;
  }
  nccl::Result result =
      group.nccl.ncclAllReduce(input, output, static_cast<size_t>(count), type,
                               nccl::kSum, comm, rank.device->nativeStream());
  std::string message;
  if (result != nccl::kSuccess)
    message =
        concat("tensor-parallel rank ", rank.index, ": ncclAllReduce(count ",
               count, ") failed: ", group.nccl.describe(result, comm));
  group.leave();
  if (!message.empty()) {
    group.fail(std::move(message));
    return 1;
  }
  return 0;
}

int NcclCollectiveGroup::allGatherColumns(void *context, const void *input,
                                          void *output, void *workspace,
                                          int64_t rows, int64_t columns,
                                          int64_t dtype) noexcept {
  Rank &rank = *static_cast<Rank *>(context);
  NcclCollectiveGroup &group = *rank.group;
  nccl::DataType type;
  if (!ncclType(dtype, type) || rows < 0 || columns < 0) {
    group.fail(concat("tensor-parallel rank ", rank.index,
                      ": all_gather_columns(rows ", rows, ", columns ", columns,
                      ", dtype ", dtype, ") is invalid"));
    return 1;
  }
  nccl::Comm comm;
  if (!group.enter(rank.index, comm))
    return 1;
  uint64_t elements =
      static_cast<uint64_t>(rows) * static_cast<uint64_t>(columns);
  if (elements == 0) {
    group.leave();
    return 0;
  }
  CUstream stream = rank.device->nativeStream();
  std::string message;
  // workspace[q] = rank q's input, rank-major.
  nccl::Result result =
      group.nccl.ncclAllGather(input, workspace, elements, type, comm, stream);
  if (result != nccl::kSuccess) {
    message = concat("tensor-parallel rank ", rank.index,
                     ": ncclAllGather(rows ", rows, ", columns ", columns,
                     ") failed: ", group.nccl.describe(result, comm));
  } else {
    // Then rank q's block into columns [q * columns, (q + 1) * columns).
    const DriverApi &cu = rank.device->driver();
    uint64_t elementBytes = collectiveDTypeSize(dtype);
    uint64_t blockBytes = static_cast<uint64_t>(columns) * elementBytes;
    for (int64_t q = 0; q < group.count && message.empty(); ++q) {
      CUDA_MEMCPY2D copy = {};
      copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.srcDevice = address(workspace) +
                       static_cast<uint64_t>(q) * elements * elementBytes;
      copy.srcPitch = blockBytes;
      copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
      copy.dstDevice = address(output) + static_cast<uint64_t>(q) * blockBytes;
      copy.dstPitch = blockBytes * static_cast<uint64_t>(group.count);
      copy.WidthInBytes = blockBytes;
      copy.Height = static_cast<size_t>(rows);
      if (CUresult r = cu.cuMemcpy2DAsync_v2(&copy, stream))
        message = concat("tensor-parallel rank ", rank.index,
                         ": all_gather_columns: cuMemcpy2DAsync_v2 failed: ",
                         cu.describe(r));
    }
  }
  group.leave();
  if (!message.empty()) {
    group.fail(std::move(message));
    return 1;
  }
  return 0;
}

/// One grouped all-reduce and all-gather over every rank, from this thread,
/// and a wait for them: NCCL sets up its connections here.
Error warmUp(const NcclApi &nccl, const std::vector<CudaDevice *> &devices,
             const std::vector<nccl::Comm> &comms) {
  size_t ranks = devices.size();
  // Per rank: [0] the all-reduce's, [1, 1 + ranks) the gather's output.
  uint64_t bytes = (1 + ranks) * 4;
  std::vector<DeviceAddress> buffers(ranks, 0);
  auto release = [&] {
    for (size_t r = 0; r < ranks; ++r)
      if (buffers[r]) {
        devices[r]->makeCurrent();
        devices[r]->deallocate(buffers[r]);
      }
  };
  for (size_t r = 0; r < ranks; ++r) {
    CudaDevice &device = *devices[r];
    DeviceStatus status = device.makeCurrent();
    if (!status)
      status = device.allocate(buffers[r], bytes);
    if (!status)
      status = device.fill(buffers[r], 0, bytes);
    if (status) {
      release();
      return device.fail("preparing the NCCL warm-up", status);
    }
  }
  auto pointer = [](DeviceAddress address) {
    return reinterpret_cast<float *>(static_cast<uintptr_t>(address));
  };
  std::string message;
  nccl::Result result = nccl.ncclGroupStart();
  for (size_t r = 0; r < ranks && result == nccl::kSuccess; ++r)
    result = nccl.ncclAllReduce(pointer(buffers[r]), pointer(buffers[r]), 1,
                                nccl::kFloat32, nccl::kSum, comms[r],
                                devices[r]->nativeStream());
  for (size_t r = 0; r < ranks && result == nccl::kSuccess; ++r)
    result = nccl.ncclAllGather(pointer(buffers[r]), pointer(buffers[r]) + 1, 1,
                                nccl::kFloat32, comms[r],
                                devices[r]->nativeStream());
  nccl::Result ended = nccl.ncclGroupEnd();
  if (result == nccl::kSuccess)
    result = ended;
  if (result != nccl::kSuccess)
    message = concat("the NCCL warm-up (an all-reduce and an all-gather) "
                     "failed: ",
                     nccl.describe(result));
  for (size_t r = 0; r < ranks && message.empty(); ++r) {
    DeviceStatus status = devices[r]->makeCurrent();
    if (!status)
      status = devices[r]->synchronize();
    if (status)
      message = devices[r]->fail("the NCCL warm-up", status).message();
  }
  if (message.empty())
    for (size_t r = 0; r < ranks && message.empty(); ++r) {
      nccl::Result asyncError = nccl::kSuccess;
      if (nccl.ncclCommGetAsyncError(comms[r], &asyncError) == nccl::kSuccess &&
          asyncError != nccl::kSuccess && asyncError != nccl::kInProgress)
        message = concat("the NCCL warm-up failed on rank ", r, ": ",
                         nccl.describe(asyncError, comms[r]));
    }
  if (!message.empty()) {
    // Before anything waits for a collective that will not complete.
    for (nccl::Comm comm : comms)
      nccl.ncclCommAbort(comm);
    release();
    return createError(message);
  }
  release();
  return Error::success();
}

} // namespace

Expected<std::unique_ptr<CollectiveGroup>>
fdc::runtime::cuda::createNcclCollectiveGroup(
    const std::vector<CudaDevice *> &devices) {
  Expected<const NcclApi *> nccl = loadNccl();
  if (!nccl)
    return nccl.takeError();
  std::vector<int> ordinals;
  std::string listed;
  for (CudaDevice *device : devices) {
    ordinals.push_back(device->deviceOrdinal());
    listed += concat(listed.empty() ? "" : ", ", device->deviceOrdinal());
  }
  // Captured collectives without NCCL's support for mixing them with
  // uncaptured ones on a communicator (a 7B-wide step on 2 H100s: 3.99 ->
  // 3.82 ms, 65 collectives): the ranks never have both in flight, since
  // the warm-up ends with its devices synchronized, and a step launched
  // while another is in flight (overlapped steps) is one of the same rows,
  // so of the same batch size: a graph behind a graph, or an eager step
  // behind an eager one (Model::launchStep refuses anything else).
  // NCCL reads it once per process, for all its communicators: a value set
  // already (1 where the process mixes them elsewhere) stays.
  bool inGraphs = collectivesInGraphs(**nccl);
  if (inGraphs)
    ::setenv("NCCL_GRAPH_MIXING_SUPPORT", "0", /*overwrite=*/0);
  std::vector<nccl::Comm> comms(devices.size(), nullptr);
  if (nccl::Result r = (*nccl)->ncclCommInitAll(
          comms.data(), static_cast<int>(devices.size()), ordinals.data()))
    return createError("ncclCommInitAll(CUDA devices ", listed,
                       ") failed: ", (*nccl)->describe(r), " (NCCL ",
                       (*nccl)->path, ")");
  if (Error err = warmUp(**nccl, devices, comms))
    return createError(err.message(), " (CUDA devices ", listed, ", NCCL ",
                       (*nccl)->path, ")");
  std::unique_ptr<NcclCollectiveGroup> group(
      new NcclCollectiveGroup(**nccl, devices, std::move(comms), inGraphs));
  if (Error err = group->startAborters())
    return createError(err.message(), " (CUDA devices ", listed, ")");
  return std::unique_ptr<CollectiveGroup>(std::move(group));
}
