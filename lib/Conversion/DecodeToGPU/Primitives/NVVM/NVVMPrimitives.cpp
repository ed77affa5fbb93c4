//===- NVVMPrimitives.cpp - GPU building blocks for NVIDIA GPUs -----------===//
//
// Subgroup reductions are butterflies of warp shuffles (gpu.shuffle xor,
// lowered to shfl.sync.bfly by convert-gpu-to-nvvm), halving the distance
// each step. The matrix multiply-accumulate is mma.sync m16n8k16 (sm_80+)
// on f16 / bf16 with f32 accumulators: lane = 4 * g + c holds rows g and
// g + 8 of A, column g of B, and k values {2c, 2c + 1, 2c + 8, 2c + 9}.
// Copies to shared memory are cp.async (nvgpu.device_async_copy), in
// commit groups.
//
// The group MMA is sm_90a's wgmma.mma_async m64nNk16 (a warpgroup of 4
// warps, f32 accumulators), both operands read from shared memory through
// matrix descriptors, K-major with the 128-byte swizzle: in each 1024-byte
// block of 8 rows of 128 bytes, row r's 16-byte chunk c lies at chunk
// c ^ (r % 8). A k step of 16 elements advances the descriptor's start by
// 32 bytes inside the swizzled row. Warp w of the warpgroup holds rows
// 16w..16w+15 of D; lane 4g + c holds, for each 8 columns i, the elements
// (16w + g, 8i + 2c + {0, 1}) and (16w + g + 8, 8i + 2c + {0, 1}).
//
//===----------------------------------------------------------------------===//

#include "../GpuPrimitives.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
class NVVMPrimitives : public GpuPrimitives {
public:
  using GpuPrimitives::GpuPrimitives;

  Value subgroupReduce(ImplicitLocOpBuilder &b, Value value, ReduceKind kind,
                       int64_t clusterSize) const override {
    for (int64_t offset = clusterSize / 2; offset > 0; offset /= 2)
      value = combine(b, kind, value, shuffleXor(b, value, offset));
    return value;
  }

  /// bar.warp.sync with every lane: __syncwarp().
  void subgroupBarrier(ImplicitLocOpBuilder &b) const override {
    Value all = arith::ConstantIntOp::create(b, b.getI32Type(), -1);
    NVVM::SyncWarpOp::create(b, all);
  }

  std::optional<MmaLayout> getMmaLayout(Type element) const override {
    decode::MmaShapeAttr shape = findMmaShape(element, 16, 8, 16);
    if (!shape || subgroupSize() != 32)
      return std::nullopt;
    return MmaLayout{shape, /*kPerLane=*/4, /*aRowsPerLane=*/2,
                     /*accPerLane=*/4};
  }

  Value getMmaARow(ImplicitLocOpBuilder &b, const MmaLayout &, Value lane,
                   int64_t j) const override {
    Value g = group(b, lane);
    return arith::AddIOp::create(b, g, index(b, 8 * j));
  }
  Value getMmaBColumn(ImplicitLocOpBuilder &b, const MmaLayout &,
                      Value lane) const override {
    return group(b, lane);
  }
  Value getMmaKGroup(ImplicitLocOpBuilder &b, const MmaLayout &,
                     Value lane) const override {
    return arith::RemUIOp::create(b, lane, index(b, 4));
  }
  std::pair<Value, Value> getMmaAccumulator(ImplicitLocOpBuilder &b,
                                            const MmaLayout &, Value lane,
                                            Value j) const override {
    // Accumulators (c0, c1, c2, c3) are rows (g, g, g + 8, g + 8), columns
    // (2c, 2c + 1, 2c, 2c + 1).
    // One op-creating call per argument list (scripts/check-determinism.sh).
    Value half = arith::DivUIOp::create(b, j, index(b, 2));
    Value rowHalf = arith::MulIOp::create(b, half, index(b, 8));
    Value g = group(b, lane);
    Value row = arith::AddIOp::create(b, g, rowHalf);
    Value c = arith::RemUIOp::create(b, lane, index(b, 4));
    Value pair = arith::MulIOp::create(b, c, index(b, 2));
    Value column = arith::AddIOp::create(
        b, pair, arith::RemUIOp::create(b, j, index(b, 2)));
    return {row, column};
  }

