//===- DecodeOps.cpp - decode dialect operations --------------------------===//
//
// Verifiers. Every message names the offending dimension and both values, so
// a user can find the mismatch in a model without reading the verifier.
//
//===----------------------------------------------------------------------===//

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <cstdio>

using namespace mlir;
using namespace fdc::decode;

/// Parses `weight-type (, bias-type)? (, residual-type)?`: one type per
/// optional operand that is present, in operand order.
static ParseResult parseWeightAndOptionalTypes(
    OpAsmParser &parser, Type &weightType,
    std::optional<OpAsmParser::UnresolvedOperand> first,
    std::optional<OpAsmParser::UnresolvedOperand> second, Type &firstType,
    Type &secondType) {
  if (parser.parseType(weightType))
    return failure();
  if (first && (parser.parseComma() || parser.parseType(firstType)))
    return failure();
  if (second && (parser.parseComma() || parser.parseType(secondType)))
    return failure();
  return success();
}

static void printWeightAndOptionalTypes(OpAsmPrinter &printer, Operation *,
                                        Type weightType, Value first,
                                        Value second, Type firstType,
                                        Type secondType) {
  printer << weightType;
  if (first)
    printer << ", " << firstType;
  if (second)
    printer << ", " << secondType;
}

#define GET_OP_CLASSES
#include "fdc/Dialect/Decode/IR/DecodeOps.cpp.inc"

ArrayRef<StringRef> fdc::decode::getStepArgumentNames() {
  static const StringRef names[] = {"tokens",      "positions", "slots",
                                    "temperature", "top_k",     "top_p",
                                    "uniform",     "cache"};
  return names;
}

namespace {
/// Two dimensions agree when either is dynamic or both are equal.
bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

std::string dimString(int64_t dim) {
  return ShapedType::isDynamic(dim) ? "?" : std::to_string(dim);
}

LogicalResult checkRank(Operation *op, StringRef what, RankedTensorType type,
                        int64_t rank, StringRef layout) {
  if (type.getRank() != rank)
    return op->emitOpError() << what << " must be rank " << rank << " "
                             << layout << ", got " << type;
  return success();
}

LogicalResult checkDim(Operation *op, StringRef what, int64_t actual,
                       StringRef other, int64_t expected) {
  if (!dimsAgree(actual, expected))
    return op->emitOpError()
           << what << " = " << dimString(actual) << " does not match " << other
           << " = " << dimString(expected);
  return success();
}

/// The batch dimension of every per-sequence value must be dynamic: one
/// compiled step serves any batch size.
LogicalResult checkBatchDim(Operation *op, StringRef what,
                            RankedTensorType type) {
  if (!type.isDynamicDim(0))
    return op->emitOpError() << what << " batch dimension must be dynamic "
                             << "('?'), got " << type;
  return success();
}

RankedTensorType vectorType(MLIRContext *ctx, Type elementType) {
  return RankedTensorType::get({ShapedType::kDynamic}, elementType);
}

/// A positive, finite float attribute (`> bound`); NaN and infinities fail.
LogicalResult checkFloatAbove(Operation *op, StringRef name, APFloat value,
                              double bound, StringRef requirement) {
  double x = value.convertToDouble();
  if (!(x > bound) || !std::isfinite(x))
    return op->emitOpError()
           << name << " must be " << requirement << ", got " << formatFloat(x);
  return success();
}
} // namespace

