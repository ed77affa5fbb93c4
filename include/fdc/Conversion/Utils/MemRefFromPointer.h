//===- MemRefFromPointer.h - memrefs over raw pointers ----------*- C++ -*-===//
//
// The model-library ABI passes raw pointers (host step arguments, GPU kernel
// parameters). These helpers view them as identity-layout memrefs so kernels
// can be written with memref loads and stores.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_UTILS_MEMREFFROMPOINTER_H
#define FDC_CONVERSION_UTILS_MEMREFFROMPOINTER_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fdc {

/// A memref of `type` (identity layout, offset 0) over `pointer`; dynamic
/// sizes are taken, in order, from `dynamicSizesI64`. The memref descriptor
/// is built as the LLVM struct finalize-memref-to-llvm maps `type` to, so the
/// cast folds away in reconcile-unrealized-casts.
mlir::Value memrefFromPointer(mlir::ImplicitLocOpBuilder &b,
                              mlir::Value pointer, mlir::MemRefType type,
                              mlir::ArrayRef<mlir::Value> dynamicSizesI64);

/// The memref a buffer of a decode-step value is viewed as: tensors as
/// themselves (batch dimension dynamic); the KV cache as
/// [slots][layers][2][kv_heads][max_context][head_dim] of its element type
/// (INT4: [..][row_bytes] of i8); INT4 weights as bytes; Tiled-CSL weights as
/// u32 words.
mlir::MemRefType getBufferType(mlir::Type type);

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_MEMREFFROMPOINTER_H
