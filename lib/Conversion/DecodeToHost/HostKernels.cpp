//===- HostKernels.cpp - one host kernel per decode op --------------------===//

#include "HostKernels.h"
#include "PackedLayouts.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::host;

using arith::CmpFPredicate;
using arith::CmpIPredicate;

namespace {
Value dim(HostEmitter &e, Value memref, int64_t index) {
  return memref::DimOp::create(e.builder(), memref, index);
}
int64_t staticDim(Value memref, int64_t index) {
  return cast<MemRefType>(memref.getType()).getDimSize(index);
}
Type elementType(Value memref) {
  return cast<MemRefType>(memref.getType()).getElementType();
}
Value negInf(HostEmitter &e) {
  return e.f32(-std::numeric_limits<float>::infinity());
}
} // namespace

void fdc::host::emitEmbedding(HostEmitter &e, Value table, Value tokens,
                              Value out) {
  int64_t hidden = staticDim(table, 1);
  e.loop(dim(e, tokens, 0), [&](Value i) {
    Value token = e.loadIndex(tokens, i);
    e.loop(hidden, [&](Value j) {
      e.store(e.load(table, {token, j}), out, {i, j});
    });
  });
}

void fdc::host::emitRMSNorm(HostEmitter &e, Value input, Value weight,
                            float eps, Value out) {
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

void fdc::host::emitLinearEpilogue(HostEmitter &e, Value batch,
                                   AccumulatorReader acc, Value bias,
                                   Value residual,
                                   decode::Activation activation, Value out) {
  int64_t n = staticDim(out, 1);
  auto biased = [&](Value i, Value row) {
    Value value = acc(i, row);
    return bias ? e.add(value, e.load(bias, row)) : value;
  };
  e.loop(batch, [&](Value i) {
    e.loop(n, [&](Value j) {
      Value result;
      if (activation == decode::Activation::silu_gate_up) {
        Value gate = biased(i, j);
        Value up = biased(i, arith::AddIOp::create(e.builder(), j, e.index(n)));
        // silu(g) = g / (1 + exp(-g))
        Value one = e.f32(1);
        Value expNegGate = e.exp(e.sub(e.f32(0), gate));
        Value silu = e.div(gate, e.add(one, expNegGate));
        result = e.mul(silu, up);
      } else {
        result = biased(i, j);
      }
      if (residual)
        result = e.add(result, e.load(residual, {i, j}));
      e.store(result, out, {i, j});
    });
  });
}

void fdc::host::emitLinear(HostEmitter &e, Value input, WeightReader weight,
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

void fdc::host::emitRope(HostEmitter &e, Value input, Value positions,
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

void fdc::host::emitKVAppend(HostEmitter &e, Value key, Value value,
                             Value cache, decode::KVCacheType cacheType,
                             Value slots, Value positions, int64_t layer) {
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

void fdc::host::emitAttention(HostEmitter &e, Value query, Value cache,
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
Value emitRowArgmax(HostEmitter &e, Value logits, Value i) {
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

/// Monotone map of an f32 onto i64: a < b  <=>  key(a) < key(b).
Value orderedKey(HostEmitter &e, Value x) {
  ImplicitLocOpBuilder &b = e.builder();
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), x);
  Value negative = e.cmpi(CmpIPredicate::slt, bits, e.i32(0));
  Value flipped = arith::XOrIOp::create(b, bits, e.i32(0x7fffffff));
  Value key = e.select(negative, flipped, bits);
  return arith::ExtSIOp::create(b, b.getI64Type(), key);
}

/// The largest key K in [lo, hi] with predicate(K) true, predicate monotone
/// (true up to some K, false above). 33 halvings cover the i32 key range.
Value bisectLargest(HostEmitter &e, Value lo, Value hi,
                    function_ref<Value(Value)> holdsAt) {
  ImplicitLocOpBuilder &b = e.builder();
  Value start = e.index(0);
  Value halvings = e.index(33);
  SmallVector<Value> range =
      e.reduce(start, halvings, {lo, hi}, [&](Value, ValueRange carried) {
        Value sum = arith::AddIOp::create(b, carried[0], carried[1]);
        Value roundUp = arith::AddIOp::create(b, sum, e.i64(1));
        Value mid = arith::ShRSIOp::create(b, roundUp, e.i64(1));
        Value open = e.cmpi(CmpIPredicate::slt, carried[0], carried[1]);
        Value ok = arith::AndIOp::create(b, open, holdsAt(mid));
        Value below = arith::SubIOp::create(b, mid, e.i64(1));
        Value newHi =
            e.select(open, e.select(ok, carried[1], below), carried[1]);
        return SmallVector<Value>{e.select(ok, mid, carried[0]), newHi};
      });
  return range[0];
}
} // namespace

void fdc::host::emitArgmax(HostEmitter &e, Value logits, Value out) {
  e.loop(dim(e, logits, 0),
         [&](Value i) { e.store(emitRowArgmax(e, logits, i), out, i); });
}

void fdc::host::emitSample(HostEmitter &e, Value logits, Value uniform,
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

void fdc::host::emitSampleRow(HostEmitter &e, Value logits, Value uniform,
                              Value temperature, Value topK, Value topP,
                              Value out, Value i) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t vocab = staticDim(logits, 1);
  Value vocabIndex = e.index(vocab);
  Value t = e.load(temperature, i);
  auto z = [&](Value j) { return e.div(e.load(logits, {i, j}), t); };
  // Top-k: keep z >= the k-th largest z (ties kept).
  Value k = arith::ExtSIOp::create(b, b.getI64Type(),
                                   memref::LoadOp::create(b, topK, i));
  Value kPositive = e.cmpi(CmpIPredicate::sgt, k, e.i64(0));
  Value kBelowVocab = e.cmpi(CmpIPredicate::slt, k, e.i64(vocab));
  Value useK = arith::AndIOp::create(b, kPositive, kBelowVocab);
  Value minKey = e.i64(std::numeric_limits<int32_t>::min());
  Value maxKey = e.i64(std::numeric_limits<int32_t>::max());
  Value kthKey = bisectLargest(e, minKey, maxKey, [&](Value key) {
    Value count = e.reduce1(vocabIndex, e.i64(0), [&](Value j, Value n) {
      Value ge = e.cmpi(CmpIPredicate::sge, orderedKey(e, z(j)), key);
      return e.add(n, arith::ExtUIOp::create(b, b.getI64Type(), ge));
    });
    return e.cmpi(CmpIPredicate::sge, count, k);
  });
  Value kThreshold = e.select(useK, kthKey, minKey);
  auto keptByK = [&](Value j) {
    return e.cmpi(CmpIPredicate::sge, orderedKey(e, z(j)), kThreshold);
  };
  Value zMax = e.reduce1(vocabIndex, negInf(e), [&](Value j, Value m) {
    Value kept = keptByK(j);
    Value larger = arith::MaximumFOp::create(b, m, z(j));
    return e.select(kept, larger, m);
  });
  // Unnormalised probabilities of the tokens top-k kept.
  auto prob = [&](Value j) {
    Value kept = keptByK(j);
    Value unnormalised = e.exp(e.sub(z(j), zMax));
    return e.select(kept, unnormalised, e.f32(0));
  };
  auto probKey = [&](Value p) {
    Value bits = arith::BitcastOp::create(b, b.getI32Type(), p);
    return arith::ExtSIOp::create(b, b.getI64Type(), bits);
  };
  Value zero = e.f32(0);
  Value total = e.reduce1(vocabIndex, zero,
                          [&](Value j, Value s) { return e.add(s, prob(j)); });
  // Top-p: keep p >= the largest threshold whose mass >= top_p.
  Value p = e.load(topP, i);
  Value useP = e.cmpf(CmpFPredicate::OLT, p, e.f32(1));
  Value target = e.mul(p, total);
  Value zeroKey = e.i64(0);
  Value infinityKey = e.i64(0x7f800000);
  Value pKey = bisectLargest(e, zeroKey, infinityKey, [&](Value key) {
    Value mass = e.reduce1(vocabIndex, e.f32(0), [&](Value j, Value s) {
      Value pj = prob(j);
      Value ge = e.cmpi(CmpIPredicate::sge, probKey(pj), key);
      return e.add(s, e.select(ge, pj, e.f32(0)));
    });
    return e.cmpf(CmpFPredicate::OGE, mass, target);
  });
  Value pThreshold = e.select(useP, pKey, e.i64(0));
  auto keptProb = [&](Value j) {
    Value pj = prob(j);
    Value byK = keptByK(j);
    Value byP = e.cmpi(CmpIPredicate::sge, probKey(pj), pThreshold);
    Value kept = arith::AndIOp::create(b, byK, byP);
    return std::make_pair(kept, e.select(kept, pj, e.f32(0)));
  };
  Value mass = e.reduce1(vocabIndex, e.f32(0), [&](Value j, Value s) {
    return e.add(s, keptProb(j).second);
  });
  Value draw = e.mul(e.load(uniform, i), mass);
  Value falseValue = arith::ConstantIntOp::create(b, b.getI1Type(), 0);
  Value start = e.index(0);
  SmallVector<Value> scan = e.reduce(
      start, vocabIndex, {e.f32(0), e.index(0), falseValue, e.index(0)},
      [&](Value j, ValueRange carried) {
        auto [kept, pj] = keptProb(j);
        Value cumulative = e.add(carried[0], pj);
        Value notFound = arith::XOrIOp::create(
            b, carried[2], arith::ConstantIntOp::create(b, b.getI1Type(), 1));
        Value keptAndNotFound = arith::AndIOp::create(b, notFound, kept);
        Value passed = e.cmpf(CmpFPredicate::OGT, cumulative, draw);
        Value hit = arith::AndIOp::create(b, keptAndNotFound, passed);
        return SmallVector<Value>{cumulative, e.select(hit, j, carried[1]),
                                  arith::OrIOp::create(b, carried[2], hit),
                                  e.select(kept, j, carried[3])};
      });
  e.store(e.select(scan[2], scan[1], scan[3]), out, i);
}