std::string fdc::decode::formatFloat(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

//===----------------------------------------------------------------------===//
// ModelOp
//===----------------------------------------------------------------------===//

func::FuncOp ModelOp::getStepFunction() {
  return dyn_cast_or_null<func::FuncOp>(lookupSymbol("step"));
}

namespace {
/// Non-finite floats anywhere in the config (they have no JSON spelling),
/// and the keys the model library and the runtime read: integers in
/// [1, 2^31 - 1].
LogicalResult verifyConfigValue(ModelOp model, StringRef key, Attribute value) {
  if (auto number = dyn_cast<FloatAttr>(value)) {
    double x = number.getValueAsDouble();
    if (!std::isfinite(x))
      return model.emitOpError() << "config " << key << " = " << formatFloat(x)
                                 << " is not a finite number";
  } else if (auto array = dyn_cast<ArrayAttr>(value)) {
    for (auto [index, element] : llvm::enumerate(array))
      if (failed(verifyConfigValue(
              model, (key + "[" + Twine(index) + "]").str(), element)))
        return failure();
  } else if (auto dict = dyn_cast<DictionaryAttr>(value)) {
    for (NamedAttribute entry : dict)
      if (failed(verifyConfigValue(
              model, (key + "." + entry.getName().getValue()).str(),
              entry.getValue())))
        return failure();
  }
  return success();
}

LogicalResult verifyConfig(ModelOp model) {
  DictionaryAttr config = model.getConfig();
  for (NamedAttribute entry : config)
    if (failed(verifyConfigValue(model, entry.getName().getValue(),
                                 entry.getValue())))
      return failure();
  for (StringRef key : {"vocab_size", "max_position_embeddings"}) {
    Attribute value = config.get(key);
    if (!value)
      continue;
    auto integer = dyn_cast<IntegerAttr>(value);
    if (!integer || !isa<IntegerType>(integer.getType()) ||
        integer.getType().isInteger(1))
      return model.emitOpError()
             << "config " << key << " must be an integer, got " << value;
    const APInt &number = integer.getValue();
    bool isSigned = !integer.getType().isUnsignedInteger();
    if ((isSigned ? number.isNonPositive() : number.isZero()) ||
        (isSigned ? number.getSignificantBits() > 32
                  : number.getActiveBits() > 31))
      return model.emitOpError()
             << "config " << key << " must be in [1, 2147483647], got "
             << (isSigned ? llvm::toString(number, 10, true)
                          : llvm::toString(number, 10, false));
  }
  return success();
}

/// Names a step operand's origin: "the step argument 'tokens' (#0)", or "a
/// value computed inside the step".
std::string describeStepValue(func::FuncOp step, Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &step.getBody().front())
    return "a value computed inside the step";
  unsigned index = arg.getArgNumber();
  return ("the step argument '" + getStepArgumentNames()[index] + "' (#" +
          Twine(index) + ")")
      .str();
}

/// The index operands the runtime bound-checks must be the step's own
/// arguments: `operand` (named `what`) must be step argument `index`.
LogicalResult checkStepArgument(func::FuncOp step, Operation *op,
                                StringRef what, Value operand, unsigned index) {
  auto arg = dyn_cast<BlockArgument>(operand);
  if (arg && arg.getOwner() == &step.getBody().front() &&
      arg.getArgNumber() == index)
    return success();
  return op->emitOpError() << what << " must be the step argument '"
                           << getStepArgumentNames()[index] << "' (#" << index
                           << "), got " << describeStepValue(step, operand);
}

constexpr unsigned kTokensArg = 0, kPositionsArg = 1, kSlotsArg = 2,
                   kTemperatureArg = 3, kTopKArg = 4, kTopPArg = 5,
                   kUniformArg = 6;

/// Every embedding table must hold a row for every token id the runtime
/// admits, [0, vocab).
LogicalResult checkEmbeddingTable(EmbeddingOp op, int64_t vocab,
                                  bool fromConfig) {
  RankedTensorType table = op.getTable().getType();
  std::string name = "table";
  if (auto ref = op.getTable().getDefiningOp<WeightRefOp>())
    name = ("table @" + ref.getName()).str();
  StringRef source = fromConfig ? "config vocab_size" : "the logits width";
  if (table.isDynamicDim(0))
    return op.emitOpError() << name << " of type " << table
                            << " must have a static row count of at least "
                            << vocab << " (" << source << ")";
  if (table.getDimSize(0) < vocab)
    return op.emitOpError() << name << " has " << table.getDimSize(0)
                            << " rows, fewer than the vocabulary's " << vocab
                            << " tokens (" << source << "); token ids up to "
                            << vocab - 1 << " would read past it";
  return success();
}

/// Checks the ops of the step against what the runtime can bound-check and
/// what the kernels size at compile time:
/// - index operands (tokens, slots, positions, sampling parameters) are the
///   step's own arguments, which the runtime checks before every step;
/// - every embedding table has a row for every admissible token id;
/// - a tensor computed from a step argument is per sequence: `tensor<?x...>`
///   with only the batch dimension dynamic. A static batch dimension would be
///   allocated for that many rows while the kernels run over the live batch,
///   and a dynamic inner dimension has no size the kernels could use;
/// - the activation operands of decode ops are per sequence, and their weight
///   operands are weights: static, computed from weights and constants alone
///   (a reshaped table);
/// - reshapes of per-sequence values keep the batch dimension as it is;
/// - argmax and sample pick ids from logits exactly as wide as the
///   vocabulary.
class StepBodyVerifier {
public:
  StepBodyVerifier(ModelOp model, func::FuncOp step, int64_t vocab)
      : step(step), vocab(vocab),
        vocabFromConfig(static_cast<bool>(model.getConfig().get("vocab_size"))),
        ranks(static_cast<int64_t>(model.getTensorParallel())) {
    for (BlockArgument arg : step.getArguments())
      if (isa<RankedTensorType>(arg.getType()))
        perSequence.insert(arg);
  }

  LogicalResult verify() {
    WalkResult result = step.walk([&](Operation *op) {
      if (failed(verifyResults(op)) || failed(verifyOperands(op)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }

private:
  LogicalResult verifyResults(Operation *op) {
    if (llvm::none_of(op->getOperands(),
                      [&](Value v) { return perSequence.contains(v); }))
      return success();
    for (OpResult result : op->getResults()) {
      perSequence.insert(result);
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type)
        continue;
      bool batchDynamic = type.getRank() >= 1 && type.isDynamicDim(0);
      bool innerStatic = llvm::all_of(type.getShape().drop_front(),
                                      [](int64_t d) { return d >= 0; });
      if (!batchDynamic || !innerStatic)
        return op->emitOpError()
               << "result #" << result.getResultNumber() << " of type " << type
               << " is computed per sequence, so it must have a dynamic batch "
                  "dimension and static others (tensor<?x...>): the step "
                  "serves any batch size, and the kernels are sized for the "
                  "other dimensions at compile time";
    }
    return success();
  }

  LogicalResult verifyOperands(Operation *op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](EmbeddingOp embedding) {
          if (failed(checkStepArgument(step, op, "tokens",
                                       embedding.getTokens(), kTokensArg)))
            return failure();
          return checkEmbeddingTable(embedding, vocab, vocabFromConfig);
        })
        .Case([&](RMSNormOp norm) {
          return success(succeeded(activation(op, "input", norm.getInput())) &&
                         succeeded(weight(op, "weight", norm.getWeight())));
        })
        .Case([&](LinearOp linear) {
          return success(
              succeeded(activation(op, "input", linear.getInput())) &&
              succeeded(activation(op, "residual", linear.getResidual())) &&
              succeeded(weight(op, "weight", linear.getWeight())) &&
              succeeded(weight(op, "bias", linear.getBias())) &&
              succeeded(residualRank(linear)));
        })
        .Case([&](SparseLinearOp linear) {
          return success(
              succeeded(activation(op, "input", linear.getInput())) &&
              succeeded(activation(op, "residual", linear.getResidual())) &&
              succeeded(weight(op, "weight", linear.getWeight())) &&
              succeeded(weight(op, "bias", linear.getBias())));
        })
        .Case([&](tensor::ExpandShapeOp expand) { return reshape(expand); })
        .Case(
            [&](tensor::CollapseShapeOp collapse) { return reshape(collapse); })
        .Case([&](RopeOp rope) {
          return success(succeeded(checkStepArgument(step, op, "positions",
                                                     rope.getPositions(),
                                                     kPositionsArg)) &&
                         succeeded(activation(op, "input", rope.getInput())));
        })
        .Case([&](KVAppendOp append) {
          return success(succeeded(indices(op, append.getSlots(),
                                           append.getPositions())) &&
                         succeeded(activation(op, "key", append.getKey())) &&
                         succeeded(activation(op, "value", append.getValue())));
        })
        .Case([&](AttentionOp attention) {
          return success(
              succeeded(indices(op, attention.getSlots(),
                                attention.getPositions())) &&
              succeeded(activation(op, "query", attention.getQuery())));
        })
        .Case([&](ArgmaxOp argmax) {
          return success(
              succeeded(activation(op, "logits", argmax.getLogits())) &&
              succeeded(vocabularyWide(op, argmax.getLogits())));
        })
        .Case([&](SampleOp sample) {
          return success(
              succeeded(activation(op, "logits", sample.getLogits())) &&
              succeeded(vocabularyWide(op, sample.getLogits())) &&
              succeeded(checkStepArgument(step, op, "temperature",
                                          sample.getTemperature(),
                                          kTemperatureArg)) &&
              succeeded(checkStepArgument(step, op, "top_k", sample.getTopK(),
                                          kTopKArg)) &&
              succeeded(checkStepArgument(step, op, "top_p", sample.getTopP(),
                                          kTopPArg)) &&
              succeeded(checkStepArgument(step, op, "uniform",
                                          sample.getUniform(), kUniformArg)));
        })
        .Case([&](AllReduceOp reduce) {
          return success(
              succeeded(activation(op, "input", reduce.getInput())) &&
              succeeded(activation(op, "residual", reduce.getResidual())) &&
              succeeded(groupSize(op, reduce.getGroupSize())));
        })
        .Case([&](AllGatherOp gather) {
          return success(
              succeeded(activation(op, "input", gather.getInput())) &&
              succeeded(groupSize(op, gather.getGroupSize())));
        })
        .Default([](Operation *) { return success(); });
  }

  /// A linear adds its residual on one of the model's ranks.
  LogicalResult residualRank(LinearOp linear) {
    std::optional<int64_t> rank = linear.getResidualRank();
    if (!rank || *rank < ranks)
      return success();
    return linear.emitOpError()
           << "residual_rank " << *rank
           << " is not a rank of the model's tensor-parallel group of "
           << ranks;
  }

  /// A collective spans the model's tensor-parallel group.
  LogicalResult groupSize(Operation *op, int64_t size) {
    if (size == ranks)
      return success();
    return op->emitOpError()
           << "group_size " << size << " must be the model's tensor_parallel "
           << ranks;
  }

  /// `value` (an optional operand when null) must be computed per sequence.
  LogicalResult activation(Operation *op, StringRef what, Value value) {
    if (!value || perSequence.contains(value))
      return success();
    return op->emitOpError()
           << what << " must be computed from the step's inputs (one row per "
           << "sequence), got a value computed from weights and constants "
              "alone, of type "
           << value.getType();
  }

  /// A weight operand (`value` null when absent) is a weight: computed from
  /// weights and constants alone, with a static shape the kernels size by.
  LogicalResult weight(Operation *op, StringRef what, Value value) {
    if (!value)
      return success();
    auto shaped = dyn_cast<ShapedType>(value.getType());
    if (!perSequence.contains(value) && (!shaped || shaped.hasStaticShape()))
      return success();
    return op->emitOpError()
           << what << " must be a weight (computed from weights and constants "
           << "alone, with a static shape), got "
           << (perSequence.contains(value) ? "a value computed per sequence"
                                           : "a value")
           << " of type " << value.getType();
  }

  /// Sampled ids index the embedding tables and the logits the runtime
  /// returns: the logits are exactly as wide as the vocabulary.
  LogicalResult vocabularyWide(Operation *op, Value logits) {
    int64_t width = cast<RankedTensorType>(logits.getType()).getDimSize(1);
    if (width == vocab)
      return success();
    return op->emitOpError()
           << "logits width " << width << " must be the vocabulary's " << vocab
           << " (ids it picks index the embedding tables)";
  }

  /// A reshape of a per-sequence value keeps the batch dimension as a group
  /// of its own, and an expand takes its size from the batch (tensor.dim of a
  /// per-sequence value at 0): the lowerings allocate `batch` rows for every
  /// per-sequence value.
  template <typename ReshapeOp> LogicalResult reshape(ReshapeOp op) {
    if (!perSequence.contains(op.getSrc()))
      return success();
    SmallVector<ReassociationIndices> groups = op.getReassociationIndices();
    if (groups.empty() || groups.front() != ReassociationIndices{0})
      return op.emitOpError()
             << "reshapes a per-sequence value: the batch dimension must be "
                "a reassociation group of its own ([0])";
    if constexpr (std::is_same_v<ReshapeOp, tensor::ExpandShapeOp>) {
      std::optional<Value> rows;
      for (OpFoldResult size : op.getMixedOutputShape()) {
        rows = dyn_cast<Value>(size);
        break;
      }
      auto dim = rows && *rows ? rows->template getDefiningOp<tensor::DimOp>()
                               : tensor::DimOp();
      std::optional<int64_t> index =
          dim ? dim.getConstantIndex() : std::nullopt;
      if (!dim || !perSequence.contains(dim.getSource()) || index != 0)
        return op.emitOpError()
               << "reshapes a per-sequence value: output_shape[0] must be "
                  "the batch, a tensor.dim of a per-sequence value at index 0";
    }
    return success();
  }

  LogicalResult indices(Operation *op, Value slots, Value positions) {
    return success(
        succeeded(checkStepArgument(step, op, "slots", slots, kSlotsArg)) &&
        succeeded(checkStepArgument(step, op, "positions", positions,
                                    kPositionsArg)));
  }

  func::FuncOp step;
  int64_t vocab;
  bool vocabFromConfig;
  /// The model's tensor_parallel.
  int64_t ranks;
  /// The step's tensor arguments and every value computed from them.
  llvm::DenseSet<Value> perSequence;
};
} // namespace

LogicalResult ModelOp::verifyRegions() {
  for (Operation &op : getBody().front()) {
    if (!isa<WeightOp, func::FuncOp>(op))
      return op.emitOpError()
             << "is not allowed directly in 'decode.model' (only "
                "'decode.weight' and 'func.func' are)";
  }
  func::FuncOp step = getStepFunction();
  if (!step)
    return emitOpError() << "has no step function ('func.func @step')";
  if (step.isExternal())
    return step.emitOpError() << "step function must have a body";
  if (failed(verifyConfig(*this)))
    return failure();
  int64_t ranks = static_cast<int64_t>(getTensorParallel());
  if (ranks < 1 || ranks > 64)
    return emitOpError() << "tensor_parallel must be in [1, 64], got " << ranks;
  for (auto weight : getBody().front().getOps<WeightOp>()) {
    std::optional<ShardAttr> shard = weight.getShard();
    if (shard && shard->getRanks() != ranks)
      return weight.emitOpError()
             << "weight @" << weight.getSymName() << " is sharded over "
             << shard->getRanks() << " ranks, the model's tensor_parallel is "
             << ranks;
  }

  MLIRContext *ctx = getContext();
  Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
  FunctionType fnType = step.getFunctionType();
  ArrayRef<StringRef> names = getStepArgumentNames();
  if (fnType.getNumInputs() != names.size())
    return step.emitOpError()
           << "step function must take " << names.size()
           << " arguments (tokens, positions, slots, temperature, top_k, "
              "top_p, uniform, cache), got "
           << fnType.getNumInputs();
  Type expected[] = {vectorType(ctx, i32), vectorType(ctx, i32),
                     vectorType(ctx, i32), vectorType(ctx, f32),
                     vectorType(ctx, i32), vectorType(ctx, f32),
                     vectorType(ctx, f32)};
  for (auto [index, type] : llvm::enumerate(expected)) {
    if (fnType.getInput(index) != type)
      return step.emitOpError()
             << "step argument #" << index << " (" << names[index]
             << ") must be " << type << ", got " << fnType.getInput(index);
  }
  auto cacheType = dyn_cast<KVCacheType>(fnType.getInput(7));
  if (!cacheType)
    return step.emitOpError()
           << "step argument #7 (cache) must be a !decode.kv_cache, got "
           << fnType.getInput(7);

  if (fnType.getNumResults() != 3)
    return step.emitOpError() << "step function must return (logits, "
                                 "next_tokens, cache), got "
                              << fnType.getNumResults() << " results";
  auto logits = dyn_cast<RankedTensorType>(fnType.getResult(0));
  if (!logits || logits.getRank() != 2 || !logits.isDynamicDim(0) ||
      logits.isDynamicDim(1) || !logits.getElementType().isF32())
    return step.emitOpError()
           << "step result #0 (logits) must be tensor<?xVxf32>, got "
           << fnType.getResult(0);
  if (fnType.getResult(1) != vectorType(ctx, i32))
    return step.emitOpError()
           << "step result #1 (next_tokens) must be tensor<?xi32>, got "
           << fnType.getResult(1);
  if (fnType.getResult(2) != cacheType)
    return step.emitOpError()
           << "step result #2 (cache) must have the argument's type "
           << cacheType << ", got " << fnType.getResult(2);
  if (auto vocab = getConfig().getAs<IntegerAttr>("vocab_size")) {
    if (vocab.getInt() != logits.getDimSize(1))
      return step.emitOpError()
             << "logits width " << logits.getDimSize(1)
             << " does not match config vocab_size = " << vocab.getInt();
  }
  return StepBodyVerifier(*this, step, logits.getDimSize(1)).verify();
}

//===----------------------------------------------------------------------===//
// WeightOp / WeightRefOp
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  Type type = getType();
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    if (!tensor.hasStaticShape())
      return emitOpError() << "weight @" << getSymName()
                           << " must have a static shape, got " << type;
    Type element = tensor.getElementType();
    if (!element.isF32() && !element.isF16() && !element.isBF16())
      return emitOpError() << "weight @" << getSymName()
                           << " element type must be f32, f16 or bf16, got "
                           << element;
  } else if (!isa<QuantTensorType, TiledCSLType>(type)) {
    return emitOpError() << "weight @" << getSymName()
                         << " must be a tensor, !decode.qtensor or "
                            "!decode.tiled_csl, got "
                         << type;
  }
  if (failed(getWeightBytes(type)))
    return emitOpError() << "weight @" << getSymName() << " of type " << type
                         << " takes more than 2^63 - 1 bytes";
  if (std::optional<ArrayAttr> sources = getSources()) {
    if (sources->empty())
      return emitOpError() << "weight @" << getSymName()
                           << " concatenates no sources";
  }
  if (std::optional<ShardAttr> shard = getShard()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() != 2)
      return emitOpError() << "weight @" << getSymName()
                           << ": only a 2-D tensor weight can be sharded, got "
                           << type;
    ArrayRef<int64_t> sourceRows = shard->getSourceRows().asArrayRef();
    size_t sourceCount = getSources() ? getSources()->size() : 1;
    if (sourceRows.size() != sourceCount)
      return emitOpError() << "weight @" << getSymName() << " has "
                           << sourceCount << " source(s) but its shard lists "
                           << sourceRows.size() << " source row counts";
    int64_t rows = 0;
    for (int64_t sourceRowCount : sourceRows)
      rows += shard->getDim() == 0 ? sourceRowCount / shard->getRanks()
                                   : sourceRowCount;
    if (rows != tensor.getDimSize(0))
      return emitOpError() << "weight @" << getSymName() << " has "
                           << tensor.getDimSize(0)
                           << " rows, its shard of the sources gives " << rows;
  }
  return success();
}

