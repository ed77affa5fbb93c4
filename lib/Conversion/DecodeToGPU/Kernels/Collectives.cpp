//===- Collectives.cpp - kernel families "all_reduce" and "all_gather" ----===//
//
// The tensor-parallel collectives of a rank's step. Both call the runtime's
// FdcCollectiveApi from the host step (NCCL on the step's stream, for CUDA):
// - all_reduce sums the input over the ranks into the result; with a
//   residual, a kernel of one thread per element then adds it (once, not
//   on every rank);
// - all_gather assembles the ranks' column blocks, using the step's
//   workspace for the gathered rows.
// A group of one rank has nothing to call: an all_reduce with a residual is
// the add alone, and the others are no kernels at all (aliases).
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

#include "fdc/Conversion/Utils/StepAbi.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
int64_t elementsPerRow(MemRefType type) {
  int64_t elements = 1;
  for (int64_t size : type.getShape().drop_front())
    elements *= size;
  return elements;
}

/// out[i][j] = a[i][j] + b[i][j] (out may be a): a thread per element,
/// blockIdx.y the row.
void launchAdd(KernelContext &ctx, int64_t threads, Buffer out, Buffer a,
               Buffer b) {
  int64_t n = elementsPerRow(out.type);
  auto rows =
      MemRefType::get({ShapedType::kDynamic, n}, out.type.getElementType());
  ctx.launch("residual_add",
             {KernelArg::buffer({out.pointer, rows}),
              KernelArg::buffer({a.pointer, rows}),
              KernelArg::buffer({b.pointer, rows})},
             {ctx.hostIndex((n + threads - 1) / threads),
              ctx.toIndex(ctx.batch), ctx.hostIndex(1)},
             threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
               Value row = e.blockId(Dimension::y);
               Value column = e.globalIdX(threads);
               e.ifThenElse(
                   e.cmpi(arith::CmpIPredicate::ult, column, e.index(n)), [&] {
                     Value first = e.load(v[1], {row, column});
                     Value second = e.load(v[2], {row, column});
                     e.store(e.add(first, second), v[0], {row, column});
                   });
             });
}

class AllReduceFamily : public KernelFamily {
public:
  StringRef getName() const override { return "all_reduce"; }
  bool canLower(Operation *op) const override {
    auto reduce = dyn_cast<decode::AllReduceOp>(op);
    return reduce && (reduce.getGroupSize() > 1 || reduce.getResidual());
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(op->getContext(), {{"threads", 256}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    auto reduce = cast<decode::AllReduceOp>(op);
    if (reduce.getReduction() != decode::Reduction::sum)
      return op->emitOpError()
             << "only sum all-reduces are supported by the GPU lowering";
    return checkThreads(op, config, "threads", target);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto reduce = cast<decode::AllReduceOp>(op);
    Buffer input = buffers.get(reduce.getInput());
    Buffer out = buffers.result(reduce.getResult());
    auto type = cast<RankedTensorType>(reduce.getInput().getType());
    int64_t rowElements = elementsPerRow(input.type);
    Buffer sum = input;
    if (reduce.getGroupSize() > 1) {
      Value count =
          arith::MulIOp::create(ctx.host, ctx.batch, ctx.hostI64(rowElements));
      ctx.callCollective(
          kCollectiveAllReduceSum,
          {input.pointer, out.pointer, count,
           ctx.hostI64(getCollectiveDType(type.getElementType()))});
      sum = out;
    }
    if (reduce.getResidual())
      launchAdd(ctx, config.get("threads"), out, sum,
                buffers.get(reduce.getResidual()));
    return success();
  }
};

class AllGatherFamily : public KernelFamily {
public:
  StringRef getName() const override { return "all_gather"; }
  bool canLower(Operation *op) const override {
    auto gather = dyn_cast<decode::AllGatherOp>(op);
    return gather && gather.getGroupSize() > 1;
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(op->getContext(), {});
  }
  int64_t getWorkspaceBytesPerRow(Operation *op, const KernelConfig &config,
                                  const GpuPrimitives &target) const override {
    auto result =
        cast<RankedTensorType>(cast<decode::AllGatherOp>(op).getType());
    return result.getDimSize(1) *
           (result.getElementType().getIntOrFloatBitWidth() / 8);
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto gather = cast<decode::AllGatherOp>(op);
    Buffer input = buffers.get(gather.getInput());
    Buffer out = buffers.result(gather.getResult());
    auto type = cast<RankedTensorType>(gather.getInput().getType());
    Buffer workspace = buffers.workspace(
        MemRefType::get({ShapedType::kDynamic}, ctx.host.getI8Type()));
    ctx.callCollective(
        kCollectiveAllGatherColumns,
        {input.pointer, out.pointer, workspace.pointer, ctx.batch,
         ctx.hostI64(type.getDimSize(1)),
         ctx.hostI64(getCollectiveDType(type.getElementType()))});
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createAllReduceFamily() {
  return std::make_unique<AllReduceFamily>();
}

std::unique_ptr<KernelFamily> fdc::gpu::createAllGatherFamily() {
  return std::make_unique<AllGatherFamily>();
}
