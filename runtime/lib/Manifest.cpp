//===- Manifest.cpp - The model library's JSON manifest -------------------===//

#include "fdc/runtime/Manifest.h"

#include "fdc/runtime/Packing.h"

#include <algorithm>

using namespace fdc::runtime;

namespace {

/// Reads typed fields, prefixing every error with the manifest's origin and
/// the field's path.
class FieldReader {
public:
  explicit FieldReader(std::string_view origin) : origin(origin) {}

  template <typename... Args> Error fail(const Args &...args) const {
    return createError("manifest of ", origin, ": ", args...);
  }

  Expected<int64_t> integer(const json::Value &object, std::string_view key,
                            std::string_view path, int64_t min = 0) const {
    const json::Value *value = object.get(key);
    if (!value)
      return fail("missing field '", path, "'");
    std::optional<int64_t> i = value->getInt64();
    if (!i)
      return fail("field '", path, "' is not an integer");
    if (*i < min)
      return fail("field '", path, "' is ", *i, ", expected >= ", min);
    return *i;
  }

  Expected<std::string> string(const json::Value &object, std::string_view key,
                               std::string_view path) const {
    const json::Value *value = object.get(key);
    if (!value)
      return fail("missing field '", path, "'");
    if (!value->getString())
      return fail("field '", path, "' is not a string");
    return *value->getString();
  }

  Expected<const json::Array *> array(const json::Value &object,
                                      std::string_view key,
                                      std::string_view path) const {
    const json::Value *value = object.get(key);
    if (!value)
      return fail("missing field '", path, "'");
    if (!value->getArray())
      return fail("field '", path, "' is not an array");
    return value->getArray();
  }

