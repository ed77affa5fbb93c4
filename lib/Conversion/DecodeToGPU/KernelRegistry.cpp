//===- KernelRegistry.cpp - the GPU kernel families -----------------------===//

#include "KernelRegistry.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
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
                                             const GpuPrimitives &target,
                                             Type element) {
  int64_t bytes = config.get(name);
  int64_t elementBytes = std::max<int64_t>(
      1, getElementTypeOrSelf(element).getIntOrFloatBitWidth() / 8);
  if (bytes <= 0 || !llvm::isPowerOf2_64(bytes) || bytes < elementBytes ||
      bytes > target.vectorBytes())
    return op->emitOpError()
           << "kernel config " << name << " = " << bytes
           << " must be a power of two in [" << elementBytes << ", "
           << target.vectorBytes() << "] (" << getElementTypeOrSelf(element)
           << " elements, the target's widest load)";
  return success();
}

DictionaryAttr
BlockSizeFamily::getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const {
  int64_t threads = defaultThreads == kMaxWorkgroup
                        ? target.target().getMaxWorkgroupSize()
                        : defaultThreads;
  return makeConfig(op->getContext(), {{"threads", threads}});
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
  families.push_back(createFlatGemmFamily());
  families.push_back(createTiledGemmFamily());
  families.push_back(createGroupGemmFamily());
  families.push_back(createSparseRowScanFamily());
  families.push_back(createFlashSpmmFamily());
  families.push_back(createGroupSpmmFamily());
  families.push_back(createRopeFamily());
  families.push_back(createKVAppendFamily());
  families.push_back(createSplitKVAttentionFamily());
  families.push_back(createGqaAttentionFamily());
  families.push_back(createArgmaxFamily());
  families.push_back(createSampleFamily());
  families.push_back(createAllReduceFamily());
  families.push_back(createAllGatherFamily());
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
fdc::gpu::completeKernel(Operation *op, decode::KernelAttr kernel,
                         const GpuPrimitives &target) {
  const KernelRegistry &registry = KernelRegistry::get();
  MLIRContext *context = op->getContext();
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
    auto integer = dyn_cast<IntegerAttr>(entry.getValue());
    if (!integer || !integer.getType().isSignlessInteger())
      return op->emitOpError()
             << "kernel config entry '" << entry.getName().getValue()
             << "' must be a signless integer, got " << entry.getValue();
    merged.set(entry.getName(),
               IntegerAttr::get(IntegerType::get(context, 64),
                                cast<IntegerAttr>(entry.getValue()).getInt()));
  }
  DictionaryAttr complete = merged.getDictionary(context);
  if (failed(family->verifyConfig(op, KernelConfig(complete), target)))
    return failure();
  return decode::KernelAttr::get(context, kernel.getFamily(), complete);
}

bool fdc::gpu::isModelWeight(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (isa<decode::WeightRefOp>(def))
      return true;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def))
      value = expand.getSrc();
    else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def))
      value = collapse.getSrc();
    else
      return false;
  }
  return false;
}

FailureOr<Attribute> fdc::gpu::resolveKernels(Operation *op,
                                              const GpuPrimitives &target) {
  StringRef attrName = decode::KernelAttr::getOpAttrName();
  Attribute attr = op->getAttr(attrName);
  if (!attr) {
    if (auto linear = dyn_cast<decode::LinearOp>(op))
      if (std::optional<decode::KernelDispatchAttr> dispatch =
              getDefaultLinearDispatch(linear, target))
        attr = *dispatch;
    if (auto sparse = dyn_cast<decode::SparseLinearOp>(op))
      if (std::optional<decode::KernelDispatchAttr> dispatch =
              getDefaultSparseLinearDispatch(sparse, target))
        attr = *dispatch;
    if (auto attention = dyn_cast<decode::AttentionOp>(op))
      if (std::optional<decode::KernelAttr> kernel =
              getDefaultAttentionKernel(attention, target))
        attr = *kernel;
  }
  if (!attr) {
    const KernelFamily *family = KernelRegistry::get().select(op);
    if (!family)
      return Attribute();
    MLIRContext *context = op->getContext();
    return Attribute(decode::KernelAttr::get(
        context, StringAttr::get(context, family->getName()),
        family->getDefaultConfig(op, target)));
  }
  if (auto kernel = dyn_cast<decode::KernelAttr>(attr)) {
    FailureOr<decode::KernelAttr> complete = completeKernel(op, kernel, target);
    if (failed(complete))
      return failure();
    return Attribute(*complete);
  }
  if (auto dispatch = dyn_cast<decode::KernelDispatchAttr>(attr)) {
    // The step places a dispatched op's scratch once for all its kernels,
    // which the linear families' kernels share; other ops' kernels place
    // their own.
    if (!isa<decode::LinearOp, decode::SparseLinearOp>(op))
      return op->emitOpError()
             << "'" << attrName
             << "' is a #decode.dispatch, which chooses the kernels of "
                "decode.linear and decode.sparse_linear only: give it one "
                "#decode.kernel";
    SmallVector<Attribute> kernels;
    for (decode::KernelAttr kernel : dispatch.getKernelList()) {
      FailureOr<decode::KernelAttr> complete =
          completeKernel(op, kernel, target);
      if (failed(complete))
        return failure();
      kernels.push_back(*complete);
    }
    return Attribute(decode::KernelDispatchAttr::get(
        op->getContext(), dispatch.getMaxBatch(),
        ArrayAttr::get(op->getContext(), kernels)));
  }
  return op->emitOpError() << "'" << attrName
                           << "' must be a #decode.kernel or a "
                              "#decode.dispatch, got "
                           << attr;
}
