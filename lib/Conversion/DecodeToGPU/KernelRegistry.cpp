//===- KernelRegistry.cpp - the GPU kernel families -----------------------===//

#include "KernelRegistry.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

StepBuffers::~StepBuffers() = default;
KernelFamily::~KernelFamily() = default;

int64_t KernelConfig::get(StringRef name) const {
  auto value = entries.getAs<IntegerAttr>(name);
  assert(value && "a config entry the family did not declare");
  return value.getInt();
}

LogicalResult KernelFamily::verifyConfig(Operation *, const KernelConfig &,
                                         const GpuPrimitives &) const {
  return success();
}

LogicalResult KernelFamily::checkThreads(Operation *op,
                                         const KernelConfig &config,
                                         StringRef name,
                                         const GpuPrimitives &target) {
  int64_t threads = config.get(name);
  int64_t subgroup = target.subgroupSize();
  int64_t limit = target.target().getMaxWorkgroupSize();
  if (threads < subgroup || threads % subgroup != 0 || threads > limit)
    return op->emitOpError() << "kernel config " << name << " = " << threads
                             << " must be a multiple of the subgroup size "
                             << subgroup << " in [" << subgroup << ", " << limit
                             << "] on " << target.target().getArch().getValue();
  return success();
}

LogicalResult KernelFamily::checkVectorBytes(Operation *op,
                                             const KernelConfig &config,
                                             StringRef name,
                                             const GpuPrimitives &target) {
  int64_t bytes = config.get(name);
  if (!llvm::isPowerOf2_64(bytes) || bytes > target.vectorBytes())
    return op->emitOpError()
           << "kernel config " << name << " = " << bytes
           << " must be a power of two of at most " << target.vectorBytes();
  return success();
}

DictionaryAttr BlockSizeFamily::getDefaultConfig(Operation *op,
                                                 const GpuPrimitives &) const {
  return makeConfig(op->getContext(), {{"threads", 256}});
}

LogicalResult BlockSizeFamily::verifyConfig(Operation *op,
                                            const KernelConfig &config,
                                            const GpuPrimitives &target) const {
  return checkThreads(op, config, "threads", target);
}

LogicalResult KernelFamily::checkRange(Operation *op,
                                       const KernelConfig &config,
                                       StringRef name, int64_t lo, int64_t hi) {
  int64_t value = config.get(name);
  if (value < lo || value > hi)
    return op->emitOpError() << "kernel config " << name << " = " << value
                             << " is outside [" << lo << ", " << hi << "]";
  return success();
}

DictionaryAttr
KernelFamily::makeConfig(MLIRContext *context,
                         ArrayRef<std::pair<StringRef, int64_t>> entries) {
  Builder b(context);
  SmallVector<NamedAttribute> attrs;
  for (auto [name, value] : entries)
    attrs.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(value)));
  return b.getDictionaryAttr(attrs);
}

KernelRegistry::KernelRegistry() {
  families.push_back(createEmbeddingFamily());
  families.push_back(createRMSNormFamily());
  families.push_back(createGemvFamily());
  families.push_back(createSparseRowScanFamily());
  families.push_back(createRopeFamily());
  families.push_back(createKVAppendFamily());
  families.push_back(createSplitKVAttentionFamily());
  families.push_back(createArgmaxFamily());
  families.push_back(createSampleFamily());
}

const KernelRegistry &KernelRegistry::get() {
  static const KernelRegistry registry;
  return registry;
}

const KernelFamily *KernelRegistry::lookup(StringRef name) const {
  for (const std::unique_ptr<KernelFamily> &family : families)
    if (family->getName() == name)
      return family.get();
  return nullptr;
}

const KernelFamily *KernelRegistry::select(Operation *op) const {
  for (const std::unique_ptr<KernelFamily> &family : families)
    if (family->canLower(op))
      return family.get();
  return nullptr;
}

SmallVector<StringRef> KernelRegistry::getFamilyNames() const {
  SmallVector<StringRef> names;
  for (const std::unique_ptr<KernelFamily> &family : families)
    names.push_back(family->getName());
  return names;
}

FailureOr<decode::KernelAttr>
fdc::gpu::resolveKernel(Operation *op, const GpuPrimitives &target) {
  const KernelRegistry &registry = KernelRegistry::get();
  MLIRContext *context = op->getContext();
  StringRef attrName = decode::KernelAttr::getOpAttrName();
  Attribute attr = op->getAttr(attrName);
  if (!attr) {
    const KernelFamily *family = registry.select(op);
    if (!family)
      return decode::KernelAttr();
    return decode::KernelAttr::get(context,
                                   StringAttr::get(context, family->getName()),
                                   family->getDefaultConfig(op, target));
  }
  auto kernel = dyn_cast<decode::KernelAttr>(attr);
  if (!kernel)
    return op->emitOpError()
           << "'" << attrName << "' must be a #decode.kernel, got " << attr;
  StringRef name = kernel.getFamily().getValue();
  const KernelFamily *family = registry.lookup(name);
  if (!family)
    return op->emitOpError()
           << "names unknown kernel family '" << name << "'; known families: "
           << llvm::join(registry.getFamilyNames(), ", ");
  if (!family->canLower(op))
    return op->emitOpError()
           << "cannot be lowered by kernel family '" << name << "'";
  DictionaryAttr defaults = family->getDefaultConfig(op, target);
  NamedAttrList merged(defaults);
  for (NamedAttribute entry : kernel.getConfig()) {
    if (!defaults.contains(entry.getName())) {
      SmallVector<StringRef> known;
      for (NamedAttribute d : defaults)
        known.push_back(d.getName().getValue());
      return op->emitOpError()
             << "kernel config entry '" << entry.getName().getValue()
             << "' is not one of " << name
             << "'s: " << (known.empty() ? "(none)" : llvm::join(known, ", "));
    }
    if (!isa<IntegerAttr>(entry.getValue()))
      return op->emitOpError()
             << "kernel config entry '" << entry.getName().getValue()
             << "' must be an integer, got " << entry.getValue();
    merged.set(entry.getName(),
               IntegerAttr::get(IntegerType::get(context, 64),
                                cast<IntegerAttr>(entry.getValue()).getInt()));
  }
  DictionaryAttr complete = merged.getDictionary(context);
  if (failed(family->verifyConfig(op, KernelConfig(complete), target)))
    return failure();
  return decode::KernelAttr::get(context, kernel.getFamily(), complete);
}
