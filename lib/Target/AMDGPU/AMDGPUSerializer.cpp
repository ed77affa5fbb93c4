//===- AMDGPUSerializer.cpp - the gpu.module to one code object per arch --===//
//
// Every arch gets its own copy of the gpu.module, lowered through ROCDL for
// that chip (the DPP patterns and the ROCDL conversion depend on it) and the
// library's wave size, compiled by CodeObjectEmitter and linked by
// CodeObjectLinker. The code object's metadata is checked against the
// kernels and the wave size before it is embedded.
//
//===----------------------------------------------------------------------===//

#include "CodeObjectEmitter.h"
#include "CodeObjectLinker.h"

#include "fdc/Dialect/Decode/IR/KnownTargets.h"
#include "fdc/Target/AMDGPU/AMDGPUSerializer.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/ROCDL/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Frontend/Offloading/Utility.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::target;

namespace {
constexpr KernelDumpKind kDumpKinds[] = {KernelDumpKind::AMDGPUAssembly,
                                         KernelDumpKind::HSACO};

/// Code object version 5, which ROCm 6 (and late 5.x) runtimes load; MLIR's
/// default, 6, needs ROCm 6.3. The target ID names no xnack / sramecc mode
/// ("any"), so one code object serves both modes of a chip.
constexpr llvm::StringLiteral kCodeObjectVersion = "500";

struct ArchCodeObject {
  std::string assembly;
  std::string hsaco;
};

class AMDGPUSerializer : public GpuSerializer {
public:
  explicit AMDGPUSerializer(const GpuToolchainOptions &options)
      : deviceLibsPath(options.rocmDeviceLibsPath) {}

  ArrayRef<KernelDumpKind> getDumpKinds() const override { return kDumpKinds; }

  FailureOr<SerializedKernels> serialize(ModuleOp module,
                                         decode::GpuTargetAttr target,
                                         ArrayRef<std::string> archs) override;

private:
  /// The ROCDL target of one arch: its chip, the wave size as a feature
  /// where the chip runs both (RDNA), the matching oclc wave64 flag.
  static ROCDL::ROCDLTargetAttr getRocdlTarget(MLIRContext *ctx, StringRef arch,
                                               int64_t subgroupSize);

  FailureOr<ArchCodeObject>
  compileArch(gpu::GPUModuleOp kernels, StringRef arch, int64_t subgroupSize,
              const target::amdgpu::CodeObjectLinker &lld);

  /// Every kernel of `kernels` is in the code object with `subgroupSize`
  /// lanes: the wave-size feature reached the back end.
  static LogicalResult checkCodeObject(StringRef hsaco,
                                       gpu::GPUModuleOp kernels, StringRef arch,
                                       int64_t subgroupSize);

  std::string deviceLibsPath;
};
} // namespace

ROCDL::ROCDLTargetAttr AMDGPUSerializer::getRocdlTarget(MLIRContext *ctx,
                                                        StringRef arch,
                                                        int64_t subgroupSize) {
  std::string features;
  if (decode::getSubgroupChoices(arch).size() > 1)
    features = "+wavefrontsize" + std::to_string(subgroupSize);
  Builder b(ctx);
  DictionaryAttr flags = b.getDictionaryAttr(b.getNamedAttr(
      subgroupSize == 64 ? "wave64" : "no_wave64", b.getUnitAttr()));
  return ROCDL::ROCDLTargetAttr::get(ctx, /*optLevel=*/3, "amdgcn-amd-amdhsa",
                                     arch, features, kCodeObjectVersion, flags,
                                     /*linkFiles=*/nullptr);
}

