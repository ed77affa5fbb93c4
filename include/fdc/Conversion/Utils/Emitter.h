//===- Emitter.h - loop-building helpers for host kernels ---*- C++ -*-===//
//
// Small helpers that keep the host and GPU kernels readable: constants, scf.for
// loops (with and without loop-carried values), conditionals, and loads /
// stores that compute in f32 whatever the storage type.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_UTILS_EMITTER_H
#define FDC_CONVERSION_UTILS_EMITTER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fdc {

class Emitter {
public:
  explicit Emitter(mlir::ImplicitLocOpBuilder &b) : b(b) {}

  mlir::ImplicitLocOpBuilder &builder() { return b; }

  mlir::Value index(int64_t value);
  mlir::Value f32(double value);
  mlir::Value i32(int64_t value);
  mlir::Value i64(int64_t value);

  /// for (iv = lb; iv < ub; ++iv) body(iv)
  void loop(mlir::Value lb, mlir::Value ub,
            llvm::function_ref<void(mlir::Value)> body);
  void loop(mlir::Value ub, llvm::function_ref<void(mlir::Value)> body) {
    loop(index(0), ub, body);
  }
  void loop(int64_t ub, llvm::function_ref<void(mlir::Value)> body) {
    mlir::Value lb = index(0);
    loop(lb, index(ub), body);
  }
  /// for (iv = lb; iv < ub; iv += step) body(iv)
  void loop(mlir::Value lb, mlir::Value ub, mlir::Value step,
            llvm::function_ref<void(mlir::Value)> body);

  /// A loop carrying `init` through body(iv, carried) -> next carried values;
  /// returns the final values.
  llvm::SmallVector<mlir::Value>
  reduce(mlir::Value lb, mlir::Value ub, mlir::ValueRange init,
         llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                           mlir::ValueRange)>
             body);
  mlir::SmallVector<mlir::Value>
  reduce(mlir::Value lb, mlir::Value ub, mlir::Value step,
         mlir::ValueRange init,
         llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::Value,
                                                           mlir::ValueRange)>
             body);
  mlir::Value
  reduce1(mlir::Value ub, mlir::Value init,
          llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> body);

  /// if (cond) then() else otherwise()
  void ifThenElse(mlir::Value cond, llvm::function_ref<void()> then,
                  llvm::function_ref<void()> otherwise = nullptr);

  /// Loads an element and widens floats to f32.
  mlir::Value load(mlir::Value memref, mlir::ValueRange indices);
  /// Loads an i32 element as an index.
  mlir::Value loadIndex(mlir::Value memref, mlir::ValueRange indices);
  /// `value` (an index) clamped into [0, size): what an index read from a
  /// step input becomes before it addresses a buffer of `size` rows.
  mlir::Value clampIndex(mlir::Value value, int64_t size);
  /// Stores an f32 (or integer) value, narrowing to the element type.
  void store(mlir::Value value, mlir::Value memref, mlir::ValueRange indices);
  /// Rounds an f32 value to `storage` precision and widens it back.
  mlir::Value roundTo(mlir::Value value, mlir::Type storage);

  mlir::Value add(mlir::Value a, mlir::Value b);
  mlir::Value sub(mlir::Value a, mlir::Value b);
  mlir::Value mul(mlir::Value a, mlir::Value b);
  mlir::Value div(mlir::Value a, mlir::Value b);
  mlir::Value exp(mlir::Value a);
  mlir::Value select(mlir::Value cond, mlir::Value a, mlir::Value b);
  mlir::Value cmpf(mlir::arith::CmpFPredicate pred, mlir::Value a,
                   mlir::Value b);
  mlir::Value cmpi(mlir::arith::CmpIPredicate pred, mlir::Value a,
                   mlir::Value b);
  mlir::Value toF32(mlir::Value integerOrIndex);

private:
  mlir::ImplicitLocOpBuilder &b;
};

} // namespace fdc

#endif // FDC_CONVERSION_UTILS_EMITTER_H
