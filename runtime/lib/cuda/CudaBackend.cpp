//===- CudaBackend.cpp - Running a cuda:sm_XX model library ---------------===//

#include "fdc/runtime/cuda/CudaBackend.h"

#include "CudaDriver.h"
#include "fdc/runtime/ModelLibrary.h"
#include "fdc/runtime/cuda/CudaTarget.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string_view>
#include <unordered_map>
#include <vector>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

bool fdc::runtime::cuda::backendAvailable() { return true; }

namespace {

/// Per-sequence inputs, in the order of FdcStepArgs; each 4 bytes.
constexpr int kNumInputs = 7;
/// Dynamic shared memory a kernel gets without opting in.
constexpr uint32_t kDefaultSharedLimit = 48 * 1024;

uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}

struct Kernel {
  CUfunction function = nullptr;
  /// The dynamic shared memory limit set with cuFuncSetAttribute so far.
  uint32_t sharedLimit = kDefaultSharedLimit;
};

} // namespace

struct CudaBackend::Impl {
  const DriverApi *api = nullptr;
  const ModelLibrary *library = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  CUmodule module = nullptr;
  std::string description;
  std::string image;
  bool syncLaunches = false;
  bool poisonOutputs = false;

  /// Owns the kernel names the map's keys view.
  std::deque<std::string> kernelNames;
  std::unordered_map<std::string_view, Kernel> kernels;

  struct Allocation {
    CUdeviceptr address = 0;
    uint64_t bytes = 0;
  };
  Allocation weights, kvCache, scratch, inputs, logits, nextTokens;
  int64_t maxBatch = 0;
  int64_t vocabSize = 0;
  /// Bytes between two input arrays in `inputs` (256-aligned).
  uint64_t inputStride = 0;
  std::vector<uint8_t> staging;

  FdcDeviceApi deviceApi = {};
  /// The first launch error of the current step.
  std::string launchError;
  /// Kernels launched in the current step, for errors found at the sync.
  std::vector<const char *> launched;

  ~Impl();

  Error makeCurrent() {
    if (CUresult r = api->cuCtxSetCurrent(context))
      return api->fail("cuCtxSetCurrent", r);
    return Error::success();
  }

  Error allocate(Allocation &allocation, uint64_t bytes, const char *what) {
    // cuMemAlloc refuses 0 bytes; every buffer gets at least 256.
    uint64_t size = bytes == 0 ? 256 : alignUp(bytes, 256);
    if (CUresult r = api->cuMemAlloc_v2(&allocation.address, size))
      return api->fail(concat("cuMemAlloc_v2(", what, ", ", size, " bytes)"),
                       r);
    allocation.bytes = bytes;
    return Error::success();
  }

  void release(Allocation &allocation) {
    if (allocation.address)
      api->cuMemFree_v2(allocation.address);
    allocation = {};
  }

  Error loadImage(const CudaTarget &target, int ccMajor, int ccMinor);
  Error resolveKernels();
  int launch(const char *name, uint32_t gridX, uint32_t gridY, uint32_t gridZ,
             uint32_t blockX, uint32_t blockY, uint32_t blockZ,
             uint32_t sharedBytes, void **params) noexcept;
  std::string launchedList() const;
};

CudaBackend::Impl::~Impl() {
  if (!api)
    return;
  if (context)
    api->cuCtxSetCurrent(context);
  if (stream)
    api->cuStreamSynchronize(stream);
  for (Allocation *a :
       {&weights, &kvCache, &scratch, &inputs, &logits, &nextTokens})
    release(*a);
  if (module)
    api->cuModuleUnload(module);
  if (stream)
    api->cuStreamDestroy_v2(stream);
  if (context)
    api->cuDevicePrimaryCtxRelease_v2(device);
}