  /// Slot s of A row r (row g + 8r, k = 2c + s % 2 + 8 (s / 2)) is
  /// accumulator 2r + s % 2 (row g + 8r, column 2c + s % 2) of tile s / 2;
  /// the four lanes of a group g share its rows.
  std::optional<AccumulatorOperandMap>
  getAccumulatorAsA(const MmaLayout &layout) const override {
    AccumulatorOperandMap map;
    for (int64_t r = 0; r < layout.aRowsPerLane; ++r)
      for (int64_t s = 0; s < layout.kPerLane; ++s)
        map.slots.push_back({s / 2, 2 * r + s % 2});
    map.rowLanes = 4;
    return map;
  }

  /// Accumulator j is column 2c + j % 2 (getMmaAccumulator); the eight
  /// lanes of a c (lane % 4) share its two columns.
  std::optional<AccumulatorColumns>
  getAccumulatorColumns(const MmaLayout &layout) const override {
    AccumulatorColumns columns;
    for (int64_t j = 0; j < layout.accPerLane; ++j)
      columns.columnOf.push_back(j % 2);
    columns.columns = 2;
    columns.laneMasks = {4, 8, 16};
    return columns;
  }

  /// ldmatrix .x4 (nvgpu.ldmatrix): four 8 x 8 matrices of 16-bit
  /// elements, lanes 8i to 8i + 7 naming the eight 16-byte rows of matrix
  /// i, which lane 4g + c receives as elements (g, 2c) and (g, 2c + 1) in
  /// its register i (with .trans, of the transposed matrix). Matrix i is
  /// the A register i of mma.sync: A rows 8 (i % 2) up, k 8 (i / 2) up.
  bool loadsAFragments(const MmaLayout &layout) const override {
    return layout.m() == 16 && layout.k() == 16 && layout.kPerLane == 4 &&
           layout.shape.getA().getIntOrFloatBitWidth() == 16;
  }
  int64_t aFragmentPieceElements(const MmaLayout &) const override { return 8; }
  int64_t aFragmentSlotRun(const MmaLayout &) const override { return 2; }
  /// A's register i holds k = 2c + 8 (i / 2) + {0, 1} (mma's slot pairs
  /// s0 s1 and s2 s3): slot s is k = 2c + s % 2 + 8 (s / 2).
  Value getMmaSlotK(ImplicitLocOpBuilder &b, const MmaLayout &, Value lane,
                    int64_t s) const override {
    Value c = arith::RemUIOp::create(b, lane, index(b, 4));
    Value pair = arith::MulIOp::create(b, c, index(b, 2));
    return arith::AddIOp::create(b, pair, index(b, s % 2 + 8 * (s / 2)));
  }
  /// Lane 8i + r names row r of matrix i: A row 8 (i % 2) + r from k
  /// 8 (i / 2), or, transposed, k row 8 (i / 2) + r from A row 8 (i % 2).
  std::pair<Value, Value> getAFragmentPiece(ImplicitLocOpBuilder &b,
                                            const MmaLayout &, Value lane,
                                            bool transposed) const override {
    Value matrix = arith::DivUIOp::create(b, lane, index(b, 8));
    Value r = arith::RemUIOp::create(b, lane, index(b, 8));
    Value rowHalf = arith::RemUIOp::create(b, matrix, index(b, 2));
    Value rowOffset = arith::MulIOp::create(b, rowHalf, index(b, 8));
    Value kHalf = arith::DivUIOp::create(b, matrix, index(b, 2));
    Value kOffset = arith::MulIOp::create(b, kHalf, index(b, 8));
    if (transposed)
      return {arith::AddIOp::create(b, r, kOffset), rowOffset};
    return {arith::AddIOp::create(b, r, rowOffset), kOffset};
  }
  /// A row g takes registers 0 and 2, row g + 8 registers 1 and 3.
  SmallVector<Value> loadAFragment(ImplicitLocOpBuilder &b,
                                   const MmaLayout &layout, Value memref,
                                   ValueRange indices,
                                   bool transposed) const override {
    Type element = cast<MemRefType>(memref.getType()).getElementType();
    auto type = VectorType::get({4, 2}, element);
    Value matrices = nvgpu::LdMatrixOp::create(b, type, memref, indices,
                                               transposed, /*numTiles=*/4);
    auto rowType = VectorType::get({layout.kPerLane}, element);
    SmallVector<Value> rows;
    for (int64_t r = 0; r < 2; ++r) {
      Value low = vector::ExtractOp::create(b, matrices, ArrayRef<int64_t>{r});
      Value high =
          vector::ExtractOp::create(b, matrices, ArrayRef<int64_t>{r + 2});
      rows.push_back(vector::ShuffleOp::create(b, rowType, low, high,
                                               ArrayRef<int64_t>{0, 1, 2, 3}));
    }
    return rows;
  }

