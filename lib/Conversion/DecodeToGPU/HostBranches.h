//===- HostBranches.h - Host branches as blocks -----------------*- C++ -*-===//
//
// The host code that launches kernels branches with blocks of its function
// and cf.cond_br, not scf.if: fdc-lower-kernel-launches returns from the
// function it lowers when a launch fails, so every launch must lie directly
// in it. HostBranches builds an if / else-if chain that way:
//
//   HostBranches branches(b);              // or (b, join)
//   branches.when(c0, [&] { ...; });       // only if c0
//   branches.when(c1, [&] { ...; });       // else only if c1
//   branches.otherwise([&] { ...; });      // else (optional)
//   branches.end();                        // builder in the join block
//
// Each case ends with a branch to the join block, where the function goes
// on. A chain without otherwise() branches straight to it from the last
// condition.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_CONVERSION_DECODETOGPU_HOSTBRANCHES_H
#define FDC_CONVERSION_DECODETOGPU_HOSTBRANCHES_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Support/LogicalResult.h"

#include "llvm/ADT/STLFunctionalExtras.h"

namespace fdc::gpu {

class HostBranches {
public:
  /// Splits the builder's block at its insertion point: what follows it is
  /// the join block.
  explicit HostBranches(mlir::ImplicitLocOpBuilder &b);
  /// Every case goes on to `join`, a block of the same region.
  HostBranches(mlir::ImplicitLocOpBuilder &b, mlir::Block *join);

  /// Builds `body` in a block entered when `condition` (i1, built before
  /// this call at the builder's insertion point) holds and no earlier case
  /// ran. Branches from where the builder is, and on to the join block from
  /// where `body` leaves it.
  mlir::LogicalResult when(mlir::Value condition,
                           llvm::function_ref<mlir::LogicalResult()> body);
  /// Builds `body` for when no case ran and ends the chain, as end().
  mlir::LogicalResult otherwise(llvm::function_ref<mlir::LogicalResult()> body);
  /// Ends the chain and leaves the builder at the start of the join block.
  void end();

private:
  mlir::ImplicitLocOpBuilder &b;
  mlir::Block *join;
  /// The block the last when() left for when its condition fails (the
  /// builder's block before the first).
  mlir::Block *next;
  bool ended = false;
};

} // namespace fdc::gpu

#endif // FDC_CONVERSION_DECODETOGPU_HOSTBRANCHES_H
