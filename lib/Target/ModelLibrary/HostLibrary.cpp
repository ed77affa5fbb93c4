//===- HostLibrary.cpp - LLVM dialect to a host shared object -------------===//

#include "fdc/Target/ModelLibrary.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace fdc;

namespace {
/// A compiler driver that can link a shared object: FDC_LINKER, then the
/// first of clang-22, clang, cc, gcc on PATH.
FailureOr<std::string> findLinker(StringRef requested, Location loc) {
  if (!requested.empty())
    return requested.str();
  if (const char *fromEnv = std::getenv("FDC_LINKER"))
    return std::string(fromEnv);
  for (StringRef name : {"clang-22", "clang", "cc", "gcc"}) {
    if (llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(name))
      return *path;
  }
  return emitError(loc) << "no compiler driver to link the model library: "
                           "install clang or gcc, or set FDC_LINKER";
}
/// The LLVM target of this machine (the host library's target).
FailureOr<const llvm::Target *> lookupHostTarget(const llvm::Triple &triple,
                                                 Location loc) {
  llvm::InitializeNativeTarget();
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return emitError(loc) << "no LLVM target for " << triple.str() << ": "
                          << error;
  return target;
}
} // namespace

FailureOr<std::string> target::resolveHostCPU(StringRef requested,
                                              Location loc) {
  std::string cpu = requested == "native" ? llvm::sys::getHostCPUName().str()
                                          : requested.str();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  FailureOr<const llvm::Target *> target = lookupHostTarget(triple, loc);
  if (failed(target))
    return failure();
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      (*target)->createMCSubtargetInfo(triple, "", ""));
  if (!subtarget || !subtarget->isCPUStringValid(cpu)) {
    InFlightDiagnostic diag = emitError(loc) << "unknown CPU '" << cpu << "'";
    if (requested == "native")
      diag << " (the host CPU, from --cpu=native)";
    diag << " for " << triple.str()
         << "; use --cpu=generic, --cpu=native or a CPU name LLVM knows "
            "(llc -mcpu=help lists them)";
    return diag;
  }
  return cpu;
}

LogicalResult target::emitHostLibrary(ModuleOp module,
                                      const HostLibraryOptions &options) {
  Location loc = module.getLoc();
  FailureOr<std::string> cpu = resolveHostCPU(options.cpu, loc);
  if (failed(cpu))
    return failure();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  FailureOr<const llvm::Target *> llvmTarget = lookupHostTarget(triple, loc);
  if (failed(llvmTarget))
    return failure();
  std::unique_ptr<llvm::TargetMachine> machine(
      (*llvmTarget)
          ->createTargetMachine(
              triple, *cpu, /*Features=*/"", llvm::TargetOptions(),
              llvm::Reloc::PIC_, std::nullopt,
              options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                                    : llvm::CodeGenOptLevel::Less));
  if (!machine)
    return emitError(loc) << "cannot create a target machine for "
                          << triple.str() << " (cpu '" << *cpu << "')";

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "fdc_model");
  if (!llvmModule)
    return emitError(loc) << "translation to LLVM IR failed";
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());

  auto optimize = makeOptimizingTransformer(options.optLevel, /*sizeLevel=*/0,
                                            machine.get());
  if (llvm::Error err = optimize(llvmModule.get())) {
    std::string message = llvm::toString(std::move(err));
    return emitError(loc) << "LLVM optimisation failed: " << message;
  }

  if (!options.llvmIRPath.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.llvmIRPath, ec);
    if (ec)
      return emitError(loc)
             << "cannot write " << options.llvmIRPath << ": " << ec.message();
    llvmModule->print(os, nullptr);
  }

  SmallString<128> objectPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("fdc-model", "o", objectPath))
    return emitError(loc) << "cannot create a temporary object file: "
                          << ec.message();
  llvm::FileRemover removeObject(objectPath);
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objectPath, ec);
    if (ec)
      return emitError(loc)
             << "cannot write " << objectPath << ": " << ec.message();
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, os, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return emitError(loc)
             << "the " << triple.str() << " back end cannot emit object files";
    codegen.run(*llvmModule);
  }

  FailureOr<std::string> linker = findLinker(options.linker, loc);
  if (failed(linker))
    return failure();
  // -z defs: a symbol nothing provides fails the link here, not the load on
  // the user's machine. The back end calls compiler builtins the system's
  // libgcc may lack (Debian 12's has no __truncsfbf2, which bf16 vector code
  // needs): with clang, compiler-rt's builtins are linked into the library.
  SmallVector<StringRef> argv = {*linker, "-shared",          "-Wl,-z,defs",
                                 "-o",    options.outputPath, objectPath,
                                 "-lm"};
  if (llvm::sys::path::filename(*linker).starts_with("clang"))
    argv.push_back("--rtlib=compiler-rt");
  std::string linkError;
  int status = llvm::sys::ExecuteAndWait(*linker, argv, std::nullopt, {},
                                         /*SecondsToWait=*/0,
                                         /*MemoryLimit=*/0, &linkError);
  if (status != 0)
    return emitError(loc) << "linking " << options.outputPath << " with "
                          << *linker << " failed (status " << status << ")"
                          << (linkError.empty() ? "" : ": ") << linkError;
  return success();
}
