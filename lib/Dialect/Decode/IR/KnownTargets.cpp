//===- KnownTargets.cpp - the GPUs fdc generates kernels for --------------===//
//
// Each entry describes the arch's flagship part (unit counts differ between
// parts of one arch; the grid heuristics only need the order of magnitude).
//
//===----------------------------------------------------------------------===//

#include "fdc/Dialect/Decode/IR/KnownTargets.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace fdc::decode;

namespace {
enum class Element { F16, BF16 };

struct MmaShape {
  int64_t m, n, k;
  Element a;
};

/// A group MMA (#decode.group_mma): `subgroups` subgroups issue an m x n x k
/// MMA, n a multiple of nStep up to maxN, on K-major shared-memory tiles
/// whose rows hold rowBytes of K.
struct GroupMmaShape {
  int64_t subgroups, m, nStep, maxN, k;
  Element a;
  int64_t rowBytes;
};

struct KnownTarget {
  const char *arch;
  GpuVendor vendor;
  /// Preferred first.
  std::initializer_list<int64_t> subgroups;
  int64_t units;
  int64_t sharedMemory;
  int64_t vectorBytes;
  int64_t maxWorkgroupSize;
  /// The banks of shared memory (LDS) one access of a subgroup meets, and
  /// the bytes of each (#decode.gpu_target's shared_memory_banks and
  /// shared_memory_bank_bytes).
  int64_t sharedMemoryBanks;
  int64_t sharedMemoryBankBytes;
  /// The instruction family of `mma`: shapes of different families are
  /// different instructions with different lane layouts, even when their
  /// sizes agree (MFMA and WMMA 16x16x16).
  const char *mmaFamily;
  std::initializer_list<MmaShape> mma;
  std::initializer_list<GroupMmaShape> groupMma = {};
  /// Programmatic dependent launch (NVIDIA sm_90+): a kernel may launch
  /// before the one before it ends and waits for it at its start.
  bool dependentLaunch = false;
  /// The SIMDs (schedulers) of a unit that its resident subgroups are
  /// spread over: 4 on NVIDIA SMs and CDNA CUs, 2 on an RDNA3 CU.
  int64_t simdsPerUnit = 4;
  /// The most workgroups of a cluster (NVIDIA sm_90+: 8, the portable
  /// size); 0: none.
  int64_t clusterWorkgroups = 0;
};

constexpr int64_t KiB = 1024;

// mma.sync (sm_80+): m16n8k16 with f16 / bf16 inputs, f32 accumulators.
#define NVIDIA_MMA                                                             \
  {                                                                            \
    {16, 8, 16, Element::F16}, { 16, 8, 16, Element::BF16 }                    \
  }
// wgmma (sm_90a only): a warpgroup of 4 warps, m64nNk16 with N a multiple of
// 8 up to 256, f16 / bf16 operands read from shared memory in 128-byte
// swizzled rows, f32 accumulators.
#define HOPPER_WGMMA                                                           \
  {{4, 64, 8, 256, 16, Element::F16, 128},                                     \
   {4, 64, 8, 256, 16, Element::BF16, 128}}
// MFMA (CDNA2/3): 32x32x8 and 16x16x16, f16 and bf16 (the _1k forms).
#define CDNA_MFMA                                                              \
  {                                                                            \
    {32, 32, 8, Element::F16}, {16, 16, 16, Element::F16},                     \
        {32, 32, 8, Element::BF16}, {                                          \
      16, 16, 16, Element::BF16                                                \
    }                                                                          \
  }
// WMMA (RDNA3): 16x16x16, f16 and bf16.
#define RDNA3_WMMA                                                             \
  {                                                                            \
    {16, 16, 16, Element::F16}, { 16, 16, 16, Element::BF16 }                  \
  }

const KnownTarget kKnownTargets[] = {
    // Shared memory banks: every NVIDIA arch from sm_70 on has 32 banks of
    // 4 bytes, successive 32-bit words in successive banks (CUDA C++
    // Programming Guide, compute capabilities 7.x to 9.x).
    // A100 SXM: 108 SMs, 163 KiB of shared memory per block (opt-in).
    {"sm_80",
     GpuVendor::nvidia,
     {32},
     108,
     163 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mma.sync",
     NVIDIA_MMA},
    // A40 / RTX 3090 (GA102): 84 SMs, 99 KiB.
    {"sm_86",
     GpuVendor::nvidia,
     {32},
     84,
     99 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mma.sync",
     NVIDIA_MMA},
    // L40S (AD102): 142 SMs, 99 KiB.
    {"sm_89",
     GpuVendor::nvidia,
     {32},
     142,
     99 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mma.sync",
     NVIDIA_MMA},
    // H100 SXM: 132 SMs, 227 KiB.
    {"sm_90",
     GpuVendor::nvidia,
     {32},
     132,
     227 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mma.sync",
     NVIDIA_MMA,
     {},
     /*dependentLaunch=*/true,
     /*simdsPerUnit=*/4,
     /*clusterWorkgroups=*/8},
    // H100 SXM with its arch-specific instructions (PTX and cubins for
    // exactly sm_90): wgmma beside mma.sync.
    {"sm_90a",
     GpuVendor::nvidia,
     {32},
     132,
     227 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mma.sync",
     NVIDIA_MMA,
     HOPPER_WGMMA,
     /*dependentLaunch=*/true,
     /*simdsPerUnit=*/4,
     /*clusterWorkgroups=*/8},
    // MI250X (one GCD): 110 CUs, 64 KiB of LDS, wave64. CDNA's LDS is 32
    // banks of 4 bytes (the CDNA ISA guides' LDS chapter: 64 KiB per CU in
    // 32 banks of 512 DWORDs).
    {"gfx90a",
     GpuVendor::amd,
     {64},
     110,
     64 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mfma",
     CDNA_MFMA},
    // MI300X: 304 CUs, 64 KiB of LDS (32 banks of 4 bytes), wave64.
    {"gfx942",
     GpuVendor::amd,
     {64},
     304,
     64 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "mfma",
     CDNA_MFMA},
    // RX 7900 XTX: 96 CUs, 64 KiB of LDS, wave32 (wave64 also runs). The
    // RDNA3 ISA guide (section 12.1) has 128 KiB of LDS per WGP in 64 banks
    // of DWORDs, in two sets of 32, each affiliated with one pair of its
    // four SIMD32s: we take 32 banks of 4 bytes as what one wave's access
    // meets (the doc's words; not measured on an RDNA3 part).
    {"gfx1100",
     GpuVendor::amd,
     {32, 64},
     96,
     64 * KiB,
     16,
     1024,
     /*sharedMemoryBanks=*/32,
     /*sharedMemoryBankBytes=*/4,
     "wmma",
     RDNA3_WMMA,
     {},
     /*dependentLaunch=*/false,
     /*simdsPerUnit=*/2},
};

#undef NVIDIA_MMA
#undef HOPPER_WGMMA
#undef CDNA_MFMA
#undef RDNA3_WMMA

const KnownTarget *findExact(StringRef arch) {
  for (const KnownTarget &target : kKnownTargets)
    if (arch == target.arch)
      return &target;
  return nullptr;
}

/// An arch-specific NVIDIA target ("sm_XXa") without an entry of its own
/// has sm_XX's facts.
const KnownTarget *find(StringRef arch) {
  if (const KnownTarget *target = findExact(arch))
    return target;
  if (arch.starts_with("sm_") && arch.ends_with("a"))
    return findExact(arch.drop_back());
  return nullptr;
}

Type elementType(MLIRContext *context, Element element) {
  switch (element) {
  case Element::F16:
    return Float16Type::get(context);
  case Element::BF16:
    return BFloat16Type::get(context);
  }
  llvm_unreachable("unknown element");
}

ArrayAttr mmaShapes(MLIRContext *context, const KnownTarget &target) {
  SmallVector<Attribute> shapes;
  Type f32 = Float32Type::get(context);
  for (const MmaShape &shape : target.mma)
    shapes.push_back(MmaShapeAttr::get(context, shape.m, shape.n, shape.k,
                                       elementType(context, shape.a), f32));
  return ArrayAttr::get(context, shapes);
}

/// The target's group MMA shapes; null (the attribute's default, not
/// printed) when it has none.
ArrayAttr groupMmaShapes(MLIRContext *context, const KnownTarget &target) {
  if (target.groupMma.size() == 0)
    return {};
  SmallVector<Attribute> shapes;
  Type f32 = Float32Type::get(context);
  for (const GroupMmaShape &shape : target.groupMma)
    shapes.push_back(GroupMmaShapeAttr::get(
        context, shape.subgroups, shape.m, shape.nStep, shape.maxN, shape.k,
        elementType(context, shape.a), f32, shape.rowBytes));
  return ArrayAttr::get(context, shapes);
}

std::string knownArchList() { return llvm::join(getKnownGpuArchs(), ", "); }
} // namespace

