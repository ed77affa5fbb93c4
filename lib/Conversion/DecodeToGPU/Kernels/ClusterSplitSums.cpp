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
/// registers the loads in flight take; the accumulators are stored by then).
constexpr int64_t kVectorsInFlight = 16;
} // namespace

Value ClusterSplitSums::address(int64_t h, Value column, Value row) {
  ImplicitLocOpBuilder &b = e.builder();
  Value halfColumn = arith::AddIOp::create(b, column, e.index(h * columns));
  Value scaled =
      arith::MulIOp::create(b, halfColumn, e.index(getColumnStride(rows)));
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
      /// Null where every chunk of every round is in the tile.
      Value inRange;
      Value column, row;
      /// Per half, per split.
      SmallVector<Value> parts;
    };
    SmallVector<Chunk> loaded;
    for (int64_t p = 0; p < perRound; ++p) {
      Chunk chunk;
      Value index = arith::AddIOp::create(b, roundFirst, e.index(p * perPass));
      // Where the passes of every round cover the tile exactly, every chunk
      // is in it (no inRange); else a chunk past the tile loads chunk 0 (in
      // shared memory) and is not stored.
      Value clamped = index;
      if (chunks % (perRound * perPass) != 0) {
        chunk.inRange = e.cmpi(CmpIPredicate::ult, index, e.index(chunks));
        clamped = e.select(chunk.inRange, index, e.index(0));
      }
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
    // Every chunk's sums, then their stores: where the tile lies in the
    // output whole, with no condition but the chunk's own, else each
    // element's under its bounds. Both branches use every sum, so that no
    // load sinks into a conditional block (where the round's loads would
    // wait for one another, not be in flight together), and every load has
    // been used before the last barrier.
    SmallVector<SmallVector<Value>> sums;
    for (const Chunk &chunk : loaded) {
      SmallVector<Value> &chunkSums = sums.emplace_back();
      for (int64_t h = 0; h < halves; ++h) {
        Value sum = chunk.parts[h * splits];
        for (int64_t s = 1; s < splits; ++s)
          sum = arith::AddFOp::create(b, sum, chunk.parts[h * splits + s]);
        chunkSums.push_back(sum);
      }
    }
    auto storeChunks = [&](bool whole) {
      for (size_t c = 0; c < loaded.size(); ++c) {
        const Chunk &chunk = loaded[c];
        ArrayRef<Value> chunkSums = sums[c];
        auto storeChunk = [&] {
          Value m = arith::AddIOp::create(b, columnBase, chunk.column);
          Value inBatch =
              whole ? Value() : e.cmpi(CmpIPredicate::ult, m, batch);
          Value firstRow = arith::AddIOp::create(b, rowBase, chunk.row);
          for (int64_t i = 0; i < kChunkRows; ++i) {
            Value row = arith::AddIOp::create(b, firstRow, e.index(i));
            Value value = e.extract(chunkSums[0], i);
            Value up = gateUp ? e.extract(chunkSums[1], i) : Value();
            auto store = [&] {
              emitLinearOutput(e, epilogue, m, row, value, up);
            };
            if (whole) {
              store();
              continue;
            }
            Value inRows = e.cmpi(CmpIPredicate::ult, row, e.index(n));
            e.ifThenElse(arith::AndIOp::create(b, inRows, inBatch), store);
          }
        };
        if (chunk.inRange)
          e.ifThenElse(chunk.inRange, storeChunk);
        else
          storeChunk();
      }
    };
    Value lastColumn = arith::AddIOp::create(b, columnBase, e.index(columns));
    Value whole = e.cmpi(CmpIPredicate::ule, lastColumn, batch);
    if (n % rows != 0) {
      Value lastRow = arith::AddIOp::create(b, rowBase, e.index(rows));
      whole = arith::AndIOp::create(
          b, whole, e.cmpi(CmpIPredicate::ule, lastRow, e.index(n)));
    }
    e.ifThenElse(
        whole, [&] { storeChunks(/*whole=*/true); },
        [&] { storeChunks(/*whole=*/false); });
  });
  // Every load of another workgroup's sums has been used above.
  target.clusterExecutionBarrier(b);
}
