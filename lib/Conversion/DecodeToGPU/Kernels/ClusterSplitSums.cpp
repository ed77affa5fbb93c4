//===- ClusterSplitSums.cpp - split-K sums added inside a cluster ---------===//

#include "ClusterSplitSums.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;

namespace {
/// The lanes of an MMA fragment's accumulators that share a row (a quad:
/// mma.sync's and wgmma's D fragments); each holds two adjacent columns,
/// so the quad's lanes hold columns 2 apart.
constexpr int64_t kQuadLanes = 4;
constexpr int64_t kColumnsPerLane = 2;

/// The most different addresses one shared-memory bank of `target` meets
/// when the lanes of a subgroup store one f32 sum each of an MMA fragment
/// (lane l: row l / 4, column 2 (l % 4) of the fragment) into columns of
/// `stride` f32s: the store's passes through the banks.
int64_t getStoreWays(int64_t stride, decode::GpuTargetAttr target) {
  int64_t banks = target.getSharedMemoryBanks();
  int64_t bankBytes = target.getSharedMemoryBankBytes();
  // Per bank, the different bank words (bankBytes apart) its lanes reach.
  SmallVector<SmallVector<int64_t>> reached(banks);
  for (int64_t lane = 0; lane < target.getSubgroup(); ++lane) {
    int64_t row = lane / kQuadLanes;
    int64_t column = kColumnsPerLane * (lane % kQuadLanes);
    int64_t word = (column * stride + row) * 4 / bankBytes;
    SmallVector<int64_t> &words = reached[word % banks];
    if (!llvm::is_contained(words, word))
      words.push_back(word);
  }
  size_t ways = 0;
  for (const SmallVector<int64_t> &words : reached)
    ways = std::max(ways, words.size());
  return static_cast<int64_t>(ways);
}

/// The most vectors a thread loads before it adds them (bounds the
/// registers the loads in flight take; the accumulators are stored by then).
constexpr int64_t kVectorsInFlight = 16;
} // namespace

int64_t ClusterSplitSums::getColumnPad(int64_t rows,
                                       decode::GpuTargetAttr target) {
  // A longer pad does no better for a 32-lane subgroup (the MMAs of the
  // targets with clusters): of every pad up to the banks' span, none or one
  // vector reaches the fewest passes for every row count, checked for 4 to
  // 256 banks of 4 to 16 bytes (powers of two, as the verifier asks).
  return getStoreWays(rows + kMaxColumnPad, target) < getStoreWays(rows, target)
             ? kMaxColumnPad
             : 0;
}

Value ClusterSplitSums::address(int64_t h, Value column, Value row) {
  ImplicitLocOpBuilder &b = e.builder();
  Value halfColumn = arith::AddIOp::create(b, column, e.index(h * columns));
  Value scaled = arith::MulIOp::create(b, halfColumn, e.index(columnStride));
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