SmallVector<StringRef> fdc::decode::getKnownGpuArchs() {
  SmallVector<StringRef> names;
  for (const KnownTarget &target : kKnownTargets)
    names.push_back(target.arch);
  return names;
}

std::optional<GpuVendor> fdc::decode::getKnownGpuVendor(StringRef arch) {
  if (const KnownTarget *target = find(arch))
    return target->vendor;
  return std::nullopt;
}

StringRef fdc::decode::getKnownMmaFamily(StringRef arch) {
  if (const KnownTarget *target = find(arch))
    return target->mmaFamily;
  return {};
}

int64_t fdc::decode::getKnownSimdsPerUnit(StringRef arch) {
  if (const KnownTarget *target = find(arch))
    return target->simdsPerUnit;
  return 0;
}

SmallVector<int64_t> fdc::decode::getSubgroupChoices(StringRef arch) {
  if (const KnownTarget *target = find(arch))
    return SmallVector<int64_t>(target->subgroups);
  return {};
}

FailureOr<GpuTargetAttr>
fdc::decode::lookupGpuTarget(MLIRContext *context, StringRef arch,
                             function_ref<InFlightDiagnostic()> emitError) {
  const KnownTarget *target = find(arch);
  if (!target)
    return emitError() << "unknown GPU arch '" << arch
                       << "'; known archs: " << knownArchList();
  return GpuTargetAttr::get(
      context, target->vendor, StringAttr::get(context, arch),
      *target->subgroups.begin(), target->units, target->sharedMemory,
      target->vectorBytes, target->maxWorkgroupSize,
      mmaShapes(context, *target), groupMmaShapes(context, *target),
      target->dependentLaunch ? BoolAttr::get(context, true) : BoolAttr(),
      target->clusterWorkgroups, target->sharedMemoryBanks,
      target->sharedMemoryBankBytes);
}

