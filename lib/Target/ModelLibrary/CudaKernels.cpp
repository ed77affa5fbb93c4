//===- CudaKernels.cpp - the gpu.module to PTX and cubins -----------------===//
//
// The kernels of a CUDA model library: the gpu.module is lowered to NVVM,
// serialised to PTX by MLIR's NVPTX back end (gpu-module-to-binary, libdevice
// linked in), and ptxas makes a cubin for each requested arch. PTX is always
// embedded as the JIT fallback.
//
//===----------------------------------------------------------------------===//

#include "fdc/Target/ModelLibrary.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace fdc;

FailureOr<target::CudaTarget> target::parseCudaTarget(StringRef text,
                                                      Location loc) {
  CudaTarget result;
  if (!text.consume_front("cuda:"))
    return emitError(loc) << "not a CUDA target: '" << text << "'";
  SmallVector<StringRef> archs;
  text.split(archs, ',');
  for (StringRef arch : archs) {
    CudaArch parsed;
    StringRef digits = arch;
    parsed.archSpecific = digits.consume_back("a");
    if (!digits.consume_front("sm_") ||
        digits.getAsInteger(10, parsed.version) || parsed.version < 70 ||
        (parsed.archSpecific && parsed.version < 90))
      return emitError(loc) << "bad CUDA arch '" << arch
                            << "': expected sm_XX with XX >= 70, or sm_XXa "
                               "with XX >= 90, e.g. cuda:sm_90a,sm_80";
    if (llvm::any_of(result.archs, [&](const CudaArch &seen) {
          return seen.name() == parsed.name();
        }))
      return emitError(loc) << "CUDA arch '" << arch << "' is listed twice";
    result.archs.push_back(parsed);
  }
  if (result.archs.empty())
    return emitError(loc) << "CUDA target lists no arch";
  return result;
}

FailureOr<target::CudaImages> target::compileCudaKernels(ModuleOp module,
                                                         const CudaTarget &cuda,
                                                         StringRef cudaPath) {
  Location loc = module.getLoc();
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  ctx->appendDialectRegistry(registry);
  ctx->loadDialect<NVVM::NVVMDialect>();

  SmallString<256> libdevice(cudaPath);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice))
    return emitError(loc) << "libdevice not found at " << libdevice
                          << "; point --cuda-path at a CUDA toolkit";

  // PTX for the oldest requested arch: the driver can JIT it for any newer
  // GPU, and ptxas can compile it for every listed arch.
  // An sm_XXa PTX serves only sm_XX(a): with several archs the PTX is the
  // plain oldest one, which ptxas also compiles for sm_XXa.
  unsigned oldest =
      llvm::min_element(cuda.archs, [](const CudaArch &a, const CudaArch &b) {
        return a.version < b.version;
      })->version;
  std::string chip = cuda.archs.size() == 1 ? cuda.archs.front().name()
                                            : "sm_" + std::to_string(oldest);
  auto moduleOps = llvm::to_vector(module.getOps<gpu::GPUModuleOp>());
  if (moduleOps.size() != 1)
    return emitError(loc) << "expected one gpu.module of kernels";
  auto nvvmTarget = NVVM::NVVMTargetAttr::get(
      ctx, /*optLevel=*/3, "nvptx64-nvidia-cuda", chip, "+ptx80",
      /*flags=*/nullptr,
      ArrayAttr::get(ctx, {StringAttr::get(ctx, libdevice.str())}));
  moduleOps.front().setTargetsAttr(ArrayAttr::get(ctx, {nvvmTarget}));

  PassManager pm(ctx);
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binaryOptions;
  binaryOptions.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binaryOptions));
  if (failed(pm.run(module)))
    return failure();

  auto binaries = llvm::to_vector(module.getOps<gpu::BinaryOp>());
  auto object = cast<gpu::ObjectAttr>(binaries.front().getObjects()[0]);
  CudaImages images;
  images.ptx = object.getObject().getValue().str();
  binaries.front().erase();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());

  SmallString<256> ptxas(cudaPath);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas)) {
    if (llvm::ErrorOr<std::string> found =
            llvm::sys::findProgramByName("ptxas"))
      ptxas = *found;
    else
      return images; // PTX only: the runtime JITs it.
  }
  SmallString<128> ptxPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fdc-kernels", "ptx", ptxPath))
    return emitError(loc) << "cannot create a temporary file: " << ec.message();
  llvm::FileRemover removePtx(ptxPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    os << images.ptx;
  }
  for (const CudaArch &arch : cuda.archs) {
    SmallString<128> cubinPath;
    if (std::error_code ec = llvm::sys::fs::createTemporaryFile(
            "fdc-kernels", "cubin", cubinPath))
      return emitError(loc)
             << "cannot create a temporary file: " << ec.message();
    llvm::FileRemover removeCubin(cubinPath);
    std::string archFlag = "-arch=" + arch.name();
    SmallVector<StringRef> argv = {ptxas,   "-O3", archFlag,
                                   ptxPath, "-o",  cubinPath};
    std::string error;
    int status =
        llvm::sys::ExecuteAndWait(ptxas, argv, std::nullopt, {}, 0, 0, &error);
    if (status != 0)
      return emitError(loc)
             << "ptxas " << archFlag << " failed (status " << status << ")"
             << (error.empty() ? "" : ": ") << error;
    auto buffer = llvm::MemoryBuffer::getFile(cubinPath);
    if (!buffer)
      return emitError(loc) << "cannot read " << cubinPath;
    images.cubins.push_back({arch.name(), (*buffer)->getBuffer().str()});
  }
  return images;
}

void target::addCudaImageGlobals(ModuleOp module, const CudaImages &images) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  auto addBytes = [&](StringRef name, StringRef bytes, bool terminate) {
    std::string data = bytes.str();
    if (terminate)
      data.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), data.size());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External, name,
                           b.getStringAttr(data));
  };
  addBytes("fdc_ptx", images.ptx, /*terminate=*/true);
  for (const auto &[arch, cubin] : images.cubins) {
    std::string name = "fdc_cubin_" + arch;
    addBytes(name, cubin, /*terminate=*/false);
    LLVM::GlobalOp::create(b, loc, b.getI64Type(), /*isConstant=*/true,
                           LLVM::Linkage::External, name + "_size",
                           b.getI64IntegerAttr(cubin.size()));
  }
}

FailureOr<std::string> target::addGpuManifestFields(StringRef manifest,
                                                    ModuleOp module) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(manifest);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return emitError(module.getLoc()) << "internal error: bad manifest JSON";
  }
  llvm::json::Object &object = *parsed->getAsObject();
  llvm::json::Array kernels;
  if (auto names = module->getAttrOfType<ArrayAttr>("fdc.kernels"))
    for (Attribute name : names)
      kernels.push_back(
          llvm::json::Object{{"name", cast<StringAttr>(name).str()}});
  object["kernels"] = std::move(kernels);
  auto attr = [&](StringRef name) -> int64_t {
    auto value = module->getAttrOfType<IntegerAttr>(name);
    return value ? value.getInt() : 0;
  };
  object["scratch"] = llvm::json::Object{
      {"bytes_per_sequence", attr("fdc.scratch_bytes_per_sequence")},
      {"fixed_bytes", attr("fdc.scratch_fixed_bytes")}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(object));
  return text;
}