  /// Slots (s0, s1, s2, s3) of a lane are k = (2c, 2c + 1, 2c + 8, 2c + 9):
  /// A's registers are {row g: s0 s1}, {row g + 8: s0 s1}, {row g: s2 s3},
  /// {row g + 8: s2 s3}; B's are {s0 s1}, {s2 s3}.
  Value mma(ImplicitLocOpBuilder &b, const MmaLayout &layout,
            ArrayRef<Value> aRows, Value bColumn, Value acc) const override {
    Type element = layout.shape.getA();
    auto pair = [&](Value vector, int64_t first) -> Value {
      Value two = vector::ExtractStridedSliceOp::create(
          b, vector, ArrayRef<int64_t>{first}, ArrayRef<int64_t>{2},
          ArrayRef<int64_t>{1});
      if (element.isF16())
        return two;
      Value word = vector::BitCastOp::create(
          b, VectorType::get({1}, b.getI32Type()), two);
      return vector::ExtractOp::create(b, word, ArrayRef<int64_t>{0});
    };
    SmallVector<Value> a = {pair(aRows[0], 0), pair(aRows[1], 0),
                            pair(aRows[0], 2), pair(aRows[1], 2)};
    SmallVector<Value> bRegs = {pair(bColumn, 0), pair(bColumn, 2)};
    SmallVector<Value> c;
    for (int64_t j = 0; j < 4; ++j)
      c.push_back(vector::ExtractOp::create(b, acc, ArrayRef<int64_t>{j}));
    Type f32 = b.getF32Type();
    auto resultType = LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(4, f32));
    auto ptxType = element.isF16() ? NVVM::MMATypes::f16 : NVVM::MMATypes::bf16;
    Value d = NVVM::MmaOp::create(
        b, resultType, a, bRegs, c, ArrayRef<int64_t>{16, 8, 16},
        /*b1Op=*/std::nullopt, /*intOverflow=*/std::nullopt,
        std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    Value result = arith::ConstantOp::create(b, acc.getType(),
                                             b.getZeroAttr(acc.getType()));
    for (int64_t j = 0; j < 4; ++j) {
      Value element = LLVM::ExtractValueOp::create(b, d, j);
      result = vector::InsertOp::create(b, element, result, j);
    }
    return result;
  }

  std::optional<GroupMmaLayout> getGroupMmaLayout(Type element,
                                                  int64_t n) const override {
    // wgmma m64nNk16 with N a multiple of 8 (B tiles of whole 8-row
    // swizzle blocks), filled by 16-byte copies.
    decode::GroupMmaShapeAttr shape = findGroupMmaShape(element, n);
    if (!shape || subgroupSize() != 32 || shape.getSubgroups() != 4 ||
        shape.getM() != 64 || shape.getK() != 16 ||
        shape.getRowBytes() != kSwizzleBytes ||
        element.getIntOrFloatBitWidth() != 16 || n % kSwizzleRows != 0 ||
        vectorBytes() != 16)
      return std::nullopt;
    return GroupMmaLayout{shape, n, /*accPerThread=*/n / 2,
                          /*tileAlignment=*/kSwizzleRows * kSwizzleBytes};
  }

  /// Row r's chunk c at r * 128 + (c ^ (r % 8)) * 16.
  Value getGroupMmaChunkOffset(ImplicitLocOpBuilder &b, const GroupMmaLayout &,
                               Value row, Value chunk) const override {
    Value phase = arith::RemUIOp::create(b, row, index(b, kSwizzleRows));
    Value swizzled = arith::XOrIOp::create(b, chunk, phase);
    Value chunkBytes = arith::MulIOp::create(b, swizzled, index(b, 16));
    Value rowBytes = arith::MulIOp::create(b, row, index(b, kSwizzleBytes));
    return arith::AddIOp::create(b, rowBytes, chunkBytes);
  }

