//===- HostBranches.cpp - Branches of a host function as its blocks -------===//

#include "HostBranches.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

using namespace mlir;
using namespace fdc::gpu;

HostBranches::HostBranches(ImplicitLocOpBuilder &b)
    : b(b), next(b.getInsertionBlock()) {
  join = next->splitBlock(b.getInsertionPoint());
  b.setInsertionPointToEnd(next);
}

HostBranches::HostBranches(ImplicitLocOpBuilder &b, Block *join)
    : b(b), join(join), next(b.getInsertionBlock()) {
  b.setInsertionPointToEnd(next);
}

LogicalResult HostBranches::when(Value condition,
                                 function_ref<LogicalResult()> body) {
  // From where the builder is: the else of the case before, or a block a
  // nested chain built there joined into.
  Block *from = b.getInsertionBlock();
  Block *chosen = b.createBlock(join);
  Block *otherwise = b.createBlock(join);
  b.setInsertionPointToEnd(from);
  cf::CondBranchOp::create(b, condition, chosen, otherwise);
  next = otherwise;
  b.setInsertionPointToEnd(chosen);
  if (failed(body()))
    return failure();
  // Where the body left the builder (its own chains end in their joins).
  cf::BranchOp::create(b, join);
  b.setInsertionPointToEnd(next);
  return success();
}

LogicalResult HostBranches::otherwise(function_ref<LogicalResult()> body) {
  if (failed(body()))
    return failure();
  cf::BranchOp::create(b, join);
  ended = true;
  b.setInsertionPointToStart(join);
  return success();
}

void HostBranches::end() {
  if (ended)
    return;
  ended = true;
  Block *last = b.getInsertionBlock();
  if (last == next && next->empty() && !next->hasNoPredecessors()) {
    // The last condition's "else" goes straight on.
    next->replaceAllUsesWith(join);
    next->erase();
  } else {
    cf::BranchOp::create(b, join);
  }
  b.setInsertionPointToStart(join);
}
