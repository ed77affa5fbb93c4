//===- GpuPrimitives.cpp - target-neutral GPU building blocks -------------===//

#include "GpuPrimitives.h"

#include "fdc/Dialect/Decode/IR/KnownTargets.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/ErrorHandling.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

GpuPrimitives::~GpuPrimitives() = default;

std::unique_ptr<GpuPrimitives>
GpuPrimitives::create(decode::GpuTargetAttr target) {
  switch (target.getVendor()) {
  case decode::GpuVendor::nvidia:
    return createNVVMPrimitives(target);
  case decode::GpuVendor::amd:
    return createROCDLPrimitives(target);
  }
  llvm_unreachable("unknown GPU vendor");
}

Value GpuPrimitives::shuffleXor(ImplicitLocOpBuilder &b, Value value,
                                int64_t offset) const {
  return mlir::gpu::ShuffleOp::create(b, value, offset, subgroupSize(),
                                      mlir::gpu::ShuffleMode::XOR)
      .getShuffleResult();
}

Value GpuPrimitives::perElement(ImplicitLocOpBuilder &b, Value value,
                                function_ref<Value(Value)> scalar) {
  auto vectorType = dyn_cast<VectorType>(value.getType());
  if (!vectorType)
    return scalar(value);
  SmallVector<Value> elements;
  for (int64_t i = 0; i < vectorType.getNumElements(); ++i) {
    Value element = vector::ExtractOp::create(b, value, i);
    elements.push_back(scalar(element));
  }
  return vector::FromElementsOp::create(b, vectorType, elements);
}

Value GpuPrimitives::exp2(ImplicitLocOpBuilder &b, Value x) const {
  return math::Exp2Op::create(b, x);
}

Value GpuPrimitives::maskOr(ImplicitLocOpBuilder &b, Value value, uint32_t mask,
                            uint32_t bits) const {
  auto constant = [&](uint32_t pattern) -> Value {
    Attribute word = b.getI32IntegerAttr(static_cast<int32_t>(pattern));
    if (auto vector = dyn_cast<VectorType>(value.getType()))
      return arith::ConstantOp::create(b, vector,
                                       DenseElementsAttr::get(vector, word));
    return arith::ConstantOp::create(b, cast<TypedAttr>(word));
  };
  Value maskValue = constant(mask);
  Value masked = arith::AndIOp::create(b, value, maskValue);
  Value bitsValue = constant(bits);
  return arith::OrIOp::create(b, masked, bitsValue);
}

void GpuPrimitives::barrier(ImplicitLocOpBuilder &b) const {
  mlir::gpu::BarrierOp::create(b);
}

void GpuPrimitives::setClusterShape(mlir::gpu::GPUFuncOp,
                                    std::array<int64_t, 3>) const {
  llvm::report_fatal_error("the target has no workgroup clusters");
}
void GpuPrimitives::clusterBarrier(ImplicitLocOpBuilder &) const {
  llvm::report_fatal_error("the target has no workgroup clusters");
}
void GpuPrimitives::clusterExecutionBarrier(ImplicitLocOpBuilder &) const {
  llvm::report_fatal_error("the target has no workgroup clusters");
}
void GpuPrimitives::storeShared(ImplicitLocOpBuilder &, Value, Value) const {
  llvm::report_fatal_error("the target has no workgroup clusters");
}
Value GpuPrimitives::loadClusterShared(ImplicitLocOpBuilder &, Value, Value,
                                       Type) const {
  llvm::report_fatal_error("the target has no workgroup clusters");
}

void GpuPrimitives::copyToShared(ImplicitLocOpBuilder &b, Value dst,
                                 ValueRange dstIndices, Value src,
                                 ValueRange srcIndices, Value valid) const {
  Type element = cast<MemRefType>(src.getType()).getElementType();
  int64_t lanes = vectorBytes() * 8 / element.getIntOrFloatBitWidth();
  auto type = VectorType::get({lanes}, element);
  Value loaded =
      vector::LoadOp::create(b, type, src, srcIndices, /*nontemporal=*/false,
                             llvm::MaybeAlign(vectorBytes()));
  Value zero = arith::ConstantOp::create(b, type, b.getZeroAttr(type));
  Value value = arith::SelectOp::create(b, valid, loaded, zero);
  vector::StoreOp::create(b, value, dst, dstIndices, /*nontemporal=*/false,
                          llvm::MaybeAlign(vectorBytes()));
}

decode::MmaShapeAttr GpuPrimitives::findMmaShape(Type element, int64_t m,
                                                 int64_t n, int64_t k) const {
  for (decode::MmaShapeAttr shape : gpuTarget.getMmaShapes())
    if (shape.getA() == element && shape.getM() == m && shape.getN() == n &&
        shape.getK() == k && shape.getAcc().isF32())
      return shape;
  return {};
}

decode::GroupMmaShapeAttr GpuPrimitives::findGroupMmaShape(Type element,
                                                           int64_t n) const {
  for (decode::GroupMmaShapeAttr shape : gpuTarget.getGroupMmaShapes())
    if (shape.getA() == element && shape.getAcc().isF32() && n > 0 &&
        n % shape.getNStep() == 0 && n <= shape.getMaxN())
      return shape;
  return {};
}

