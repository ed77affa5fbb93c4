//===- Sampling.cpp - the sampling rule of decode.sample ------------------===//
//
// Temperature, top-k and top-p for one row, exactly as the op's description
// states: the host lowering runs it per row, the GPU sample kernel on one
// thread per sampled row. The top-k and top-p thresholds are found by
// bisection over an order-preserving integer key of the logits, so no sort
// is needed.
//
//===----------------------------------------------------------------------===//

#include "fdc/Conversion/Utils/Sampling.h"

#include <limits>

using namespace mlir;
using namespace fdc;
using arith::CmpFPredicate;
using arith::CmpIPredicate;

namespace {
/// Monotone map of an f32 onto i64: a < b  <=>  key(a) < key(b).
Value orderedKey(Emitter &e, Value x) {
  ImplicitLocOpBuilder &b = e.builder();
  Value bits = arith::BitcastOp::create(b, b.getI32Type(), x);
  Value negative = e.cmpi(CmpIPredicate::slt, bits, e.i32(0));
  Value flipped = arith::XOrIOp::create(b, bits, e.i32(0x7fffffff));
  Value key = e.select(negative, flipped, bits);
  return arith::ExtSIOp::create(b, b.getI64Type(), key);
}

/// The largest key K in [lo, hi] with predicate(K) true, predicate monotone
/// (true up to some K, false above). 33 halvings cover the i32 key range.
Value bisectLargest(Emitter &e, Value lo, Value hi,
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

void fdc::emitSampleRow(Emitter &e, Value logits, Value uniform,
                        Value temperature, Value topK, Value topP, Value out,
                        Value i) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t vocab = cast<MemRefType>(logits.getType()).getDimSize(1);
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
  Value zMax =
      e.reduce1(vocabIndex, e.f32(-std::numeric_limits<float>::infinity()),
                [&](Value j, Value m) {
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
