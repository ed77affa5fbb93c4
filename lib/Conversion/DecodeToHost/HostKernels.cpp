//===- HostKernels.cpp - one host kernel per decode op --------------------===//

#include "HostKernels.h"
#include "fdc/Conversion/Utils/LinearEpilogue.h"
#include "fdc/Conversion/Utils/PackedLayouts.h"
#include "fdc/Conversion/Utils/Sampling.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::host;

using arith::CmpFPredicate;
using arith::CmpIPredicate;

namespace {
Value dim(Emitter &e, Value memref, int64_t index) {
  return memref::DimOp::create(e.builder(), memref, index);
}
int64_t staticDim(Value memref, int64_t index) {
  return cast<MemRefType>(memref.getType()).getDimSize(index);
}
Type elementType(Value memref) {
  return cast<MemRefType>(memref.getType()).getElementType();
}
Value negInf(Emitter &e) {
  return e.f32(-std::numeric_limits<float>::infinity());
}
} // namespace

void fdc::host::emitEmbedding(Emitter &e, Value table, Value tokens,
                              Value out) {
  int64_t vocab = staticDim(table, 0);
  int64_t hidden = staticDim(table, 1);
  e.loop(dim(e, tokens, 0), [&](Value i) {
    // The runtime checks every token it is given; one it is not (a step
    // launched ahead reads the last step's sampled ids on the device) still
    // never reads outside the table.
    Value token = e.clampIndex(e.loadIndex(tokens, i), vocab);
    e.loop(hidden,
           [&](Value j) { e.store(e.load(table, {token, j}), out, {i, j}); });
  });
}

void fdc::host::emitRMSNorm(Emitter &e, Value input, Value weight, float eps,
                            Value out) {
  int64_t hidden = staticDim(input, 1);
  Type storage = elementType(input);
  e.loop(dim(e, input, 0), [&](Value i) {
    Value hiddenIndex = e.index(hidden);
    Value zero = e.f32(0);
    Value sumSquares = e.reduce1(hiddenIndex, zero, [&](Value j, Value acc) {
      Value x = e.load(input, {i, j});
      return e.add(acc, e.mul(x, x));
    });
    Value meanSquare = e.div(sumSquares, e.f32(hidden));
    Value rms =
        math::RsqrtOp::create(e.builder(), e.add(meanSquare, e.f32(eps)));
    e.loop(hidden, [&](Value j) {
      // Hugging Face rounds the normalised value to the storage type before
      // scaling it by the weight.
      Value normalised = e.roundTo(e.mul(e.load(input, {i, j}), rms), storage);
      e.store(e.mul(normalised, e.load(weight, j)), out, {i, j});
    });
  });
}

void fdc::host::emitLinearEpilogue(Emitter &e, Value batch,
                                   AccumulatorReader acc, Value bias,
                                   Value residual,
                                   decode::Activation activation, Value out) {
  int64_t n = staticDim(out, 1);
  LinearEpilogueOperands operands{bias, residual, out, activation};
  e.loop(batch, [&](Value i) {
    e.loop(n, [&](Value j) {
      Value gate = acc(i, j);
      Value up;
      if (activation == decode::Activation::silu_gate_up)
        up = acc(i, arith::AddIOp::create(e.builder(), j, e.index(n)));
      emitLinearOutput(e, operands, i, j, gate, up);
    });
  });
}

void fdc::host::emitLinear(Emitter &e, Value input, WeightReader weight,
                           Value bias, Value residual,
                           decode::Activation activation, Value out) {
  int64_t k = staticDim(input, 1);
  auto dot = [&](Value i, Value row) {
    Value kIndex = e.index(k);
    Value zero = e.f32(0);
    return e.reduce1(kIndex, zero, [&](Value kk, Value acc) {
      Value x = e.load(input, {i, kk});
      Value w = weight(row, kk);
      return e.add(acc, e.mul(x, w));
    });
  };
  emitLinearEpilogue(e, dim(e, input, 0), dot, bias, residual, activation, out);
}