LogicalResult
WeightRefOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto model = (*this)->getParentOfType<ModelOp>();
  if (!model)
    return emitOpError() << "must be inside a 'decode.model'";
  auto weight =
      symbolTable.lookupNearestSymbolFrom<WeightOp>(model, getNameAttr());
  if (!weight)
    return emitOpError() << "references undeclared weight " << getNameAttr();
  if (weight.getType() != getType())
    return emitOpError() << "type " << getType() << " does not match weight "
                         << getNameAttr() << " declared as "
                         << weight.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  auto table = getTable().getType();
  auto tokens = cast<RankedTensorType>(getTokens().getType());
  auto result = getResult().getType();
  if (failed(checkRank(*this, "table", table, 2, "[vocab, hidden]")) ||
      failed(checkRank(*this, "tokens", tokens, 1, "[M]")) ||
      failed(checkRank(*this, "result", result, 2, "[M, hidden]")))
    return failure();
  if (result.getElementType() != table.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " does not match table element type "
                         << table.getElementType();
  if (failed(checkDim(*this, "result batch dimension M", result.getDimSize(0),
                      "tokens dimension M", tokens.getDimSize(0))) ||
      failed(checkDim(*this, "result hidden dimension", result.getDimSize(1),
                      "table hidden dimension", table.getDimSize(1))))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  auto input = getInput().getType();
  auto weight = getWeight().getType();
  if (failed(checkRank(*this, "input", input, 2, "[M, hidden]")) ||
      failed(checkRank(*this, "weight", weight, 1, "[hidden]")))
    return failure();
  if (getResult().getType() != input)
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal input type " << input;
  if (failed(checkDim(*this, "weight dimension", weight.getDimSize(0),
                      "input hidden dimension", input.getDimSize(1))))
    return failure();
  return checkFloatAbove(*this, "eps", getEps(), 0.0, "positive and finite");
}

