//===- ModelLibrary.cpp - Loading a compiled model library ----------------===//

#include "fdc/runtime/ModelLibrary.h"

#include "fdc/runtime/MappedFile.h"
#include "fdc/runtime/cuda/CudaBackend.h"
#include "fdc/runtime/cuda/CudaTarget.h"
#include "fdc/runtime/hip/HipBackend.h"
#include "fdc/runtime/hip/HipTarget.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

using namespace fdc::runtime;

const std::vector<std::string> &fdc::runtime::supportedTargets() {
  static const std::vector<std::string> targets = [] {
    std::vector<std::string> list = {"host"};
    if (cuda::backendAvailable())
      list.push_back("cuda:sm_XX[,sm_YY...]");
    if (hip::backendAvailable())
      list.push_back("rocm:gfxXXX[,gfxYYY...]");
    return list;
  }();
  return targets;
}

bool fdc::runtime::isSupportedTarget(const std::string &target) {
  if (target == "host")
    return true;
  if (cuda::isCudaTarget(target))
    return cuda::backendAvailable() &&
           static_cast<bool>(cuda::parseCudaTarget(target));
  if (hip::isHipTarget(target))
    return hip::backendAvailable() &&
           static_cast<bool>(hip::parseHipTarget(target));
  return false;
}

bool ModelLibrary::isCuda() const { return cuda::isCudaTarget(targetName); }

bool ModelLibrary::isRocm() const { return hip::isHipTarget(targetName); }

const void *ModelLibrary::symbol(const char *name) const {
  ::dlerror();
  void *address = ::dlsym(handle, name);
  if (::dlerror())
    return nullptr;
  return address;
}

