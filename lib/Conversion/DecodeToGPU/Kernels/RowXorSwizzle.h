//===- RowXorSwizzle.h - XOR swizzles of shared-memory rows -----*- C++ -*-===//
//
// Kernels that stage rows in shared memory (the tiled GEMM's stages, the
// dense tiles of flash_spmm, gqa_attention's cache rows) place piece p of
// row r (a vector load's worth of elements) at p ^ mask(r), with
// mask(r) = (r mod period) * stride pieces, so that the lanes that read
// the same piece of consecutive rows, or a warp's scattered stores, fall
// on different banks where rows of 2^k bytes would put them on the same
// ones. The XOR keeps each piece in its row when period * stride divides
// the row's pieces (callers choose period and stride so).
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ROWXORSWIZZLE_H
#define FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ROWXORSWIZZLE_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include "llvm/Support/MathExtras.h"

#include <cassert>

namespace fdc::gpu {

/// Piece p of row r at p ^ ((r mod period) * stride).
struct RowXorSwizzle {
  /// Rows per cycle of the mask (a power of two; 1: no swizzle), and the
  /// pieces the mask moves per step of r mod period.
  int64_t period = 1, stride = 1;

  /// Row r XORs its pieces with r mod `period`.
  static RowXorSwizzle rowMod(int64_t period) { return {period, 1}; }
  /// Odd rows XOR their pieces with `stride`, even rows keep them.
  static RowXorSwizzle oddRows(int64_t stride) { return {2, stride}; }

  bool isIdentity() const { return period <= 1; }

  /// The mask of row `row` (index or integer), in units of `unit` (1 to
  /// XOR piece numbers; the elements of a piece to XOR element offsets),
  /// of row's type: (row & (period - 1)) * stride * unit.
  mlir::Value rowMask(mlir::ImplicitLocOpBuilder &b, mlir::Value row,
                      int64_t unit = 1) const {
    assert(!isIdentity() && llvm::isPowerOf2_64(period) &&
           "a row mask needs a swizzle of a power-of-two period");
    mlir::Type type = row.getType();
    mlir::Value low = mlir::arith::ConstantOp::create(
        b, type, b.getIntegerAttr(type, period - 1));
    mlir::Value mask = mlir::arith::AndIOp::create(b, row, low);
    if (stride * unit == 1)
      return mask;
    mlir::Value scale = mlir::arith::ConstantOp::create(
        b, type, b.getIntegerAttr(type, stride * unit));
    return mlir::arith::MulIOp::create(b, mask, scale);
  }

  /// Where piece `piece` of row `row` lies: piece ^ ((row mod period) *
  /// stride), as rowMask and apply place it.
  int64_t pieceOf(int64_t piece, int64_t row) const {
    if (isIdentity())
      return piece;
    return piece ^ ((row & (period - 1)) * stride);
  }

  /// `value` (a piece number or element offset in the units of `mask`)
  /// moved by a row's mask.
  static mlir::Value apply(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                           mlir::Value mask) {
    return mlir::arith::XOrIOp::create(b, value, mask);
  }
};

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_KERNELS_ROWXORSWIZZLE_H