void fdc::host::emitRope(Emitter &e, Value input, Value positions,
                         int64_t rotaryDim, float theta, Value out) {
  int64_t heads = staticDim(input, 1), headDim = staticDim(input, 2);
  int64_t half = rotaryDim / 2;
  ImplicitLocOpBuilder &b = e.builder();
  e.loop(dim(e, input, 0), [&](Value i) {
    Value position = e.toF32(memref::LoadOp::create(b, positions, i));
    e.loop(heads, [&](Value h) {
      e.loop(half, [&](Value j) {
        // inv_freq = 1 / theta^(2j / rotary_dim), as Hugging Face computes it.
        Value two = e.f32(2);
        Value twoJ = e.mul(two, e.toF32(j));
        Value exponent = e.div(twoJ, e.f32(rotaryDim));
        Value one = e.f32(1);
        Value invFreq =
            e.div(one, math::PowFOp::create(b, e.f32(theta), exponent));
        Value angle = e.mul(position, invFreq);
        Value cos = math::CosOp::create(b, angle);
        Value sin = math::SinOp::create(b, angle);
        Value j2 = arith::AddIOp::create(b, j, e.index(half));
        Value x1 = e.load(input, {i, h, j}), x2 = e.load(input, {i, h, j2});
        Value x1Cos = e.mul(x1, cos);
        Value x2Sin = e.mul(x2, sin);
        e.store(e.sub(x1Cos, x2Sin), out, {i, h, j});
        Value x2Cos = e.mul(x2, cos);
        Value x1Sin = e.mul(x1, sin);
        e.store(e.add(x2Cos, x1Sin), out, {i, h, j2});
      });
      Value rotaryEnd = e.index(rotaryDim);
      Value headEnd = e.index(headDim);
      e.loop(rotaryEnd, headEnd, [&](Value j) {
        e.store(e.load(input, {i, h, j}), out, {i, h, j});
      });
    });
  });
}

void fdc::host::emitKVAppend(Emitter &e, Value key, Value value, Value cache,
                             decode::KVCacheType cacheType, Value slots,
                             Value positions, int64_t layer) {
  int64_t heads = staticDim(key, 1), headDim = staticDim(key, 2);
  Value layerIndex = e.index(layer), k = e.index(0), v = e.index(1);
  auto int4 = dyn_cast<decode::Int4Type>(cacheType.getElementType());
  e.loop(dim(e, key, 0), [&](Value i) {
    Value slot = e.loadIndex(slots, i);
    Value position = e.loadIndex(positions, i);
    e.loop(heads, [&](Value h) {
      if (int4) {
        storeInt4CacheRow(e, key, i, h, cache, int4, headDim,
                          {slot, layerIndex, k, h, position});
        storeInt4CacheRow(e, value, i, h, cache, int4, headDim,
                          {slot, layerIndex, v, h, position});
        return;
      }
      e.loop(headDim, [&](Value d) {
        e.store(e.load(key, {i, h, d}), cache,
                {slot, layerIndex, k, h, position, d});
        e.store(e.load(value, {i, h, d}), cache,
                {slot, layerIndex, v, h, position, d});
      });
    });
  });
}

