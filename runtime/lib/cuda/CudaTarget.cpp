//===- CudaTarget.cpp - cuda:sm_XX targets, pure helpers ------------------===//

#include "fdc/runtime/cuda/CudaTarget.h"

#include "fdc_model_abi.h"

#include <cstddef>

using namespace fdc::runtime;
using namespace fdc::runtime::cuda;

// The step reads field i at byte offset 8 * i (docs/model-library.md).
static_assert(offsetof(FdcStepArgs, next_tokens) == 8 * 13);
static_assert(offsetof(FdcStepArgs, scratch) == 8 * 14);
static_assert(offsetof(FdcStepArgs, device) == 8 * 15);
static_assert(offsetof(FdcStepArgs, collective) == 8 * 16);
static_assert(sizeof(FdcStepArgs) == 8 * 17);
static_assert(offsetof(FdcCollectiveApi, all_reduce_sum) == 8 * 3);
static_assert(offsetof(FdcCollectiveApi, all_gather_columns) == 8 * 4);

namespace {
constexpr std::string_view kPrefix = "cuda:";

bool isDigit(char c) { return c >= '0' && c <= '9'; }
} // namespace

std::string CudaArch::name() const {
  return "sm_" + std::to_string(smVersion) + suffix;
}

bool fdc::runtime::cuda::isCudaTarget(std::string_view target) {
  return target.substr(0, kPrefix.size()) == kPrefix;
}

Expected<CudaTarget>
fdc::runtime::cuda::parseCudaTarget(std::string_view target) {
  auto fail = [&](const auto &...args) {
    return createError("malformed cuda target '", target, "': ", args...);
  };
  if (!isCudaTarget(target))
    return fail("it does not start with 'cuda:'");
  std::string_view list = target.substr(kPrefix.size());
  if (list.empty())
    return fail("no architecture after 'cuda:' (expected e.g. cuda:sm_90)");
  CudaTarget parsed;
  size_t start = 0;
  while (true) {
    size_t comma = list.find(',', start);
    std::string_view item = list.substr(start, comma == std::string_view::npos
                                                   ? std::string_view::npos
                                                   : comma - start);
    // sm_<1..4 digits>[a|f]
    size_t digits = 0;
    if (item.substr(0, 3) == "sm_")
      while (3 + digits < item.size() && isDigit(item[3 + digits]))
        ++digits;
    size_t rest = item.size() - std::min(item.size(), 3 + digits);
    bool ok = item.substr(0, 3) == "sm_" && digits >= 2 && digits <= 4 &&
              item[3] != '0' &&
              (rest == 0 ||
               (rest == 1 && (item.back() == 'a' || item.back() == 'f')));
    if (!ok)
      return fail("'", item, "' is not an architecture like sm_90 or sm_90a");
    CudaArch arch;
    arch.smVersion = std::stoi(std::string(item.substr(3, digits)));
    arch.suffix = std::string(item.substr(3 + digits));
    for (const CudaArch &seen : parsed.archs)
      if (seen == arch)
        return fail("'", item, "' is listed twice");
    parsed.archs.push_back(std::move(arch));
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return parsed;
}

std::string fdc::runtime::cuda::deviceArchName(int ccMajor, int ccMinor) {
  return "sm_" + std::to_string(ccMajor * 10 + ccMinor);
}

std::vector<KernelImageCandidate>
fdc::runtime::cuda::kernelImageCandidates(const CudaTarget &target, int ccMajor,
                                          int ccMinor) {
  int version = ccMajor * 10 + ccMinor;
  std::vector<KernelImageCandidate> candidates;
  auto addCubin = [&](const std::string &arch) {
    KernelImageCandidate c;
    c.kind = KernelImageCandidate::Cubin;
    c.symbol = "fdc_cubin_" + arch;
    c.sizeSymbol = c.symbol + "_size";
    candidates.push_back(std::move(c));
  };
  bool listsPlain = false;
  for (const CudaArch &arch : target.archs) {
    if (arch.smVersion != version)
      continue;
    addCubin(arch.name());
    listsPlain |= arch.suffix.empty();
  }
  if (!listsPlain)
    addCubin(deviceArchName(ccMajor, ccMinor));
  KernelImageCandidate ptx;
  ptx.kind = KernelImageCandidate::Ptx;
  ptx.symbol = "fdc_ptx";
  candidates.push_back(std::move(ptx));
  return candidates;
}
