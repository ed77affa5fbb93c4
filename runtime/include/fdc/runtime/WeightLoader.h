//===- WeightLoader.h - The weight arena from a checkpoint -----*- C++ -*-===//

#ifndef FDC_RUNTIME_WEIGHTLOADER_H
#define FDC_RUNTIME_WEIGHTLOADER_H

#include "fdc/runtime/Checkpoint.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/Manifest.h"

#include <vector>

namespace fdc::runtime {

class PackedWeights;

/// Allocates the manifest's weight arena and copies every weight into
/// [offset, offset + bytes): the concatenation of its sources along
/// dimension 0, packed per its layout (Packing.h) unless it is dense (the
/// packed weights on up to 8 threads, after the dense ones). Refuses
/// a missing source, another dtype (dense: the weight's own; int4: any of
/// f32/f16/bf16; tiled_csl: its element type or f32) or a shape that does not
/// fit, naming the weight (and the source when it has another name).
///
/// For a tensor-parallel manifest, loads rank `rank`'s arena: a weight with
/// slices is the concatenation along dimension 0 of the rank's pieces (each a
/// row and column range of a 2-D source of the weight's dtype; a column range
/// is copied row by row), refused naming the weight, rank, piece, source and
/// range when a piece does not fit its source; a weight without slices is
/// loaded whole, as above. `rank` must be in [0, tensorParallel).
///
/// With `packed` (fdc pack's file, PackedWeights.h), which must match the
/// manifest (PackedWeights::checkMatches), every int4 and tiled_csl weight
/// is copied from it instead, checked but not packed; the checkpoint then
/// need not hold their sources.
Expected<HostBuffer> loadWeights(const Manifest &manifest,
                                 const Checkpoint &checkpoint, int64_t rank = 0,
                                 const PackedWeights *packed = nullptr);

/// The sources of the int4 or tiled_csl `weight`, checked as loadWeights
/// checks them and concatenated along dimension 0 as f32: what packWeight
/// packs.
Expected<std::vector<float>> loadPackSource(const WeightSpec &weight,
                                            const Checkpoint &checkpoint);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_WEIGHTLOADER_H
