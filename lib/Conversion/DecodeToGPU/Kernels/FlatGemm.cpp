//===- FlatGemm.cpp - kernel family "flat_gemm" ---------------------------===//
//
// decode.linear on the target's matrix units, after FlashDecoding++ §4: the
// weight is the wide operand A of the subgroup MMA (its rows are output
// features), the batch is the narrow operand B, padded only to the MMA's
// narrow side n (8 on NVIDIA, 16 on AMD) instead of a GEMM tile of 64.
//
// A block owns `row_tiles` A tiles (m rows each) and `batch_tiles` B tiles
// (n batch rows each); its `subgroups` subgroups split K between them and
// add their accumulators through shared memory at the end, one tile at a
// time (subgroups * m * n f32, twice that for SiLU-gate-up). Every weight
// element is read from HBM once per block column (grid y covers the batch
// in chunks of batch_tiles * n rows).
//
// Loads go straight from global memory into the MMA fragments, vector_bytes
// wide: the MMA only needs each lane's A and B k values to agree
// (MmaLayout), so a lane loads a contiguous run of k for its rows and its
// batch row and hands consecutive slices of it to consecutive MMAs. One
// "super-step" is the k range a subgroup's loads cover at once; `k_unroll`
// super-steps are loaded before any of their MMAs run, which keeps
// k_unroll * row_tiles * vector_bytes bytes per lane in flight (the
// multi-stage pipeline lives in registers). Super-steps are dealt round
// robin to the block's subgroups, so they read neighbouring bytes of the
// same rows together.
//
// Rows past N and batch rows past M are clamped for loads and not stored;
// the k tail (K not a multiple of a super-step) is masked in vector_bytes
// pieces, so K must be a multiple of vector_bytes / element bytes.
//
//===----------------------------------------------------------------------===//

#include "../KernelRegistry.h"
#include "LinearArgs.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;
using arith::CmpIPredicate;
using mlir::gpu::Dimension;

namespace {
/// The config of one flat GEMM kernel.
struct FlatGemmConfig {
  int64_t rowTiles, batchTiles, subgroups, kUnroll;
};

/// Builds the kernel body; one instance per kernel.
class FlatGemmBuilder {
public:
  FlatGemmBuilder(GpuEmitter &e, const MmaLayout &layout,
                  const FlatGemmConfig &config, const LinearProblem &problem,
                  const LinearOptionalArgs &optional)
      : e(e), b(e.builder()), target(e.target()), layout(layout),
        config(config), problem(problem), optional(optional) {
    Type element = problem.weight.type.getElementType();
    int64_t elementBytes = element.getIntOrFloatBitWidth() / 8;
    pieceLanes = target.vectorBytes() / elementBytes;
    laneRun = std::max(layout.kPerLane, pieceLanes);
    pieces = laneRun / pieceLanes;
    mmasPerStep = laneRun / layout.kPerLane;
    stepK = mmasPerStep * layout.k();
    halves = getWeightHalves(problem.gateUp);
    pieceType = VectorType::get({pieceLanes}, element);
    accType = VectorType::get({layout.accPerLane}, b.getF32Type());
  }

  /// The kernel: v are its arguments (inputs, output, optional operands,
  /// then the implicit batch, and the shared memory when subgroups > 1).
  void build(ArrayRef<Value> v, int64_t implicitStart) {
    input = v[0];
    weight = v[1];
    out = v[2];
    Value batch64 = v[implicitStart];
    batch = arith::IndexCastOp::create(b, b.getIndexType(), batch64);
    epilogue = optional.operands(v, out);

    lane = e.laneId();
    subgroup = e.subgroupId();
    // One op-creating call per argument list: the order of a call's
    // arguments is the C++ compiler's (see scripts/check-determinism.sh).
    Value blockX = e.blockId(Dimension::x);
    rowBase =
        arith::MulIOp::create(b, blockX, e.index(layout.m() * config.rowTiles));
    Value blockY = e.blockId(Dimension::y);
    columnBase = arith::MulIOp::create(b, blockY,
                                       e.index(layout.n() * config.batchTiles));
    computeLaneAddresses();

    SmallVector<Value> acc = accumulate();
    if (config.subgroups == 1) {
      storeLaneAccumulators(acc);
      return;
    }
    reduceThroughShared(acc, v.back());
  }

private:
  /// Index into the flat accumulator list: half h, row tile r, batch tile t.
  int64_t accIndex(int64_t h, int64_t r, int64_t t) const {
    return (h * config.rowTiles + r) * config.batchTiles + t;
  }
  int64_t accCount() const {
    return halves * config.rowTiles * config.batchTiles;
  }

