//===- Manifest.h - The model library's JSON manifest -----------*- C++ -*-===//
//
// See docs/model-library.md. Parsing validates the manifest's own
// consistency (weights inside the arena, sizes matching shapes, KV-cache row
// size matching its element type) so later stages can trust it.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_MANIFEST_H
#define FDC_RUNTIME_MANIFEST_H

#include "fdc/runtime/DType.h"
#include "fdc/runtime/Error.h"
#include "fdc/runtime/Json.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fdc::runtime {

/// How a weight is stored in the arena (docs/model-library.md).
enum class WeightLayout { Dense, Int4, TiledCSL };

/// The manifest's name of `layout`: "dense", "int4" or "tiled_csl".
const char *weightLayoutName(WeightLayout layout);

/// `shape` as messages write it: "[4096, 11008]".
std::string formatShape(const std::vector<int64_t> &shape);

/// One piece of a tensor-parallel rank's slice of a weight: rows
/// [rowBegin, rowEnd) x columns [colBegin, colEnd) of the 2-D checkpoint
/// tensor `source`.
struct WeightPiece {
  std::string source;
  int64_t rowBegin = 0;
  int64_t rowEnd = 0;
  int64_t colBegin = 0;
  int64_t colEnd = 0;
  /// The whole source's shape the library was compiled for ("source_shape",
  /// [rows, cols]); empty when the manifest leaves it out. The checkpoint
  /// tensor must have it.
  std::vector<int64_t> sourceShape;
};

struct WeightSpec {
  std::string name;
  /// Element type of a dense or tiled_csl weight. An int4 weight (manifest
  /// dtype "int4") has none: this is U8 and `scaleDType` holds the type of its
  /// scales and minima.
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// "dense", "int4" or "tiled_csl".
  std::string layout;
  WeightLayout layoutKind = WeightLayout::Dense;
  /// int4: elements per (scale, min) pair along K, and their dtype.
  int64_t groupSize = 0;
  DType scaleDType = DType::F16;
  /// tiled_csl: tile rows x columns.
  int64_t tileRows = 0;
  int64_t tileCols = 0;
  uint64_t offset = 0;
  /// For tiled_csl the capacity reserved in the arena.
  uint64_t bytes = 0;
  /// Checkpoint tensors concatenated along dimension 0.
  std::vector<std::string> sources;
  /// Tensor-parallel manifests only: one entry per rank, in rank order (empty
  /// for a replicated weight, which every rank loads whole from `sources`).
  /// Rank r's weight (2-D, dense, `shape` the per-rank shape) is the
  /// concatenation along dimension 0 of its pieces.
  std::vector<std::vector<WeightPiece>> slices;
};

struct KVCacheSpec {
  int64_t layers = 0;
  int64_t kvHeads = 0;
  int64_t headDim = 0;
  /// "f32", "bf16", "f16" or "int4".
  std::string dtype;
  int64_t int4Groups = 0;
  int64_t rowBytes = 0;
};

struct KernelSpec {
  std::string name;
  std::string op;
};

/// The most ranks "tensor_parallel" may ask for.
constexpr int64_t kMaxTensorParallel = 64;

struct Manifest {
  int64_t abiVersion = 0;
  std::string target;
  std::string model;
  /// The model's config dictionary, as JSON.
  json::Value config;
  int64_t vocabSize = 0;
  /// config.max_position_embeddings, or 0 when absent.
  int64_t maxPositionEmbeddings = 0;
  /// "tensor_parallel": the ranks the library runs as (1 when absent, at most
  /// kMaxTensorParallel). The weights' shapes, slices and the KV cache are
  /// each rank's.
  int64_t tensorParallel = 1;
  KVCacheSpec kvCache;
  uint64_t weightsBytes = 0;
  std::vector<WeightSpec> weights;
  std::vector<KernelSpec> kernels;
  /// "dependent_launch": every kernel waits at its start for the kernel
  /// before it, so the backend may launch each before that one ends.
  bool dependentLaunch = false;

  /// Parses and validates a manifest. `origin` names it in error messages.
  static Expected<Manifest> parse(std::string_view text,
                                  std::string_view origin);
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_MANIFEST_H
