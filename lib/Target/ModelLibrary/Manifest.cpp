//===- Manifest.cpp - the model library's manifest and ABI globals --------===//

#include "fdc/Dialect/Decode/Transforms/Passes.h"
#include "fdc/Target/ModelLibrary.h"
#include "fdc_model_abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fdc;

// The ABI (version, step-argument layout, manifest hash) has one source,
// runtime/include/fdc_model_abi.h, shared with the runtime.

namespace {
llvm::json::Value attributeToJson(Attribute attr) {
  if (auto boolAttr = dyn_cast<BoolAttr>(attr))
    return boolAttr.getValue();
  if (auto intAttr = dyn_cast<IntegerAttr>(attr))
    return intAttr.getInt();
  if (auto floatAttr = dyn_cast<FloatAttr>(attr))
    return floatAttr.getValueAsDouble();
  if (auto stringAttr = dyn_cast<StringAttr>(attr))
    return stringAttr.str();
  if (auto arrayAttr = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array array;
    for (Attribute element : arrayAttr)
      array.push_back(attributeToJson(element));
    return array;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << attr;
  return text;
}

/// Each rank's pieces of a sharded weight (docs/model-library.md): per
/// source, the rank's equal part of its rows (dim 0) or of its columns
/// (dim 1), stacked along dimension 0 in source order.
llvm::json::Array getRankSlices(decode::WeightOp weight,
                                decode::ShardAttr shard) {
  SmallVector<std::string> sources;
  if (std::optional<ArrayAttr> listed = weight.getSources()) {
    for (Attribute source : *listed)
      sources.push_back(cast<StringAttr>(source).str());
  } else {
    sources.push_back(weight.getSymName().str());
  }
  int64_t columns = cast<RankedTensorType>(weight.getType()).getDimSize(1);
  ArrayRef<int64_t> sourceRows = shard.getSourceRows().asArrayRef();
  auto range = [](int64_t begin, int64_t end) {
    return llvm::json::Array{begin, end};
  };
  llvm::json::Array ranks;
  for (int64_t rank = 0; rank < shard.getRanks(); ++rank) {
    llvm::json::Array pieces;
    for (auto [source, rows] : llvm::zip_equal(sources, sourceRows)) {
      int64_t part = rows / shard.getRanks();
      bool byRows = shard.getDim() == 0;
      int64_t sourceColumns = byRows ? columns : columns * shard.getRanks();
      pieces.push_back(llvm::json::Object{
          {"source", source},
          {"source_shape", llvm::json::Array{rows, sourceColumns}},
          {"rows",
           byRows ? range(rank * part, (rank + 1) * part) : range(0, rows)},
          {"cols", byRows ? range(0, columns)
                          : range(rank * columns, (rank + 1) * columns)}});
    }
    ranks.push_back(std::move(pieces));
  }
  return ranks;
}
} // namespace

FailureOr<std::string> target::buildManifest(decode::ModelOp model,
                                             StringRef targetName) {
  func::FuncOp step = model.getStepFunction();
  auto cache = cast<decode::KVCacheType>(step.getArgumentTypes()[7]);

  llvm::json::Object config;
  for (NamedAttribute entry : model.getConfig())
    config[entry.getName().str()] = attributeToJson(entry.getValue());

  int64_t groups = 0;
  if (auto int4 = dyn_cast<decode::Int4Type>(cache.getElementType()))
    groups = int4.getGroups();
  llvm::json::Object kvCache{
      {"layers", cache.getLayers()},
      {"kv_heads", cache.getKvHeads()},
      {"head_dim", cache.getHeadDim()},
      {"dtype", decode::getDTypeName(cache.getElementType())},
      {"int4_groups", groups},
      {"row_bytes", cache.getRowBytes()}};

  llvm::json::Array weights;
  int64_t arenaBytes = 0;
  for (auto weight : model.getOps<decode::WeightOp>()) {
    std::optional<int64_t> offset = weight.getOffset();
    FailureOr<int64_t> bytes = decode::getWeightBytes(weight.getType());
    if (!offset || failed(bytes))
      return weight.emitOpError() << "weight @" << weight.getSymName()
                                  << " has no arena offset or size; run "
                                     "decode-assign-weight-layout first";
    llvm::json::Array sources;
    if (std::optional<ArrayAttr> listed = weight.getSources()) {
      for (Attribute source : *listed)
        sources.push_back(cast<StringAttr>(source).str());
    } else {
      sources.push_back(weight.getSymName().str());
    }
    llvm::json::Object entry{{"name", weight.getSymName().str()},
                             {"offset", *offset},
                             {"bytes", *bytes},
                             {"sources", std::move(sources)}};
    auto shapeOf = [](ArrayRef<int64_t> dims) {
      llvm::json::Array shape;
      for (int64_t size : dims)
        shape.push_back(size);
      return shape;
    };
    Type type = weight.getType();
    if (auto tensor = dyn_cast<RankedTensorType>(type)) {
      entry["dtype"] = decode::getDTypeName(tensor.getElementType());
      entry["shape"] = shapeOf(tensor.getShape());
      entry["layout"] = "dense";
    } else if (auto quant = dyn_cast<decode::QuantTensorType>(type)) {
      entry["dtype"] = "int4";
      entry["shape"] = shapeOf(quant.getShape());
      entry["layout"] = "int4";
      entry["group_size"] = quant.getGroupSize();
      entry["scale_dtype"] = decode::getDTypeName(quant.getScaleType());
    } else {
      auto sparse = cast<decode::TiledCSLType>(type);
      entry["dtype"] = decode::getDTypeName(sparse.getElementType());
      entry["shape"] = shapeOf(sparse.getShape());
      entry["layout"] = "tiled_csl";
      entry["tile"] = shapeOf(sparse.getTile());
      entry["csl_version"] = decode::TiledCSLType::kVersion;
    }
    if (std::optional<decode::ShardAttr> shard = weight.getShard())
      entry["slices"] = getRankSlices(weight, *shard);
    weights.push_back(std::move(entry));
    arenaBytes =
        std::max<int64_t>(arenaBytes, llvm::alignTo(*offset + *bytes, 256));
  }

  llvm::json::Array kernels;
  llvm::StringMap<int> counts;
  for (Operation &op : step.getBody().front()) {
    if (op.getDialect() != model->getDialect() || isa<decode::WeightRefOp>(op))
      continue;
    StringRef opName = op.getName().stripDialect();
    kernels.push_back(llvm::json::Object{
        {"name", (opName + "_" + Twine(counts[opName]++)).str()},
        {"op", op.getName().getStringRef().str()}});
  }

  llvm::json::Object manifest{{"abi_version", int64_t(FDC_MODEL_ABI_VERSION)},
                              {"target", targetName.str()},
                              {"model", model.getSymName().str()},
                              {"config", std::move(config)},
                              {"kv_cache", std::move(kvCache)},
                              {"weights_bytes", arenaBytes},
                              {"weights", std::move(weights)},
                              {"kernels", std::move(kernels)}};
  if (int64_t ranks = static_cast<int64_t>(model.getTensorParallel());
      ranks > 1)
    manifest["tensor_parallel"] = ranks;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(std::move(manifest));
  return text;
}

void target::addLibraryGlobals(ModuleOp module, StringRef targetName,
                               StringRef manifest) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  auto addString = [&](StringRef name, StringRef value) {
    std::string bytes = value.str();
    bytes.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
    LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                           LLVM::Linkage::External, name,
                           b.getStringAttr(bytes));
  };
  LLVM::GlobalOp::create(b, loc, b.getI32Type(), /*isConstant=*/true,
                         LLVM::Linkage::External, "fdc_abi_version",
                         b.getI32IntegerAttr(FDC_MODEL_ABI_VERSION));
  addString("fdc_target", targetName);
  addString("fdc_manifest", manifest);
  // The runtime recomputes this and refuses a manifest edited after
  // compilation (the code keeps the compiled shapes).
  uint64_t hash = fdc_manifest_hash_of(manifest.data(), manifest.size());
  LLVM::GlobalOp::create(b, loc, b.getI64Type(), /*isConstant=*/true,
                         LLVM::Linkage::External, "fdc_manifest_hash",
                         b.getI64IntegerAttr(static_cast<int64_t>(hash)));
}