  Value minIndex(Value a, int64_t bound) {
    return arith::MinUIOp::create(b, a, e.index(bound));
  }

  /// The weight rows and batch rows this lane loads (clamped in bounds) and
  /// its k offset within a super-step.
  void computeLaneAddresses() {
    Value kGroup = target.getMmaKGroup(b, layout, lane);
    laneK = arith::MulIOp::create(b, kGroup, e.index(laneRun));
    for (int64_t h = 0; h < halves; ++h)
      for (int64_t r = 0; r < config.rowTiles; ++r)
        for (int64_t j = 0; j < layout.aRowsPerLane; ++j) {
          Value laneRow = target.getMmaARow(b, layout, lane, j);
          Value tileRow =
              arith::AddIOp::create(b, laneRow, e.index(r * layout.m()));
          Value row = arith::AddIOp::create(b, rowBase, tileRow);
          Value clamped = minIndex(row, problem.n - 1);
          weightRows.push_back(
              arith::AddIOp::create(b, clamped, e.index(h * problem.n)));
        }
    Value lastColumn = arith::SubIOp::create(b, batch, e.index(1));
    for (int64_t t = 0; t < config.batchTiles; ++t) {
      Value laneColumn = target.getMmaBColumn(b, layout, lane);
      Value tileColumn =
          arith::AddIOp::create(b, laneColumn, e.index(t * layout.n()));
      Value column = arith::AddIOp::create(b, columnBase, tileColumn);
      batchRows.push_back(arith::MinUIOp::create(b, column, lastColumn));
    }
  }

  /// A lane's run of laneRun elements of `memref` row `row` from `k`; with
  /// `masked`, pieces at or past K read as zeros.
  Value loadRun(Value memref, Value row, Value k, bool masked) {
    SmallVector<Value> parts;
    for (int64_t p = 0; p < pieces; ++p) {
      Value pieceK = arith::AddIOp::create(b, k, e.index(p * pieceLanes));
      Value valid;
      if (masked) {
        valid = e.cmpi(CmpIPredicate::ult, pieceK, e.index(problem.k));
        pieceK = e.select(valid, pieceK, e.index(0));
      }
      Value part = vector::LoadOp::create(
          b, pieceType, memref, ValueRange{row, pieceK},
          /*nontemporal=*/false, llvm::MaybeAlign(target.vectorBytes()));
      if (masked) {
        Value zero =
            arith::ConstantOp::create(b, pieceType, b.getZeroAttr(pieceType));
        part = e.select(valid, part, zero);
      }
      parts.push_back(part);
    }
    return e.concatVectors(parts);
  }

  Value slice(Value run, int64_t s) { return e.mmaSlice(run, layout, s); }

  /// The loads of super-steps `steps`, then their MMAs into `acc`.
  SmallVector<Value> superSteps(ArrayRef<Value> steps, ValueRange acc,
                                bool masked) {
    struct Loaded {
      SmallVector<Value> a, bRuns;
    };
    SmallVector<Loaded> loaded;
    for (Value step : steps) {
      Value k = arith::AddIOp::create(
          b, arith::MulIOp::create(b, step, e.index(stepK)), laneK);
      Loaded l;
      for (Value row : weightRows)
        l.a.push_back(loadRun(weight, row, k, masked));
      for (Value row : batchRows)
        l.bRuns.push_back(loadRun(input, row, k, masked));
      loaded.push_back(std::move(l));
    }
    SmallVector<Value> result(acc.begin(), acc.end());
    for (const Loaded &l : loaded)
      for (int64_t s = 0; s < mmasPerStep; ++s)
        for (int64_t h = 0; h < halves; ++h)
          for (int64_t r = 0; r < config.rowTiles; ++r) {
            SmallVector<Value> aRows;
            for (int64_t j = 0; j < layout.aRowsPerLane; ++j)
              aRows.push_back(slice(
                  l.a[(h * config.rowTiles + r) * layout.aRowsPerLane + j], s));
            for (int64_t t = 0; t < config.batchTiles; ++t) {
              Value &slot = result[accIndex(h, r, t)];
              slot = target.mma(b, layout, aRows, slice(l.bRuns[t], s), slot);
            }
          }
    return result;
  }

