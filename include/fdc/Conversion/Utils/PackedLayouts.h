//===- PackedLayouts.h - host access to packed weights and caches -*- C++ -*-=//
//
// Reads and writes of the packed layouts of docs/model-library.md: INT4 KV
// cache rows, INT4 (qtensor) weights, and Tiled-CSL sparse weights.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_UTILS_PACKEDLAYOUTS_H
#define FDC_CONVERSION_UTILS_PACKEDLAYOUTS_H

#include "fdc/Conversion/Utils/Emitter.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

namespace fdc {

/// Element `d` of the INT4 cache row at `row` = (slot, layer, k|v, head,
/// position) of `cache` ([..][row_bytes] of i8), dequantised to f32.
mlir::Value loadInt4CacheElement(Emitter &e, mlir::Value cache,
                                 decode::Int4Type int4, int64_t headDim,
                                 mlir::ValueRange row, mlir::Value d);

/// Quantises `source[i, h, :]` group-wise into the INT4 cache row at `row`.
void storeInt4CacheRow(Emitter &e, mlir::Value source, mlir::Value i,
                       mlir::Value h, mlir::Value cache, decode::Int4Type int4,
                       int64_t headDim, mlir::ValueRange row);

/// Element (n, k) of an INT4 weight stored as bytes, dequantised to f32.
mlir::Value loadInt4Weight(Emitter &e, mlir::Value bytes,
                           decode::QuantTensorType type, mlir::Value n,
                           mlir::Value k);

/// Allocates and returns acc = input · Wᵀ ([M, N] f32) for a Tiled-CSL
/// weight stored as u32 words; the caller frees it.
mlir::Value emitSparseProduct(Emitter &e, mlir::Value input, mlir::Value words,
                              decode::TiledCSLType type);

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_PACKEDLAYOUTS_H
