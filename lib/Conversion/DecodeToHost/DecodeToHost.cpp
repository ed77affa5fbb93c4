//===- DecodeToHost.cpp - decode.model to a host step function ------------===//
//
// Builds `fdc_model_step(const FdcStepArgs *)` (docs/model-library.md) from
// the model's `@step`: the ABI fields become memrefs over the caller's
// buffers, and every op of the step becomes loops (HostKernels.cpp) over
// them. Intermediate tensors live in heap buffers freed before returning;
// the values the step returns are computed straight into the caller's
// buffers, and the KV cache is updated in place.
//
//===----------------------------------------------------------------------===//

#include "HostKernels.h"
#include "fdc/Conversion/Utils/PackedLayouts.h"

#include "fdc/Conversion/Passes.h"
#include "fdc/Conversion/Utils/MemRefFromPointer.h"
#include "fdc/Conversion/Utils/StepAbi.h"
#include "fdc/Dialect/Decode/IR/Decode.h"
#include "fdc/Dialect/Decode/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

namespace fdc {
#define GEN_PASS_DEF_CONVERTDECODETOHOST
#include "fdc/Conversion/Passes.h.inc"
} // namespace fdc

using namespace mlir;
using namespace fdc;
using namespace fdc::host;

namespace {

class StepLowering {
public:
  StepLowering(decode::ModelOp model, ImplicitLocOpBuilder &b)
      : model(model), b(b), e(b) {}

  LogicalResult run();

private:
  LogicalResult checkCacheIsLinear(func::FuncOp step);
  Value loadField(int64_t field, Type type);
  Value fieldMemRef(int64_t field, MemRefType type,
                    ArrayRef<Value> dynamicSizesI64);
  /// The buffer of a value an op produces: the caller's output buffer for
  /// values the step returns, else a fresh heap buffer.
  Value resultBuffer(Value result);
  LogicalResult lowerOp(Operation &op);
  /// The collectives call the FdcCollectiveApi of the step's arguments. A
  /// failed call leaves the rest of the step running on what it has (no
  /// access depends on the values); the runtime reports the group's error.
  LogicalResult lowerAllReduce(decode::AllReduceOp allReduce);
  LogicalResult lowerAllGather(decode::AllGatherOp gather);
  /// The address of a buffer's first element, as a pointer.
  Value bufferPointer(Value memref);
  /// Elements of a [M, ...] buffer with static trailing dimensions, as i64.
  Value elementCount(Value memref);

  decode::ModelOp model;
  ImplicitLocOpBuilder &b;
  Emitter e;
  IRMapping mapping;
  Value args, batch, batchI64;
  DenseMap<Value, Value> outputBuffers;
  SmallVector<Value> heapBuffers;
};

Value StepLowering::loadField(int64_t field, Type type) {
  return loadStepField(b, args, field, type);
}

Value StepLowering::fieldMemRef(int64_t field, MemRefType type,
                                ArrayRef<Value> dynamicSizesI64) {
  auto ptrType = LLVM::LLVMPointerType::get(b.getContext());
  return fdc::memrefFromPointer(b, loadField(field, ptrType), type,
                                dynamicSizesI64);
}

Value StepLowering::resultBuffer(Value result) {
  if (Value output = outputBuffers.lookup(result))
    return output;
  MemRefType type = getBufferType(result.getType());
  SmallVector<Value> dynamicSizes(type.getNumDynamicDims(), batch);
  Value buffer = memref::AllocOp::create(b, type, dynamicSizes);
  heapBuffers.push_back(buffer);
  return buffer;
}

LogicalResult StepLowering::checkCacheIsLinear(func::FuncOp step) {
  // The cache is updated in place: a cache value must not be read after the
  // kv_append that consumes it.
  for (Operation &op : step.getBody().front()) {
    auto append = dyn_cast<decode::KVAppendOp>(op);
    if (!append)
      continue;
    Value cache = append.getCache();
    for (Operation *user : cache.getUsers()) {
      if (user != append.getOperation() && append->isBeforeInBlock(user))
        return user->emitOpError()
               << "reads a KV cache value after 'decode.kv_append' updated it; "
                  "the host lowering updates the cache in place";
    }
  }
  return success();
}

LogicalResult StepLowering::run() {
  func::FuncOp step = model.getStepFunction();
  if (!llvm::hasSingleElement(step.getBody()))
    return step.emitOpError() << "must have a single block to be lowered";
  if (failed(checkCacheIsLinear(step)))
    return failure();

  MLIRContext *ctx = b.getContext();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto entry = func::FuncOp::create(b, "fdc_model_step",
                                    FunctionType::get(ctx, {ptrType}, {}));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry.addEntryBlock());
  args = entry.getArgument(0);