  /// The subgroup's share of K: unmasked iterations of k_unroll super-steps,
  /// then the remaining super-steps one at a time, masked.
  SmallVector<Value> accumulate() {
    int64_t fullSteps = problem.k / stepK;
    int64_t totalSteps = (problem.k + stepK - 1) / stepK;
    int64_t perIteration = config.subgroups * config.kUnroll;
    int64_t iterations = fullSteps / perIteration;
    Value zero = arith::ConstantOp::create(b, accType, b.getZeroAttr(accType));
    SmallVector<Value> acc(accCount(), zero);
    if (iterations > 0) {
      Value lower = e.index(0);
      Value upper = e.index(iterations);
      Value one = e.index(1);
      acc = e.reduce(lower, upper, one, acc, [&](Value it, ValueRange carried) {
        Value first = arith::AddIOp::create(
            b, arith::MulIOp::create(b, it, e.index(perIteration)), subgroup);
        SmallVector<Value> steps;
        for (int64_t u = 0; u < config.kUnroll; ++u)
          steps.push_back(
              arith::AddIOp::create(b, first, e.index(u * config.subgroups)));
        return superSteps(steps, carried, /*masked=*/false);
      });
    }
    int64_t done = iterations * perIteration;
    if (done < totalSteps) {
      Value first = arith::AddIOp::create(b, subgroup, e.index(done));
      Value upper = e.index(totalSteps);
      Value stride = e.index(config.subgroups);
      acc = e.reduce(first, upper, stride, acc,
                     [&](Value step, ValueRange carried) {
                       return superSteps({step}, carried, /*masked=*/true);
                     });
    }
    return acc;
  }

  /// The epilogue of D(row, column) of tile (r, t) held by lane `owner` in
  /// its accumulator `j` (an index), given its value (and the up half's).
  void storeElement(Value owner, int64_t r, int64_t t, Value j, Value value,
                    Value up) {
    auto [row, column] = target.getMmaAccumulator(b, layout, owner, j);
    Value n = arith::AddIOp::create(
        b, rowBase, arith::AddIOp::create(b, row, e.index(r * layout.m())));
    Value m = arith::AddIOp::create(
        b, columnBase,
        arith::AddIOp::create(b, column, e.index(t * layout.n())));
    Value inRows = e.cmpi(CmpIPredicate::ult, n, e.index(problem.n));
    Value inBatch = e.cmpi(CmpIPredicate::ult, m, batch);
    e.ifThenElse(arith::AndIOp::create(b, inRows, inBatch),
                 [&] { emitLinearOutput(e, epilogue, m, n, value, up); });
  }

  void storeLaneAccumulators(ArrayRef<Value> acc) {
    for (int64_t r = 0; r < config.rowTiles; ++r)
      for (int64_t t = 0; t < config.batchTiles; ++t)
        for (int64_t j = 0; j < layout.accPerLane; ++j) {
          Value value = e.extract(acc[accIndex(0, r, t)], j);
          Value up =
              problem.gateUp ? e.extract(acc[accIndex(1, r, t)], j) : Value();
          storeElement(lane, r, t, e.index(j), value, up);
        }
  }

  /// The subgroups' accumulators of one tile (r, t) at a time go through
  /// shared memory as [subgroup][half][accumulator][lane]; then the block's
  /// threads each sum one (accumulator, lane) over the subgroups and store
  /// it. One tile at a time keeps the shared memory at
  /// subgroups * halves * m * n f32 whatever the tile counts.
  void reduceThroughShared(ArrayRef<Value> acc, Value shared) {
    int64_t lanes = target.subgroupSize();
    int64_t tileElements = layout.accPerLane * lanes;
    int64_t perSubgroup = halves * tileElements;
    int64_t threads = config.subgroups * lanes;
    Value subgroupBase =
        arith::MulIOp::create(b, subgroup, e.index(perSubgroup));
    for (int64_t r = 0; r < config.rowTiles; ++r)
      for (int64_t t = 0; t < config.batchTiles; ++t) {
        for (int64_t h = 0; h < halves; ++h)
          for (int64_t j = 0; j < layout.accPerLane; ++j) {
            Value slot = arith::AddIOp::create(
                b, subgroupBase,
                arith::AddIOp::create(
                    b, e.index((h * layout.accPerLane + j) * lanes), lane));
            e.store(e.extract(acc[accIndex(h, r, t)], j), shared, {slot});
          }
        e.barrier();
        Value thread = e.threadId();
        Value outputs = e.index(tileElements);
        Value stride = e.index(threads);
        e.loop(thread, outputs, stride, [&](Value o) {
          // o = j * lanes + owner.
          Value owner = arith::RemUIOp::create(b, o, e.index(lanes));
          Value j = arith::DivUIOp::create(b, o, e.index(lanes));
          auto sum = [&](int64_t h) {
            Value total = e.f32(0);
            for (int64_t w = 0; w < config.subgroups; ++w) {
              Value slot = arith::AddIOp::create(
                  b, o, e.index(w * perSubgroup + h * tileElements));
              total = e.add(total, e.load(shared, {slot}));
            }
            return total;
          };
          Value value = sum(0);
          Value up = problem.gateUp ? sum(1) : Value();
          storeElement(owner, r, t, j, value, up);
        });
        // The next tile reuses the shared memory.
        e.barrier();
      }
  }

