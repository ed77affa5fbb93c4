//===- DecodeToGPU.cpp - decode.model to GPU kernels + a launching step ---===//
//
// Produces a `gpu.module @fdc_kernels` with one or more kernels per op (built
// by the generators of *Kernels.cpp from their configs) and the host entry
// `fdc_model_step(const FdcStepArgs *)`, which places every intermediate
// value in the scratch buffer and launches the kernels in order with
// gpu.launch_func (lowered to the runtime's launch callback by
// fdc-lower-kernel-launches). The module records the scratch it needs and
// the kernel names for the manifest.
//
//===----------------------------------------------------------------------===//

#include "KernelContext.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/MemRefFromPointer.h"
#include "fdc/Conversion/Utils/StepAbi.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/IR/KnownTargets.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

namespace fdc {
#define GEN_PASS_DEF_CONVERTDECODETOGPU
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
constexpr int64_t kScratchAlignment = 256;

class GpuStepLowering {
public:
  GpuStepLowering(decode::ModelOp model, ImplicitLocOpBuilder &b,
                  mlir::gpu::GPUModuleOp kernels,
                  const GpuPrimitives &primitives)
      : model(model), b(b), kernels(kernels), primitives(primitives) {}

  LogicalResult run();

  int64_t scratchPerSequence = 0, scratchFixed = 0;
  SmallVector<std::string> kernelNames;

private:
  Value loadField(int64_t field, Type type);
  /// Scratch for a value of `type` needing `bytesPerSequence` per sequence.
  Buffer scratch(MemRefType type, int64_t bytesPerSequence);
  Buffer resultBuffer(Value result);
  LogicalResult lowerOp(Operation &op, KernelContext &ctx);
  /// Configs with the target's vector width.
  ElementwiseConfig elementwiseConfig() const {
    ElementwiseConfig config;
    config.vectorBytes = primitives.vectorBytes();
    return config;
  }
  GemvConfig gemvConfig() const {
    GemvConfig config;
    config.vectorBytes = primitives.vectorBytes();
    return config;
  }

