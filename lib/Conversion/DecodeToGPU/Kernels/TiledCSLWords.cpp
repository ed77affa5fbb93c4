//===- TiledCSLWords.cpp - a block's reads of Tiled-CSL words -------------===//

#include "TiledCSLWords.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

TiledCSLWords::TiledCSLWords(GpuEmitter &e, Value weight,
                             decode::TiledCSLType type, Type element,
                             int64_t threads, int64_t vectors, Value tileCount)
    : e(e), b(e.builder()), weight(weight), type(type), element(element),
      threads(threads), vectors(vectors), tileCount(tileCount) {
  wordsType =
      VectorType::get({decode::TiledCSLType::kWordsPerVector}, b.getI32Type());
}

bool TiledCSLWords::keepsOrderBanks(const GpuPrimitives &target) {
  return target.sharedMemoryBankBytes() ==
             decode::TiledCSLType::kOrderBankBytes &&
         target.sharedMemoryBanks() % decode::TiledCSLType::kOrderBanks == 0;
}

int64_t fdc::gpu::chooseSpmmSplitK(int64_t rows, int64_t tiles, int64_t slots) {
  constexpr int64_t kBlockOverheadTiles = 2;
  int64_t maxSplits = std::clamp<int64_t>(tiles / 8, 1, 16);
  int64_t best = 1, bestCost = std::numeric_limits<int64_t>::max();
  for (int64_t splitK = 1; splitK <= maxSplits; ++splitK) {
    int64_t perSplit = (tiles + splitK - 1) / splitK;
    if ((splitK - 1) * perSplit >= tiles)
      continue;
    int64_t waves = (rows * splitK + slots - 1) / slots;
    int64_t cost = waves * (perSplit + kBlockOverheadTiles);
    if (cost < bestCost) {
      best = splitK;
      bestCost = cost;
    }
  }
  return best;
}

int64_t TiledCSLWords::getDefaultVectors(decode::TiledCSLType type,
                                         int64_t threads) {
  int64_t tileWords = type.getTile()[0] * type.getTile()[1];
  return std::clamp<int64_t>((3 * tileWords + 40 * threads - 1) /
                                 (40 * threads),
                             1, kMaxRegisterVectors);
}

void TiledCSLWords::planOffsets(int64_t halves, int64_t n, Value firstTile) {
  int64_t tileRowsPerHalf = (n + type.getTile()[0] - 1) / type.getTile()[0];
  Value blockY = e.blockId(Dimension::y);
  for (int64_t h = 0; h < halves; ++h) {
    Value tileRow =
        arith::AddIOp::create(b, blockY, e.index(h * tileRowsPerHalf));
    Value rowStart =
        arith::MulIOp::create(b, tileRow, e.index(type.getTilesPerRow()));
    offsetBase.push_back(arith::AddIOp::create(b, rowStart, firstTile));
  }
}

Value TiledCSLWords::loadOffset(int64_t h, Value j) {
  Value clamped = arith::MinUIOp::create(b, j, tileCount);
  Value entry = arith::AddIOp::create(b, offsetBase[h], clamped);
  Value word = memref::LoadOp::create(b, weight, ValueRange{entry});
  Value vectorsIn = arith::ShRUIOp::create(b, word, e.i32(2));
  Value wide = arith::ExtUIOp::create(b, b.getI64Type(), vectorsIn);
  Value index = arith::IndexCastOp::create(b, b.getIndexType(), wide);
  int64_t header =
      type.getHeaderWords() / decode::TiledCSLType::kWordsPerVector;
  return arith::AddIOp::create(b, index, e.index(header));
}

Value TiledCSLWords::vectorIndex(Value begin, int64_t i) {
  Value first = arith::AddIOp::create(b, begin, e.threadId());
  return arith::AddIOp::create(b, first, e.index(i * threads));
}

