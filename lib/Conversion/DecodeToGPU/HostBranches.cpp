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
  Block *chosen = b.createBlock(join);
  Block *otherwise = b.createBlock(join);
  b.setInsertionPointToEnd(next);
  cf::CondBranchOp::create(b, condition, chosen, otherwise);
  next = otherwise;
  b.setInsertionPointToEnd(chosen);
  if (failed(body()))
    return failure();
  cf::BranchOp::create(b, join);
  b.setInsertionPointToEnd(next);
  return success();
}

LogicalResult HostBranches::otherwise(function_ref<LogicalResult()> body) {
  b.setInsertionPointToEnd(next);
  if (failed(body()))
    return failure();
  end();
  return success();
}

void HostBranches::end() {
  if (ended)
    return;
  ended = true;
  if (next->empty() && !next->hasNoPredecessors() && next != join) {
    // The last condition's "else" goes straight on.
    next->replaceAllUsesWith(join);
    next->erase();
  } else {
    b.setInsertionPointToEnd(next);
    cf::BranchOp::create(b, join);
  }
  b.setInsertionPointToStart(join);
}