FailureOr<GpuTargetAttr>
fdc::decode::getCommonGpuTarget(MLIRContext *context,
                                ArrayRef<std::string> archs,
                                function_ref<InFlightDiagnostic()> emitError) {
  if (archs.empty())
    return emitError() << "a GPU target needs at least one arch";
  FailureOr<GpuTargetAttr> first =
      lookupGpuTarget(context, archs.front(), emitError);
  if (failed(first))
    return failure();
  SmallVector<int64_t> subgroups = getSubgroupChoices(archs.front());
  int64_t sharedMemory = first->getSharedMemory();
  int64_t vectorBytes = first->getVectorBytes();
  int64_t maxWorkgroupSize = first->getMaxWorkgroupSize();
  SmallVector<Attribute> mma(first->getMma().getValue());
  bool dependentLaunch = first->hasDependentLaunch();
  int64_t clusterWorkgroups = first->getClusterWorkgroups();
  SmallVector<Attribute> groupMma;
  if (ArrayAttr shapes = first->getGroupMma())
    groupMma.assign(shapes.begin(), shapes.end());
  for (StringRef arch : ArrayRef<std::string>(archs).drop_front()) {
    FailureOr<GpuTargetAttr> other = lookupGpuTarget(context, arch, emitError);
    if (failed(other))
      return failure();
    if (other->getVendor() != first->getVendor())
      return emitError() << "GPU archs '" << archs.front() << "' and '" << arch
                         << "' are of different vendors: one library holds "
                            "code for one vendor";
    SmallVector<int64_t> choices = getSubgroupChoices(arch);
    llvm::erase_if(subgroups, [&](int64_t size) {
      return !llvm::is_contained(choices, size);
    });
    sharedMemory = std::min(sharedMemory, other->getSharedMemory());
    vectorBytes = std::min(vectorBytes, other->getVectorBytes());
    maxWorkgroupSize = std::min(maxWorkgroupSize, other->getMaxWorkgroupSize());
    dependentLaunch = dependentLaunch && other->hasDependentLaunch();
    clusterWorkgroups =
        std::min(clusterWorkgroups, other->getClusterWorkgroups());
    if (StringRef(find(archs.front())->mmaFamily) != find(arch)->mmaFamily)
      mma.clear();
    llvm::erase_if(mma, [&](Attribute shape) {
      return !llvm::is_contained(other->getMma().getValue(), shape);
    });
    SmallVector<GroupMmaShapeAttr> otherGroupMma = other->getGroupMmaShapes();
    llvm::erase_if(groupMma, [&](Attribute shape) {
      return !llvm::is_contained(otherGroupMma, cast<GroupMmaShapeAttr>(shape));
    });
  }
  if (subgroups.empty())
    return emitError() << "GPU archs " << llvm::join(archs, ", ")
                       << " share no subgroup size";
  return GpuTargetAttr::get(
      context, first->getVendor(), first->getArch(), subgroups.front(),
      first->getUnits(), sharedMemory, vectorBytes, maxWorkgroupSize,
      ArrayAttr::get(context, mma),
      groupMma.empty() ? ArrayAttr() : ArrayAttr::get(context, groupMma),
      dependentLaunch ? BoolAttr::get(context, true) : BoolAttr(),
      clusterWorkgroups, first->getSharedMemoryBanks(),
      first->getSharedMemoryBankBytes());
}

