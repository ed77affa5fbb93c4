//===- ShardTensorParallel.cpp - one rank of a tensor-parallel group ------===//
//
// Megatron-style tensor parallelism (see Passes.td): the step is rewritten
// in place into the step of one rank. Values are either replicated (every
// rank holds all of it) or split (every rank holds its heads or features,
// the last dimension divided by the rank count); the walk over the step
// follows which values are split and retypes the ops on them.
//
//===----------------------------------------------------------------------===//

#include "fdc/Dialect/Decode/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

namespace fdc::decode {
#define GEN_PASS_DEF_DECODESHARDTENSORPARALLEL
#include "fdc/Dialect/Decode/Transforms/Passes.h.inc"
} // namespace fdc::decode

using namespace mlir;
using namespace fdc::decode;

namespace {
/// What a decode.linear with a replicated input becomes.
enum class ColumnRole {
  Replicated, // left whole on every rank
  Heads,      // column-parallel: its result is split into heads
  GateUp,     // column-parallel SiLU-gate-up: gate and up split alike
  Vocabulary, // the LM head: split over the vocabulary, then gathered
};

class TensorParallelSharder {
public:
  TensorParallelSharder(ModelOp model, int64_t ranks)
      : model(model), step(model.getStepFunction()), ranks(ranks),
        symbols(model) {}

  LogicalResult run();

private:
  LogicalResult shardCache();
  LogicalResult shardOp(Operation &op);
  LogicalResult shardLinear(LinearOp linear);
  LogicalResult shardColumns(LinearOp linear, ColumnRole role);
  LogicalResult shardRows(LinearOp linear);
  /// Gives `linear` its rank's slice of the weight along `dim`; `parts` is
  /// how many equal blocks of rows the weight stacks (2 for gate-up).
  LogicalResult shardWeight(LinearOp linear, int64_t dim, int64_t parts);
  /// `type` with dimension `dim` divided by the rank count.
  RankedTensorType divided(RankedTensorType type, int64_t dim) const;
  /// Fails at `op` unless `size` (what `what` counts) splits evenly.
  LogicalResult checkDivisible(Operation *op, StringRef what, int64_t size);
  /// Fails at `op`, which cannot take the split `value`.
  LogicalResult refuseSplit(Operation *op, Value value);

  ModelOp model;
  func::FuncOp step;
  int64_t ranks;
  SymbolTable symbols;
  KVCacheType cacheType;
  /// Values each rank holds a part of (heads or features).
  llvm::DenseSet<Value> split;
};

RankedTensorType TensorParallelSharder::divided(RankedTensorType type,
                                                int64_t dim) const {
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] /= ranks;
  return RankedTensorType::get(shape, type.getElementType());
}

LogicalResult TensorParallelSharder::checkDivisible(Operation *op,
                                                    StringRef what,
                                                    int64_t size) {
  if (ShapedType::isDynamic(size))
    return op->emitOpError()
           << "cannot be split over " << ranks << " tensor-parallel ranks: its "
           << what << " are not a static size";
  if (size % ranks == 0)
    return success();
  return op->emitOpError() << "cannot be split over " << ranks
                           << " tensor-parallel ranks: its " << size << " "
                           << what << " are not a multiple of " << ranks;
}

LogicalResult TensorParallelSharder::refuseSplit(Operation *op, Value value) {
  return op->emitOpError()
         << "cannot run on a value split over the tensor-parallel ranks (of "
            "type "
         << value.getType()
         << "); decode-shard-tensor-parallel splits heads and MLP features "
            "between column- and row-parallel linears only";
}

