//===- PackedWeights.h - Weights packed once by fdc pack -------*- C++ -*-===//
//
// A packed-weights file holds a model library's int4 and tiled_csl weights
// packed once (`fdc pack`), so that loading copies them instead of packing
// them from the checkpoint. It is a safetensors file
// (docs/model-library.md, "Packed-weights files"):
//   - one U8 tensor [bytes] per packed weight, named as the manifest names
//     the weight: its packed bytes (int4: all of them; tiled_csl: the header
//     and the runs, without the unused tail of the arena's capacity);
//   - "__metadata__": "format": "fdc-packed-weights", "version": "1", and
//     "weights": a JSON object from each weight's name to the manifest
//     fields its layout depends on ("layout", "shape", "sources", and
//     "dtype", "tile", "csl_version" for tiled_csl or "group_size",
//     "scale_dtype" for int4).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_RUNTIME_PACKEDWEIGHTS_H
#define FDC_RUNTIME_PACKEDWEIGHTS_H

#include "fdc/runtime/Checkpoint.h"
#include "fdc/runtime/Manifest.h"
#include "fdc/runtime/Safetensors.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fdc::runtime {

/// The packed-weights file format this runtime writes and reads (the
/// metadata's "version").
constexpr int64_t kPackedWeightsVersion = 1;

/// What the file says about one packed weight.
struct PackedWeightDescription {
  WeightLayout layout = WeightLayout::Dense;
  std::vector<int64_t> shape;
  std::vector<std::string> sources;
  /// tiled_csl.
  DType dtype = DType::F16;
  int64_t tileRows = 0;
  int64_t tileCols = 0;
  int64_t cslVersion = 0;
  /// int4.
  int64_t groupSize = 0;
  DType scaleDType = DType::F16;
};

/// The description `weight` (int4 or tiled_csl) is written with.
PackedWeightDescription describePackedWeight(const WeightSpec &weight);

/// An opened, validated packed-weights file.
class PackedWeights {
public:
  /// Opens the file at `path` (a regular file) and checks its safetensors
  /// header, its metadata and that every tensor is described and every
  /// description has its tensor. Errors name the file.
  static Expected<std::unique_ptr<PackedWeights>> open(const std::string &path);

  /// Checks that the file holds exactly the int4 and tiled_csl weights of
  /// `manifest` (those without tensor-parallel slices), each described as
  /// the library describes it: no weight missing, none extra, the same
  /// layout, shape, sources, element and scale dtypes, tile, group size and
  /// layout version. Refuses a mismatch naming the file and the weight.
  Error checkMatches(const Manifest &manifest) const;

  /// Copies `weight`'s packed bytes into `out` (weight.bytes bytes, zeroed)
  /// after checking its description and its bytes: an int4 weight's size,
  /// a tiled_csl weight's header and runs (checkTiledCSL, Packing.h). Errors
  /// name the file and the weight.
  Error load(const WeightSpec &weight, uint8_t *out) const;

  const std::string &path() const { return file->path(); }
  /// Names of the weights the file holds, sorted.
  std::vector<std::string> weightNames() const;

private:
  PackedWeights(std::unique_ptr<SafetensorsFile> file,
                std::map<std::string, PackedWeightDescription> weights)
      : file(std::move(file)), weights(std::move(weights)) {}

  Error checkDescription(const WeightSpec &weight,
                         const PackedWeightDescription &found) const;

  std::unique_ptr<SafetensorsFile> file;
  std::map<std::string, PackedWeightDescription> weights;
};

/// What writePackedWeights wrote.
struct PackSummary {
  int64_t int4Weights = 0;
  int64_t tiledCSLWeights = 0;
  /// Bytes of packed weights (the tensors, without the header).
  uint64_t bytes = 0;
};

/// Packs every int4 and tiled_csl weight of `manifest` (without slices) from
/// `checkpoint` as loadWeights would and writes them to a packed-weights
/// file at `path`: to a temporary file beside it, renamed over `path` only
/// when complete, so that a failure leaves `path` as it was. Refuses a
/// manifest with no such weight, a `path` that is not a regular file when
/// something is there, and a .safetensors `path` inside the checkpoint's
/// directory (the checkpoint would read it as one of its files).
Expected<PackSummary> writePackedWeights(const Manifest &manifest,
                                         const Checkpoint &checkpoint,
                                         const std::string &path);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_PACKEDWEIGHTS_H
