//===- KernelContext.cpp - building and launching step kernels ------------===//

#include "KernelContext.h"

#include "fdc/Conversion/Utils/MemRefFromPointer.h"

using namespace mlir;
using namespace fdc::gpu;

/// A kernel's name while it is compared with the ones built before.
static constexpr llvm::StringLiteral kPendingKernelName = "fdc_pending_kernel";

void KernelContext::callCollective(CollectiveField field, ValueRange operands) {
  Value status = fdc::callCollective(host, stepArgs, field, operands);
  returnFromStepIfFailed(host, status);
}

Value KernelContext::hostIndex(int64_t value) {
  return arith::ConstantIndexOp::create(host, value);
}
Value KernelContext::hostI64(int64_t value) {
  return arith::ConstantIntOp::create(host, host.getI64Type(), value);
}
Value KernelContext::toIndex(Value i64) {
  return arith::IndexCastOp::create(host, host.getIndexType(), i64);
}
Value KernelContext::ceilDiv(Value a, Value b) {
  return arith::CeilDivSIOp::create(host, a, b);
}

mlir::gpu::GPUFuncOp KernelContext::deduplicate(mlir::gpu::GPUFuncOp func,
                                                StringRef family) {
  // The kernel's text under its pending name is its identity: two kernels
  // that print alike are the same kernel.
  std::string text;
  llvm::raw_string_ostream os(text);
  func->print(os, OpPrintingFlags().useLocalScope());
  auto [it, inserted] = kernelsByText.try_emplace(text, func);
  if (!inserted) {
    func.erase();
    return it->second;
  }
  unsigned &count = kernelsPerFamily[family];
  std::string unique = (family + "_" + Twine(count++)).str();
  func.setName(unique);
  kernelNames.push_back(unique);
  return func;
}

void KernelContext::launch(StringRef name, ArrayRef<KernelArg> args,
                           std::array<Value, 3> grid, Workgroup block,
                           int64_t workgroupF32, BodyBuilder body) {
  launch(name, args, grid, block, SharedMemory{workgroupF32, host.getF32Type()},
         std::move(body));
}

void KernelContext::launch(StringRef name, ArrayRef<KernelArg> args,
                           std::array<Value, 3> grid, Workgroup block,
                           SharedMemory shared, BodyBuilder body) {
  MLIRContext *ctx = host.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  Type i64 = host.getI64Type();

  // Every kernel also receives the batch size and the cache's run-time sizes,
  // which size the memref views of its buffers.
  SmallVector<Value> operands;
  SmallVector<Type> types;
  for (const KernelArg &arg : args) {
    operands.push_back(arg.host);
    types.push_back(arg.view ? Type(ptrType) : i64);
  }
  for (Value implicit : {batch, numSlots, maxContext}) {
    operands.push_back(implicit);
    types.push_back(i64);
  }

  SmallVector<Type> workgroup;
  auto workgroupSpace =
      mlir::gpu::AddressSpaceAttr::get(ctx, mlir::gpu::AddressSpace::Workgroup);
  MemRefType sharedType;
  if (shared.elements > 0)
    sharedType = MemRefType::get({shared.elements}, shared.element,
                                 MemRefLayoutAttrInterface(), workgroupSpace);
  bool dynamicShared =
      shared.elements > 0 && shared.bytes() > primitives.staticSharedBytes();
  if (sharedType && !dynamicShared)
    workgroup.push_back(sharedType);
  std::string key;
  if (!kernelKey.empty())
    key = (kernelKey + "#" + Twine(launchesUnderKey++)).str();
  mlir::gpu::GPUFuncOp func;
  if (!key.empty())
    func = kernelsByKey.lookup(key);
  if (!func) {
    func = buildKernel(name, types, workgroup, args, block,
                       dynamicShared ? sharedType : MemRefType(), body);
    if (!key.empty())
      kernelsByKey[key] = func;
  }

  Value dynamicBytes;
  if (dynamicShared)
    dynamicBytes =
        arith::ConstantIntOp::create(host, host.getI32Type(), shared.bytes());
  mlir::gpu::LaunchFuncOp::create(
      host, func, mlir::gpu::KernelDim3{grid[0], grid[1], grid[2]},
      mlir::gpu::KernelDim3{hostIndex(block.threads), hostIndex(1),
                            hostIndex(1)},
      dynamicBytes, operands);
}

mlir::gpu::GPUFuncOp
KernelContext::buildKernel(StringRef name, ArrayRef<Type> types,
                           ArrayRef<Type> workgroup, ArrayRef<KernelArg> args,
                           Workgroup block, MemRefType dynamicShared,
                           const BodyBuilder &body) {
  MLIRContext *ctx = host.getContext();
  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
  auto func = mlir::gpu::GPUFuncOp::create(
      moduleBuilder, host.getLoc(), kPendingKernelName,
      FunctionType::get(ctx, types, {}), workgroup);
  func->setAttr(mlir::gpu::GPUDialect::getKernelFuncAttrName(),
                UnitAttr::get(ctx));
  func.setKnownBlockSizeAttr(
      DenseI32ArrayAttr::get(ctx, {static_cast<int32_t>(block.threads), 1, 1}));
  if (block.minPerUnit > 0)
    primitives.setMinWorkgroupsPerUnit(func, block.threads, block.minPerUnit);
  if (block.cluster != std::array<int64_t, 3>{1, 1, 1})
    primitives.setClusterShape(func, block.cluster);
  // Shared memory aligned for the target's widest vector access (tiles
  // copied and read vectorBytes() at a time).
  if (!workgroup.empty())
    func.setWorkgroupAttributionAttr(
        0, LLVM::LLVMDialect::getAlignAttrName(),
        IntegerAttr::get(IntegerType::get(ctx, 64), primitives.vectorBytes()));

  Block &entry = func.getBody().front();
  ImplicitLocOpBuilder kernel(host.getLoc(), &entry, entry.begin());
  if (!block.waitsInBody)
    primitives.beginKernel(kernel);
  unsigned numArgs = args.size();
  Value kBatch = entry.getArgument(numArgs);
  Value kSlots = entry.getArgument(numArgs + 1);
  Value kContext = entry.getArgument(numArgs + 2);
  SmallVector<Value> values;
  for (auto [index, arg] : llvm::enumerate(args)) {
    Value value = entry.getArgument(index);
    if (arg.view) {
      bool isCache = arg.view.getRank() == 6;
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < arg.view.getRank(); ++d) {
        if (!arg.view.isDynamicDim(d))
          continue;
        sizes.push_back(isCache ? (d == 0 ? kSlots : kContext) : kBatch);
      }
      value = fdc::memrefFromPointer(kernel, value, arg.view, sizes);
    }
    values.push_back(value);
  }
  values.push_back(kBatch);
  if (!workgroup.empty())
    values.push_back(func.getWorkgroupAttributions().front());
  if (dynamicShared) {
    // The launch's dynamic shared bytes, viewed as the memref a static
    // allocation would have been.
    auto bytes = MemRefType::get({ShapedType::kDynamic}, kernel.getI8Type(),
                                 MemRefLayoutAttrInterface(),
                                 dynamicShared.getMemorySpace());
    Value raw = mlir::gpu::DynamicSharedMemoryOp::create(kernel, bytes);
    Value zero = arith::ConstantIndexOp::create(kernel, 0);
    values.push_back(
        memref::ViewOp::create(kernel, dynamicShared, raw, zero, ValueRange{}));
  }
  GpuEmitter emitter(kernel, primitives);
  body(emitter, values);
  mlir::gpu::ReturnOp::create(kernel);
  return deduplicate(func, name);
}
