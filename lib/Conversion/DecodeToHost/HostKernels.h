//===- HostKernels.h - one host kernel per decode op ------------*- C++ -*-===//
//
// Each function emits, at the emitter's insertion point, the loops that
// compute one decode op over memrefs: the reference semantics of the op's ODS
// description, with f32 accumulation.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOHOST_HOSTKERNELS_H
#define FDC_LIB_CONVERSION_DECODETOHOST_HOSTKERNELS_H

#include "fdc/Conversion/Utils/Emitter.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

namespace fdc::host {

void emitEmbedding(Emitter &e, mlir::Value table, mlir::Value tokens,
                   mlir::Value out);
void emitRMSNorm(Emitter &e, mlir::Value input, mlir::Value weight, float eps,
                 mlir::Value out);
/// Reads element (row, k) of a linear weight as f32 (dense or packed).
using WeightReader =
    llvm::function_ref<mlir::Value(mlir::Value row, mlir::Value k)>;

/// Reads the f32 accumulator of output (i, row) before the epilogue.
using AccumulatorReader =
    llvm::function_ref<mlir::Value(mlir::Value i, mlir::Value row)>;

/// Writes out[i, j] = epilogue(acc) for every i < M, j < N (the result's
/// width): bias, silu_gate_up (gate row j, up row j + N), residual.
void emitLinearEpilogue(Emitter &e, mlir::Value batch, AccumulatorReader acc,
                        mlir::Value bias, mlir::Value residual,
                        decode::Activation activation, mlir::Value out);

/// `bias` and `residual` may be null.
void emitLinear(Emitter &e, mlir::Value input, WeightReader weight,
                mlir::Value bias, mlir::Value residual,
                decode::Activation activation, mlir::Value out);
void emitRope(Emitter &e, mlir::Value input, mlir::Value positions,
              int64_t rotaryDim, float theta, mlir::Value out);
/// `cache` is the whole cache viewed as
/// [slots][layers][2][kv_heads][max_context][head_dim] of its element type,
/// or [..][row_bytes] of i8 for an INT4 cache.
void emitKVAppend(Emitter &e, mlir::Value key, mlir::Value value,
                  mlir::Value cache, decode::KVCacheType cacheType,
                  mlir::Value slots, mlir::Value positions, int64_t layer);
void emitAttention(Emitter &e, mlir::Value query, mlir::Value cache,
                   decode::KVCacheType cacheType, mlir::Value slots,
                   mlir::Value positions, int64_t layer, float scale,
                   decode::SoftmaxAttr softmax, mlir::Value out);
void emitArgmax(Emitter &e, mlir::Value logits, mlir::Value out);
/// out[i][j] += addend[i][j] (rounded to out's element type), [M, n].
void emitAddInPlace(Emitter &e, mlir::Value out, mlir::Value addend);
void emitSample(Emitter &e, mlir::Value logits, mlir::Value uniform,
                mlir::Value temperature, mlir::Value topK, mlir::Value topP,
                mlir::Value out);
} // namespace fdc::host

#endif // FDC_LIB_CONVERSION_DECODETOHOST_HOSTKERNELS_H
