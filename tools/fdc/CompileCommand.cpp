//===- CompileCommand.cpp - `fdc compile` ---------------------------------===//
//
// Model IR -> model library: verify, place the weights, write the manifest,
// lower the step for the target, and emit the shared object.
//
//===----------------------------------------------------------------------===//

#include "CompileCommand.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/IR/KnownTargets.h"
#include "fdc/Dialect/Decode/Transforms/Passes.h"
#include "fdc/Target/ModelLibrary.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {
struct CompileOptions {
  cl::OptionCategory category{"fdc compile options"};
  cl::opt<std::string> input{cl::Positional, cl::Required,
                             cl::desc("<model.mlir>"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::Required,
                              cl::desc("Output model library (.so)"),
                              cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> target{
      "target", cl::init("host"),
      cl::desc("Target: host, or cuda:sm_XX[,sm_YY...] (PTX + cubins)"),
      cl::cat(category)};
  cl::opt<std::string> cpu{
      "cpu", cl::init("generic"),
      cl::desc("Host CPU to generate code for: generic (any CPU of the host's "
               "architecture), native (this machine's), or an LLVM CPU name "
               "such as x86-64-v3 or znver4"),
      cl::cat(category)};
  cl::opt<std::string> emitLLVM{"emit-llvm",
                                cl::desc("Also write the LLVM IR here"),
                                cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> emitMLIR{
      "emit-mlir", cl::desc("Also write the lowered MLIR (LLVM dialect) here"),
      cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> cudaPath{
      "cuda-path",
      cl::init(std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME")
                                        : "/usr/local/cuda"),
      cl::desc("CUDA toolkit (libdevice, ptxas) for cuda targets"),
      cl::cat(category)};
  cl::opt<std::string> emitPTX{"emit-ptx",
                               cl::desc("Also write the kernels' PTX here "
                                        "(cuda targets)"),
                               cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> linker{
      "linker", cl::desc("Compiler driver used to link"), cl::cat(category)};
};

LogicalResult writeModule(ModuleOp module, StringRef path) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file)
    return emitError(module.getLoc()) << error;
  module.print(file->os());
  file->keep();
  return success();
}

LogicalResult compile(MLIRContext &context, const CompileOptions &options) {
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  std::string error;
  auto buffer = openInputFile(options.input, &error);
  if (!buffer)
    return emitError(UnknownLoc::get(&context)) << error;
  sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failure();

  bool isCuda = StringRef(options.target).starts_with("cuda:");
  if (options.target != "host" && !isCuda)
    return emitError(module->getLoc())
           << "unknown target '" << options.target
           << "'; supported targets: host, cuda:sm_XX[,sm_YY...]";
  std::optional<fdc::target::CudaTarget> cuda;
  if (isCuda) {
    FailureOr<fdc::target::CudaTarget> parsed =
        fdc::target::parseCudaTarget(options.target, module->getLoc());
    if (failed(parsed))
      return failure();
    cuda = *parsed;
  }

  FailureOr<std::string> cpu =
      fdc::target::resolveHostCPU(options.cpu, module->getLoc());
  if (failed(cpu))
    return failure();

  auto models = llvm::to_vector(module->getOps<fdc::decode::ModelOp>());
  if (models.size() != 1)
    return emitError(module->getLoc())
           << "expected exactly one 'decode.model' in " << options.input
           << ", found " << models.size();

  PassManager layout(&context);
  layout.nest<fdc::decode::ModelOp>().addPass(
      fdc::decode::createDecodeAssignWeightLayout());
  if (failed(layout.run(*module)))
    return failure();
  FailureOr<std::string> manifest =
      fdc::target::buildManifest(models.front(), options.target);
  if (failed(manifest))
    return failure();

  std::optional<fdc::target::CudaImages> images;
  if (cuda) {
    SmallVector<std::string> archs;
    for (const fdc::target::CudaArch &arch : cuda->archs)
      archs.push_back(arch.name());
    FailureOr<fdc::decode::GpuTargetAttr> gpuTarget =
        fdc::decode::getCommonGpuTarget(
            &context, archs, [&] { return emitError(module->getLoc()); });
    if (failed(gpuTarget))
      return failure();
    (*module)->setAttr(fdc::decode::GpuTargetAttr::getModuleAttrName(),
                       *gpuTarget);
    PassManager kernels(&context);
    kernels.addPass(fdc::createConvertDecodeToGPU());
    kernels.addPass(fdc::createLowerKernelLaunches());
    if (failed(kernels.run(*module)))
      return failure();
    manifest = fdc::target::addGpuManifestFields(*manifest, *module);
    if (failed(manifest))
      return failure();
    FailureOr<fdc::target::CudaImages> compiled =
        fdc::target::compileCudaKernels(*module, *cuda, options.cudaPath);
    if (failed(compiled))
      return failure();
    images = std::move(*compiled);
    if (!options.emitPTX.empty()) {
      std::string error;
      auto file = openOutputFile(options.emitPTX, &error);
      if (!file)
        return emitError(module->getLoc()) << error;
      file->os() << images->ptx;
      file->keep();
    }
  }

  PassManager lowering(&context);
  if (!cuda)
    lowering.addPass(fdc::createConvertDecodeToHost());
  fdc::buildHostToLLVMPipeline(lowering);
  if (failed(lowering.run(*module)))
    return failure();
  fdc::target::addLibraryGlobals(*module, options.target, *manifest);
  if (images)
    fdc::target::addCudaImageGlobals(*module, *images);
  if (!options.emitMLIR.empty() &&
      failed(writeModule(*module, options.emitMLIR)))
    return failure();

  fdc::target::HostLibraryOptions libraryOptions;
  libraryOptions.outputPath = options.output;
  libraryOptions.cpu = *cpu;
  libraryOptions.linker = options.linker;
  libraryOptions.llvmIRPath = options.emitLLVM;
  return fdc::target::emitHostLibrary(*module, libraryOptions);
}
} // namespace

int fdc::compileMain(int argc, char **argv) {
  CompileOptions options;
  cl::HideUnrelatedOptions(options.category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "fdc compile: model IR -> AOT model library\n\n"
          "  fdc compile model.mlir --target=host -o model.so\n",
          &llvm::errs()))
    return 2;

  DialectRegistry registry;
  registry.insert<fdc::decode::DecodeDialect, arith::ArithDialect,
                  func::FuncDialect, tensor::TensorDialect, LLVM::LLVMDialect,
                  mlir::gpu::GPUDialect>();
  // The ConvertToLLVM interfaces that GPU-to-NVVM collects patterns from.
  registerAllExtensions(registry);
  MLIRContext context(registry);
  return failed(compile(context, options)) ? 1 : 0;
}