//===----------------------------------------------------------------------===//
// LinearOp / SparseLinearOp
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyLinearShapes(Operation *op, RankedTensorType input,
                                 ArrayRef<int64_t> weightShape,
                                 RankedTensorType result, int64_t outputN) {
  if (failed(checkRank(op, "input", input, 2, "[M, K]")) ||
      failed(checkRank(op, "result", result, 2, "[M, N]")))
    return failure();
  if (failed(checkDim(op, "input dimension K", input.getDimSize(1),
                      "weight dimension K", weightShape[1])) ||
      failed(checkDim(op, "result batch dimension M", result.getDimSize(0),
                      "input batch dimension M", input.getDimSize(0))) ||
      failed(checkDim(op, "result dimension N", result.getDimSize(1),
                      "the weight's output dimension N", outputN)))
    return failure();
  Type out = result.getElementType();
  if (out != input.getElementType() && !out.isF32())
    return op->emitOpError()
           << "result element type " << out << " must be the input's ("
           << input.getElementType() << ") or f32";
  return success();
}
} // namespace

namespace {
/// The checks decode.linear and decode.sparse_linear share: shapes against
/// the [N, K] weight, and the epilogues.
LogicalResult verifyLinearLike(Operation *op, RankedTensorType input,
                               ArrayRef<int64_t> weightShape, Value bias,
                               Value residual, Activation activation,
                               RankedTensorType result) {
  int64_t n = weightShape[0];
  if (activation == Activation::silu_gate_up) {
    if (!ShapedType::isDynamic(n) && n % 2 != 0)
      return op->emitOpError()
             << "silu_gate_up needs an even weight dimension N (gate rows "
                "then up rows), got N = "
             << n;
    n = ShapedType::isDynamic(n) ? n : n / 2;
  }
  if (failed(verifyLinearShapes(op, input, weightShape, result, n)))
    return failure();
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (failed(checkRank(op, "bias", biasType, 1, "[N]")) ||
        failed(checkDim(op, "bias dimension", biasType.getDimSize(0),
                        "weight dimension N", weightShape[0])))
      return failure();
  }
  if (residual && residual.getType() != result)
    return op->emitOpError() << "residual type " << residual.getType()
                             << " must equal result type " << result;
  return success();
}
} // namespace