Value TiledCSLWords::loadVector(Value index) {
  constexpr int64_t kWords = decode::TiledCSLType::kWordsPerVector;
  int64_t lastVector =
      type.getHeaderWords() / kWords +
      type.getTileCount() * type.getTile()[0] * type.getTile()[1] / kWords - 1;
  Value clamped = arith::MinUIOp::create(b, index, e.index(lastVector));
  Value word = arith::MulIOp::create(b, clamped, e.index(kWords));
  return vector::LoadOp::create(b, wordsType, weight, ValueRange{word},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
}

// Vectors past the run are not loaded (zeros, never scattered): at 90 %
// sparsity a tile's run fills under two of the five vectors a thread holds
// in flash_spmm, and loading the header in their place cost 3-7 % at 90 %
// (H100).
SmallVector<Value> TiledCSLWords::loadWords(Value begin, Value end) {
  SmallVector<Value> loaded;
  for (int64_t i = 0; i < vectors; ++i) {
    Value index = vectorIndex(begin, i);
    Value valid = e.cmpi(CmpIPredicate::ult, index, end);
    Value vector = ifElseVector(valid, [&] { return loadVector(index); });
    loaded.push_back(vector);
  }
  return loaded;
}

Value TiledCSLWords::ifElseVector(Value condition,
                                  llvm::function_ref<Value()> then) {
  auto ifOp = scf::IfOp::create(b, TypeRange{wordsType}, condition,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value value = then();
  scf::YieldOp::create(b, value);
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value none =
      arith::ConstantOp::create(b, wordsType, b.getZeroAttr(wordsType));
  scf::YieldOp::create(b, none);
  return ifOp.getResult(0);
}

void TiledCSLWords::forEachVector(ValueRange registers, Value begin, Value end,
                                  llvm::function_ref<void(Value)> body) {
  for (int64_t i = 0; i < vectors; ++i) {
    Value index = vectorIndex(begin, i);
    Value valid = e.cmpi(CmpIPredicate::ult, index, end);
    Value vector = registers[i];
    e.ifThenElse(valid, [&] { body(vector); });
  }
  Value overflow = vectorIndex(begin, vectors);
  e.loop(overflow, end, e.index(threads),
         [&](Value index) { body(loadVector(index)); });
}

TiledCSLWord TiledCSLWords::unpack(Value vector, int64_t j) {
  int64_t tileElements = type.getTile()[0] * type.getTile()[1];
  // In 32 bits: a word's location fits 16.
  Value word = vector::ExtractOp::create(b, vector, j);
  Value location = arith::ShRUIOp::create(b, word, e.i32(16));
  // A location past the tile (only a corrupt weight has one) stays in the
  // tile.
  if (tileElements < 65536)
    location = arith::MinUIOp::create(b, location, e.i32(tileElements - 1));
  Value bits = arith::TruncIOp::create(b, b.getI16Type(), word);
  Value value = arith::BitcastOp::create(b, element, bits);
  return {value, location};
}

bool fdc::gpu::isSpmmInput(decode::SparseLinearOp op,
                           const GpuPrimitives &target) {
  auto inputType = cast<RankedTensorType>(op.getInput().getType());
  Type element = inputType.getElementType();
  return (element.isBF16() || element.isF16()) &&
         inputType.getDimSize(1) % (target.vectorBytes() / 2) == 0;
}

void fdc::gpu::zeroShared(GpuEmitter &e, Value shared, Value base,
                          int64_t elements, Type element, int64_t threads) {
  ImplicitLocOpBuilder &b = e.builder();
  int64_t vectorBytes = e.target().vectorBytes();
  int64_t lanes = vectorBytes * 8 / element.getIntOrFloatBitWidth();
  auto pieces = VectorType::get({lanes}, element);
  Value zero = arith::ConstantOp::create(b, pieces, b.getZeroAttr(pieces));
  int64_t chunks = elements / lanes;
  for (int64_t start = 0; start < chunks; start += threads) {
    Value thread = e.threadId();
    Value chunk = arith::AddIOp::create(b, thread, e.index(start));
    auto store = [&] {
      Value offset = arith::MulIOp::create(b, chunk, e.index(lanes));
      Value index = arith::AddIOp::create(b, base, offset);
      vector::StoreOp::create(b, zero, shared, ValueRange{index},
                              /*nontemporal=*/false,
                              llvm::MaybeAlign(vectorBytes));
    };
    if (start + threads > chunks)
      e.ifThenElse(e.cmpi(CmpIPredicate::ult, chunk, e.index(chunks)), store);
    else
      store();
  }
}