[[noreturn]] static void noGroupMma() {
  llvm::report_fatal_error("group MMA primitive used on a target without one "
                           "(check getGroupMmaLayout first)");
}

Value GpuPrimitives::getGroupMmaChunkOffset(ImplicitLocOpBuilder &,
                                            const GroupMmaLayout &, Value,
                                            Value) const {
  noGroupMma();
}
Value GpuPrimitives::groupMmaExtract(ImplicitLocOpBuilder &,
                                     const GroupMmaLayout &, Value,
                                     int64_t) const {
  noGroupMma();
}
std::pair<Value, Value> GpuPrimitives::getGroupMmaAccumulator(
    ImplicitLocOpBuilder &, const GroupMmaLayout &, Value, int64_t) const {
  noGroupMma();
}
void GpuPrimitives::fenceSharedForGroupMma(ImplicitLocOpBuilder &) const {
  noGroupMma();
}
void GpuPrimitives::beginGroupMmas(ImplicitLocOpBuilder &) const {
  noGroupMma();
}
Value GpuPrimitives::groupMmaTile(ImplicitLocOpBuilder &,
                                  const GroupMmaLayout &, Value) const {
  noGroupMma();
}
Value GpuPrimitives::groupMma(ImplicitLocOpBuilder &, const GroupMmaLayout &,
                              Value, Value, int64_t, Value) const {
  noGroupMma();
}
void GpuPrimitives::commitGroupMmas(ImplicitLocOpBuilder &) const {
  noGroupMma();
}
void GpuPrimitives::waitGroupMmas(ImplicitLocOpBuilder &, int64_t) const {
  noGroupMma();
}

[[noreturn]] static void noMma() {
  llvm::report_fatal_error("MMA primitive used on a target without one "
                           "(check getMmaLayout first)");
}

Value GpuPrimitives::getMmaARow(ImplicitLocOpBuilder &, const MmaLayout &,
                                Value, int64_t) const {
  noMma();
}
Value GpuPrimitives::getMmaBColumn(ImplicitLocOpBuilder &, const MmaLayout &,
                                   Value) const {
  noMma();
}
Value GpuPrimitives::getMmaKGroup(ImplicitLocOpBuilder &, const MmaLayout &,
                                  Value) const {
  noMma();
}
std::pair<Value, Value> GpuPrimitives::getMmaAccumulator(ImplicitLocOpBuilder &,
                                                         const MmaLayout &,
                                                         Value, Value) const {
  noMma();
}
Value GpuPrimitives::mma(ImplicitLocOpBuilder &, const MmaLayout &,
                         ArrayRef<Value>, Value, Value) const {
  noMma();
}

[[noreturn]] static void noFragmentLoads() {
  llvm::report_fatal_error("fragment loads used on a target without them "
                           "(check loadsAFragments first)");
}

int64_t GpuPrimitives::aFragmentPieceElements(const MmaLayout &) const {
  noFragmentLoads();
}
int64_t GpuPrimitives::aFragmentSlotRun(const MmaLayout &) const {
  noFragmentLoads();
}
Value GpuPrimitives::getMmaSlotK(ImplicitLocOpBuilder &, const MmaLayout &,
                                 Value, int64_t) const {
  noFragmentLoads();
}
std::pair<Value, Value> GpuPrimitives::getAFragmentPiece(ImplicitLocOpBuilder &,
                                                         const MmaLayout &,
                                                         Value, bool) const {
  noFragmentLoads();
}
SmallVector<Value> GpuPrimitives::loadAFragment(ImplicitLocOpBuilder &,
                                                const MmaLayout &, Value,
                                                ValueRange, bool) const {
  noFragmentLoads();
}

Value fdc::gpu::combine(ImplicitLocOpBuilder &b, ReduceKind kind, Value x,
                        Value y) {
  if (kind == ReduceKind::Max)
    return arith::MaximumFOp::create(b, x, y);
  return arith::AddFOp::create(b, x, y);
}

FailureOr<decode::GpuTargetAttr>
fdc::gpu::resolveGpuTarget(ModuleOp module, StringRef archs, StringRef pass) {
  StringRef name = decode::GpuTargetAttr::getModuleAttrName();
  if (Attribute attr = module->getAttr(name)) {
    if (auto gpuTarget = dyn_cast<decode::GpuTargetAttr>(attr))
      return gpuTarget;
    return module.emitError()
           << "'" << name << "' must be a #decode.gpu_target, got " << attr;
  }
  if (archs.empty())
    return module.emitError()
           << pass << " needs a GPU target: the module's '" << name
           << "' attribute or the pass option target=ARCH[,ARCH...]";
  SmallVector<std::string> list;
  for (StringRef arch : llvm::split(archs, ','))
    list.push_back(arch.trim().str());
  return decode::getCommonGpuTarget(module.getContext(), list,
                                    [&] { return module.emitError(); });
}