  Type i64 = b.getI64Type(), i32 = b.getI32Type(), f32 = b.getF32Type();
  batchI64 = loadField(kStepBatch, i64);
  batch = arith::IndexCastOp::create(b, b.getIndexType(), batchI64);
  Value numSlots = loadField(kStepNumSlots, i64);
  Value maxContext = loadField(kStepMaxContext, i64);

  Block &body = step.getBody().front();
  auto vector = [&](Type element) {
    return MemRefType::get({ShapedType::kDynamic}, element);
  };
  // tokens, positions, slots, temperature, top_k, top_p, uniform.
  const Type vectorElements[] = {i32, i32, i32, f32, i32, f32, f32};
  for (auto [index, element] : llvm::enumerate(vectorElements))
    mapping.map(body.getArgument(index),
                fieldMemRef(kStepTokens + index, vector(element), {batchI64}));
  auto cacheType = cast<decode::KVCacheType>(body.getArgument(7).getType());
  mapping.map(body.getArgument(7),
              fieldMemRef(kStepKVCache, getBufferType(cacheType),
                          {numSlots, maxContext}));

  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  outputBuffers[returnOp.getOperand(0)] = fieldMemRef(
      kStepLogits, getBufferType(returnOp.getOperand(0).getType()), {batchI64});
  outputBuffers[returnOp.getOperand(1)] =
      fieldMemRef(kStepNextTokens, vector(i32), {batchI64});

  for (Operation &op : body.without_terminator())
    if (failed(lowerOp(op)))
      return failure();

  // A returned value no op produced (a step argument) still reaches the
  // caller's buffer.
  for (unsigned i = 0; i < 2; ++i) {
    Value returned = returnOp.getOperand(i);
    Value output = outputBuffers.lookup(returned);
    Value computed = mapping.lookup(returned);
    if (computed != output)
      memref::CopyOp::create(b, computed, output);
  }
  for (Value buffer : heapBuffers)
    memref::DeallocOp::create(b, buffer);
  func::ReturnOp::create(b);
  return success();
}

