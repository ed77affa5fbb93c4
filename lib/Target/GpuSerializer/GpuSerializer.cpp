//===- GpuSerializer.cpp - the GPU platforms and the serialiser factory ---===//
//
// The one place that knows every vendor: the platforms of target strings and
// the serialiser of each vendor. Adding a vendor is one entry here and one
// folder beside lib/Target/NVPTX.
//
//===----------------------------------------------------------------------===//

#include "fdc/Target/GpuSerializer.h"
#include "fdc/Target/AMDGPU/AMDGPUSerializer.h"
#include "fdc/Target/NVPTX/NVPTXSerializer.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::target;

namespace {
const GpuPlatform kPlatforms[] = {
    {"cuda", "CUDA", decode::GpuVendor::nvidia, "cuda:sm_XX[,sm_YY...]",
     nvptx::checkArch},
    {"rocm", "ROCm", decode::GpuVendor::amd, "rocm:gfxNNN[,gfxMMM...]",
     amdgpu::checkArch},
};

struct KernelDumpInfo {
  KernelDumpKind kind;
  StringRef option;
  StringRef extension;
};
const KernelDumpInfo kDumpInfo[] = {
    {KernelDumpKind::PTX, "emit-ptx", ".ptx"},
    {KernelDumpKind::AMDGPUAssembly, "emit-amdgpu-isa", ".s"},
    {KernelDumpKind::HSACO, "emit-hsaco", ".hsaco"},
};

const KernelDumpInfo &getDumpInfo(KernelDumpKind kind) {
  for (const KernelDumpInfo &info : kDumpInfo)
    if (info.kind == kind)
      return info;
  llvm_unreachable("a kernel dump kind without an entry");
}
} // namespace

StringRef target::getKernelDumpOption(KernelDumpKind kind) {
  return getDumpInfo(kind).option;
}

std::string target::getKernelDumpPath(const KernelDump &dump, StringRef path) {
  if (dump.arch.empty())
    return path.str();
  return (path + "." + dump.arch + getDumpInfo(dump.kind).extension).str();
}

ArrayRef<GpuPlatform> target::getGpuPlatforms() { return kPlatforms; }

const GpuPlatform *target::lookupGpuPlatform(StringRef name) {
  for (const GpuPlatform &platform : kPlatforms)
    if (platform.name == name)
      return &platform;
  return nullptr;
}

std::unique_ptr<GpuSerializer>
target::createGpuSerializer(decode::GpuVendor vendor,
                            const GpuToolchainOptions &options) {
  switch (vendor) {
  case decode::GpuVendor::nvidia:
    return nvptx::createSerializer(options);
  case decode::GpuVendor::amd:
    return amdgpu::createSerializer(options);
  }
  llvm_unreachable("a GPU vendor without a serialiser");
}

void target::registerGpuKernelPipelines() {
  nvptx::registerKernelPipeline();
  amdgpu::registerKernelPipeline();
}
