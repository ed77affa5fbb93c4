//===- CompileCommand.cpp - `fdc compile` ---------------------------------===//
//
// Model IR -> model library: the command line of fdc::target's compile
// pipeline (fdc/Target/Compile.h).
//
//===----------------------------------------------------------------------===//

#include "CompileCommand.h"

#include "fdc/Target/Compile.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;
namespace cl = llvm::cl;

namespace {
std::string fromEnv(const char *name, const std::string &otherwise) {
  const char *value = std::getenv(name);
  return value ? value : otherwise;
}

/// $ROCM_PATH/amdgcn/bitcode of a ROCm install, else Debian's
/// rocm-device-libs.
std::string defaultRocmDeviceLibs() {
  if (const char *rocm = std::getenv("ROCM_PATH"))
    return std::string(rocm) + "/amdgcn/bitcode";
  return "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";
}

struct CompileOptions {
  cl::OptionCategory category{"fdc compile options"};
  cl::opt<std::string> input{cl::Positional, cl::Required,
                             cl::desc("<model.mlir>"), cl::cat(category)};
  cl::opt<std::string> output{"o", cl::Required,
                              cl::desc("Output model library (.so)"),
                              cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> target{
      "target", cl::init("host"),
      cl::desc("Target: host, cuda:sm_XX[,sm_YY...] (PTX + cubins), or "
               "rocm:gfxNNN[,gfxMMM...] (one code object per arch)"),
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
      "cuda-path", cl::init(fromEnv("CUDA_HOME", "/usr/local/cuda")),
      cl::desc("CUDA toolkit (libdevice, ptxas) for cuda targets"),
      cl::cat(category)};
  cl::opt<std::string> rocmDeviceLibs{
      "rocm-device-libs", cl::init(defaultRocmDeviceLibs()),
      cl::desc("Directory of the ROCm device libraries (ocml.bc, ockl.bc) "
               "for rocm targets; default $ROCM_PATH/amdgcn/bitcode, else "
               "Debian's /usr/lib/x86_64-linux-gnu/amdgcn/bitcode"),
      cl::value_desc("dir"), cl::cat(category)};
  cl::opt<std::string> emitPTX{"emit-ptx",
                               cl::desc("Also write the kernels' PTX here "
                                        "(cuda targets)"),
                               cl::value_desc("file"), cl::cat(category)};
  cl::opt<std::string> emitAMDGPUISA{
      "emit-amdgpu-isa",
      cl::desc("Also write each arch's AMDGPU assembly to PREFIX.<arch>.s "
               "(rocm targets)"),
      cl::value_desc("prefix"), cl::cat(category)};
  cl::opt<std::string> emitHSACO{
      "emit-hsaco",
      cl::desc("Also write each arch's code object to PREFIX.<arch>.hsaco "
               "(rocm targets)"),
      cl::value_desc("prefix"), cl::cat(category)};
  cl::opt<std::string> linker{
      "linker", cl::desc("Compiler driver used to link"), cl::cat(category)};
  cl::opt<bool> tuningCandidates{
      "tuning-candidates",
      cl::desc("Build a tuning library for `fdc tune` (GPU targets): also "
               "export fdc_tune_launch, which launches every candidate "
               "kernel of every distinct decode.linear signature"),
      cl::cat(category)};
  cl::opt<std::string> tuning{
      "tuning",
      cl::desc("Use the measured dispatch tables of this tuning file (written "
               "by `fdc tune`) for the decode.linear ops it lists (GPU "
               "targets)"),
      cl::value_desc("file"), cl::cat(category)};
  cl::opt<int64_t> tensorParallel{
      "tensor-parallel",
      cl::desc("Compile one rank of a Megatron-style tensor-parallel group of "
               "N (column-parallel QKV and gate-up, row-parallel o_proj and "
               "down_proj with an all-reduce, the LM head split over the "
               "vocabulary); the runtime loads the library once per rank "
               "(rank r on CUDA device d + r, with NCCL) (default 1)"),
      cl::value_desc("N"), cl::init(1), cl::cat(category)};

  fdc::target::CompileOptions get() const {
    fdc::target::CompileOptions result;
    result.inputPath = input;
    result.outputPath = output;
    result.target = target;
    result.cpu = cpu;
    result.linker = linker;
    result.tuningCandidates = tuningCandidates;
    result.tuningFile = tuning;
    result.tensorParallel = tensorParallel;
    result.llvmIRPath = emitLLVM;
    result.mlirPath = emitMLIR;
    result.toolchain.cudaPath = cudaPath;
    result.toolchain.rocmDeviceLibsPath = rocmDeviceLibs;
    auto dump = [&](fdc::target::KernelDumpKind kind, const std::string &path) {
      if (!path.empty())
        result.kernelDumps[kind] = path;
    };
    dump(fdc::target::KernelDumpKind::PTX, emitPTX);
    dump(fdc::target::KernelDumpKind::AMDGPUAssembly, emitAMDGPUISA);
    dump(fdc::target::KernelDumpKind::HSACO, emitHSACO);
    return result;
  }
};
} // namespace

int fdc::compileMain(int argc, char **argv) {
  CompileOptions options;
  cl::HideUnrelatedOptions(options.category);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "fdc compile: model IR -> AOT model library\n\n"
          "  fdc compile model.mlir --target=host -o model.so\n"
          "  fdc compile model.mlir --target=cuda:sm_90,sm_80 -o model.so\n"
          "  fdc compile model.mlir --target=rocm:gfx90a,gfx942 -o model.so\n",
          &llvm::errs()))
    return 2;

  DialectRegistry registry;
  target::registerCompileDialects(registry);
  MLIRContext context(registry);
  return failed(target::compileModelLibraryFile(context, options.get())) ? 1
                                                                         : 0;
}