LogicalResult GpuTargetAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, GpuVendor vendor,
    StringAttr arch, int64_t subgroup, int64_t units, int64_t sharedMemory,
    int64_t vectorBytes, int64_t maxWorkgroupSize, ArrayAttr mma,
    ArrayAttr groupMma, BoolAttr dependentLaunch, int64_t clusterWorkgroups,
    int64_t sharedMemoryBanks, int64_t sharedMemoryBankBytes) {
  if (!mma)
    return emitError() << "#decode.gpu_target needs an mma list (maybe [])";
  for (Attribute shape : mma)
    if (!isa<MmaShapeAttr>(shape))
      return emitError() << "#decode.gpu_target mma lists #decode.mma "
                            "shapes, got "
                         << shape;
  if (groupMma)
    for (Attribute shape : groupMma) {
      auto group = dyn_cast<GroupMmaShapeAttr>(shape);
      if (!group)
        return emitError() << "#decode.gpu_target group_mma lists "
                              "#decode.group_mma shapes, got "
                           << shape;
      // wgmma is an arch-specific instruction: only sm_XXa code has it.
      if (vendor == GpuVendor::nvidia && !arch.getValue().ends_with("a"))
        return emitError() << "#decode.gpu_target group_mma needs an "
                              "arch-specific NVIDIA arch (sm_XXa), got '"
                           << arch.getValue() << "'";
      if (group.getSubgroups() * subgroup > maxWorkgroupSize)
        return emitError() << "#decode.gpu_target group_mma of "
                           << group.getSubgroups()
                           << " subgroups exceeds max_workgroup_size "
                           << maxWorkgroupSize;
    }
  if (!arch || arch.getValue().empty())
    return emitError() << "#decode.gpu_target needs an arch name";
  // The NVIDIA compute capability of `arch` (90 for sm_90a), 0 for others.
  auto smVersion = [&]() -> unsigned {
    unsigned version = 0;
    StringRef number = arch.getValue();
    if (vendor != GpuVendor::nvidia || !number.consume_front("sm_"))
      return 0;
    number.consume_back("a");
    return number.getAsInteger(10, version) ? 0 : version;
  };
  if (dependentLaunch && dependentLaunch.getValue()) {
    // griddepcontrol: PTX ISA 7.8, sm_90 and later.
    if (smVersion() < 90)
      return emitError() << "#decode.gpu_target dependent_launch needs an "
                            "NVIDIA arch of sm_90 or later, got '"
                         << arch.getValue() << "'";
  }
  if (clusterWorkgroups != 0) {
    // Thread block clusters: sm_90 and later, at most 16 workgroups.
    if (smVersion() < 90 || clusterWorkgroups < 2 || clusterWorkgroups > 16)
      return emitError() << "#decode.gpu_target cluster_workgroups needs an "
                            "NVIDIA arch of sm_90 or later and a size in "
                            "[2, 16], got "
                         << clusterWorkgroups << " on '" << arch.getValue()
                         << "'";
  }
  if (subgroup != 32 && subgroup != 64)
    return emitError() << "#decode.gpu_target subgroup must be 32 or 64, got "
                       << subgroup;
  if (vendor == GpuVendor::nvidia && subgroup != 32)
    return emitError() << "#decode.gpu_target subgroup of an nvidia target "
                          "must be 32 (a warp), got "
                       << subgroup;
  if (units < 1 || units > (1 << 20))
    return emitError() << "#decode.gpu_target units must be in [1, 2^20], got "
                       << units;
  if (sharedMemory < 1024 || sharedMemory > (int64_t(1) << 30))
    return emitError()
           << "#decode.gpu_target shared_memory must be in [1024, 2^30], got "
           << sharedMemory;
  if (!llvm::isPowerOf2_64(vectorBytes) || vectorBytes < 4 || vectorBytes > 64)
    return emitError() << "#decode.gpu_target vector_bytes must be a power of "
                          "two in [4, 64], got "
                       << vectorBytes;
  if (!llvm::isPowerOf2_64(sharedMemoryBanks) || sharedMemoryBanks < 4 ||
      sharedMemoryBanks > 256)
    return emitError() << "#decode.gpu_target shared_memory_banks must be a "
                          "power of two in [4, 256], got "
                       << sharedMemoryBanks;
  if (!llvm::isPowerOf2_64(sharedMemoryBankBytes) ||
      sharedMemoryBankBytes < 4 || sharedMemoryBankBytes > 16)
    return emitError() << "#decode.gpu_target shared_memory_bank_bytes must "
                          "be a power of two in [4, 16], got "
                       << sharedMemoryBankBytes;
  if (maxWorkgroupSize < subgroup || maxWorkgroupSize % subgroup != 0 ||
      maxWorkgroupSize > 4096)
    return emitError() << "#decode.gpu_target max_workgroup_size must be a "
                          "multiple of the subgroup size in ["
                       << subgroup << ", 4096], got " << maxWorkgroupSize;
  return success();
}

