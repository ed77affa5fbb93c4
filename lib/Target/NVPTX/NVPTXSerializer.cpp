//===- NVPTXSerializer.cpp - the gpu.module to PTX and cubins -------------===//
//
// The gpu.module is lowered to NVVM, serialised to PTX by MLIR's NVPTX back
// end (gpu-module-to-binary, libdevice linked in), and ptxas makes a cubin for
// each requested arch. PTX is always embedded as the JIT fallback.
//
//===----------------------------------------------------------------------===//

#include "CudaArch.h"
#include "Ptxas.h"

#include "fdc/Target/NVPTX/NVPTXSerializer.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace fdc::target;
using nvptx::CudaArch;

namespace {
constexpr KernelDumpKind kDumpKinds[] = {KernelDumpKind::PTX};

class NVPTXSerializer : public GpuSerializer {
public:
  explicit NVPTXSerializer(const GpuToolchainOptions &options)
      : cudaPath(options.cudaPath) {}

  ArrayRef<KernelDumpKind> getDumpKinds() const override { return kDumpKinds; }

  FailureOr<SerializedKernels> serialize(ModuleOp module,
                                         fdc::decode::GpuTargetAttr target,
                                         ArrayRef<std::string> archs) override;

private:
  /// The chip the PTX is generated for: the oldest requested arch, which the
  /// driver can JIT for any newer GPU and ptxas can compile for every listed
  /// arch. An sm_XXa PTX serves only sm_XX(a): with several archs the PTX is
  /// the plain oldest one, which ptxas also compiles for sm_XXa.
  static std::string getPtxChip(ArrayRef<CudaArch> archs);

  /// Lowers the gpu.module to PTX and removes it.
  FailureOr<std::string> emitPtx(ModuleOp module, gpu::GPUModuleOp kernels,
                                 StringRef chip, unsigned subgroupSize);

  std::string cudaPath;
};
} // namespace

std::string NVPTXSerializer::getPtxChip(ArrayRef<CudaArch> archs) {
  if (archs.size() == 1)
    return archs.front().name();
  unsigned oldest =
      llvm::min_element(archs, [](const CudaArch &a, const CudaArch &b) {
        return a.version < b.version;
      })->version;
  return "sm_" + std::to_string(oldest);
}

FailureOr<std::string> NVPTXSerializer::emitPtx(ModuleOp module,
                                                gpu::GPUModuleOp kernels,
                                                StringRef chip,
                                                unsigned subgroupSize) {
  MLIRContext *ctx = module.getContext();
  SmallString<256> libdevice(cudaPath);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice))
    return emitError(module.getLoc())
           << "libdevice not found at " << libdevice
           << "; point --cuda-path at a CUDA toolkit";

  auto nvvmTarget = NVVM::NVVMTargetAttr::get(
      ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip, "+ptx80",
      /*flags=*/nullptr,
      ArrayAttr::get(ctx, {StringAttr::get(ctx, libdevice.str())}));
  kernels.setTargetsAttr(ArrayAttr::get(ctx, {nvvmTarget}));

  PassManager pm(ctx);
  nvptx::buildKernelPipeline(pm.nest<gpu::GPUModuleOp>(), subgroupSize);
  GpuModuleToBinaryPassOptions binaryOptions;
  binaryOptions.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binaryOptions));
  if (failed(pm.run(module)))
    return failure();

  auto binary = *module.getOps<gpu::BinaryOp>().begin();
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  std::string ptx = object.getObject().getValue().str();
  binary.erase();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  return ptx;
}

FailureOr<SerializedKernels>
NVPTXSerializer::serialize(ModuleOp module, fdc::decode::GpuTargetAttr target,
                           ArrayRef<std::string> archNames) {
  Location loc = module.getLoc();
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<NVVM::NVVMDialect>();

  SmallVector<CudaArch> archs;
  for (StringRef name : archNames) {
    std::optional<CudaArch> arch = CudaArch::parse(name);
    if (!arch)
      return emitError(loc) << "bad CUDA arch '" << name << "'";
    archs.push_back(*arch);
  }
  if (archs.empty())
    return emitError(loc) << "a CUDA target needs at least one arch";
  auto kernelModules = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (kernelModules.size() != 1)
    return emitError(loc) << "expected one gpu.module of kernels";

  FailureOr<std::string> ptx = emitPtx(module, kernelModules.front(),
                                       getPtxChip(archs), target.getSubgroup());
  if (failed(ptx))
    return failure();
  SerializedKernels result;
  result.images.push_back({"fdc_ptx", *ptx, /*isText=*/true});
  result.dumps.push_back({KernelDumpKind::PTX, /*arch=*/"", *ptx});

  std::optional<nvptx::Ptxas> ptxas = nvptx::Ptxas::find(cudaPath);
  if (!ptxas)
    return result; // PTX only: the runtime JITs it.
  for (const CudaArch &arch : archs) {
    FailureOr<std::string> cubin = ptxas->compile(*ptx, arch.name(), loc);
    if (failed(cubin))
      return failure();
    result.images.push_back({"fdc_cubin_" + arch.name(), std::move(*cubin)});
  }
  return result;
}

std::unique_ptr<GpuSerializer>
nvptx::createSerializer(const GpuToolchainOptions &options) {
  return std::make_unique<NVPTXSerializer>(options);
}