LogicalResult StepLowering::lowerOp(Operation &op) {
  auto get = [&](Value value) { return mapping.lookup(value); };
  auto out = [&](Value result) {
    Value buffer = resultBuffer(result);
    mapping.map(result, buffer);
    return buffer;
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](arith::ConstantOp constant) -> LogicalResult {
        if (isa<ShapedType>(constant.getType()))
          return constant.emitOpError()
                 << "tensor constants are not supported by the host lowering";
        b.clone(op, mapping);
        return success();
      })
      .Case([&](tensor::DimOp dimOp) -> LogicalResult {
        mapping.map(dimOp.getResult(),
                    memref::DimOp::create(b, get(dimOp.getSource()),
                                          get(dimOp.getIndex())));
        return success();
      })
      .Case([&](tensor::ExpandShapeOp expand) -> LogicalResult {
        SmallVector<OpFoldResult> shape;
        for (OpFoldResult size : expand.getMixedOutputShape()) {
          if (auto value = dyn_cast<Value>(size))
            shape.push_back(get(value));
          else
            shape.push_back(size);
        }
        mapping.map(expand.getResult(),
                    memref::ExpandShapeOp::create(
                        b, getBufferType(expand.getType()),
                        get(expand.getSrc()), expand.getReassociationIndices(),
                        shape));
        return success();
      })
      .Case([&](tensor::CollapseShapeOp collapse) -> LogicalResult {
        mapping.map(
            collapse.getResult(),
            memref::CollapseShapeOp::create(
                b, get(collapse.getSrc()), collapse.getReassociationIndices()));
        return success();
      })
      .Case([&](decode::WeightRefOp ref) -> LogicalResult {
        FailureOr<Value> address = weightPointer(b, args, model, ref);
        if (failed(address))
          return failure();
        mapping.map(ref.getResult(),
                    fdc::memrefFromPointer(b, *address,
                                           getBufferType(ref.getType()), {}));
        return success();
      })
      .Case([&](decode::EmbeddingOp embedding) -> LogicalResult {
        emitEmbedding(e, get(embedding.getTable()), get(embedding.getTokens()),
                      out(embedding.getResult()));
        return success();
      })
      .Case([&](decode::RMSNormOp norm) -> LogicalResult {
        emitRMSNorm(e, get(norm.getInput()), get(norm.getWeight()),
                    norm.getEps().convertToFloat(), out(norm.getResult()));
        return success();
      })
      .Case([&](decode::LinearOp linear) -> LogicalResult {
        Value bias = linear.getBias() ? get(linear.getBias()) : Value();
        Value residual =
            linear.getResidual() ? get(linear.getResidual()) : Value();
        Value weight = get(linear.getWeight());
        auto quant =
            dyn_cast<decode::QuantTensorType>(linear.getWeight().getType());
        auto reader = [&](Value row, Value k) {
          return quant ? loadInt4Weight(e, weight, quant, row, k)
                       : e.load(weight, {row, k});
        };
        Value input = get(linear.getInput());
        Value result = out(linear.getResult());
        std::optional<int64_t> residualRank = linear.getResidualRank();
        if (!residual || !residualRank || model.getTensorParallel() == 1) {
          emitLinear(e, input, reader, bias, residual, linear.getActivation(),
                     result);
          return success();
        }
        // Only rank `residualRank` adds the residual.
        Value rank = loadCollectiveRank(b, args);
        Value adds = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, rank,
                                           e.i64(*residualRank));
        auto ranks = scf::IfOp::create(b, adds, /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ranks.thenBlock());
        emitLinear(e, input, reader, bias, residual, linear.getActivation(),
                   result);
        b.setInsertionPointToStart(ranks.elseBlock());
        emitLinear(e, input, reader, bias, /*residual=*/Value(),
                   linear.getActivation(), result);
        return success();
      })
      .Case([&](decode::SparseLinearOp sparse) -> LogicalResult {
        Value input = get(sparse.getInput());
        Value acc = emitSparseProduct(e, input, get(sparse.getWeight()),
                                      sparse.getWeight().getType());
        Value bias = sparse.getBias() ? get(sparse.getBias()) : Value();
        Value residual =
            sparse.getResidual() ? get(sparse.getResidual()) : Value();
        auto readAcc = [&](Value i, Value row) -> Value {
          return memref::LoadOp::create(b, acc, ValueRange{i, row});
        };
        Value batchRows = memref::DimOp::create(b, input, 0);
        emitLinearEpilogue(e, batchRows, readAcc, bias, residual,
                           sparse.getActivation(), out(sparse.getResult()));
        memref::DeallocOp::create(b, acc);
        return success();
      })
      .Case([&](decode::RopeOp rope) -> LogicalResult {
        emitRope(e, get(rope.getInput()), get(rope.getPositions()),
                 rope.getRotaryDim(), rope.getTheta().convertToFloat(),
                 out(rope.getResult()));
        return success();
      })
      .Case([&](decode::KVAppendOp append) -> LogicalResult {
        Value cache = get(append.getCache());
        emitKVAppend(e, get(append.getKey()), get(append.getValue()), cache,
                     append.getCache().getType(), get(append.getSlots()),
                     get(append.getPositions()), append.getLayer());
        mapping.map(append.getResult(), cache);
        return success();
      })
      .Case([&](decode::AttentionOp attention) -> LogicalResult {
        emitAttention(e, get(attention.getQuery()), get(attention.getCache()),
                      attention.getCache().getType(), get(attention.getSlots()),
                      get(attention.getPositions()), attention.getLayer(),
                      attention.getScale().convertToFloat(),
                      attention.getSoftmax(), out(attention.getResult()));
        return success();
      })
      .Case([&](decode::ArgmaxOp argmax) -> LogicalResult {
        emitArgmax(e, get(argmax.getLogits()), out(argmax.getResult()));
        return success();
      })
      .Case([&](decode::SampleOp sample) -> LogicalResult {
        emitSample(e, get(sample.getLogits()), get(sample.getUniform()),
                   get(sample.getTemperature()), get(sample.getTopK()),
                   get(sample.getTopP()), out(sample.getResult()));
        return success();
      })
      .Case([&](decode::AllReduceOp allReduce) -> LogicalResult {
        return lowerAllReduce(allReduce);
      })
      .Case([&](decode::AllGatherOp gather) -> LogicalResult {
        return lowerAllGather(gather);
      })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitOpError() << "is not supported by the host lowering";
      });
}

