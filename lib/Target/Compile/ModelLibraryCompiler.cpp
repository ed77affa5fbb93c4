//===- ModelLibraryCompiler.cpp - model IR to a model library -------------===//
//
// One object per compile, one method per stage: check the options, place the
// weights, build the manifest, generate and serialise the kernels (GPU
// targets), lower the host code, emit the library.
//
//===----------------------------------------------------------------------===//

#include "fdc/Conversion/Passes.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/IR/KnownTargets.h"
#include "fdc/Dialect/Decode/Transforms/Passes.h"
#include "fdc/Target/Compile.h"
#include "fdc/Target/ModelLibrary.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::target;

namespace {
class ModelLibraryCompiler {
public:
  ModelLibraryCompiler(ModuleOp module, const CompileOptions &options)
      : module(module), options(options) {}

  LogicalResult run();

private:
  InFlightDiagnostic emitError() { return mlir::emitError(module.getLoc()); }

  /// The target, the GPU serialiser and the host CPU, before any work.
  LogicalResult checkOptions();
  FailureOr<decode::ModelOp> getModel();
  LogicalResult placeWeights();
  LogicalResult buildManifest(decode::ModelOp model);
  /// #decode.gpu_target, convert-decode-to-gpu, fdc-lower-kernel-launches,
  /// and the kernels and scratch in the manifest.
  LogicalResult generateKernels();
  LogicalResult serializeKernels();
  LogicalResult writeKernelDumps(ArrayRef<KernelDump> dumps);
  LogicalResult lowerHost();
  LogicalResult writeFile(StringRef path,
                          function_ref<void(raw_ostream &)> write);
  LogicalResult emitLibrary();

  ModuleOp module;
  const CompileOptions &options;
  CompileTarget target;
  std::unique_ptr<GpuSerializer> serializer;
  std::string cpu;
  std::string manifest;
  SmallVector<KernelImage> images;
};
} // namespace

LogicalResult ModelLibraryCompiler::checkOptions() {
  FailureOr<CompileTarget> parsed =
      parseCompileTarget(options.target, [&] { return emitError(); });
  if (failed(parsed))
    return failure();
  target = std::move(*parsed);
  if (!target.isHost())
    serializer =
        createGpuSerializer(target.platform->vendor, options.toolchain);
  if (target.isHost() && options.tuningCandidates)
    return emitError() << "--tuning-candidates needs a GPU target (the host "
                          "step has no kernels to tune)";
  if (target.isHost() && !options.tuningFile.empty())
    return emitError() << "--tuning needs a GPU target (the host step has no "
                          "kernels to tune)";
  for (const auto &[kind, path] : options.kernelDumps) {
    if (serializer && llvm::is_contained(serializer->getDumpKinds(), kind))
      continue;
    return emitError() << "--" << getKernelDumpOption(kind)
                       << " does not apply to target '" << target.name << "'";
  }
  FailureOr<std::string> resolved =
      resolveHostCPU(options.cpu, module.getLoc());
  if (failed(resolved))
    return failure();
  cpu = std::move(*resolved);
  return success();
}

FailureOr<decode::ModelOp> ModelLibraryCompiler::getModel() {
  auto models = llvm::to_vector(module.getOps<decode::ModelOp>());
  if (models.size() != 1)
    return emitError() << "expected exactly one 'decode.model' in "
                       << options.inputPath << ", found " << models.size();
  return models.front();
}

LogicalResult ModelLibraryCompiler::placeWeights() {
  PassManager layout(module.getContext());
  OpPassManager &modelPasses = layout.nest<decode::ModelOp>();
  if (options.tensorParallel != 1) {
    decode::DecodeShardTensorParallelOptions sharding;
    sharding.ranks = options.tensorParallel;
    modelPasses.addPass(decode::createDecodeShardTensorParallel(sharding));
  }
  modelPasses.addPass(decode::createDecodeAssignWeightLayout());
  return layout.run(module);
}