  decode::ModelOp model;
  ImplicitLocOpBuilder &b;
  mlir::gpu::GPUModuleOp kernels;
  const GpuPrimitives &primitives;
  Value args, batch, scratchBase, scratchOffset;
  DenseMap<Value, Buffer> buffers;
  DenseMap<Value, Value> scalars;
  DenseMap<Value, Buffer> outputs;
};

Value GpuStepLowering::loadField(int64_t field, Type type) {
  return loadStepField(b, args, field, type);
}

Buffer GpuStepLowering::scratch(MemRefType type, int64_t bytesPerSequence) {
  Value pointer = pointerAtByte(b, scratchBase, scratchOffset);
  Value bytes = arith::MulIOp::create(
      b, batch,
      arith::ConstantIntOp::create(b, b.getI64Type(), bytesPerSequence));
  Value align =
      arith::ConstantIntOp::create(b, b.getI64Type(), kScratchAlignment);
  Value aligned = arith::MulIOp::create(
      b, arith::CeilDivSIOp::create(b, bytes, align), align);
  scratchOffset = arith::AddIOp::create(b, scratchOffset, aligned);
  scratchPerSequence += bytesPerSequence;
  scratchFixed += kScratchAlignment;
  return {pointer, type};
}

Buffer GpuStepLowering::resultBuffer(Value result) {
  auto it = outputs.find(result);
  if (it != outputs.end())
    return it->second;
  MemRefType type = getBufferType(result.getType());
  int64_t perSequence = type.getElementTypeBitWidth() / 8;
  for (int64_t d = 1; d < type.getRank(); ++d)
    perSequence *= type.getDimSize(d);
  return scratch(type, perSequence);
}

LogicalResult GpuStepLowering::run() {
  func::FuncOp step = model.getStepFunction();
  Block &body = step.getBody().front();
  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto entry = func::FuncOp::create(b, "fdc_model_step",
                                    FunctionType::get(ctx, {ptrType}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry.addEntryBlock());
  args = entry.getArgument(0);
  Type i64 = b.getI64Type();
  batch = loadField(kStepBatch, i64);
  Value numSlots = loadField(kStepNumSlots, i64);
  Value maxContext = loadField(kStepMaxContext, i64);
  scratchBase = loadField(kStepScratch, ptrType);
  scratchOffset = arith::ConstantIntOp::create(b, i64, 0);

  for (unsigned index = 0; index < 7; ++index)
    buffers[body.getArgument(index)] = {
        loadField(kStepTokens + index, ptrType),
        getBufferType(body.getArgument(index).getType())};
  buffers[body.getArgument(7)] = {loadField(kStepKVCache, ptrType),
                                  getBufferType(body.getArgument(7).getType())};
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  for (auto [operand, field] :
       {std::pair(returnOp.getOperand(0), kStepLogits),
        std::pair(returnOp.getOperand(1), kStepNextTokens)}) {
    if (isa<BlockArgument>(operand))
      return returnOp.emitOpError()
             << "the GPU lowering needs the step's outputs to be computed by "
                "its ops";
    outputs[operand] = {loadField(field, ptrType),
                        getBufferType(operand.getType())};
  }

  KernelContext kernelContext(b, kernels, primitives, batch, numSlots,
                              maxContext);
  for (Operation &op : body.without_terminator())
    if (failed(lowerOp(op, kernelContext)))
      return failure();
  kernelNames = kernelContext.kernelNames;
  func::ReturnOp::create(b);
  return success();
}

LogicalResult GpuStepLowering::lowerOp(Operation &op, KernelContext &ctx) {
  auto get = [&](Value value) { return buffers.lookup(value); };
  auto out = [&](Value result) {
    Buffer buffer = resultBuffer(result);
    buffers[result] = buffer;
    return buffer;
  };
  auto optional = [&](Value value) {
    return value ? get(value) : Buffer{Value(), MemRefType()};
  };
  auto view = [&](Value result, Value source) {
    buffers[result] = {get(source).pointer, getBufferType(result.getType())};
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        if (!constant.getType().isIndex())
          return constant.emitOpError()
                 << "only index constants are supported by the GPU lowering";
        return success();
      })
      .Case([&](tensor::DimOp) { return success(); })
      .Case([&](tensor::ExpandShapeOp expand) {
        return view(expand.getResult(), expand.getSrc());
      })
      .Case([&](tensor::CollapseShapeOp collapse) {
        return view(collapse.getResult(), collapse.getSrc());
      })
      .Case([&](decode::WeightRefOp ref) -> LogicalResult {
        FailureOr<Value> address = weightPointer(b, args, model, ref);
        if (failed(address))
          return failure();
        buffers[ref.getResult()] = {*address, getBufferType(ref.getType())};
        return success();
      })
      .Case([&](decode::EmbeddingOp embedding) {
        buildEmbedding(ctx, elementwiseConfig(), get(embedding.getTable()),
                       get(embedding.getTokens()), out(embedding.getResult()));
        return success();
      })
      .Case([&](decode::RMSNormOp norm) {
        buildRMSNorm(ctx, {}, get(norm.getInput()), get(norm.getWeight()),
                     norm.getEps().convertToFloat(), out(norm.getResult()));
        return success();
      })
      .Case([&](decode::LinearOp linear) {
        buildLinear(ctx, gemvConfig(), get(linear.getInput()),
                    get(linear.getWeight()), linear.getWeight().getType(),
                    optional(linear.getBias()), optional(linear.getResidual()),
                    linear.getActivation(), out(linear.getResult()));
        return success();
      })
      .Case([&](decode::SparseLinearOp sparse) {
        auto type = sparse.getWeight().getType();
        int64_t rows = type.getShape()[0];
        Buffer accumulator = scratch(
            MemRefType::get({ShapedType::kDynamic, rows}, b.getF32Type()),
            rows * 4);
        buildSparseLinear(ctx, {}, get(sparse.getInput()),
                          get(sparse.getWeight()), type, accumulator,
                          optional(sparse.getBias()),
                          optional(sparse.getResidual()),
                          sparse.getActivation(), out(sparse.getResult()));
        return success();
      })
      .Case([&](decode::RopeOp rope) {
        buildRope(ctx, elementwiseConfig(), get(rope.getInput()),
                  get(rope.getPositions()), rope.getRotaryDim(),
                  rope.getTheta().convertToFloat(), out(rope.getResult()));
        return success();
      })
      .Case([&](decode::KVAppendOp append) {
        buildKVAppend(ctx, get(append.getKey()), get(append.getValue()),
                      get(append.getCache()), append.getCache().getType(),
                      get(append.getSlots()), get(append.getPositions()),
                      append.getLayer());
        buffers[append.getResult()] = get(append.getCache());
        return success();
      })
      .Case([&](decode::AttentionOp attention) {
        AttentionConfig config;
        Buffer partials =
            scratch(MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                    attentionScratchPerSequence(
                        config, attention.getQuery().getType()));
        return buildAttention(
            attention.getLoc(), ctx, config, get(attention.getQuery()),
            get(attention.getCache()), attention.getCache().getType(),
            get(attention.getSlots()), get(attention.getPositions()), partials,
            attention.getLayer(), attention.getScale().convertToFloat(),
            attention.getSoftmax(), attention.getSplits(),
            out(attention.getResult()));
      })
      .Case([&](decode::ArgmaxOp argmax) {
        buildArgmax(ctx, {}, get(argmax.getLogits()), out(argmax.getResult()));
        return success();
      })
      .Case([&](decode::SampleOp sample) {
        buildSample(ctx, {}, get(sample.getLogits()), get(sample.getUniform()),
                    get(sample.getTemperature()), get(sample.getTopK()),
                    get(sample.getTopP()), out(sample.getResult()));
        return success();
      })
      .Case([&](decode::AllReduceOp allReduce) -> LogicalResult {
        if (allReduce.getGroupSize() != 1)
          return allReduce.emitOpError()
                 << "tensor parallelism (group_size > 1) is not supported by "
                    "the GPU lowering yet";
        buffers[allReduce.getResult()] = get(allReduce.getInput());
        return success();
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitOpError() << "is not supported by the GPU lowering";
      });
}

struct ConvertDecodeToGPU
    : public fdc::impl::ConvertDecodeToGPUBase<ConvertDecodeToGPU> {
  using Base::Base;

  /// The module's decode.gpu_target, else the table's for `target`.
  FailureOr<decode::GpuTargetAttr> resolveTarget(ModuleOp module) {
    Attribute attr =
        module->getAttr(decode::GpuTargetAttr::getModuleAttrName());
    if (attr) {
      if (auto gpuTarget = dyn_cast<decode::GpuTargetAttr>(attr))
        return gpuTarget;
      return module.emitError()
             << "'" << decode::GpuTargetAttr::getModuleAttrName()
             << "' must be a #decode.gpu_target, got " << attr;
    }
    if (target.empty())
      return module.emitError()
             << "convert-decode-to-gpu needs a GPU target: the module's '"
             << decode::GpuTargetAttr::getModuleAttrName()
             << "' attribute or the pass option target=ARCH[,ARCH...]";
    SmallVector<std::string> archs;
    for (StringRef arch : llvm::split(StringRef(target), ','))
      archs.push_back(arch.trim().str());
    return decode::getCommonGpuTarget(&getContext(), archs,
                                      [&] { return module.emitError(); });
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<decode::ModelOp> found =
        getSingleModel(module, "convert-decode-to-gpu");
    if (failed(found))
      return signalPassFailure();
    decode::ModelOp model = *found;
    MLIRContext *ctx = &getContext();
    FailureOr<decode::GpuTargetAttr> gpuTarget = resolveTarget(module);
    if (failed(gpuTarget))
      return signalPassFailure();
    module->setAttr(decode::GpuTargetAttr::getModuleAttrName(), *gpuTarget);
    module->setAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(ctx));
    ImplicitLocOpBuilder b(model.getLoc(), model);
    auto kernels = mlir::gpu::GPUModuleOp::create(b, "fdc_kernels");
    std::unique_ptr<GpuPrimitives> primitives =
        GpuPrimitives::create(*gpuTarget);
    GpuStepLowering lowering(model, b, kernels, *primitives);
    if (failed(lowering.run()))
      return signalPassFailure();
    SmallVector<Attribute> names;
    for (const std::string &name : lowering.kernelNames)
      names.push_back(StringAttr::get(ctx, name));
    module->setAttr("fdc.kernels", ArrayAttr::get(ctx, names));
    module->setAttr("fdc.scratch_bytes_per_sequence",
                    b.getI64IntegerAttr(lowering.scratchPerSequence));
    module->setAttr("fdc.scratch_fixed_bytes",
                    b.getI64IntegerAttr(lowering.scratchFixed));
    model.erase();
  }
};
} // namespace