Error CudaBackend::Impl::loadImage(const CudaTarget &target, int ccMajor,
                                   int ccMinor) {
  std::vector<std::string> tried;
  for (const KernelImageCandidate &candidate :
       kernelImageCandidates(target, ccMajor, ccMinor)) {
    const void *data = library->symbol(candidate.symbol.c_str());
    if (!data) {
      tried.push_back("no " + candidate.symbol);
      continue;
    }
    if (candidate.kind == KernelImageCandidate::Cubin) {
      const void *size = library->symbol(candidate.sizeSymbol.c_str());
      if (!size) {
        tried.push_back(
            concat(candidate.symbol, " without ", candidate.sizeSymbol));
        continue;
      }
      if (*static_cast<const uint64_t *>(size) == 0) {
        tried.push_back(concat(candidate.symbol, " is empty"));
        continue;
      }
    }
    char errorLog[8192] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {errorLog, reinterpret_cast<void *>(
                                    static_cast<uintptr_t>(sizeof(errorLog)))};
    CUresult r = api->cuModuleLoadDataEx(&module, data, 2, options, values);
    if (r == CUDA_SUCCESS) {
      image = candidate.symbol;
      return Error::success();
    }
    module = nullptr;
    errorLog[sizeof(errorLog) - 1] = '\0';
    std::string log(errorLog);
    while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
      log.pop_back();
    tried.push_back(concat("cuModuleLoadDataEx(", candidate.symbol,
                           ") failed: ", api->describe(r),
                           log.empty() ? "" : "; JIT log: ", log));
  }
  std::string reasons;
  for (const std::string &reason : tried)
    reasons += (reasons.empty() ? "" : "; ") + reason;
  return createError("model library ", library->path(),
                     " has no kernel image this GPU can load: ", description,
                     " is ", deviceArchName(ccMajor, ccMinor),
                     ", the library targets '", library->target(), "' (",
                     reasons, ")");
}

Error CudaBackend::Impl::resolveKernels() {
  const Manifest &manifest = library->manifest();
  for (size_t i = 0; i < manifest.kernels.size(); ++i) {
    const std::string &name = manifest.kernels[i].name;
    if (name.empty())
      return createError("model library ", library->path(), ": kernels[", i,
                         "] has no name");
    if (kernels.count(name))
      continue;
    CUfunction function = nullptr;
    if (CUresult r = api->cuModuleGetFunction(&function, module, name.c_str()))
      return createError("model library ", library->path(), ": kernel '", name,
                         "' of the manifest is not in ", image,
                         ": cuModuleGetFunction(", name,
                         ") failed: ", api->describe(r));
    kernelNames.push_back(name);
    kernels.emplace(kernelNames.back(), Kernel{function, kDefaultSharedLimit});
  }
  return Error::success();
}

int CudaBackend::Impl::launch(const char *name, uint32_t gridX, uint32_t gridY,
                              uint32_t gridZ, uint32_t blockX, uint32_t blockY,
                              uint32_t blockZ, uint32_t sharedBytes,
                              void **params) noexcept {
  try {
    if (!launchError.empty())
      return 1; // An earlier launch of this step failed.
    auto it = name ? kernels.find(std::string_view(name)) : kernels.end();
    if (it == kernels.end()) {
      launchError =
          concat("the model step launched kernel '", name ? name : "(null)",
                 "', which the manifest's \"kernels\" does not list");
      return 1;
    }
    Kernel &kernel = it->second;
    if (sharedBytes > kernel.sharedLimit) {
      if (CUresult r = api->cuFuncSetAttribute(
              kernel.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
              static_cast<int>(sharedBytes))) {
        launchError = concat("cuFuncSetAttribute(", name,
                             ", MAX_DYNAMIC_SHARED_SIZE_BYTES = ", sharedBytes,
                             ") failed: ", api->describe(r));
        return 1;
      }
      kernel.sharedLimit = sharedBytes;
    }
    if (CUresult r = api->cuLaunchKernel(kernel.function, gridX, gridY, gridZ,
                                         blockX, blockY, blockZ, sharedBytes,
                                         stream, params, nullptr)) {
      launchError = concat(
          "cuLaunchKernel(", name, ") failed: ", api->describe(r), " (grid ",
          gridX, "x", gridY, "x", gridZ, ", block ", blockX, "x", blockY, "x",
          blockZ, ", ", sharedBytes, " bytes of shared memory)");
      return 1;
    }
    launched.push_back(it->first.data());
    if (syncLaunches) {
      if (CUresult r = api->cuStreamSynchronize(stream)) {
        launchError = concat("kernel ", name, " failed: ", api->describe(r),
                             " (found by cuStreamSynchronize after it, "
                             "FDC_CUDA_SYNC_LAUNCHES is set)");
        return 1;
      }
    }
    return 0;
  } catch (...) {
    if (launchError.empty())
      launchError = "out of memory while launching a kernel";
    return 1;
  }
}