LogicalResult ModelLibraryCompiler::buildManifest(decode::ModelOp model) {
  FailureOr<std::string> built = target::buildManifest(model, target.name);
  if (failed(built))
    return failure();
  manifest = std::move(*built);
  return success();
}

LogicalResult ModelLibraryCompiler::generateKernels() {
  FailureOr<decode::GpuTargetAttr> gpuTarget = decode::getCommonGpuTarget(
      module.getContext(), target.archs, [&] { return emitError(); });
  if (failed(gpuTarget))
    return failure();
  module->setAttr(decode::GpuTargetAttr::getModuleAttrName(), *gpuTarget);
  PassManager kernels(module.getContext());
  if (!options.tuningFile.empty()) {
    ApplyTuningOptions tuning;
    tuning.file = options.tuningFile;
    kernels.addPass(createApplyTuning(tuning));
  }
  ConvertDecodeToGPUOptions lowering;
  lowering.tuningCandidates = options.tuningCandidates;
  kernels.addPass(createConvertDecodeToGPU(lowering));
  kernels.addPass(createLowerKernelLaunches());
  if (failed(kernels.run(module)))
    return failure();
  FailureOr<std::string> withKernels = addGpuManifestFields(manifest, module);
  if (failed(withKernels))
    return failure();
  manifest = std::move(*withKernels);
  return success();
}

LogicalResult ModelLibraryCompiler::serializeKernels() {
  auto gpuTarget = module->getAttrOfType<decode::GpuTargetAttr>(
      decode::GpuTargetAttr::getModuleAttrName());
  FailureOr<SerializedKernels> serialized =
      serializer->serialize(module, gpuTarget, target.archs);
  if (failed(serialized))
    return failure();
  images = std::move(serialized->images);
  return writeKernelDumps(serialized->dumps);
}

LogicalResult
ModelLibraryCompiler::writeFile(StringRef path,
                                function_ref<void(raw_ostream &)> write) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> file = openOutputFile(path, &error);
  if (!file)
    return emitError() << error;
  write(file->os());
  file->keep();
  return success();
}

LogicalResult
ModelLibraryCompiler::writeKernelDumps(ArrayRef<KernelDump> dumps) {
  for (const KernelDump &dump : dumps) {
    auto requested = options.kernelDumps.find(dump.kind);
    if (requested == options.kernelDumps.end())
      continue;
    if (failed(writeFile(getKernelDumpPath(dump, requested->second),
                         [&](raw_ostream &os) { os << dump.bytes; })))
      return failure();
  }
  return success();
}

LogicalResult ModelLibraryCompiler::lowerHost() {
  PassManager lowering(module.getContext());
  if (target.isHost())
    lowering.addPass(createConvertDecodeToHost());
  buildHostToLLVMPipeline(lowering);
  return lowering.run(module);
}

LogicalResult ModelLibraryCompiler::emitLibrary() {
  addLibraryGlobals(module, target.name, manifest);
  addKernelImageGlobals(module, images);
  if (!options.mlirPath.empty() &&
      failed(writeFile(options.mlirPath,
                       [&](raw_ostream &os) { module.print(os); })))
    return failure();
  HostLibraryOptions library;
  library.outputPath = options.outputPath;
  library.cpu = cpu;
  library.linker = options.linker;
  library.llvmIRPath = options.llvmIRPath;
  // A GPU library's host code is the step's launch sequence.
  library.optLevel = target.isHost() ? 3 : 1;
  return emitHostLibrary(module, library);
}

LogicalResult ModelLibraryCompiler::run() {
  if (failed(checkOptions()))
    return failure();
  FailureOr<decode::ModelOp> model = getModel();
  if (failed(model) || failed(placeWeights()) || failed(buildManifest(*model)))
    return failure();
  if (!target.isHost() &&
      (failed(generateKernels()) || failed(serializeKernels())))
    return failure();
  if (failed(lowerHost()))
    return failure();
  return emitLibrary();
}

LogicalResult target::compileModelLibrary(ModuleOp module,
                                          const CompileOptions &options) {
  return ModelLibraryCompiler(module, options).run();
}