namespace {
/// The size of the dynamic symbol at `address`, or 0 when unknown.
size_t symbolSize(const void *address) {
  Dl_info info;
  void *entry = nullptr;
  if (::dladdr1(address, &info, &entry, RTLD_DL_SYMENT) == 0 || !entry)
    return 0;
  return static_cast<size_t>(static_cast<const ElfW(Sym) *>(entry)->st_size);
}

std::string joinTargets() {
  std::string joined;
  for (const std::string &target : supportedTargets())
    joined += (joined.empty() ? "" : ", ") + target;
  return joined;
}

/// Why a runtime without the backend for `target` refuses it, or "".
const char *missingBackendNote(const std::string &target) {
  if (cuda::isCudaTarget(target) && !cuda::backendAvailable())
    return " (it was built without the CUDA backend: cuda.h was not found, "
           "or FDC_RUNTIME_CUDA=OFF)";
  if (hip::isHipTarget(target) && !hip::backendAvailable())
    return " (it was built without the HIP backend: hip/hip_runtime_api.h "
           "was not found, or FDC_RUNTIME_HIP=OFF)";
  return "";
}

/// A GPU target of a backend this runtime has must parse.
Error checkTargetSyntax(const std::string &target) {
  if (cuda::isCudaTarget(target) && cuda::backendAvailable()) {
    Expected<cuda::CudaTarget> parsed = cuda::parseCudaTarget(target);
    if (!parsed)
      return parsed.takeError();
  }
  if (hip::isHipTarget(target) && hip::backendAvailable()) {
    Expected<hip::HipTarget> parsed = hip::parseHipTarget(target);
    if (!parsed)
      return parsed.takeError();
  }
  return Error::success();
}

/// A bounded strlen: a target name longer than this is garbage.
constexpr size_t kMaxTargetLength = 256;

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#elif defined(__powerpc64__)
constexpr uint16_t kHostMachine = EM_PPC64;
#elif defined(__riscv) && __riscv_xlen == 64
constexpr uint16_t kHostMachine = EM_RISCV;
#else
#error "unknown host ELF machine"
#endif

/// Reads exactly `size` bytes at `offset`; false on a short read.
bool readAt(int fd, void *buffer, size_t size, uint64_t offset) {
  auto *bytes = static_cast<uint8_t *>(buffer);
  while (size > 0) {
    ssize_t n = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes += n;
    size -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

/// Whether [offset, offset + count * entrySize) lies inside `fileSize`
/// bytes, without overflow.
bool fits(uint64_t offset, uint64_t count, uint64_t entrySize,
          uint64_t fileSize) {
  if (entrySize != 0 && count > UINT64_MAX / entrySize)
    return false;
  uint64_t bytes = count * entrySize;
  return offset <= fileSize && bytes <= fileSize - offset;
}
/// A kernel image in memory: a 64-bit little-endian ELF for `machine` whose
/// header tables and segments lie inside its `size` bytes.
Error checkElfImage(const void *data, uint64_t size, uint16_t machine) {
  Elf64_Ehdr header;
  if (size < sizeof(header))
    return createError("it is ", size, " bytes, less than an ELF header");
  std::memcpy(&header, data, sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0)
    return createError("bad ELF magic");
  if (header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_ident[EI_DATA] != ELFDATA2LSB)
    return createError("not a 64-bit little-endian ELF");
  if (header.e_machine != machine)
    return createError("ELF machine ", header.e_machine, ", expected ",
                       machine);
  if (header.e_phnum != 0 &&
      (header.e_phentsize != sizeof(Elf64_Phdr) ||
       !fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size)))
    return createError("the program header table lies outside its ", size,
                       " bytes");
  if (header.e_shoff != 0 &&
      (header.e_shentsize != sizeof(Elf64_Shdr) ||
       !fits(header.e_shoff, header.e_shnum == 0 ? 1 : header.e_shnum,
             sizeof(Elf64_Shdr), size)))
    return createError("the section header table lies outside its ", size,
                       " bytes");
  const char *bytes = static_cast<const char *>(data);
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, bytes + header.e_phoff + i * sizeof(Elf64_Phdr),
                sizeof(segment));
    if (!fits(segment.p_offset, 1, segment.p_filesz, size))
      return createError("segment ", i, " lies outside its ", size, " bytes");
  }
  for (uint16_t i = 0; header.e_shoff != 0 && i < header.e_shnum; ++i) {
    Elf64_Shdr section;
    std::memcpy(&section, bytes + header.e_shoff + i * sizeof(Elf64_Shdr),
                sizeof(section));
    if (section.sh_type != SHT_NOBITS &&
        !fits(section.sh_offset, 1, section.sh_size, size))
      return createError("section ", i, " lies outside its ", size, " bytes");
  }
  return Error::success();
}

} // namespace

