//===- KVAppend.cpp - kernel family "kv_append" ---------------------------===//
//
// decode.kv_append: a block per (kv head, sequence) writes this step's key
// and value rows into the sequence's slot at its position, a thread per
// dimension, or one quantising thread per row for an INT4 cache. The layer is
// a kernel argument, so one kernel serves every layer.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"

#include "fdc/Conversion/Utils/PackedLayouts.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
void buildKVAppend(KernelContext &ctx, Buffer key, Buffer value, Buffer cache,
                   decode::KVCacheType cacheType, Buffer slots,
                   Buffer positions, int64_t layer) {
  int64_t heads = cacheType.getKvHeads(), headDim = cacheType.getHeadDim();
  auto int4 = dyn_cast<decode::Int4Type>(cacheType.getElementType());
  // One block per (kv head, sequence); one thread per dimension, or one
  // quantising thread per row for an INT4 cache.
  int64_t subgroup = ctx.subgroupSize();
  int64_t threads = int4 ? subgroup : std::max<int64_t>(subgroup, headDim);
  // The layer and the grid are host ops: built in order, outside the call.
  Value layerArg = ctx.hostI64(layer);
  std::array<Value, 3> grid = {ctx.hostIndex(heads), ctx.toIndex(ctx.batch),
                               ctx.hostIndex(1)};
  ctx.launch(
      "kv_append",
      {KernelArg::buffer(key), KernelArg::buffer(value),
       KernelArg::buffer(cache), KernelArg::buffer(slots),
       KernelArg::buffer(positions), KernelArg::scalar(layerArg)},
      grid, threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        Value h = e.blockId(Dimension::x), i = e.blockId(Dimension::y);
        Value d = e.threadId();
        Value slot = e.loadIndex(v[3], i);
        Value position = e.loadIndex(v[4], i);
        // The layer is an argument: one kernel serves every layer.
        Value layerIndex = arith::IndexCastOp::create(
            e.builder(), e.builder().getIndexType(), v[5]);
        if (int4) {
          Value thread = e.cmpi(arith::CmpIPredicate::ult, d, e.index(2));
          e.ifThenElse(thread, [&] {
            // Thread 0 quantises the key row, thread 1 the value row.
            Value isKey = e.cmpi(arith::CmpIPredicate::eq, d, e.index(0));
            e.ifThenElse(
                isKey,
                [&] {
                  storeInt4CacheRow(
                      e, v[0], i, h, v[2], int4, headDim,
                      {slot, layerIndex, e.index(0), h, position});
                },
                [&] {
                  storeInt4CacheRow(
                      e, v[1], i, h, v[2], int4, headDim,
                      {slot, layerIndex, e.index(1), h, position});
                });
          });
          return;
        }
        e.ifThenElse(
            e.cmpi(arith::CmpIPredicate::ult, d, e.index(headDim)), [&] {
              ImplicitLocOpBuilder &b = e.builder();
              Value k = memref::LoadOp::create(b, v[0], ValueRange{i, h, d});
              Value vv = memref::LoadOp::create(b, v[1], ValueRange{i, h, d});
              memref::StoreOp::create(
                  b, k, v[2],
                  ValueRange{slot, layerIndex, e.index(0), h, position, d});
              memref::StoreOp::create(
                  b, vv, v[2],
                  ValueRange{slot, layerIndex, e.index(1), h, position, d});
            });
      });
}

class KVAppendFamily : public KernelFamily {
public:
  StringRef getName() const override { return "kv_append"; }
  bool canLower(Operation *op) const override {
    return isa<decode::KVAppendOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &) const override {
    return makeConfig(op->getContext(), {});
  }
  LogicalResult build(Operation *op, const KernelConfig &, StepBuffers &buffers,
                      KernelContext &ctx) const override {
    auto append = cast<decode::KVAppendOp>(op);
    buildKVAppend(ctx, buffers.get(append.getKey()),
                  buffers.get(append.getValue()),
                  buffers.get(append.getCache()), append.getCache().getType(),
                  buffers.get(append.getSlots()),
                  buffers.get(append.getPositions()), append.getLayer());
    buffers.alias(append.getResult(), append.getCache());
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createKVAppendFamily() {
  return std::make_unique<KVAppendFamily>();
}