  Value groupMmaExtract(ImplicitLocOpBuilder &b, const GroupMmaLayout &,
                        Value acc, int64_t j) const override {
    return LLVM::ExtractValueOp::create(b, acc, j);
  }
  std::pair<Value, Value> getGroupMmaAccumulator(ImplicitLocOpBuilder &b,
                                                 const GroupMmaLayout &,
                                                 Value thread,
                                                 int64_t j) const override {
    // One op-creating call per argument list (scripts/check-determinism.sh).
    Value warp = arith::DivUIOp::create(b, thread, index(b, subgroupSize()));
    Value warpRow = arith::MulIOp::create(b, warp, index(b, 16));
    Value lane = arith::RemUIOp::create(b, thread, index(b, subgroupSize()));
    Value g = group(b, lane);
    Value rowInWarp = arith::AddIOp::create(b, g, index(b, 8 * ((j / 2) % 2)));
    Value row = arith::AddIOp::create(b, warpRow, rowInWarp);
    Value c = arith::RemUIOp::create(b, lane, index(b, 4));
    Value pair = arith::MulIOp::create(b, c, index(b, 2));
    Value column =
        arith::AddIOp::create(b, pair, index(b, 8 * (j / 4) + j % 2));
    return {row, column};
  }

  /// cp.async and st.shared write through the generic proxy, wgmma reads
  /// through the async proxy.
  void fenceSharedForGroupMma(ImplicitLocOpBuilder &b) const override {
    MLIRContext *ctx = b.getContext();
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKindAttr::get(ctx, NVVM::ProxyKind::async_shared),
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }
  /// griddepcontrol.wait: it returns at once when the kernel was launched
  /// without a programmatic dependency, so the code is right however the
  /// runtime launches it.
  void beginKernel(ImplicitLocOpBuilder &b) const override {
    if (target().hasDependentLaunch())
      NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
  }
  /// griddepcontrol.launch_dependents. A kernel that never calls it lets the
  /// next one launch as its blocks exit (the implicit trigger). Signalled at
  /// every kernel's start, it placed the next kernel's blocks on the SMs
  /// while this one still ran, unevenly, and the GEMMs and the INT4
  /// attention that came next ran up to 35 % slower (H100, docs/perf.md);
  /// the generators call it near a block's end, and only where a linear
  /// follows (KernelContext::releasesDependents) or, in flash_spmm and
  /// group_spmm, their own split-K epilogue.
  void releaseDependents(ImplicitLocOpBuilder &b) const override {
    if (target().hasDependentLaunch())
      NVVM::GriddepcontrolOp::create(
          b, NVVM::GridDepActionKind::launch_dependents);
  }
  /// __cluster_dims__: the PTX kernel's .reqnctapercluster, so that every
  /// launch (cuLaunchKernel included) forms the clusters.
  void setClusterShape(mlir::gpu::GPUFuncOp func,
                       std::array<int64_t, 3> shape) const override {
    func->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                  DenseI32ArrayAttr::get(func.getContext(),
                                         {static_cast<int32_t>(shape[0]),
                                          static_cast<int32_t>(shape[1]),
                                          static_cast<int32_t>(shape[2])}));
  }
  /// barrier.cluster.arrive (release) and barrier.cluster.wait (acquire),
  /// every thread of the cluster's workgroups taking part.
  void clusterBarrier(ImplicitLocOpBuilder &b) const override {
    UnitAttr aligned = b.getUnitAttr();
    NVVM::ClusterArriveOp::create(b, aligned);
    NVVM::ClusterWaitOp::create(b, aligned);
  }
  /// barrier.cluster.arrive.relaxed: the default arrive releases every
  /// memory access before it at cluster scope, which ptxas makes a
  /// GPU-scope membar that waits for the thread's global stores to land.
  void clusterExecutionBarrier(ImplicitLocOpBuilder &b) const override {
    UnitAttr aligned = b.getUnitAttr();
    NVVM::ClusterArriveRelaxedOp::create(b, aligned);
    NVVM::ClusterWaitOp::create(b, aligned);
  }
  void storeShared(ImplicitLocOpBuilder &b, Value address,
                   Value value) const override {
    LLVM::StoreOp::create(b, value, sharedPointer(b, address));
  }
  /// mapa.shared::cluster, then ld.shared::cluster.
  Value loadClusterShared(ImplicitLocOpBuilder &b, Value address, Value rank,
                          Type type) const override {
    auto clusterType = LLVM::LLVMPointerType::get(
        b.getContext(),
        static_cast<unsigned>(NVVM::NVVMMemorySpace::SharedCluster));
    Value remote =
        NVVM::MapaOp::create(b, clusterType, sharedPointer(b, address), rank);
    return LLVM::LoadOp::create(b, type, remote);
  }
  void beginGroupMmas(ImplicitLocOpBuilder &b) const override {
    NVVM::WgmmaFenceAlignedOp::create(b);
  }
  /// The tile's wgmma descriptor (descriptor()).
  Value groupMmaTile(ImplicitLocOpBuilder &b, const GroupMmaLayout &,
                     Value tile) const override {
    return descriptor(b, tile);
  }
  Value groupMma(ImplicitLocOpBuilder &b, const GroupMmaLayout &layout,
                 Value aTile, Value bTile, int64_t kStep,
                 Value acc) const override {
    Type element = layout.shape.getA();
    int64_t stepBytes = layout.k() * element.getIntOrFloatBitWidth() / 8;
    Value descriptorA = advance(b, aTile, kStep * stepBytes);
    Value descriptorB = advance(b, bTile, kStep * stepBytes);
    auto type =
        element.isF16() ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16;
    MLIRContext *ctx = b.getContext();
    // Without an accumulator: scale-d 0, so D = A * B whatever the (poison)
    // input registers hold.
    NVVM::WGMMAScaleOut scaleOut =
        acc ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero;
    if (!acc)
      acc = LLVM::PoisonOp::create(b, accumulatorType(b, layout));
    return NVVM::WgmmaMmaAsyncOp::create(
        b, accumulatorType(b, layout), acc, descriptorA, descriptorB,
        NVVM::MMAShapeAttr::get(ctx, layout.m(), layout.n, layout.k()), type,
        type, NVVM::WGMMATypes::f32, scaleOut, NVVM::WGMMAScaleIn::one,
        NVVM::WGMMAScaleIn::one,
        // Both K-major: A row-major (m x k), B column-major (k x n).
        NVVM::MMALayout::row, NVVM::MMALayout::col,
        /*satfinite=*/NVVM::MMAIntOverflowAttr());
  }
  void commitGroupMmas(ImplicitLocOpBuilder &b) const override {
    NVVM::WgmmaGroupSyncAlignedOp::create(b);
  }
  void waitGroupMmas(ImplicitLocOpBuilder &b, int64_t pending) const override {
    NVVM::WgmmaWaitGroupSyncOp::create(b, pending);
  }

  /// ex2.approx.ftz.f32: one MUFU.EX2, where ex2.approx.f32 (math.exp2's
  /// lowering) adds a scaling of subnormal results around it (a compare and
  /// two predicated multiplies).
  Value exp2(ImplicitLocOpBuilder &b, Value x) const override {
    return LLVM::CallIntrinsicOp::create(
               b, b.getF32Type(),
               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"), ValueRange{x})
        .getResult(0);
  }

  /// One lop3 per element: ptxas does not fuse an and and an or of two
  /// immediates (a LOP3 takes one), so the pair would stay two instructions.
  Value maskOr(ImplicitLocOpBuilder &b, Value value, uint32_t mask,
               uint32_t bits) const override {
    // lop3's lookup table of (a & b) | c: 0xF0 & 0xCC | 0xAA.
    std::string code =
        llvm::formatv("lop3.b32 $0, $1, {0}, {1}, 0xEA;", mask, bits).str();
    Type i32 = b.getI32Type();
    auto one = [&](Value word) -> Value {
      return LLVM::InlineAsmOp::create(b, i32, ValueRange{word}, code, "=r,r",
                                       /*has_side_effects=*/false,
                                       /*is_align_stack=*/false,
                                       LLVM::tailcallkind::TailCallKind::None,
                                       LLVM::AsmDialectAttr(), ArrayAttr())
          .getResult(0);
    };
    return perElement(b, value, one);
  }

  /// `.minnctapersm` (nvvm.minctasm): ptxas bounds the registers per thread
  /// so that `workgroups` blocks fit an SM (beside `.maxntid`, which
  /// gpu.known_block_size gives).
  void setMinWorkgroupsPerUnit(mlir::gpu::GPUFuncOp func, int64_t,
                               int64_t workgroups) const override {
    func->setAttr(
        NVVM::NVVMDialect::getMinctasmAttrName(),
        IntegerAttr::get(IntegerType::get(func.getContext(), 32), workgroups));
  }

  /// 64 Ki 32-bit registers per thread block (sm_80 and later).
  int64_t registersPerWorkgroup() const override { return 64 * 1024; }

  /// A static __shared__ allocation is limited to 48 KiB (more takes a
  /// dynamic allocation and an opt-in per kernel).
  int64_t staticSharedBytes() const override {
    return std::min<int64_t>(target().getSharedMemory(), 48 * 1024);
  }

  /// cp.async (nvgpu.device_async_copy), bypassing L1 for 16-byte copies;
  /// an invalid copy reads 0 source elements, which zero-fills.
  void copyToShared(ImplicitLocOpBuilder &b, Value dst, ValueRange dstIndices,
                    Value src, ValueRange srcIndices,
                    Value valid) const override {
    Type element = cast<MemRefType>(src.getType()).getElementType();
    int64_t lanes = vectorBytes() * 8 / element.getIntOrFloatBitWidth();
    Value all = index(b, lanes);
    Value none = index(b, 0);
    Value srcElements = arith::SelectOp::create(b, valid, all, none);
    UnitAttr bypassL1 = vectorBytes() == 16 ? b.getUnitAttr() : UnitAttr();
    nvgpu::DeviceAsyncCopyOp::create(
        b, nvgpu::DeviceAsyncTokenType::get(b.getContext()), dst, dstIndices,
        src, srcIndices, b.getIndexAttr(lanes), srcElements, bypassL1);
  }
  /// cp.async.
  bool copiesAsynchronously() const override { return true; }
  void commitCopies(ImplicitLocOpBuilder &b) const override {
    NVVM::CpAsyncCommitGroupOp::create(b);
  }
  void waitCopies(ImplicitLocOpBuilder &b, int64_t pending) const override {
    NVVM::CpAsyncWaitGroupOp::create(b, pending);
  }

private:
  /// The 128-byte swizzle: rows of 128 bytes in blocks of 8 rows.
  static constexpr int64_t kSwizzleBytes = 128;
  static constexpr int64_t kSwizzleRows = 8;

  static Type accumulatorType(ImplicitLocOpBuilder &b,
                              const GroupMmaLayout &layout) {
    return LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(layout.accPerThread, b.getF32Type()));
  }

  /// Byte `address` (i64) of shared memory as a shared-space pointer.
  static Value sharedPointer(ImplicitLocOpBuilder &b, Value address) {
    auto type = LLVM::LLVMPointerType::get(
        b.getContext(), static_cast<unsigned>(NVVM::NVVMMemorySpace::Shared));
    return LLVM::IntToPtrOp::create(b, type, address);
  }
  /// The wgmma matrix descriptor of a K-major 128-byte-swizzled tile at
  /// shared byte address `tile`: the start address (bits 0-13, in 16-byte
  /// units), the leading-dimension offset (bits 16-29; unused by swizzled
  /// K-major tiles, 1 by convention), the stride between blocks of 8 rows
  /// (bits 32-45, 16-byte units) and the swizzle mode (bits 62-63, 1 = 128
  /// bytes).
  static Value descriptor(ImplicitLocOpBuilder &b, Value tile) {
    Type i64 = b.getI64Type();
    auto constant = [&](int64_t value) {
      return arith::ConstantIntOp::create(b, i64, value);
    };
    Value low = arith::AndIOp::create(b, tile, constant(0x3FFFF));
    Value start = arith::ShRUIOp::create(b, low, constant(4));
    int64_t fixed = (int64_t(1) << 16) |
                    (int64_t(kSwizzleRows * kSwizzleBytes / 16) << 32) |
                    (int64_t(1) << 62);
    return arith::OrIOp::create(b, start, constant(fixed));
  }
  /// The descriptor of the tile `offset` bytes past `descriptor`'s. A
  /// shared address is below 2^18 bytes, so the start of tile + offset is
  /// the start of the tile + offset / 16 without a carry out of its field:
  /// the k steps of a tile add a constant to one descriptor, fewer
  /// instructions in the k loop.
  static Value advance(ImplicitLocOpBuilder &b, Value descriptor,
                       int64_t offset) {
    if (offset == 0)
      return descriptor;
    assert(offset % 16 == 0 && "a descriptor starts at a 16-byte unit");
    Value units = arith::ConstantIntOp::create(b, b.getI64Type(), offset / 16);
    return arith::AddIOp::create(b, descriptor, units);
  }

  static Value index(ImplicitLocOpBuilder &b, int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
  /// g = lane / 4.
  static Value group(ImplicitLocOpBuilder &b, Value lane) {
    return arith::DivUIOp::create(b, lane, index(b, 4));
  }
};
} // namespace

std::unique_ptr<GpuPrimitives>
fdc::gpu::createNVVMPrimitives(decode::GpuTargetAttr target) {
  return std::make_unique<NVVMPrimitives>(target);
}