LogicalResult LinearOp::verify() {
  if (std::optional<int64_t> rank = getResidualRank()) {
    if (!getResidual())
      return emitOpError() << "has residual_rank " << *rank
                           << " but no residual to add on that rank";
    if (*rank < 0)
      return emitOpError() << "residual_rank must be a rank (>= 0), got "
                           << *rank;
    if (Value bias = getBias())
      return emitOpError()
             << "has residual_rank " << *rank << " and a bias ("
             << bias.getType()
             << "): the other ranks' results would add the bias too";
  }
  ArrayRef<int64_t> weightShape;
  if (auto dense = dyn_cast<RankedTensorType>(getWeight().getType())) {
    if (failed(checkRank(*this, "weight", dense, 2, "[N, K]")))
      return failure();
    weightShape = dense.getShape();
  } else {
    weightShape = cast<QuantTensorType>(getWeight().getType()).getShape();
  }
  return verifyLinearLike(*this, getInput().getType(), weightShape, getBias(),
                          getResidual(), getActivation(),
                          getResult().getType());
}

LogicalResult SparseLinearOp::verify() {
  auto weight = getWeight().getType();
  if (getInput().getType().getElementType() != weight.getElementType())
    return emitOpError() << "input element type "
                         << getInput().getType().getElementType()
                         << " does not match sparse weight element type "
                         << weight.getElementType();
  return verifyLinearLike(*this, getInput().getType(), weight.getShape(),
                          getBias(), getResidual(), getActivation(),
                          getResult().getType());
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  auto input = getInput().getType();
  if (failed(checkRank(*this, "input", input, 3, "[M, heads, head_dim]")))
    return failure();
  int64_t headDim = input.getDimSize(2);
  int64_t rotaryDim = getRotaryDim();
  if (rotaryDim <= 0 || rotaryDim % 2 != 0)
    return emitOpError() << "rotary_dim must be positive and even, got "
                         << rotaryDim;
  if (!ShapedType::isDynamic(headDim) && rotaryDim > headDim)
    return emitOpError() << "rotary_dim " << rotaryDim
                         << " exceeds head dimension " << headDim;
  return checkFloatAbove(*this, "theta", getTheta(), 1.0,
                         "finite and greater than 1");
}