  GpuEmitter &e;
  ImplicitLocOpBuilder &b;
  const GpuPrimitives &target;
  const MmaLayout &layout;
  const FlatGemmConfig &config;
  const LinearProblem &problem;
  const LinearOptionalArgs &optional;

  int64_t pieceLanes, laneRun, pieces, mmasPerStep, stepK, halves;
  VectorType pieceType, accType;

  Value input, weight, out, batch;
  LinearEpilogueOperands epilogue;
  Value lane, subgroup, rowBase, columnBase, laneK;
  /// Per (half, row tile, A row slot); per batch tile.
  SmallVector<Value> weightRows, batchRows;
};

} // namespace

std::optional<MmaLayout>
fdc::gpu::getFlatGemmLayout(decode::LinearOp op, const GpuPrimitives &target) {
  auto weightType = dyn_cast<RankedTensorType>(op.getWeight().getType());
  auto inputType = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!weightType || !inputType)
    return std::nullopt; // quantised weights
  Type element = weightType.getElementType();
  if (inputType.getElementType() != element ||
      !(element.isBF16() || element.isF16()))
    return std::nullopt;
  int64_t k = weightType.getDimSize(1);
  int64_t pieceLanes = target.vectorBytes() / 2;
  if (k % pieceLanes != 0)
    return std::nullopt;
  return target.getMmaLayout(element);
}

namespace {
class FlatGemmFamily : public KernelFamily {
public:
  StringRef getName() const override { return "flat_gemm"; }
  bool canLower(Operation *op) const override {
    return isa<decode::LinearOp>(op);
  }
  DictionaryAttr getDefaultConfig(Operation *op,
                                  const GpuPrimitives &target) const override {
    return makeConfig(op->getContext(), {{"row_tiles", 1},
                                         {"batch_tiles", 1},
                                         {"subgroups", 4},
                                         {"k_unroll", 4}});
  }
  LogicalResult verifyConfig(Operation *op, const KernelConfig &config,
                             const GpuPrimitives &target) const override {
    if (!getFlatGemmLayout(cast<decode::LinearOp>(op), target))
      return op->emitOpError()
             << "cannot use kernel 'flat_gemm': it needs f16 or bf16 input "
                "and weight, K a multiple of the target's vector width, and "
                "a target with a matrix multiply-accumulate for them";
    int64_t maxSubgroups = target.maxSubgroups();
    if (failed(checkRange(op, config, "row_tiles", 1, 4)) ||
        failed(checkRange(op, config, "batch_tiles", 1, 8)) ||
        failed(checkRange(op, config, "subgroups", 1, maxSubgroups)) ||
        failed(checkRange(op, config, "k_unroll", 1, 8)))
      return failure();
    return success();
  }
  LogicalResult build(Operation *op, const KernelConfig &config,
                      StepBuffers &buffers, KernelContext &ctx) const override {
    auto linear = cast<decode::LinearOp>(op);
    MmaLayout layout = *getFlatGemmLayout(linear, ctx.primitives);
    FlatGemmConfig flat{config.get("row_tiles"), config.get("batch_tiles"),
                        config.get("subgroups"), config.get("k_unroll")};
    LinearProblem problem(linear, buffers);

    const SmallVector<KernelArg> &args = problem.args;
    const LinearOptionalArgs &optional = problem.optional;

    int64_t rowsPerBlock = layout.m() * flat.rowTiles;
    int64_t batchPerBlock = layout.n() * flat.batchTiles;
    int64_t halves = getWeightHalves(problem.gateUp);
    int64_t lanes = ctx.subgroupSize();
    int64_t sharedF32 = flat.subgroups == 1 ? 0
                                            : flat.subgroups * halves *
                                                  layout.accPerLane * lanes;
    Value gridX = ctx.hostIndex((problem.n + rowsPerBlock - 1) / rowsPerBlock);
    Value gridY =
        ctx.toIndex(ctx.ceilDiv(ctx.batch, ctx.hostI64(batchPerBlock)));
    size_t implicitStart = args.size();
    ctx.launch("linear", args, {gridX, gridY, ctx.hostIndex(1)},
               flat.subgroups * lanes, sharedF32,
               [&](GpuEmitter &e, ArrayRef<Value> v) {
                 FlatGemmBuilder(e, layout, flat, problem, optional)
                     .build(v, implicitStart);
               });
    return success();
  }
};
} // namespace

std::unique_ptr<KernelFamily> fdc::gpu::createFlatGemmFamily() {
  return std::make_unique<FlatGemmFamily>();
}