std::string CudaBackend::Impl::launchedList() const {
  std::vector<std::string_view> distinct;
  for (const char *name : launched)
    if (std::find(distinct.begin(), distinct.end(), name) == distinct.end())
      distinct.push_back(name);
  std::string list;
  for (size_t i = 0; i < distinct.size() && i < 8; ++i)
    list += concat(i ? ", " : "", distinct[i]);
  if (distinct.size() > 8)
    list += concat(" and ", distinct.size() - 8, " more");
  return list.empty() ? "none" : list;
}

namespace {
int launchThunk(void *context, const char *name, uint32_t gridX, uint32_t gridY,
                uint32_t gridZ, uint32_t blockX, uint32_t blockY,
                uint32_t blockZ, uint32_t sharedBytes, void **params) {
  return static_cast<CudaBackend::Impl *>(context)->launch(
      name, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes, params);
}
} // namespace

Expected<std::unique_ptr<CudaBackend>>
CudaBackend::create(const ModelLibrary &library, int device) {
  Expected<CudaTarget> target = parseCudaTarget(library.target());
  if (!target)
    return createError("model library ", library.path(), ": ",
                       target.error().message());
  Expected<const DriverApi *> api = loadDriver();
  if (!api)
    return createError("model library ", library.path(), " targets '",
                       library.target(), "': ", api.error().message());
  auto impl = std::make_unique<Impl>();
  impl->library = &library;
  impl->syncLaunches = envFlag("FDC_CUDA_SYNC_LAUNCHES");
  impl->poisonOutputs = envFlag("FDC_CUDA_POISON");
  const DriverApi &cu = **api;

  if (device < 0) {
    device = 0;
    if (const char *env = std::getenv("FDC_CUDA_DEVICE"); env && *env) {
      Expected<int> parsed = parseDeviceOrdinal(env);
      if (!parsed)
        return parsed.takeError();
      device = *parsed;
    }
  }
  int count = 0;
  if (CUresult r = cu.cuDeviceGetCount(&count))
    return cu.fail("cuDeviceGetCount", r);
  if (device >= count)
    return createError("CUDA device ", device, " does not exist: the machine ",
                       "has ", count, " CUDA device", count == 1 ? "" : "s",
                       " (FDC_CUDA_DEVICE chooses one)");
  impl->ordinal = device;
  if (CUresult r = cu.cuDeviceGet(&impl->device, device))
    return cu.fail(concat("cuDeviceGet(", device, ")"), r);
  int major = 0, minor = 0;
  if (CUresult r = cu.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, impl->device))
    return cu.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)", r);
  if (CUresult r = cu.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, impl->device))
    return cu.fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)", r);
  char name[256] = {};
  if (cu.cuDeviceGetName(name, sizeof(name) - 1, impl->device) != CUDA_SUCCESS)
    std::strcpy(name, "CUDA device");
  impl->description = concat(name, " (device ", device, ", ",
                             deviceArchName(major, minor), ")");

  if (CUresult r = cu.cuDevicePrimaryCtxRetain(&impl->context, impl->device))
    return cu.fail(concat("cuDevicePrimaryCtxRetain(device ", device, ")"), r);
  // From here on ~Impl releases what was acquired.
  impl->api = &cu;
  if (Error err = impl->makeCurrent())
    return err;
  if (CUresult r = cu.cuStreamCreate(&impl->stream, CU_STREAM_NON_BLOCKING))
    return cu.fail("cuStreamCreate", r);
  if (Error err = impl->loadImage(*target, major, minor))
    return err;
  if (Error err = impl->resolveKernels())
    return err;
  impl->deviceApi.context = impl.get();
  impl->deviceApi.launch = launchThunk;
  return std::unique_ptr<CudaBackend>(new CudaBackend(std::move(impl)));
}

