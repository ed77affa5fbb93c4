//===- Int4Vectors.h - INT4 cache rows in vector registers ------*- C++ -*-===//
//
// Vector access to INT4 KV cache rows (!decode.int4: `groups` (scale, min)
// f16 pairs, then the nibbles, element 2j in the low nibble of byte j;
// docs/model-library.md) for kernels that load a run of nibbles with one
// vector load and dequantise it in registers with no per-element shift or
// convert:
//
// A 32-bit word holds 8 nibbles. word & 0x000F000F keeps nibbles 0 and 4,
// one per 16-bit half; or-ing in 0x6400 makes each half the f16 1024 + q
// exactly (f16 has 10 mantissa bits). word & 0x00F000F0 keeps nibbles 1 and 5
// as 1024 + 16q, and the word shifted down a byte gives nibbles 2, 6 and 3, 7
// the same way. Subtracting 1024 is exact, and one f16 fma (a contracted
// multiply and add) applies the group's scale (a sixteenth of it for 16q,
// exact above f16's subnormals) and min: per word one shift, four mask-and-ors
// (one instruction each where the target has one: GpuPrimitives::maskOr) and
// eight packed f16 operations.
//
// To bf16 (7 mantissa bits), each piece takes its nibbles in the low four
// bits of each half: the word shifted down 4j bits for piece j, masked and
// or-ed with 0x4300, is the bf16 128 + q exactly; subtracting 128 is exact
// and one bf16 fma applies the group's scale and min (converted to bf16
// once per group): per word three shifts, four mask-and-ors and eight packed
// bf16 operations. Its values are rounded to bf16, an eighth of f16's
// precision, for MMAs whose other operand needs bf16's range.
//
// A run comes out in "decoded order": element j * 2W + 2w + h of a run of
// W words is dim 8w + j + 4h of the run.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_INT4VECTORS_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_INT4VECTORS_H

#include "../GpuEmitter.h"

#include "fdc/Dialect/Decode/IR/Decode.h"

namespace fdc::gpu {

/// The byte layout of one INT4 cache row.
struct Int4RowLayout {
  int64_t groups, groupSize, headerBytes, rowBytes;

  static Int4RowLayout get(decode::KVCacheType type);

  /// Whether runs of `dims` dims, each starting at a multiple of `dims`,
  /// can be loaded: whole words, within one group or made of whole groups.
  bool supportsRun(int64_t dims) const;
  /// The byte alignment of such a run (at most 16).
  int64_t runAlignment(int64_t dims) const;
};

/// The dim, within its run of `words` words, of decoded element `i`, and
/// the decoded element of dim `d`.
int64_t int4DecodedDim(int64_t i, int64_t words);
int64_t int4DecodedIndex(int64_t d, int64_t words);

/// A run of an INT4 cache row as loaded, before dequantisation: its words
/// (vector<dims / 8 x i32>) and the (scale, min) pair (vector<2xf16>) of
/// each group it spans. As values, words first, so that a loop can carry it.
struct Int4Run {
  mlir::Value words;
  llvm::SmallVector<mlir::Value> pairs;

  /// The values a run of `dims` dims takes.
  static int64_t valueCount(const Int4RowLayout &layout, int64_t dims);
  void appendValues(llvm::SmallVectorImpl<mlir::Value> &values) const;
  static Int4Run fromValues(llvm::ArrayRef<mlir::Value> values);
};

/// Loads dims [dim0, dim0 + dims) of the INT4 cache row `row` (the leading
/// indices of the i8 `cache`): one vector load of the nibbles and one
/// 4-byte load per group. `dim0` is a multiple of `dims` and
/// layout.supportsRun(dims).
Int4Run loadInt4Run(GpuEmitter &e, mlir::Value cache,
                    const Int4RowLayout &layout, mlir::ValueRange row,
                    mlir::Value dim0, int64_t dims);

/// A loaded run dequantised to a vector<dims x element> in decoded order;
/// `element` is f16 or bf16.
mlir::Value dequantizeInt4Run(GpuEmitter &e, const Int4RowLayout &layout,
                              const Int4Run &run, mlir::Type element);

/// Two loaded runs of the same dims (of two rows) dequantised together to
/// a vector<2 * dims x element>: element int4PairedIndex(d, words) is dim d
/// of `first` and the next one dim d of `second`, so that the two values of
/// a dim share a 32-bit register, as an MMA operand's two consecutive k
/// slots do (runs dequantised apart leave them in different registers,
/// which a byte permute per register joins). The words are first mixed, a
/// 16-bit half of each run's word per mixed word (one byte permute each).
mlir::Value dequantizeInt4RunPair(GpuEmitter &e, const Int4RowLayout &layout,
                                  const Int4Run &first, const Int4Run &second,
                                  mlir::Type element);
/// The element of dim `d` of the first run in dequantizeInt4RunPair's
/// vector, for runs of `words` words.
int64_t int4PairedIndex(int64_t d, int64_t words);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_INT4VECTORS_H