  std::string_view origin;
};

#define FDC_ASSIGN_OR_RETURN(lhs, expr)                                        \
  do {                                                                         \
    auto assignOrReturnValue = (expr);                                         \
    if (!assignOrReturnValue)                                                  \
      return assignOrReturnValue.takeError();                                  \
    lhs = std::move(*assignOrReturnValue);                                     \
  } while (false)

/// Reads `[begin, end)` with 0 <= begin < end from piece field `key`.
Error readRange(const json::Value &piece, const char *key, int64_t &begin,
                int64_t &end) {
  const json::Value *value = piece.get(key);
  if (!value)
    return createError("missing field '", key, "'");
  const json::Array *pair = value->getArray();
  std::optional<int64_t> b, e;
  if (pair && pair->size() == 2) {
    b = (*pair)[0].getInt64();
    e = (*pair)[1].getInt64();
  }
  if (!b || !e)
    return createError("'", key, "' must be [begin, end] (two integers)");
  if (!(*b >= 0 && *b < *e))
    return createError("'", key, "' [", *b, ", ", *e,
                       "] is not a range 0 <= begin < end");
  begin = *b;
  end = *e;
  return Error::success();
}

/// Parses a weight's "slices" (tensor-parallel manifests): one non-empty
/// array of pieces per rank, each rank's pieces stacking to the weight's
/// (per-rank) shape.
Error parseSlices(const FieldReader &reader, const json::Value &slices,
                  const std::string &path, WeightSpec &weight,
                  int64_t tensorParallel) {
  auto fail = [&](const auto &...args) {
    return reader.fail(path, " ('", weight.name, "'): ", args...);
  };
  if (tensorParallel == 1)
    return fail("'slices' needs a tensor-parallel manifest "
                "(\"tensor_parallel\" > 1)");
  const json::Array *ranks = slices.getArray();
  if (!ranks)
    return fail("'slices' is not an array");
  if (static_cast<int64_t>(ranks->size()) != tensorParallel)
    return fail("'slices' has ", ranks->size(),
                " entries, expected one per rank (tensor_parallel ",
                tensorParallel, ")");
  if (weight.layoutKind != WeightLayout::Dense)
    return fail("a sliced weight must have layout 'dense', not '",
                weight.layout, "'");
  if (weight.shape.size() != 2)
    return fail("a sliced weight must be 2-D, its shape is ",
                formatShape(weight.shape));
  int64_t rows = weight.shape[0];
  int64_t columns = weight.shape[1];
  for (size_t r = 0; r < ranks->size(); ++r) {
    const json::Array *pieces = (*ranks)[r].getArray();
    if (!pieces || pieces->empty())
      return fail("slices[", r, "] is not a non-empty array of pieces");
    std::vector<WeightPiece> rank;
    int64_t stacked = 0;
    for (size_t p = 0; p < pieces->size(); ++p) {
      auto pieceFail = [&](const auto &...args) {
        return fail("slices[", r, "][", p, "]: ", args...);
      };
      const json::Value &entry = (*pieces)[p];
      if (!entry.isObject())
        return pieceFail("not an object");
      WeightPiece piece;
      const json::Value *source = entry.get("source");
      if (!source || !source->getString())
        return pieceFail("missing string field 'source'");
      piece.source = *source->getString();
      if (Error err = readRange(entry, "rows", piece.rowBegin, piece.rowEnd))
        return pieceFail(err.message());
      if (Error err = readRange(entry, "cols", piece.colBegin, piece.colEnd))
        return pieceFail(err.message());
      if (const json::Value *sourceShape = entry.get("source_shape")) {
        const json::Array *dims = sourceShape->getArray();
        std::optional<int64_t> sourceRows, sourceCols;
        if (dims && dims->size() == 2) {
          sourceRows = (*dims)[0].getInt64();
          sourceCols = (*dims)[1].getInt64();
        }
        if (!sourceRows || !sourceCols || *sourceRows < 1 || *sourceCols < 1)
          return pieceFail("'source_shape' must be [rows, cols] (two positive "
                           "integers)");
        if (piece.rowEnd > *sourceRows || piece.colEnd > *sourceCols)
          return pieceFail("rows [", piece.rowBegin, ", ", piece.rowEnd,
                           ") x cols [", piece.colBegin, ", ", piece.colEnd,
                           ") lie outside its source_shape [", *sourceRows,
                           ", ", *sourceCols, "]");
        piece.sourceShape = {*sourceRows, *sourceCols};
      }
      if (piece.colEnd - piece.colBegin != columns)
        return pieceFail("cols [", piece.colBegin, ", ", piece.colEnd,
                         ") hold ", piece.colEnd - piece.colBegin,
                         " columns, the weight's shape ",
                         formatShape(weight.shape), " has ", columns);
      int64_t pieceRows = piece.rowEnd - piece.rowBegin;
      if (pieceRows > rows - stacked)
        return pieceFail("rows [", piece.rowBegin, ", ", piece.rowEnd,
                         ") overflow the weight's ", rows,
                         " rows (the rank's pieces so far hold ", stacked, ")");
      stacked += pieceRows;
      rank.push_back(std::move(piece));
    }
    if (stacked != rows)
      return fail("slices[", r, "]: the pieces hold ", stacked,
                  " rows in all, the weight's shape ",
                  formatShape(weight.shape), " has ", rows);
    weight.slices.push_back(std::move(rank));
  }
  return Error::success();
}

Expected<WeightSpec> parseWeight(const FieldReader &reader,
                                 const json::Value &entry, size_t index,
                                 uint64_t weightsBytes,
                                 int64_t tensorParallel) {
  std::string path = concat("weights[", index, "]");
  if (!entry.isObject())
    return reader.fail("'", path, "' is not an object");
  WeightSpec weight;
  FDC_ASSIGN_OR_RETURN(weight.name,
                       reader.string(entry, "name", path + ".name"));
  auto fail = [&](const auto &...args) {
    return reader.fail("weight '", weight.name, "': ", args...);
  };

  std::string dtype;
  FDC_ASSIGN_OR_RETURN(dtype, reader.string(entry, "dtype", path + ".dtype"));

  const json::Array *shape;
  FDC_ASSIGN_OR_RETURN(shape, reader.array(entry, "shape", path + ".shape"));
  uint64_t elements = 1;
  for (const json::Value &dim : *shape) {
    std::optional<int64_t> d = dim.getInt64();
    if (!d || *d < 0)
      return fail("shape entries must be non-negative integers");
    if (*d != 0 && elements > (UINT64_MAX / 8) / static_cast<uint64_t>(*d))
      return fail("shape is too large");
    elements *= static_cast<uint64_t>(*d);
    weight.shape.push_back(*d);
  }

  weight.layout = "dense";
  if (entry.get("layout"))
    FDC_ASSIGN_OR_RETURN(weight.layout,
                         reader.string(entry, "layout", path + ".layout"));
  if (weight.layout == "dense")
    weight.layoutKind = WeightLayout::Dense;
  else if (weight.layout == "int4")
    weight.layoutKind = WeightLayout::Int4;
  else if (weight.layout == "tiled_csl")
    weight.layoutKind = WeightLayout::TiledCSL;
  else
    return fail("layout '", weight.layout,
                "' is not supported by this runtime (only 'dense', 'int4', "
                "'tiled_csl')");

  if (weight.layoutKind == WeightLayout::Int4) {
    if (dtype != "int4")
      return fail("layout 'int4' needs dtype 'int4', got '", dtype, "'");
    weight.dtype = DType::U8;
    FDC_ASSIGN_OR_RETURN(
        weight.groupSize,
        reader.integer(entry, "group_size", path + ".group_size", 1));
    std::string scaleDType;
    FDC_ASSIGN_OR_RETURN(
        scaleDType, reader.string(entry, "scale_dtype", path + ".scale_dtype"));
    std::optional<DType> parsedScale = parseManifestDType(scaleDType);
    if (!parsedScale)
      return fail("scale_dtype '", scaleDType,
                  "' is not one of f32, bf16, f16");
    weight.scaleDType = *parsedScale;
  } else {
    std::optional<DType> parsed = parseManifestDType(dtype);
    if (!parsed)
      return fail("dtype '", dtype, "' is not one of f32, bf16, f16",
                  dtype == "int4" ? " (int4 needs layout 'int4')" : "");
    weight.dtype = *parsed;
  }
  if (weight.layoutKind == WeightLayout::TiledCSL) {
    const json::Array *tile;
    FDC_ASSIGN_OR_RETURN(tile, reader.array(entry, "tile", path + ".tile"));
    std::optional<int64_t> rows, cols;
    if (tile->size() == 2) {
      rows = (*tile)[0].getInt64();
      cols = (*tile)[1].getInt64();
    }
    if (!rows || !cols)
      return fail("'tile' must be [rows, columns] (two integers)");
    weight.tileRows = *rows;
    weight.tileCols = *cols;
    int64_t version;
    FDC_ASSIGN_OR_RETURN(
        version, reader.integer(entry, "csl_version", path + ".csl_version"));
    if (version != kTiledCSLVersion)
      return fail("tiled_csl layout version ", version,
                  " is not the version this runtime reads (", kTiledCSLVersion,
                  ")");
  }

  int64_t offset, bytes;
  FDC_ASSIGN_OR_RETURN(offset,
                       reader.integer(entry, "offset", path + ".offset"));
  FDC_ASSIGN_OR_RETURN(bytes, reader.integer(entry, "bytes", path + ".bytes"));
  weight.offset = static_cast<uint64_t>(offset);
  weight.bytes = static_cast<uint64_t>(bytes);
  if (weight.offset % 256 != 0)
    return fail("offset ", weight.offset, " is not a multiple of 256");
  if (weight.layoutKind == WeightLayout::Dense) {
    if (weight.bytes != elements * dtypeSize(weight.dtype))
      return fail("bytes ", weight.bytes, " does not match shape and dtype (",
                  elements * dtypeSize(weight.dtype), ")");
  } else if (Error err = checkPackedLayout(weight)) {
    return fail(err.message());
  }
  if (weight.offset > weightsBytes ||
      weight.bytes > weightsBytes - weight.offset)
    return fail("[", weight.offset, ", ", weight.offset + weight.bytes,
                ") lies outside the ", weightsBytes, "-byte weight arena");

  if (const json::Value *sources = entry.get("sources")) {
    if (!sources->getArray())
      return fail("'sources' is not an array");
    for (const json::Value &source : *sources->getArray()) {
      if (!source.getString())
        return fail("'sources' entries must be strings");
      weight.sources.push_back(*source.getString());
    }
    if (weight.sources.empty())
      return fail("'sources' is empty");
    if (weight.sources.size() > 1 && weight.shape.empty())
      return fail("a scalar cannot be the concatenation of several sources");
  } else {
    weight.sources.push_back(weight.name);
  }

  if (const json::Value *slices = entry.get("slices"))
    if (Error err = parseSlices(reader, *slices, path, weight, tensorParallel))
      return err;
  return weight;
}

Expected<KVCacheSpec> parseKVCache(const FieldReader &reader,
                                   const json::Value &entry) {
  if (!entry.isObject())
    return reader.fail("'kv_cache' is not an object");
  KVCacheSpec kv;
  FDC_ASSIGN_OR_RETURN(kv.layers,
                       reader.integer(entry, "layers", "kv_cache.layers", 1));
  FDC_ASSIGN_OR_RETURN(
      kv.kvHeads, reader.integer(entry, "kv_heads", "kv_cache.kv_heads", 1));
  FDC_ASSIGN_OR_RETURN(
      kv.headDim, reader.integer(entry, "head_dim", "kv_cache.head_dim", 1));
  FDC_ASSIGN_OR_RETURN(kv.dtype,
                       reader.string(entry, "dtype", "kv_cache.dtype"));
  if (entry.get("int4_groups"))
    FDC_ASSIGN_OR_RETURN(kv.int4Groups, reader.integer(entry, "int4_groups",
                                                       "kv_cache.int4_groups"));
  FDC_ASSIGN_OR_RETURN(
      kv.rowBytes, reader.integer(entry, "row_bytes", "kv_cache.row_bytes", 1));
  constexpr int64_t kLimit = int64_t(1) << 24;
  if (kv.layers > kLimit || kv.kvHeads > kLimit || kv.headDim > kLimit ||
      kv.rowBytes > kLimit || kv.int4Groups > kLimit)
    return reader.fail("kv_cache dimensions are implausibly large");

  int64_t expectedRowBytes;
  if (kv.dtype == "int4") {
    if (kv.int4Groups <= 0 || kv.headDim % 2 != 0 ||
        kv.headDim % kv.int4Groups != 0)
      return reader.fail("kv_cache: int4 needs int4_groups > 0 dividing an "
                         "even head_dim");
    expectedRowBytes = kv.int4Groups * 4 + kv.headDim / 2;
  } else {
    std::optional<DType> dtype = parseManifestDType(kv.dtype);
    if (!dtype)
      return reader.fail("kv_cache dtype '", kv.dtype,
                         "' is not one of f32, bf16, f16, int4");
    if (kv.int4Groups != 0)
      return reader.fail("kv_cache: int4_groups is ", kv.int4Groups,
                         " but dtype is ", kv.dtype);
    expectedRowBytes = kv.headDim * static_cast<int64_t>(dtypeSize(*dtype));
  }
  if (kv.rowBytes != expectedRowBytes)
    return reader.fail("kv_cache row_bytes is ", kv.rowBytes, ", expected ",
                       expectedRowBytes, " for head_dim ", kv.headDim, " ",
                       kv.dtype);
  return kv;
}

} // namespace