Value StepLowering::bufferPointer(Value memref) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, memref);
  Value addressI64 = arith::IndexCastOp::create(b, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, LLVM::LLVMPointerType::get(b.getContext()),
                                  addressI64);
}

Value StepLowering::elementCount(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t perRow = 1;
  for (int64_t size : type.getShape().drop_front())
    perRow *= size;
  return arith::MulIOp::create(b, batchI64, e.i64(perRow));
}

LogicalResult StepLowering::lowerAllReduce(decode::AllReduceOp allReduce) {
  Value input = mapping.lookup(allReduce.getInput());
  Value residual = allReduce.getResidual()
                       ? mapping.lookup(allReduce.getResidual())
                       : Value();
  if (allReduce.getGroupSize() == 1 && !residual) {
    mapping.map(allReduce.getResult(), input);
    return success();
  }
  if (allReduce.getReduction() != decode::Reduction::sum)
    return allReduce.emitOpError()
           << "only sum all-reduces are supported by the host lowering";
  Value result = resultBuffer(allReduce.getResult());
  mapping.map(allReduce.getResult(), result);
  auto type = cast<RankedTensorType>(allReduce.getInput().getType());
  if (allReduce.getGroupSize() == 1) {
    memref::CopyOp::create(b, input, result);
  } else {
    callCollective(b, args, kCollectiveAllReduceSum,
                   {bufferPointer(input), bufferPointer(result),
                    elementCount(input),
                    e.i64(getCollectiveDType(type.getElementType()))});
  }
  if (residual)
    emitAddInPlace(e, result, residual);
  return success();
}

LogicalResult StepLowering::lowerAllGather(decode::AllGatherOp gather) {
  Value input = mapping.lookup(gather.getInput());
  if (gather.getGroupSize() == 1) {
    mapping.map(gather.getResult(), input);
    return success();
  }
  Value result = resultBuffer(gather.getResult());
  mapping.map(gather.getResult(), result);
  auto type = cast<RankedTensorType>(gather.getInput().getType());
  // The host exchange needs no workspace.
  Value noWorkspace =
      LLVM::ZeroOp::create(b, LLVM::LLVMPointerType::get(b.getContext()));
  callCollective(b, args, kCollectiveAllGatherColumns,
                 {bufferPointer(input), bufferPointer(result), noWorkspace,
                  batchI64, e.i64(type.getDimSize(1)),
                  e.i64(getCollectiveDType(type.getElementType()))});
  return success();
}

struct ConvertDecodeToHost
    : public fdc::impl::ConvertDecodeToHostBase<ConvertDecodeToHost> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<decode::ModelOp> found =
        getSingleModel(module, "convert-decode-to-host");
    if (failed(found))
      return signalPassFailure();
    decode::ModelOp model = *found;
    ImplicitLocOpBuilder b(model.getLoc(), model);
    if (failed(StepLowering(model, b).run()))
      return signalPassFailure();
    model.erase();
  }
};

} // namespace