LogicalResult MmaShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t m, int64_t n, int64_t k, Type a,
                                   Type acc) {
  for (int64_t size : {m, n, k})
    if (size < 1 || size > 256)
      return emitError() << "#decode.mma sizes must be in [1, 256], got " << m
                         << "x" << n << "x" << k;
  if (!isa<FloatType>(a) || !isa<FloatType>(acc))
    return emitError() << "#decode.mma operand and accumulator types must be "
                          "floats, got "
                       << a << " and " << acc;
  return success();
}

LogicalResult
GroupMmaShapeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t subgroups, int64_t m, int64_t nStep,
                          int64_t maxN, int64_t k, Type a, Type acc,
                          int64_t rowBytes) {
  if (subgroups < 1 || subgroups > 32)
    return emitError() << "#decode.group_mma subgroups must be in [1, 32], "
                          "got "
                       << subgroups;
  for (int64_t size : {m, nStep, maxN, k})
    if (size < 1 || size > 256)
      return emitError() << "#decode.group_mma sizes must be in [1, 256], got "
                         << "m = " << m << ", n_step = " << nStep
                         << ", max_n = " << maxN << ", k = " << k;
  if (maxN % nStep != 0)
    return emitError() << "#decode.group_mma max_n (" << maxN
                       << ") must be a multiple of n_step (" << nStep << ")";
  if (!isa<FloatType>(a) || !isa<FloatType>(acc))
    return emitError() << "#decode.group_mma operand and accumulator types "
                          "must be floats, got "
                       << a << " and " << acc;
  int64_t kBytes = k * a.getIntOrFloatBitWidth() / 8;
  if (!llvm::isPowerOf2_64(rowBytes) || rowBytes < kBytes || rowBytes > 1024)
    return emitError() << "#decode.group_mma row_bytes must be a power of two "
                          "of at least one k step ("
                       << kBytes << " bytes) and at most 1024, got "
                       << rowBytes;
  return success();
}

SmallVector<GroupMmaShapeAttr> GpuTargetAttr::getGroupMmaShapes() const {
  if (!getGroupMma())
    return {};
  return llvm::map_to_vector(getGroupMma(), [](Attribute shape) {
    return cast<GroupMmaShapeAttr>(shape);
  });
}

SmallVector<MmaShapeAttr> GpuTargetAttr::getMmaShapes() const {
  return llvm::map_to_vector(
      getMma(), [](Attribute shape) { return cast<MmaShapeAttr>(shape); });
}