//===----------------------------------------------------------------------===//
// KVAppendOp / AttentionOp
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyAgainstCache(Operation *op, StringRef what,
                                 RankedTensorType value, KVCacheType cache,
                                 bool isQuery) {
  if (failed(checkRank(op, what, value, 3, "[M, heads, head_dim]")) ||
      failed(checkBatchDim(op, what, value)))
    return failure();
  int64_t heads = value.getDimSize(1), headDim = value.getDimSize(2);
  if (!dimsAgree(headDim, cache.getHeadDim()))
    return op->emitOpError()
           << what << " head_dim " << dimString(headDim)
           << " does not match cache head_dim " << cache.getHeadDim();
  if (isQuery) {
    if (!ShapedType::isDynamic(heads) && heads % cache.getKvHeads() != 0)
      return op->emitOpError() << "query heads (" << heads
                               << ") not divisible by cache kv heads ("
                               << cache.getKvHeads() << ")";
  } else if (!dimsAgree(heads, cache.getKvHeads())) {
    return op->emitOpError()
           << what << " heads " << dimString(heads)
           << " does not match cache kv_heads " << cache.getKvHeads();
  }
  Type element = cache.getElementType();
  if (!isa<Int4Type>(element) && value.getElementType() != element)
    return op->emitOpError()
           << what << " element type " << value.getElementType()
           << " does not match cache element type " << element;
  return success();
}

