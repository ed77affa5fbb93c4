//===- ClusterSplitSums.cpp - split-K sums added inside a cluster ---------===//

#include "ClusterSplitSums.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;

namespace {
/// Rows of a column in one 16-byte vector of f32 sums.
constexpr int64_t kChunkRows = 4;
/// The most vectors a thread loads before it adds them (bounds the
/// registers the loads in flight take).
constexpr int64_t kVectorsInFlight = 8;
} // namespace

Value ClusterSplitSums::address(int64_t h, Value column, Value row) {
  ImplicitLocOpBuilder &b = e.builder();
  Value halfColumn = arith::AddIOp::create(b, column, e.index(h * columns));
  Value scaled = arith::MulIOp::create(b, halfColumn, e.index(rows));
  Value element = arith::AddIOp::create(b, scaled, row);
  Value bytes = arith::MulIOp::create(b, element, e.index(4));
  Value offset = arith::IndexCastOp::create(b, b.getI64Type(), bytes);
  return arith::AddIOp::create(b, base, offset);
}

void ClusterSplitSums::store(int64_t h, Value column, Value row, Value sum) {
  e.target().storeShared(e.builder(), address(h, column, row), sum);
}

void ClusterSplitSums::reduce(Value split, Value thread, Value rowBase,
                              Value columnBase, int64_t n, Value batch,
                              const LinearEpilogueOperands &epilogue,
                              bool gateUp) {
  ImplicitLocOpBuilder &b = e.builder();
  const GpuPrimitives &target = e.target();
  target.clusterBarrier(b);
  int64_t chunksPerColumn = rows / kChunkRows;
  int64_t chunks = chunksPerColumn * columns;
  int64_t perPass = splits * threads;
  int64_t passes = (chunks + perPass - 1) / perPass;
  int64_t perRound =
      std::clamp<int64_t>(kVectorsInFlight / (splits * halves), 1, passes);
  int64_t rounds = (passes + perRound - 1) / perRound;
  auto vectorType = VectorType::get({kChunkRows}, b.getF32Type());
  Value first = arith::AddIOp::create(
      b, arith::MulIOp::create(b, split, e.index(threads)), thread);
  // One op-creating call per argument list: the order of a call's
  // arguments is the C++ compiler's (see scripts/check-determinism.sh).
  Value lower = e.index(0);
  Value upper = e.index(rounds);
  Value one = e.index(1);
  e.loop(lower, upper, one, [&](Value round) {
    Value roundFirst = arith::AddIOp::create(
        b, arith::MulIOp::create(b, round, e.index(perRound * perPass)), first);
    struct Chunk {
      Value inRange, column, row;
      /// Per half, per split.
      SmallVector<Value> parts;
    };
    SmallVector<Chunk> loaded;
    for (int64_t p = 0; p < perRound; ++p) {
      Chunk chunk;
      Value index = arith::AddIOp::create(b, roundFirst, e.index(p * perPass));
      chunk.inRange = e.cmpi(CmpIPredicate::ult, index, e.index(chunks));
      // A chunk past the tile loads chunk 0 (in shared memory) and is
      // not stored.
      Value clamped = e.select(chunk.inRange, index, e.index(0));
      chunk.column =
          arith::DivUIOp::create(b, clamped, e.index(chunksPerColumn));
      Value inColumn =
          arith::RemUIOp::create(b, clamped, e.index(chunksPerColumn));
      chunk.row = arith::MulIOp::create(b, inColumn, e.index(kChunkRows));
      for (int64_t h = 0; h < halves; ++h) {
        Value at = address(h, chunk.column, chunk.row);
        for (int64_t s = 0; s < splits; ++s)
          chunk.parts.push_back(
              target.loadClusterShared(b, at, e.i32(s), vectorType));
      }
      loaded.push_back(std::move(chunk));
    }
    for (const Chunk &chunk : loaded)
      e.ifThenElse(chunk.inRange, [&] {
        SmallVector<Value> sums;
        for (int64_t h = 0; h < halves; ++h) {
          Value sum = chunk.parts[h * splits];
          for (int64_t s = 1; s < splits; ++s)
            sum = arith::AddFOp::create(b, sum, chunk.parts[h * splits + s]);
          sums.push_back(sum);
        }
        Value m = arith::AddIOp::create(b, columnBase, chunk.column);
        Value inBatch = e.cmpi(CmpIPredicate::ult, m, batch);
        Value firstRow = arith::AddIOp::create(b, rowBase, chunk.row);
        for (int64_t i = 0; i < kChunkRows; ++i) {
          Value row = arith::AddIOp::create(b, firstRow, e.index(i));
          Value inRows = e.cmpi(CmpIPredicate::ult, row, e.index(n));
          Value value = e.extract(sums[0], i);
          Value up = gateUp ? e.extract(sums[1], i) : Value();
          e.ifThenElse(arith::AndIOp::create(b, inRows, inBatch), [&] {
            emitLinearOutput(e, epilogue, m, row, value, up);
          });
        }
      });
  });
  target.clusterBarrier(b);
}