void fdc::host::emitAttention(Emitter &e, Value query, Value cache,
                              decode::KVCacheType cacheType, Value slots,
                              Value positions, int64_t layer, float scale,
                              decode::SoftmaxAttr softmax, Value out) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t queryHeads = staticDim(query, 1), headDim = staticDim(query, 2);
  int64_t kvHeads = cacheType.getKvHeads();
  int64_t group = queryHeads / kvHeads;
  Value layerIndex = e.index(layer), kIndex = e.index(0), vIndex = e.index(1);
  auto int4 = dyn_cast<decode::Int4Type>(cacheType.getElementType());
  auto cacheElement = [&](Value slot, Value kv, Value head, Value t, Value d) {
    if (int4)
      return loadInt4CacheElement(e, cache, int4, headDim,
                                  {slot, layerIndex, kv, head, t}, d);
    return e.load(cache, {slot, layerIndex, kv, head, t, d});
  };
  // One f32 accumulator row, reused by every (sequence, head).
  Value acc =
      memref::AllocaOp::create(b, MemRefType::get({headDim}, b.getF32Type()));

  e.loop(dim(e, query, 0), [&](Value i) {
    Value slot = e.loadIndex(slots, i);
    Value position = e.loadIndex(positions, i);
    Value length = arith::AddIOp::create(b, position, e.index(1));
    e.loop(queryHeads, [&](Value h) {
      Value kvHead = arith::DivUIOp::create(b, h, e.index(group));
      auto score = [&](Value t) {
        Value headDimIndex = e.index(headDim);
        Value zero = e.f32(0);
        Value dot = e.reduce1(headDimIndex, zero, [&](Value d, Value sum) {
          Value key = cacheElement(slot, kIndex, kvHead, t, d);
          return e.add(sum, e.mul(e.load(query, {i, h, d}), key));
        });
        return e.mul(dot, e.f32(scale));
      };
      auto accumulate = [&](Value t, Value keep, Value weight) {
        e.loop(headDim, [&](Value d) {
          Value vValue = cacheElement(slot, vIndex, kvHead, t, d);
          Value old = memref::LoadOp::create(b, acc, d);
          Value kept = e.mul(old, keep);
          Value added = e.mul(weight, vValue);
          memref::StoreOp::create(b, e.add(kept, added), acc, d);
        });
      };
      auto clearAcc = [&] {
        e.loop(headDim,
               [&](Value d) { memref::StoreOp::create(b, e.f32(0), acc, d); });
      };
      auto writeOut = [&](Value denominator) {
        e.loop(headDim, [&](Value d) {
          Value sum = memref::LoadOp::create(b, acc, d);
          e.store(e.div(sum, denominator), out, {i, h, d});
        });
      };
      // The synchronized scheme: a running maximum rescales the partial sums.
      auto online = [&] {
        clearAcc();
        Value start = e.index(0);
        SmallVector<Value> state = e.reduce(
            start, length, {negInf(e), e.f32(0)},
            [&](Value t, ValueRange carried) {
              Value s = score(t);
              Value newMax = arith::MaximumFOp::create(b, carried[0], s);
              Value correction = e.exp(e.sub(carried[0], newMax));
              Value weight = e.exp(e.sub(s, newMax));
              accumulate(t, correction, weight);
              return SmallVector<Value>{
                  newMax, e.add(e.mul(carried[1], correction), weight)};
            });
        writeOut(state[1]);
      };
      if (softmax.getScheme() == decode::SoftmaxScheme::online) {
        online();
        return;
      }
      // Unified max: every term uses the one phi; a score outside
      // [phi + lo, phi + hi] (or an all-underflowed sum) flags the row, and
      // the row is recomputed with the online scheme.
      Value phi = e.f32(softmax.getPhi().getValueAsDouble());
      Value lo = e.f32(softmax.getLo().getValueAsDouble());
      Value hi = e.f32(softmax.getHi().getValueAsDouble());
      clearAcc();
      Value falseValue = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
      Value start = e.index(0);
      SmallVector<Value> state =
          e.reduce(start, length, {e.f32(0), falseValue},
                   [&](Value t, ValueRange carried) {
                     Value x = e.sub(score(t), phi);
                     Value below = e.cmpf(CmpFPredicate::OLT, x, lo);
                     Value above = e.cmpf(CmpFPredicate::OGT, x, hi);
                     Value outside = arith::OrIOp::create(b, below, above);
                     Value weight = e.exp(x);
                     accumulate(t, e.f32(1), weight);
                     return SmallVector<Value>{
                         e.add(carried[0], weight),
                         arith::OrIOp::create(b, carried[1], outside)};
                   });
      // Also flag a sum that underflowed to 0, or a sum or accumulator that
      // overflowed (inf / NaN).
      Value maxFloat = e.f32(std::numeric_limits<float>::max());
      Value accOverflow = e.reduce1(
          e.index(headDim), falseValue, [&](Value d, Value bad) -> Value {
            Value value = memref::LoadOp::create(b, acc, d);
            Value magnitude = math::AbsFOp::create(b, value);
            return arith::OrIOp::create(
                b, bad, e.cmpf(CmpFPredicate::UGT, magnitude, maxFloat));
          });
      Value unusable = arith::OrIOp::create(
          b, e.cmpf(CmpFPredicate::UGT, state[0], maxFloat), accOverflow);
      Value outsideOrUnusable = arith::OrIOp::create(b, state[1], unusable);
      Value underflowed = e.cmpf(CmpFPredicate::OEQ, state[0], e.f32(0));
      Value flagged = arith::OrIOp::create(b, outsideOrUnusable, underflowed);
      e.ifThenElse(flagged, online, [&] { writeOut(state[0]); });
    });
  });
}

namespace {
/// Index of the first largest element of logits[i, :], as an index.
Value emitRowArgmax(Emitter &e, Value logits, Value i) {
  int64_t vocab = staticDim(logits, 1);
  Value start = e.index(0);
  Value end = e.index(vocab);
  SmallVector<Value> best = e.reduce(
      start, end, {negInf(e), e.index(0)}, [&](Value j, ValueRange carried) {
        Value x = e.load(logits, {i, j});
        Value greater = e.cmpf(CmpFPredicate::OGT, x, carried[0]);
        return SmallVector<Value>{e.select(greater, x, carried[0]),
                                  e.select(greater, j, carried[1])};
      });
  return best[1];
}

} // namespace

void fdc::host::emitArgmax(Emitter &e, Value logits, Value out) {
  e.loop(dim(e, logits, 0),
         [&](Value i) { e.store(emitRowArgmax(e, logits, i), out, i); });
}

void fdc::host::emitAddInPlace(Emitter &e, Value out, Value addend) {
  e.loop(dim(e, out, 0), [&](Value i) {
    e.loop(staticDim(out, 1), [&](Value j) {
      // One builder call per statement: argument order is unspecified.
      Value sum = e.load(out, {i, j});
      Value term = e.load(addend, {i, j});
      e.store(e.add(sum, term), out, {i, j});
    });
  });
}

void fdc::host::emitSample(Emitter &e, Value logits, Value uniform,
                           Value temperature, Value topK, Value topP,
                           Value out) {
  e.loop(dim(e, logits, 0), [&](Value i) {
    Value t = e.load(temperature, i);
    Value greedy = e.cmpf(CmpFPredicate::OLE, t, e.f32(0));
    e.ifThenElse(
        greedy, [&] { e.store(emitRowArgmax(e, logits, i), out, i); },
        [&] {
          emitSampleRow(e, logits, uniform, temperature, topK, topP, out, i);
        });
  });
}