Error fdc::runtime::checkSharedObject(const std::string &path) {
  Expected<RegularFile> file = openRegularFile(path);
  if (!file)
    return file.takeError();
  uint64_t size = file->size;
  int fd = file->fd.get();
  auto truncated = [&](const auto &what, uint64_t offset, uint64_t bytes) {
    return createError("the file is truncated: ", what, " at byte ", offset,
                       " needs ", bytes, " bytes but the file has ", size,
                       " bytes");
  };
  unsigned char magic[SELFMAG];
  if (size < SELFMAG || !readAt(fd, magic, SELFMAG, 0) ||
      std::memcmp(magic, ELFMAG, SELFMAG) != 0)
    return createError("not an ELF file (bad magic)");
  Elf64_Ehdr header;
  if (size < sizeof(header))
    return truncated("the ELF header", 0, sizeof(header));
  if (!readAt(fd, &header, sizeof(header), 0))
    return createError("cannot read the ELF header: ", std::strerror(errno));
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    return createError("not a 64-bit ELF file (class ",
                       int(header.e_ident[EI_CLASS]), ")");
  uint16_t one = 1;
  bool littleEndian = *reinterpret_cast<uint8_t *>(&one) == 1;
  if (header.e_ident[EI_DATA] != (littleEndian ? ELFDATA2LSB : ELFDATA2MSB))
    return createError("the ELF file is not ", littleEndian ? "little" : "big",
                       " endian like this host");
  if (header.e_type != ET_DYN)
    return createError("not a shared object (ELF type ", header.e_type, ")");
  if (header.e_machine != kHostMachine)
    return createError("built for ELF machine ", header.e_machine,
                       ", this host is ", kHostMachine);
  if (header.e_phnum == 0 || header.e_phentsize != sizeof(Elf64_Phdr))
    return createError("the ELF program header table is malformed (",
                       header.e_phnum, " entries of ", header.e_phentsize,
                       " bytes)");
  if (!fits(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
    return truncated("the program header table", header.e_phoff,
                     header.e_phnum * sizeof(Elf64_Phdr));
  if (header.e_shoff != 0) {
    // e_shnum 0 with a table means more than 0xff00 sections; the table then
    // has at least its entry 0.
    uint64_t sections = header.e_shnum == 0 ? 1 : header.e_shnum;
    if (header.e_shentsize != sizeof(Elf64_Shdr))
      return createError("the ELF section header table is malformed (",
                         "entries of ", header.e_shentsize, " bytes)");
    if (!fits(header.e_shoff, sections, sizeof(Elf64_Shdr), size))
      return truncated("the section header table", header.e_shoff,
                       sections * sizeof(Elf64_Shdr));
  }
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!readAt(fd, segments.data(), segments.size() * sizeof(Elf64_Phdr),
              header.e_phoff))
    return createError("cannot read the ELF program headers");
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr &segment = segments[i];
    if (segment.p_type != PT_LOAD && segment.p_type != PT_DYNAMIC)
      continue;
    if (!fits(segment.p_offset, 1, segment.p_filesz, size))
      return truncated(
          concat(segment.p_type == PT_LOAD ? "loadable" : "dynamic",
                 " segment ", i),
          segment.p_offset, segment.p_filesz);
  }
  return Error::success();
}

Expected<std::unique_ptr<ModelLibrary>>
ModelLibrary::open(const std::string &path) {
  std::unique_ptr<ModelLibrary> library(new ModelLibrary());
  library->libraryPath = path;
  // dlopen maps what the ELF headers describe: a truncated file would fault
  // (SIGBUS) inside the loader, and a FIFO would hang it.
  if (Error err = checkSharedObject(path))
    return createError("cannot load model library ", path, ": ", err.message());
  // Without a '/', dlopen would search the library path instead of the file.
  std::string openPath =
      path.find('/') == std::string::npos ? "./" + path : path;
  ::dlerror();
  library->handle = ::dlopen(openPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library->handle) {
    const char *reason = ::dlerror();
    return createError("cannot load model library ", path, ": ",
                       reason ? reason : "unknown dlopen error");
  }
  auto lookup = [&](const char *symbol) -> Expected<void *> {
    ::dlerror();
    void *address = ::dlsym(library->handle, symbol);
    if (!address || ::dlerror())
      return createError("model library ", path, " lacks symbol ", symbol);
    return address;
  };

  Expected<void *> abi = lookup("fdc_abi_version");
  if (!abi)
    return abi.takeError();
  uint32_t abiVersion = *static_cast<const uint32_t *>(*abi);
  if (abiVersion != kSupportedAbiVersion)
    return createError("model library ", path, " was built for ABI version ",
                       abiVersion, ", this runtime supports ",
                       kSupportedAbiVersion);

  Expected<void *> target = lookup("fdc_target");
  if (!target)
    return target.takeError();
  const char *targetText = static_cast<const char *>(*target);
  size_t targetLength = ::strnlen(targetText, kMaxTargetLength);
  if (targetLength == kMaxTargetLength)
    return createError("model library ", path,
                       ": fdc_target is not a short NUL-terminated string");
  library->targetName.assign(targetText, targetLength);
  if (Error err = checkTargetSyntax(library->targetName))
    return createError("model library ", path, ": ", err.message());
  if (!isSupportedTarget(library->targetName))
    return createError("model library ", path, " targets '",
                       library->targetName,
                       "'; this runtime runs: ", joinTargets(),
                       missingBackendNote(library->targetName));
  if (library->isRocm())
    if (Error err = library->checkCodeObjects())
      return err;

  Expected<void *> manifest = lookup("fdc_manifest");
  if (!manifest)
    return manifest.takeError();
  library->rawManifest = static_cast<const char *>(*manifest);
  // Read no further than the symbol's own size, when the loader knows it.
  size_t manifestLength;
  if (size_t symbolBytes = symbolSize(library->rawManifest)) {
    manifestLength = ::strnlen(library->rawManifest, symbolBytes);
    if (manifestLength == symbolBytes)
      return createError("model library ", path,
                         ": fdc_manifest is not NUL-terminated");
  } else {
    manifestLength = std::strlen(library->rawManifest);
  }
  std::string_view manifestText(library->rawManifest, manifestLength);
  // The hash first: an edited manifest is named as such, whatever the edit
  // did to its JSON.
  Expected<void *> hash = lookup("fdc_manifest_hash");
  if (!hash)
    return hash.takeError();
  if (*static_cast<const uint64_t *>(*hash) !=
      fdc_manifest_hash_of(manifestText.data(), manifestText.size()))
    return createError("model library ", path,
                       ": the manifest does not match the library (it was "
                       "edited after compilation)");
  Expected<Manifest> parsed =
      Manifest::parse(manifestText, "model library " + path);
  if (!parsed)
    return parsed.takeError();
  library->parsedManifest = std::move(*parsed);
  const Manifest &m = library->parsedManifest;
  if (m.abiVersion != static_cast<int64_t>(abiVersion))
    return createError("model library ", path, ": manifest says ABI version ",
                       m.abiVersion, " but fdc_abi_version is ", abiVersion);
  if (m.target != library->targetName)
    return createError("model library ", path, ": manifest says target '",
                       m.target, "' but fdc_target is '", library->targetName,
                       "'");
  Expected<void *> step = lookup("fdc_model_step");
  if (!step)
    return step.takeError();
  library->step = reinterpret_cast<FdcModelStepFn>(*step);
  return library;
}