LogicalResult TensorParallelSharder::run() {
  if (model.getTensorParallel() != 1)
    return model.emitOpError() << "is already sharded (tensor_parallel = "
                               << model.getTensorParallel() << ")";
  WalkResult collectives = step.walk([&](Operation *op) {
    if (isa<AllReduceOp, AllGatherOp>(op)) {
      op->emitOpError() << "is already in the model; "
                           "decode-shard-tensor-parallel inserts the "
                           "collectives itself";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (collectives.wasInterrupted() || failed(shardCache()))
    return failure();
  Block &body = step.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    if (failed(shardOp(op)))
      return failure();
  auto returnOp = cast<func::ReturnOp>(body.getTerminator());
  for (Value returned : returnOp.getOperands())
    if (split.contains(returned))
      return refuseSplit(returnOp, returned);
  step.setFunctionType(FunctionType::get(
      step.getContext(), body.getArgumentTypes(), returnOp.getOperandTypes()));
  model.setTensorParallel(ranks);
  return success();
}

LogicalResult TensorParallelSharder::shardCache() {
  BlockArgument cache = step.getBody().front().getArgument(7);
  auto type = cast<KVCacheType>(cache.getType());
  if (type.getKvHeads() % ranks != 0)
    return step.emitOpError()
           << "cannot be split over " << ranks
           << " tensor-parallel ranks: the KV cache has " << type.getKvHeads()
           << " KV heads, not a multiple of " << ranks;
  cacheType = KVCacheType::get(type.getContext(), type.getLayers(),
                               type.getKvHeads() / ranks, type.getHeadDim(),
                               type.getElementType());
  cache.setType(cacheType);
  return success();
}

LogicalResult TensorParallelSharder::shardOp(Operation &op) {
  auto splitOperand = [&]() -> Value {
    for (Value operand : op.getOperands())
      if (split.contains(operand))
        return operand;
    return Value();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](LinearOp linear) { return shardLinear(linear); })
      .Case([&](tensor::ExpandShapeOp expand) -> LogicalResult {
        if (!split.contains(expand.getSrc()))
          return success();
        auto type = cast<RankedTensorType>(expand.getType());
        if (type.getRank() != 3)
          return refuseSplit(expand, expand.getSrc());
        if (failed(checkDivisible(expand, "heads", type.getDimSize(1))))
          return failure();
        RankedTensorType heads = divided(type, 1);
        SmallVector<int64_t> staticShape(expand.getStaticOutputShape());
        staticShape[1] = heads.getDimSize(1);
        expand.setStaticOutputShape(staticShape);
        expand.getResult().setType(heads);
        split.insert(expand.getResult());
        return success();
      })
      .Case([&](tensor::CollapseShapeOp collapse) -> LogicalResult {
        if (!split.contains(collapse.getSrc()))
          return success();
        auto type = cast<RankedTensorType>(collapse.getType());
        if (type.getRank() != 2)
          return refuseSplit(collapse, collapse.getSrc());
        collapse.getResult().setType(divided(type, 1));
        split.insert(collapse.getResult());
        return success();
      })
      .Case([&](RopeOp rope) -> LogicalResult {
        if (!split.contains(rope.getInput()))
          return success();
        rope.getResult().setType(rope.getInput().getType());
        split.insert(rope.getResult());
        return success();
      })
      .Case([&](KVAppendOp append) -> LogicalResult {
        for (Value operand : {append.getKey(), append.getValue()})
          if (!split.contains(operand))
            return append.emitOpError()
                   << "writes a KV cache split over the tensor-parallel "
                      "ranks, but its key or value (of type "
                   << operand.getType()
                   << ") is not split by heads: its linear was not "
                      "recognised as column-parallel";
        append.getResult().setType(cacheType);
        return success();
      })
      .Case([&](AttentionOp attention) -> LogicalResult {
        if (!split.contains(attention.getQuery()))
          return attention.emitOpError()
                 << "reads a KV cache split over the tensor-parallel ranks, "
                    "but its query (of type "
                 << attention.getQuery().getType() << ") is not split by heads";
        attention.getResult().setType(attention.getQuery().getType());
        split.insert(attention.getResult());
        return success();
      })
      .Case([&](tensor::DimOp) { return success(); })
      .Default([&](Operation *other) -> LogicalResult {
        if (Value value = splitOperand())
          return refuseSplit(other, value);
        if (isa<SparseLinearOp>(other))
          return other->emitOpError()
                 << "cannot be split over tensor-parallel ranks: "
                    "Tiled-CSL weights are not sharded yet";
        return success();
      });
}

LogicalResult TensorParallelSharder::shardLinear(LinearOp linear) {
  if (split.contains(linear.getInput()))
    return shardRows(linear);
  Value result = linear.getResult();
  ColumnRole role = ColumnRole::Replicated;
  if (linear.getActivation() == Activation::silu_gate_up) {
    role = ColumnRole::GateUp;
  } else if (llvm::any_of(result.getUsers(), [](Operation *user) {
               return isa<SampleOp, ArgmaxOp, func::ReturnOp>(user);
             })) {
    role = ColumnRole::Vocabulary;
  } else if (!result.use_empty() &&
             llvm::all_of(result.getUsers(), [](Operation *user) {
               return isa<tensor::ExpandShapeOp>(user);
             })) {
    role = ColumnRole::Heads;
  }
  if (role == ColumnRole::Replicated)
    return success();
  return shardColumns(linear, role);
}

LogicalResult TensorParallelSharder::shardColumns(LinearOp linear,
                                                  ColumnRole role) {
  auto resultType = cast<RankedTensorType>(linear.getResult().getType());
  StringRef what = role == ColumnRole::Vocabulary ? "vocabulary entries"
                   : role == ColumnRole::GateUp   ? "MLP features"
                                                  : "output features";
  if (failed(checkDivisible(linear, what, resultType.getDimSize(1))))
    return failure();
  for (auto [operand, name] : {std::pair{linear.getBias(), "bias"},
                               std::pair{linear.getResidual(), "residual"}})
    if (operand)
      return linear.emitOpError()
             << "cannot be split over tensor-parallel ranks: it has a " << name
             << " (" << operand.getType()
             << "), which a column-parallel linear does not take yet";
  if (failed(
          shardWeight(linear, /*dim=*/0, role == ColumnRole::GateUp ? 2 : 1)))
    return failure();
  RankedTensorType part = divided(resultType, 1);
  linear.getResult().setType(part);
  // A kernel chosen for the whole shape is not the rank's.
  linear->removeAttr(KernelAttr::getOpAttrName());
  if (role != ColumnRole::Vocabulary) {
    split.insert(linear.getResult());
    return success();
  }
  // Every rank samples from the whole logits.
  OpBuilder b(linear->getContext());
  b.setInsertionPointAfter(linear);
  auto gather = AllGatherOp::create(b, linear.getLoc(), resultType,
                                    linear.getResult(), ranks);
  linear.getResult().replaceAllUsesExcept(gather.getResult(), gather);
  return success();
}

LogicalResult TensorParallelSharder::shardRows(LinearOp linear) {
  if (linear.getActivation() != Activation::none)
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: a row-parallel "
              "linear (its input is split) takes no activation";
  if (Value bias = linear.getBias())
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: a row-parallel "
              "linear with a bias ("
           << bias.getType() << ") is not supported yet";
  if (failed(shardWeight(linear, /*dim=*/1, /*parts=*/1)))
    return failure();
  // The rank's partial product, then the sum over the ranks. The residual
  // is added once: by rank 0's partial product, in its epilogue.
  OpBuilder b(linear->getContext());
  b.setInsertionPoint(linear);
  Value residual = linear.getResidual();
  auto partial = LinearOp::create(
      b, linear.getLoc(), linear.getResult().getType(), linear.getInput(),
      linear.getWeight(), /*bias=*/Value(), residual, Activation::none,
      residual ? b.getI64IntegerAttr(0) : IntegerAttr());
  partial->setDiscardableAttrs(linear->getDiscardableAttrDictionary());
  partial->removeAttr(KernelAttr::getOpAttrName());
  auto reduce = AllReduceOp::create(
      b, linear.getLoc(), linear.getResult().getType(), Reduction::sum,
      partial.getResult(), /*residual=*/Value(), ranks);
  linear.getResult().replaceAllUsesWith(reduce.getResult());
  linear.erase();
  return success();
}

LogicalResult TensorParallelSharder::shardWeight(LinearOp linear, int64_t dim,
                                                 int64_t parts) {
  auto ref = linear.getWeight().getDefiningOp<WeightRefOp>();
  if (!ref)
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: its weight is not "
              "a decode.weight_ref";
  auto weight = symbols.lookup<WeightOp>(ref.getName());
  auto type = dyn_cast<RankedTensorType>(weight.getType());
  if (!type || type.getRank() != 2)
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: weight @"
           << weight.getSymName() << " of type " << weight.getType()
           << " is not a dense matrix (INT4 and Tiled-CSL weights are not "
              "sharded yet)";
  if (weight.getOffset())
    return weight.emitOpError()
           << "weight @" << weight.getSymName()
           << " is already placed in the arena; run "
              "decode-shard-tensor-parallel before decode-assign-weight-layout";
  if (failed(checkDivisible(linear, dim == 0 ? "weight rows" : "weight columns",
                            type.getDimSize(dim))))
    return failure();
  if (weight.getShard())
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: weight @"
           << weight.getSymName()
           << " is already split for another linear; declare a weight per "
              "linear";

  SmallVector<Attribute> sources;
  if (std::optional<ArrayAttr> listed = weight.getSources())
    sources.assign(listed->begin(), listed->end());
  else
    sources.push_back(
        StringAttr::get(weight.getContext(), weight.getSymName()));
  SmallVector<int64_t> sourceRows;
  if (sources.size() == 1 && parts == 1) {
    sourceRows.push_back(type.getDimSize(0));
  } else if (static_cast<int64_t>(sources.size()) == parts) {
    // Gate and up: two sources of equal rows.
    sourceRows.assign(parts, type.getDimSize(0) / parts);
    if (failed(
            checkDivisible(linear, "rows of each source", sourceRows.front())))
      return failure();
  } else {
    return linear.emitOpError()
           << "cannot be split over tensor-parallel ranks: weight @"
           << weight.getSymName() << " stacks " << sources.size()
           << " source(s), and the ranks' rows of each are unknown (a "
              "SiLU-gate-up weight must concatenate gate and up)";
  }
  auto shard =
      ShardAttr::get(weight.getContext(), dim, ranks,
                     DenseI64ArrayAttr::get(weight.getContext(), sourceRows));
  RankedTensorType part = divided(type, dim);

  // A weight that is also used whole (a tied embedding) gets a declaration
  // of its own for the shard.
  bool usedElsewhere = false;
  step.walk([&](WeightRefOp other) {
    if (other != ref && other.getName() == ref.getName())
      usedElsewhere = true;
  });
  if (!usedElsewhere && ref.getResult().hasOneUse()) {
    weight.setType(part);
    weight.setShardAttr(shard);
    ref.getResult().setType(part);
    return success();
  }
  OpBuilder b(weight);
  b.setInsertionPointAfter(weight);
  auto declared =
      WeightOp::create(b, weight.getLoc(),
                       b.getStringAttr(weight.getSymName().str() + ".tp_shard"),
                       TypeAttr::get(part), b.getArrayAttr(sources), shard,
                       /*offset=*/IntegerAttr());
  symbols.insert(declared); // renames it if the name is taken
  b.setInsertionPoint(linear);
  auto sliceRef = WeightRefOp::create(
      b, ref.getLoc(), part, FlatSymbolRefAttr::get(declared.getSymNameAttr()));
  linear.getWeightMutable().assign(sliceRef.getResult());
  return success();
}

struct ShardTensorParallel
    : public fdc::decode::impl::DecodeShardTensorParallelBase<
          ShardTensorParallel> {
  using Base::Base;

  void runOnOperation() override {
    if (ranks < 1 || ranks > 64) {
      getOperation().emitError()
          << "decode-shard-tensor-parallel: ranks must be in [1, 64], got "
          << static_cast<int64_t>(ranks);
      return signalPassFailure();
    }
    if (ranks == 1)
      return;
    if (!getOperation().getStepFunction()) {
      getOperation().emitOpError() << "has no step function to shard";
      return signalPassFailure();
    }
    if (failed(TensorParallelSharder(getOperation(), ranks).run()))
      signalPassFailure();
  }
};
} // namespace