CudaBackend::CudaBackend(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

CudaBackend::~CudaBackend() = default;

Error CudaBackend::uploadWeights(const HostBuffer &arena) {
  Impl &s = *impl;
  if (Error err = s.makeCurrent())
    return err;
  s.release(s.weights);
  if (Error err = s.allocate(s.weights, arena.size(), "weight arena"))
    return err;
  if (arena.size() == 0)
    return Error::success();
  // On the step's stream (non-blocking: it does not wait for the legacy
  // default stream), and finished before the caller frees `arena`.
  if (CUresult r = s.api->cuMemcpyHtoDAsync_v2(s.weights.address, arena.data(),
                                               arena.size(), s.stream))
    return s.api->fail(
        concat("cuMemcpyHtoDAsync_v2(weight arena, ", arena.size(), " bytes)"),
        r);
  if (CUresult r = s.api->cuStreamSynchronize(s.stream))
    return s.api->fail("cuStreamSynchronize(weight upload)", r);
  return Error::success();
}

Error CudaBackend::allocateState(uint64_t kvCacheBytes, int64_t maxBatch,
                                 int64_t vocabSize) {
  Impl &s = *impl;
  if (maxBatch < 1 || maxBatch > INT32_MAX)
    return createError("CUDA backend: max_batch must be in [1, 2^31), got ",
                       maxBatch);
  if (vocabSize < 1 || vocabSize > INT32_MAX)
    return createError("CUDA backend: vocab_size must be in [1, 2^31), got ",
                       vocabSize);
  // Every size is rounded up to 256 bytes below: refuse what would wrap.
  constexpr uint64_t kMaxBytes = uint64_t(1) << 62;
  if (kvCacheBytes > kMaxBytes)
    return createError("CUDA backend: a KV cache of ", kvCacheBytes,
                       " bytes is too large");
  if (Error err = s.makeCurrent())
    return err;
  Expected<ScratchSpec> spec = parseScratch(
      s.library->manifestText(), concat("model library ", s.library->path()));
  if (!spec)
    return spec.takeError();
  Expected<uint64_t> scratch = scratchBytes(*spec, maxBatch);
  if (!scratch)
    return scratch.takeError();
  if (*scratch > kMaxBytes)
    return createError("CUDA backend: a scratch buffer of ", *scratch,
                       " bytes is too large");
  uint64_t batch = static_cast<uint64_t>(maxBatch);
  uint64_t vocab = static_cast<uint64_t>(vocabSize);
  if (vocab > kMaxBytes / 4 / batch)
    return createError("logits of ", maxBatch, " x ", vocabSize,
                       " floats overflow 64 bits");
  s.inputStride = alignUp(batch * 4, 256);

  for (Impl::Allocation *a :
       {&s.kvCache, &s.scratch, &s.inputs, &s.logits, &s.nextTokens})
    s.release(*a);
  if (Error err = s.allocate(s.kvCache, kvCacheBytes, "KV cache"))
    return err;
  if (Error err = s.allocate(s.scratch, *scratch, "scratch"))
    return err;
  if (Error err = s.allocate(s.inputs, s.inputStride * kNumInputs,
                             "per-sequence inputs"))
    return err;
  if (Error err = s.allocate(s.logits, batch * vocab * 4, "logits"))
    return err;
  if (Error err = s.allocate(s.nextTokens, batch * 4, "next_tokens"))
    return err;
  // The host KV cache starts zeroed; so does this one (and the scratch).
  for (auto [allocation, what] :
       {std::pair{&s.kvCache, "KV cache"}, std::pair{&s.scratch, "scratch"}})
    if (CUresult r = s.api->cuMemsetD8Async(
            allocation->address, 0, alignUp(allocation->bytes, 256), s.stream))
      return s.api->fail(concat("cuMemsetD8Async(", what, ")"), r);
  if (CUresult r = s.api->cuStreamSynchronize(s.stream))
    return s.api->fail("cuStreamSynchronize(zeroing the KV cache)", r);
  s.maxBatch = maxBatch;
  s.vocabSize = vocabSize;
  s.staging.assign(s.inputStride * kNumInputs, 0);
  return Error::success();
}

Error CudaBackend::step(const FdcStepArgs &args) {
  Impl &s = *impl;
  int64_t batch = args.batch;
  if (batch < 1 || batch > s.maxBatch)
    return createError("CUDA backend: a step of ", batch,
                       " sequences, the device buffers hold ", s.maxBatch);
  if (Error err = s.makeCurrent())
    return err;

  // Pack the inputs into one staging buffer: one copy to the device.
  size_t bytes = static_cast<size_t>(batch) * 4;
  const void *sources[kNumInputs] = {
      args.tokens, args.positions, args.slots,  args.temperature,
      args.top_k,  args.top_p,     args.uniform};
  for (int i = 0; i < kNumInputs; ++i)
    std::memcpy(s.staging.data() + i * s.inputStride, sources[i], bytes);
  uint64_t copyBytes = (kNumInputs - 1) * s.inputStride + bytes;
  if (CUresult r = s.api->cuMemcpyHtoDAsync_v2(
          s.inputs.address, s.staging.data(), copyBytes, s.stream))
    return s.api->fail("cuMemcpyHtoDAsync_v2(step inputs)", r);

  auto input = [&](int i) {
    return reinterpret_cast<void *>(
        static_cast<uintptr_t>(s.inputs.address + i * s.inputStride));
  };
  auto pointer = [](const Impl::Allocation &a) {
    return reinterpret_cast<void *>(static_cast<uintptr_t>(a.address));
  };
  FdcStepArgs device = {};
  device.batch = batch;
  device.num_slots = args.num_slots;
  device.max_context = args.max_context;
  device.weights = pointer(s.weights);
  device.kv_cache = pointer(s.kvCache);
  device.tokens = static_cast<const int32_t *>(input(0));
  device.positions = static_cast<const int32_t *>(input(1));
  device.slots = static_cast<const int32_t *>(input(2));
  device.temperature = static_cast<const float *>(input(3));
  device.top_k = static_cast<const int32_t *>(input(4));
  device.top_p = static_cast<const float *>(input(5));
  device.uniform = static_cast<const float *>(input(6));
  device.logits = static_cast<float *>(pointer(s.logits));
  device.next_tokens = static_cast<int32_t *>(pointer(s.nextTokens));
  device.scratch = pointer(s.scratch);
  device.device = &s.deviceApi;

  // FDC_CUDA_POISON=1 (tests): fill the outputs and the scratch with 0xFF
  // bytes (NaN floats, -1 ints) before the step, so anything a kernel fails
  // to write shows up.
  if (s.poisonOutputs) {
    for (auto [allocation, what] : {std::pair{&s.logits, "logits"},
                                    std::pair{&s.nextTokens, "next_tokens"},
                                    std::pair{&s.scratch, "scratch"}})
      if (allocation->bytes > 0)
        if (CUresult r = s.api->cuMemsetD8Async(allocation->address, 0xFF,
                                                allocation->bytes, s.stream))
          return s.api->fail(concat("cuMemsetD8Async(poison ", what, ")"), r);
  }

  s.launchError.clear();
  s.launched.clear();
  s.library->stepFunction()(&device);
  if (!s.launchError.empty()) {
    // Let what was enqueued finish before the caller reuses the buffers.
    s.api->cuStreamSynchronize(s.stream);
    return createError(s.launchError);
  }

  // A fault inside a kernel surfaces at a later call on the stream.
  auto stepFailed = [&](const char *call, CUresult r) {
    return createError("the model step failed: ", call, ": ",
                       s.api->describe(r), " (the step launched ",
                       s.launchedList(),
                       "; FDC_CUDA_SYNC_LAUNCHES=1 names the failing kernel)");
  };
  uint64_t logitBytes =
      static_cast<uint64_t>(batch) * static_cast<uint64_t>(s.vocabSize) * 4;
  if (CUresult r = s.api->cuMemcpyDtoHAsync_v2(args.logits, s.logits.address,
                                               logitBytes, s.stream))
    return stepFailed("cuMemcpyDtoHAsync_v2(logits)", r);
  if (CUresult r = s.api->cuMemcpyDtoHAsync_v2(
          args.next_tokens, s.nextTokens.address, bytes, s.stream))
    return stepFailed("cuMemcpyDtoHAsync_v2(next_tokens)", r);
  if (CUresult r = s.api->cuStreamSynchronize(s.stream))
    return stepFailed("cuStreamSynchronize", r);
  return Error::success();
}

const std::string &CudaBackend::deviceDescription() const {
  return impl->description;
}

const std::string &CudaBackend::kernelImage() const { return impl->image; }

uint64_t CudaBackend::weightsAddress() const { return impl->weights.address; }

uint64_t CudaBackend::kvCacheAddress() const { return impl->kvCache.address; }
