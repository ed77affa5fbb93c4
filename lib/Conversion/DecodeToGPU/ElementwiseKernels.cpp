//===- ElementwiseKernels.cpp - embedding, rope, kv_append ----------------===//
//
// Thread-per-element (or per 16-byte vector) kernels over [M, ...] grids:
// blockIdx.y is the sequence, blockIdx.x * blockDim + threadIdx the element.
//
//===----------------------------------------------------------------------===//

#include "../DecodeToHost/PackedLayouts.h"
#include "KernelContext.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using mlir::gpu::Dimension;

namespace {
int64_t elementBytes(MemRefType type) {
  return type.getElementType().getIntOrFloatBitWidth() / 8;
}
Value add(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::AddIOp::create(b, x, y);
}
Value mul(ImplicitLocOpBuilder &b, Value x, Value y) {
  return arith::MulIOp::create(b, x, y);
}
/// blockIdx.x * threads + threadIdx.x
Value globalX(GpuEmitter &e, int64_t threads) {
  ImplicitLocOpBuilder &b = e.builder();
  Value block = e.blockId(Dimension::x);
  Value blockStart = mul(b, block, e.index(threads));
  return add(b, blockStart, e.threadId());
}
} // namespace

void fdc::gpu::buildEmbedding(KernelContext &ctx,
                              const ElementwiseConfig &config, Buffer table,
                              Buffer tokens, Buffer out) {
  int64_t hidden = table.type.getDimSize(1);
  int64_t lanes = config.vectorBytes / elementBytes(table.type);
  if (hidden % lanes != 0)
    lanes = 1;
  int64_t perBlock = config.threads * lanes;
  ctx.launch(
      "embedding",
      {KernelArg::buffer(table), KernelArg::buffer(tokens),
       KernelArg::buffer(out)},
      {ctx.hostIndex((hidden + perBlock - 1) / perBlock),
       ctx.toIndex(ctx.batch), ctx.hostIndex(1)},
      config.threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value i = e.blockId(Dimension::y);
        Value vectorIndex = globalX(e, config.threads);
        Value j = mul(b, vectorIndex, e.index(lanes));
        e.ifThenElse(
            e.cmpi(arith::CmpIPredicate::ult, j, e.index(hidden)), [&] {
              Value token = e.loadIndex(v[1], i);
              auto type = VectorType::get({lanes}, table.type.getElementType());
              // Rows are a multiple of the vector long, so
              // a full vector is 16-byte aligned.
              llvm::MaybeAlign align = lanes * elementBytes(table.type) == 16
                                           ? llvm::MaybeAlign(16)
                                           : llvm::MaybeAlign();
              Value row =
                  vector::LoadOp::create(b, type, v[0], ValueRange{token, j},
                                         /*nontemporal=*/false, align);
              vector::StoreOp::create(b, row, v[2], ValueRange{i, j},
                                      /*nontemporal=*/false, align);
            });
      });
}

void fdc::gpu::buildRope(KernelContext &ctx, const ElementwiseConfig &config,
                         Buffer input, Buffer positions, int64_t rotaryDim,
                         float theta, Buffer out) {
  int64_t heads = input.type.getDimSize(1), headDim = input.type.getDimSize(2);
  int64_t half = rotaryDim / 2, pairs = headDim / 2;
  int64_t work = heads * pairs;
  ctx.launch(
      "rope",
      {KernelArg::buffer(input), KernelArg::buffer(positions),
       KernelArg::buffer(out)},
      {ctx.hostIndex((work + config.threads - 1) / config.threads),
       ctx.toIndex(ctx.batch), ctx.hostIndex(1)},
      config.threads, 0, [&](GpuEmitter &e, ArrayRef<Value> v) {
        ImplicitLocOpBuilder &b = e.builder();
        Value i = e.blockId(Dimension::y);
        Value flat = globalX(e, config.threads);
        e.ifThenElse(
            e.cmpi(arith::CmpIPredicate::ult, flat, e.index(work)), [&] {
              Value h = arith::DivUIOp::create(b, flat, e.index(pairs));
              Value j = arith::RemUIOp::create(b, flat, e.index(pairs));
              Value rotated =
                  e.cmpi(arith::CmpIPredicate::ult, j, e.index(half));
              e.ifThenElse(
                  rotated,
                  [&] {
                    Value position =
                        e.toF32(memref::LoadOp::create(b, v[1], i));
                    Value two = e.f32(2);
                    Value twoJ = e.mul(two, e.toF32(j));
                    Value exponent = e.div(twoJ, e.f32(rotaryDim));
                    Value one = e.f32(1);
                    Value invFreq = e.div(
                        one, math::PowFOp::create(b, e.f32(theta), exponent));
                    Value angle = e.mul(position, invFreq);
                    Value cos = math::CosOp::create(b, angle);
                    Value sin = math::SinOp::create(b, angle);
                    Value j2 = add(b, j, e.index(half));
                    Value x1 = e.load(v[0], {i, h, j});
                    Value x2 = e.load(v[0], {i, h, j2});
                    Value x1Cos = e.mul(x1, cos);
                    Value x2Sin = e.mul(x2, sin);
                    e.store(e.sub(x1Cos, x2Sin), v[2], {i, h, j});
                    Value x2Cos = e.mul(x2, cos);
                    Value x1Sin = e.mul(x1, sin);
                    e.store(e.add(x2Cos, x1Sin), v[2], {i, h, j2});
                  },
                  [&] {
                    // Pairs past rotary_dim / 2 copy two pass-through dims.
                    Value rotaryEnd = e.index(rotaryDim);
                    Value pair = arith::SubIOp::create(b, j, e.index(half));
                    Value pairOffset = mul(b, pair, e.index(2));
                    Value d = add(b, rotaryEnd, pairOffset);
                    Value d1 = add(b, d, e.index(1));
                    e.store(e.load(v[0], {i, h, d}), v[2], {i, h, d});
                    e.store(e.load(v[0], {i, h, d1}), v[2], {i, h, d1});
                  });
            });
      });
}

void fdc::gpu::buildKVAppend(KernelContext &ctx, Buffer key, Buffer value,
                             Buffer cache, decode::KVCacheType cacheType,
                             Buffer slots, Buffer positions, int64_t layer) {
  int64_t heads = cacheType.getKvHeads(), headDim = cacheType.getHeadDim();
  auto int4 = dyn_cast<decode::Int4Type>(cacheType.getElementType());
  // One block per (kv head, sequence); one thread per dimension, or one
  // quantising thread per row for an INT4 cache.
  int64_t threads = int4 ? 32 : std::max<int64_t>(32, headDim);
  ctx.launch(
      "kv_append",
      {KernelArg::buffer(key), KernelArg::buffer(value),
       KernelArg::buffer(cache), KernelArg::buffer(slots),
       KernelArg::buffer(positions), KernelArg::scalar(ctx.hostI64(layer))},
      {ctx.hostIndex(heads), ctx.toIndex(ctx.batch), ctx.hostIndex(1)}, threads,
      0, [&](GpuEmitter &e, ArrayRef<Value> v) {
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
                  host::storeInt4CacheRow(
                      e, v[0], i, h, v[2], int4, headDim,
                      {slot, layerIndex, e.index(0), h, position});
                },
                [&] {
                  host::storeInt4CacheRow(
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