FailureOr<ArchCodeObject>
AMDGPUSerializer::compileArch(gpu::GPUModuleOp kernels, StringRef arch,
                              int64_t subgroupSize,
                              const target::amdgpu::CodeObjectLinker &lld) {
  MLIRContext *ctx = kernels.getContext();
  Location loc = kernels.getLoc();
  auto emitArchError = [&] {
    return emitError(loc) << "AMDGPU kernels for " << arch << ": ";
  };
  ROCDL::ROCDLTargetAttr rocdlTarget = getRocdlTarget(ctx, arch, subgroupSize);

  OwningOpRef<ModuleOp> scratch = ModuleOp::create(loc);
  auto copy = cast<gpu::GPUModuleOp>(kernels->clone());
  scratch->getBody()->push_back(copy);
  copy.setTargetsAttr(ArrayAttr::get(ctx, {rocdlTarget}));
  PassManager pm(ctx);
  target::amdgpu::buildKernelPipeline(pm.nest<gpu::GPUModuleOp>(), arch,
                                      subgroupSize);
  if (failed(pm.run(*scratch)))
    return emitArchError() << "the ROCDL lowering failed";

  target::amdgpu::CodeObjectEmitter emitter(copy, rocdlTarget, deviceLibsPath);
  FailureOr<target::amdgpu::CodeObjectEmitter::Output> object = emitter.emit();
  if (failed(object))
    return emitArchError() << "the AMDGPU back end failed";
  FailureOr<std::string> hsaco = lld.link(object->object, arch, emitArchError);
  if (failed(hsaco))
    return failure();
  if (failed(checkCodeObject(*hsaco, kernels, arch, subgroupSize)))
    return failure();
  return ArchCodeObject{std::move(object->assembly), std::move(*hsaco)};
}

LogicalResult AMDGPUSerializer::checkCodeObject(StringRef hsaco,
                                                gpu::GPUModuleOp kernels,
                                                StringRef arch,
                                                int64_t subgroupSize) {
  llvm::StringMap<llvm::offloading::amdgpu::AMDGPUKernelMetaData> metadata;
  uint16_t abiVersion = 0;
  if (llvm::Error error = llvm::offloading::amdgpu::getAMDGPUMetaDataFromImage(
          llvm::MemoryBufferRef(hsaco, arch), metadata, abiVersion)) {
    std::string message = llvm::toString(std::move(error));
    return emitError(kernels.getLoc())
           << "the " << arch << " code object has no readable kernel "
           << "metadata: " << message;
  }
  for (auto func : kernels.getOps<gpu::GPUFuncOp>()) {
    if (!func.isKernel())
      continue;
    auto it = metadata.find(func.getName());
    if (it == metadata.end())
      return emitError(kernels.getLoc())
             << "the " << arch << " code object lacks kernel "
             << func.getName();
    if (it->second.WavefrontSize != subgroupSize)
      return emitError(kernels.getLoc())
             << "kernel " << func.getName() << " of the " << arch
             << " code object runs " << it->second.WavefrontSize
             << " lanes a wave, not " << subgroupSize;
  }
  return success();
}

FailureOr<SerializedKernels>
AMDGPUSerializer::serialize(ModuleOp module, decode::GpuTargetAttr target,
                            ArrayRef<std::string> archs) {
  Location loc = module.getLoc();
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  ROCDL::registerROCDLTargetInterfaceExternalModels(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<ROCDL::ROCDLDialect>();

  auto emitModuleError = [&] { return emitError(loc); };
  if (failed(target::amdgpu::CodeObjectEmitter::checkDeviceLibs(
          deviceLibsPath, emitModuleError)))
    return failure();
  FailureOr<target::amdgpu::CodeObjectLinker> lld =
      target::amdgpu::CodeObjectLinker::find(emitModuleError);
  if (failed(lld))
    return failure();
  if (archs.empty())
    return emitError(loc) << "a ROCm target needs at least one arch";
  auto kernelModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (kernelModules.size() != 1)
    return emitError(loc) << "expected one gpu.module of kernels";
  gpu::GPUModuleOp kernels = kernelModules.front();

  SerializedKernels result;
  for (StringRef arch : archs) {
    FailureOr<ArchCodeObject> object =
        compileArch(kernels, arch, target.getSubgroup(), *lld);
    if (failed(object))
      return failure();
    result.images.push_back({"fdc_hsaco_" + arch.str(), object->hsaco});
    result.dumps.push_back(
        {KernelDumpKind::AMDGPUAssembly, arch.str(), object->assembly});
    result.dumps.push_back(
        {KernelDumpKind::HSACO, arch.str(), std::move(object->hsaco)});
  }
  kernels.erase();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return result;
}

std::unique_ptr<GpuSerializer>
target::amdgpu::createSerializer(const GpuToolchainOptions &options) {
  return std::make_unique<AMDGPUSerializer>(options);
}
