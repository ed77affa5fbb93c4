//===- WeightLoader.h - Filling the weight arena from a checkpoint -*- C++
//-*-===//

#ifndef FDC_RUNTIME_WEIGHTLOADER_H
#define FDC_RUNTIME_WEIGHTLOADER_H

#include "fdc/runtime/Checkpoint.h"
#include "fdc/runtime/HostBuffer.h"
#include "fdc/runtime/Manifest.h"

namespace fdc::runtime {

/// Allocates the manifest's weight arena and copies every weight into
/// [offset, offset + bytes): the concatenation of its sources along
/// dimension 0, packed per its layout (Packing.h) unless it is dense. Refuses
/// a missing source, another dtype (dense: the weight's own; int4: any of
/// f32/f16/bf16; tiled_csl: its element type or f32) or a shape that does not
/// fit, naming the weight (and the source when it has another name).
Expected<HostBuffer> loadWeights(const Manifest &manifest,
                                 const Checkpoint &checkpoint);

} // namespace fdc::runtime

#endif // FDC_RUNTIME_WEIGHTLOADER_H