LogicalResult verifyLayer(Operation *op, int64_t layer, KVCacheType cache) {
  if (layer < 0 || layer >= cache.getLayers())
    return op->emitOpError() << "layer " << layer << " is out of range for a "
                             << "cache of " << cache.getLayers() << " layers";
  return success();
}
} // namespace

LogicalResult KVAppendOp::verify() {
  KVCacheType cache = getCache().getType();
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(verifyAgainstCache(*this, "key", getKey().getType(), cache,
                                /*isQuery=*/false)) ||
      failed(verifyAgainstCache(*this, "value", getValue().getType(), cache,
                                /*isQuery=*/false)))
    return failure();
  if (getKey().getType() != getValue().getType())
    return emitOpError() << "key type " << getKey().getType()
                         << " does not match value type "
                         << getValue().getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  KVCacheType cache = getCache().getType();
  if (failed(verifyLayer(*this, getLayer(), cache)) ||
      failed(verifyAgainstCache(*this, "query", getQuery().getType(), cache,
                                /*isQuery=*/true)))
    return failure();
  if (getResult().getType() != getQuery().getType())
    return emitOpError() << "result type " << getResult().getType()
                         << " must equal query type " << getQuery().getType();
  if (failed(checkFloatAbove(*this, "scale", getScale(), 0.0,
                             "positive and finite")))
    return failure();
  if (static_cast<int64_t>(getSplits()) < 0)
    return emitOpError() << "splits must be 0 (auto) or positive, got "
                         << static_cast<int64_t>(getSplits());
  return success();
}