const char *fdc::runtime::weightLayoutName(WeightLayout layout) {
  switch (layout) {
  case WeightLayout::Dense:
    return "dense";
  case WeightLayout::Int4:
    return "int4";
  case WeightLayout::TiledCSL:
    return "tiled_csl";
  }
  return "dense";
}

std::string fdc::runtime::formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Expected<Manifest> Manifest::parse(std::string_view text,
                                   std::string_view origin) {
  FieldReader reader(origin);
  Expected<json::Value> root = json::parse(text);
  if (!root)
    return reader.fail(root.error().message());
  if (!root->isObject())
    return reader.fail("not a JSON object");

  Manifest manifest;
  FDC_ASSIGN_OR_RETURN(manifest.abiVersion,
                       reader.integer(*root, "abi_version", "abi_version"));
  FDC_ASSIGN_OR_RETURN(manifest.target,
                       reader.string(*root, "target", "target"));
  if (root->get("model"))
    FDC_ASSIGN_OR_RETURN(manifest.model,
                         reader.string(*root, "model", "model"));

  const json::Value *config = root->get("config");
  if (!config || !config->isObject())
    return reader.fail("missing object 'config'");
  manifest.config = *config;
  FDC_ASSIGN_OR_RETURN(
      manifest.vocabSize,
      reader.integer(*config, "vocab_size", "config.vocab_size", 1));
  if (manifest.vocabSize > INT32_MAX)
    return reader.fail("config.vocab_size ", manifest.vocabSize,
                       " does not fit int32 token ids");
  if (config->get("max_position_embeddings"))
    FDC_ASSIGN_OR_RETURN(manifest.maxPositionEmbeddings,
                         reader.integer(*config, "max_position_embeddings",
                                        "config.max_position_embeddings", 1));

  if (root->get("tensor_parallel")) {
    FDC_ASSIGN_OR_RETURN(
        manifest.tensorParallel,
        reader.integer(*root, "tensor_parallel", "tensor_parallel", 1));
    if (manifest.tensorParallel > kMaxTensorParallel)
      return reader.fail("field 'tensor_parallel' is ", manifest.tensorParallel,
                         ", expected at most ", kMaxTensorParallel);
  }

  const json::Value *kv = root->get("kv_cache");
  if (!kv)
    return reader.fail("missing field 'kv_cache'");
  FDC_ASSIGN_OR_RETURN(manifest.kvCache, parseKVCache(reader, *kv));

  int64_t weightsBytes;
  FDC_ASSIGN_OR_RETURN(weightsBytes,
                       reader.integer(*root, "weights_bytes", "weights_bytes"));
  manifest.weightsBytes = static_cast<uint64_t>(weightsBytes);

  const json::Array *weights;
  FDC_ASSIGN_OR_RETURN(weights, reader.array(*root, "weights", "weights"));
  for (size_t i = 0; i < weights->size(); ++i) {
    Expected<WeightSpec> weight =
        parseWeight(reader, (*weights)[i], i, manifest.weightsBytes,
                    manifest.tensorParallel);
    if (!weight)
      return weight.takeError();
    manifest.weights.push_back(std::move(*weight));
  }

  // Names are unique and arena ranges disjoint.
  std::vector<const WeightSpec *> byOffset;
  for (const WeightSpec &w : manifest.weights)
    byOffset.push_back(&w);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const WeightSpec *a, const WeightSpec *b) {
              return a->offset != b->offset ? a->offset < b->offset
                                            : a->name < b->name;
            });
  const WeightSpec *furthest = nullptr; // The weight that ends last so far.
  for (const WeightSpec *w : byOffset) {
    if (w->bytes == 0)
      continue;
    if (furthest && w->offset < furthest->offset + furthest->bytes)
      return reader.fail("weights '", furthest->name, "' and '", w->name,
                         "' overlap in the arena");
    if (!furthest || w->offset + w->bytes > furthest->offset + furthest->bytes)
      furthest = w;
  }
  std::vector<std::string_view> names;
  for (const WeightSpec &w : manifest.weights)
    names.push_back(w.name);
  std::sort(names.begin(), names.end());
  for (size_t i = 1; i < names.size(); ++i)
    if (names[i] == names[i - 1])
      return reader.fail("weight '", names[i], "' is listed twice");

  if (const json::Value *kernels = root->get("kernels")) {
    if (!kernels->getArray())
      return reader.fail("field 'kernels' is not an array");
    for (const json::Value &kernel : *kernels->getArray()) {
      KernelSpec spec;
      if (const json::Value *name = kernel.get("name");
          name && name->getString())
        spec.name = *name->getString();
      if (const json::Value *op = kernel.get("op"); op && op->getString())
        spec.op = *op->getString();
      manifest.kernels.push_back(std::move(spec));
    }
  }
  if (const json::Value *dependent = root->get("dependent_launch")) {
    std::optional<bool> flag = dependent->getBool();
    if (!flag)
      return reader.fail("field 'dependent_launch' is not a boolean");
    manifest.dependentLaunch = *flag;
  }
  return manifest;
}