Error ModelLibrary::checkCodeObjects() const {
  Expected<hip::HipTarget> target = hip::parseHipTarget(targetName);
  if (!target)
    return target.takeError();
  for (const std::string &arch : target->archs) {
    std::string image = hip::hsacoSymbol(arch);
    if (!symbol(image.c_str()))
      return createError("model library ", libraryPath, " lacks symbol ", image,
                         " (its target '", targetName, "' lists ", arch, ")");
    if (Expected<KernelImage> checked = kernelImage(image, kElfMachineAMDGPU);
        !checked)
      return checked.takeError();
  }
  return Error::success();
}

Expected<ModelLibrary::KernelImage>
ModelLibrary::kernelImage(const std::string &name, uint16_t elfMachine) const {
  std::string sizeName = name + "_size";
  auto bad = [&](auto &&...what) {
    return createError("model library ", libraryPath, ": ", what...);
  };
  const void *data = symbol(name.c_str());
  if (!data)
    return bad("lacks symbol ", name);
  const void *sizeSymbol = symbol(sizeName.c_str());
  if (!sizeSymbol)
    return bad("lacks symbol ", sizeName, " (the size of ", name, ")");
  if (size_t known = symbolSize(sizeSymbol); known != 0 && known < 8)
    return bad(sizeName, " is ", known, " bytes, not a uint64_t");
  uint64_t bytes;
  std::memcpy(&bytes, sizeSymbol, sizeof(bytes));
  if (bytes == 0)
    return bad(sizeName, " is 0 (an empty kernel image ", name, ")");
  if (size_t known = symbolSize(data); known != 0 && bytes > known)
    return bad(sizeName, " says ", bytes, " bytes but ", name, " has ", known);
  if (Error err = checkElfImage(data, bytes, elfMachine))
    return bad(name, " is not a kernel image: ", err.message());
  return KernelImage{data, bytes};
}

ModelLibrary::~ModelLibrary() {
  if (handle)
    ::dlclose(handle);
}