//===----------------------------------------------------------------------===//
// ArgmaxOp / SampleOp / AllReduceOp
//===----------------------------------------------------------------------===//

namespace {
LogicalResult verifyLogits(Operation *op, RankedTensorType logits) {
  if (failed(checkRank(op, "logits", logits, 2, "[M, vocab]")) ||
      failed(checkBatchDim(op, "logits", logits)))
    return failure();
  if (logits.isDynamicDim(1))
    return op->emitOpError() << "logits vocabulary dimension must be static";
  return success();
}
} // namespace

LogicalResult ArgmaxOp::verify() {
  return verifyLogits(*this, getLogits().getType());
}

LogicalResult SampleOp::verify() {
  return verifyLogits(*this, getLogits().getType());
}

LogicalResult AllReduceOp::verify() {
  if (static_cast<int64_t>(getGroupSize()) < 1)
    return emitOpError() << "group_size must be at least 1, got "
                         << static_cast<int64_t>(getGroupSize());
  if (Value residual = getResidual()) {
    if (residual.getType() != getInput().getType())
      return emitOpError() << "residual type " << residual.getType()
                           << " must be the input's " << getInput().getType();
    auto type = cast<RankedTensorType>(getInput().getType());
    if (failed(checkRank(*this, "input", type, 2, "[M, n] (with a residual)")))
      return failure();
  }
  return success();
}

LogicalResult AllGatherOp::verify() {
  int64_t ranks = static_cast<int64_t>(getGroupSize());
  if (ranks < 1)
    return emitOpError() << "group_size must be at least 1, got " << ranks;
  auto input = cast<RankedTensorType>(getInput().getType());
  auto result = cast<RankedTensorType>(getResult().getType());
  if (failed(checkRank(*this, "input", input, 2, "[M, n]")) ||
      failed(checkRank(*this, "result", result, 2, "[M, n * group_size]")) ||
      failed(checkBatchDim(*this, "input", input)) ||
      failed(checkBatchDim(*this, "result", result)))
    return failure();
  if (input.isDynamicDim(1) || result.isDynamicDim(1) ||
      result.getDimSize(1) != input.getDimSize(1) * ranks)
    return emitOpError() << "result " << result << " must be [M, "
                         << input.getDimSize(1) << " * " << ranks
                         << "] for input " << input;
  if (input.getElementType() != result.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " must be the input's " << input.getElementType();
  return success();
}
