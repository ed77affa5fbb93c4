//===- GpuPrimitives.h - target-neutral GPU building blocks -----*- C++ -*-===//
//
// What a kernel generator may ask of the GPU beyond plain arithmetic: the
// subgroup (warp / wavefront) size and cross-lane operations. Generators call
// these and never name a vendor; each vendor implements them with its own
// MLIR dialects (Primitives/NVVM, Primitives/ROCDL), the way Triton's
// TargetInfoBase separates the NVIDIA and AMD back ends. The hardware facts
// come from the module's #decode.gpu_target.
//
//===----------------------------------------------------------------------===//

#ifndef FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H
#define FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H

#include "fdc/Dialect/Decode/IR/Decode.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <array>
#include <memory>
#include <optional>

namespace fdc::gpu {

enum class ReduceKind { Sum, Max };

/// How a subgroup's matrix multiply-accumulate D = A * B + C spreads its
/// operands over the lanes. A is `m x k` (the wide operand: weight rows), B
/// is `k x n` (the narrow one: batch rows), C and D are f32. Each lane holds
/// `kPerLane` k values of each of its `aRowsPerLane` rows of A and of its
/// one column of B: the same k values for A and B (true of mma.sync, MFMA
/// and WMMA), so a generator may map physical k indices to a lane's k slots
/// in any order, as long as A and B use the same map.
struct MmaLayout {
  decode::MmaShapeAttr shape;
  int64_t kPerLane;
  int64_t aRowsPerLane;
  int64_t accPerLane;

  int64_t m() const { return shape.getM(); }
  int64_t n() const { return shape.getN(); }
  int64_t k() const { return shape.getK(); }
  /// Lanes holding different k values of the same row (k / kPerLane).
  int64_t kGroups() const { return k() / kPerLane; }
  /// Whether `other` (an MMA on another operand type) spreads its operands
  /// and accumulators over the lanes as this one does.
  bool sameLanes(const MmaLayout &other) const {
    return m() == other.m() && n() == other.n() && k() == other.k() &&
           kPerLane == other.kPerLane && aRowsPerLane == other.aRowsPerLane &&
           accPerLane == other.accPerLane;
  }
};

/// Where an MMA's accumulators are, lane for lane, the A operand of a next
/// MMA (FlashAttention-2 feeds softmax(S) to P V this way, without a trip
/// through shared memory): lay k / n accumulator tiles (m x n each) side by
/// side along k; then a lane's A row `r`, k slot `s` is that lane's
/// accumulator `accumulator` of tile `tile`, whose D row is A row r and
/// whose D column plus tile * n is slot s's k. The lanes whose
/// accumulators share D rows form clusters of `rowLanes` consecutive lanes.
struct AccumulatorOperandMap {
  struct Slot {
    int64_t tile;
    int64_t accumulator;
  };
  /// Indexed by r * kPerLane + s.
  llvm::SmallVector<Slot> slots;
  int64_t rowLanes;

  Slot at(const MmaLayout &layout, int64_t r, int64_t s) const {
    return slots[r * layout.kPerLane + s];
  }
};

/// Which D columns an MMA's accumulators hold, lane for lane: a lane's
/// accumulator j holds its column `columnOf[j]` (< columns, the same for
/// every lane), and the lanes that hold the same D columns are those whose
/// indices differ in the bits of `laneMasks` alone (a butterfly over those
/// offsets reduces a column).
struct AccumulatorColumns {
  llvm::SmallVector<int64_t> columnOf;
  int64_t columns;
  llvm::SmallVector<int64_t> laneMasks;
};

/// A group MMA (#decode.group_mma) at one width n: the subgroups of a group
/// (`subgroups()` consecutive ones, the group starting at a multiple of
/// that) issue D (m x n, f32, spread over their registers) += A (m x k) *
/// B (k x n) together, both operands K-major tiles that the instruction
/// reads from shared memory. A tile's row holds rowBytes() of K in 16-byte
/// chunks placed by getGroupMmaChunkOffset; a tile starts at a multiple of
/// `tileAlignment` bytes, and its rows follow each other every rowBytes().
/// The placement repeats every `tileAlignment` bytes: chunk c of row r +
/// tileAlignment / rowBytes() lies tileAlignment bytes after chunk c of row
/// r.
struct GroupMmaLayout {
  decode::GroupMmaShapeAttr shape;
  int64_t n;
  /// The f32 accumulators each thread of the group holds (m * n / threads).
  int64_t accPerThread;
  int64_t tileAlignment;

  int64_t m() const { return shape.getM(); }
  int64_t k() const { return shape.getK(); }
  int64_t subgroups() const { return shape.getSubgroups(); }
  int64_t rowBytes() const { return shape.getRowBytes(); }
};

class GpuPrimitives {
public:
  explicit GpuPrimitives(decode::GpuTargetAttr target) : gpuTarget(target) {}
  virtual ~GpuPrimitives();

  /// The implementation for `target`'s vendor.
  static std::unique_ptr<GpuPrimitives> create(decode::GpuTargetAttr target);

  decode::GpuTargetAttr target() const { return gpuTarget; }
  /// Lanes of a subgroup (32 or 64).
  int64_t subgroupSize() const { return gpuTarget.getSubgroup(); }
  /// The most subgroups one workgroup holds.
  int64_t maxSubgroups() const {
    return gpuTarget.getMaxWorkgroupSize() / subgroupSize();
  }
  /// Compute units (SMs / CUs) a grid should fill.
  int64_t units() const { return gpuTarget.getUnits(); }
  /// The widest global load or store, in bytes.
  int64_t vectorBytes() const { return gpuTarget.getVectorBytes(); }
  /// The banks of shared memory one subgroup access meets, and the bytes of
  /// each: byte a is in bank (a / sharedMemoryBankBytes()) mod
  /// sharedMemoryBanks(); lanes reaching different addresses of one bank
  /// are served one after another.
  int64_t sharedMemoryBanks() const { return gpuTarget.getSharedMemoryBanks(); }
  int64_t sharedMemoryBankBytes() const {
    return gpuTarget.getSharedMemoryBankBytes();
  }

  /// The f32 `value` of lane `lane ^ offset` (0 < offset < subgroupSize()):
  /// a butterfly exchange, every lane active.
  virtual mlir::Value shuffleXor(mlir::ImplicitLocOpBuilder &b,
                                 mlir::Value value, int64_t offset) const;

  /// `kind` of the f32 `value` over each cluster of `clusterSize`
  /// consecutive lanes (a power of two dividing the subgroup); every lane
  /// gets its cluster's result. Every lane of the subgroup must be active.
  virtual mlir::Value subgroupReduce(mlir::ImplicitLocOpBuilder &b,
                                     mlir::Value value, ReduceKind kind,
                                     int64_t clusterSize) const = 0;
  mlir::Value subgroupReduce(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                             ReduceKind kind) const {
    return subgroupReduce(b, value, kind, subgroupSize());
  }

  /// What every kernel does first (a kernel built with
  /// KernelContext::Workgroup::waitsInBody: once it has started reading the
  /// model's weights, which no kernel writes). With the target's
  /// `dependent_launch`: wait until the kernel before it on the stream has
  /// ended and its writes are visible (before any other access to global
  /// memory, so that it neither reads what that kernel writes nor
  /// overwrites what it reads). Nothing by default.
  virtual void beginKernel(mlir::ImplicitLocOpBuilder &b) const {}
  /// With the target's `dependent_launch`: lets the kernel after this one on
  /// the stream launch once every workgroup of this one has called it (or
  /// ended), so that its workgroups are placed on the units as this one's
  /// leave and start what they may do before their beginKernel. A generator
  /// calls it where the rest of a workgroup's work is short (the group GEMM
  /// once it has issued its last weight copies, rms_norm at its start).
  /// Only performance depends on where: every kernel waits before it reads
  /// what another writes. Nothing by default.
  virtual void releaseDependents(mlir::ImplicitLocOpBuilder &b) const {}

  /// Clusters of workgroups (target().canCluster(n)): the workgroups of a
  /// cluster run at once and read each other's shared memory. The
  /// generators use them only where the target has them; a target without
  /// them reports a fatal error.
  ///
  /// Makes every launch of `func` group its workgroups into clusters of
  /// `shape` (the grid a multiple of it in each dimension).
  virtual void setClusterShape(mlir::gpu::GPUFuncOp func,
                               std::array<int64_t, 3> shape) const;
  /// A barrier of every thread of the cluster: shared-memory stores before
  /// it are visible to every workgroup of the cluster after it.
  virtual void clusterBarrier(mlir::ImplicitLocOpBuilder &b) const;
  /// A barrier of every thread of the cluster that orders no memory
  /// accesses: no thread passes it before every thread of the cluster has
  /// reached it. Cheaper than clusterBarrier where a workgroup only waits
  /// until the others are done with its shared memory (their loads of it
  /// complete before they reach the barrier: they have used the values).
  virtual void clusterExecutionBarrier(mlir::ImplicitLocOpBuilder &b) const;
  /// Stores `value` at byte `address` (i64) of this workgroup's shared
  /// memory.
  virtual void storeShared(mlir::ImplicitLocOpBuilder &b, mlir::Value address,
                           mlir::Value value) const;
  /// The `type` value at byte `address` (i64) of the shared memory of the
  /// cluster's workgroup `rank` (i32, its rank in the cluster).
  virtual mlir::Value loadClusterShared(mlir::ImplicitLocOpBuilder &b,
                                        mlir::Value address, mlir::Value rank,
                                        mlir::Type type) const;

  /// A workgroup barrier that also orders shared-memory accesses.
  void barrier(mlir::ImplicitLocOpBuilder &b) const;
  /// A barrier of the lanes of one subgroup (all active) that orders their
  /// shared-memory accesses: a lane reads what another lane of its subgroup
  /// stored before it. Subgroups of a block may pass it different numbers of
  /// times.
  virtual void subgroupBarrier(mlir::ImplicitLocOpBuilder &b) const = 0;

  /// 2^x of an f32 `x`, to a few ulp (the softmax's exponential); results
  /// below f32's normal range may flush to zero. The default is math.exp2.
  virtual mlir::Value exp2(mlir::ImplicitLocOpBuilder &b, mlir::Value x) const;

  /// (value & mask) | bits, per element of an i32 or vector of i32 `value`,
  /// for constants `mask` and `bits`. The default is an and and an or; a
  /// target with one instruction for both overrides it where its backend
  /// does not fuse the pair on two constants (NVIDIA's lop3, AMD's
  /// v_and_or_b32).
  virtual mlir::Value maskOr(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
                             uint32_t mask, uint32_t bits) const;

  /// `scalar` applied to each element of `value` (a scalar or a vector), for
  /// overrides whose instruction takes scalars.
  static mlir::Value
  perElement(mlir::ImplicitLocOpBuilder &b, mlir::Value value,
             llvm::function_ref<mlir::Value(mlir::Value)> scalar);

  /// Asks the target's compiler to fit `workgroups` workgroups of `threads`
  /// threads of kernel `func` on one compute unit at once (so it bounds the
  /// registers a thread takes, spilling if it must). Nothing by default.
  virtual void setMinWorkgroupsPerUnit(mlir::gpu::GPUFuncOp func,
                                       int64_t threads,
                                       int64_t workgroups) const {}

  /// The 32-bit registers one workgroup's threads share, or 0 where a
  /// generator cannot bound its threads' registers by it.
  virtual int64_t registersPerWorkgroup() const { return 0; }

  /// The shared memory (bytes) a kernel's static workgroup allocation may
  /// take: the target's, within what a static allocation can address.
  virtual int64_t staticSharedBytes() const {
    return gpuTarget.getSharedMemory();
  }

  /// Copies vectorBytes() bytes of global `src` at `srcIndices` to shared
  /// `dst` at `dstIndices` (both vectorBytes()-aligned), or zeros when
  /// `valid` (an i1) is false (an implementation may still read `src`, so
  /// its indices must be in bounds; cp.async does not read it). The copy may be
  /// asynchronous: it is complete, for this thread, once waitCopies leaves
  /// fewer groups pending than were committed after it; other threads see it
  /// after a barrier that follows that wait. The default loads into registers
  /// and stores: every copy is complete at once and commitCopies / waitCopies
  /// do nothing.
  virtual void copyToShared(mlir::ImplicitLocOpBuilder &b, mlir::Value dst,
                            mlir::ValueRange dstIndices, mlir::Value src,
                            mlir::ValueRange srcIndices,
                            mlir::Value valid) const;
  /// Whether copyToShared's copies are asynchronous (in flight without
  /// holding registers until waitCopies), so that shared-memory stages can
  /// keep more bytes in flight than loads into registers. False by default.
  virtual bool copiesAsynchronously() const { return false; }
  /// Closes the group of copies issued since the last commit.
  virtual void commitCopies(mlir::ImplicitLocOpBuilder &b) const {}
  /// Waits until at most `pending` committed groups are still in flight.
  virtual void waitCopies(mlir::ImplicitLocOpBuilder &b,
                          int64_t pending) const {}

  /// The layout of the target's matrix multiply-accumulate on `element`
  /// (f16 / bf16) operands, if the target lists one
  /// (#decode.gpu_target's `mma`) that this vendor implements.
  virtual std::optional<MmaLayout> getMmaLayout(mlir::Type element) const {
    return std::nullopt;
  }
  /// For lane `lane` (an index): the row of A its slot row `j` holds, the
  /// column of B it holds, its k group (< kGroups()), and the (row, column)
  /// of D its accumulator `j` (an index < accPerLane) holds.
  virtual mlir::Value getMmaARow(mlir::ImplicitLocOpBuilder &b,
                                 const MmaLayout &layout, mlir::Value lane,
                                 int64_t j) const;
  virtual mlir::Value getMmaBColumn(mlir::ImplicitLocOpBuilder &b,
                                    const MmaLayout &layout,
                                    mlir::Value lane) const;
  virtual mlir::Value getMmaKGroup(mlir::ImplicitLocOpBuilder &b,
                                   const MmaLayout &layout,
                                   mlir::Value lane) const;
  virtual std::pair<mlir::Value, mlir::Value>
  getMmaAccumulator(mlir::ImplicitLocOpBuilder &b, const MmaLayout &layout,
                    mlir::Value lane, mlir::Value j) const;
  /// Fragment loads, where loadsAFragments(layout): the lanes of a subgroup
  /// load the A operand of one m x k tile from shared memory together, each
  /// lane naming one piece of the tile (aFragmentPieceElements() consecutive
  /// elements of a row as the tile lies in memory, getAFragmentPiece), which
  /// the target's instruction deals out to the lanes as the MMA takes them.
  /// A lane's k slots then hold the k indices getMmaSlotK names: B must be
  /// loaded in that order (MmaLayout lets any order that A and B share).
  virtual bool loadsAFragments(const MmaLayout &layout) const { return false; }
  /// The elements of the piece each lane names.
  virtual int64_t aFragmentPieceElements(const MmaLayout &layout) const;
  /// The length of the runs of consecutive k indices of a lane's slots.
  virtual int64_t aFragmentSlotRun(const MmaLayout &layout) const;
  /// The k index (< k) of k slot `s` of lane `lane` (an index) under
  /// fragment loads. The slots come in runs of aFragmentSlotRun()
  /// consecutive k indices.
  virtual mlir::Value getMmaSlotK(mlir::ImplicitLocOpBuilder &b,
                                  const MmaLayout &layout, mlir::Value lane,
                                  int64_t s) const;
  /// The piece of the tile lane `lane` names: the (row, first column) of the
  /// tile as it lies in memory, an A row and first k; or, `transposed` (the
  /// tile stored k-major, k x m), a k row and first A row.
  virtual std::pair<mlir::Value, mlir::Value>
  getAFragmentPiece(mlir::ImplicitLocOpBuilder &b, const MmaLayout &layout,
                    mlir::Value lane, bool transposed) const;
  /// The lane's A rows of the tile (aRowsPerLane vectors of kPerLane
  /// elements, mma's `aRows`), the lane's piece at `indices` of the
  /// shared-memory `memref` (its first element, aligned to the piece).
  virtual llvm::SmallVector<mlir::Value>
  loadAFragment(mlir::ImplicitLocOpBuilder &b, const MmaLayout &layout,
                mlir::Value memref, mlir::ValueRange indices,
                bool transposed) const;
  /// Where the accumulators of `layout` are the A operand of a next MMA of
  /// the same layout, if they are (see AccumulatorOperandMap).
  virtual std::optional<AccumulatorOperandMap>
  getAccumulatorAsA(const MmaLayout &layout) const {
    return std::nullopt;
  }
  /// Which D columns the accumulators of `layout` hold, lane for lane, if
  /// the target describes it (see AccumulatorColumns).
  virtual std::optional<AccumulatorColumns>
  getAccumulatorColumns(const MmaLayout &layout) const {
    return std::nullopt;
  }
  /// D = A * B + C for one subgroup: `aRows` holds the lane's aRowsPerLane
  /// vectors of kPerLane elements, `bColumn` one such vector, `acc` a vector
  /// of accPerLane f32; returns the new accumulators.
  virtual mlir::Value mma(mlir::ImplicitLocOpBuilder &b,
                          const MmaLayout &layout,
                          llvm::ArrayRef<mlir::Value> aRows,
                          mlir::Value bColumn, mlir::Value acc) const;

  /// The group MMA of the target on `element` (f16 / bf16) operands at
  /// width `n`, if the target lists one (#decode.gpu_target's `group_mma`)
  /// that this vendor implements and `n` is one of its widths.
  virtual std::optional<GroupMmaLayout> getGroupMmaLayout(mlir::Type element,
                                                          int64_t n) const {
    return std::nullopt;
  }
  /// The byte offset in a tile of 16-byte chunk `chunk` (< rowBytes() / 16)
  /// of row `row` (index values).
  virtual mlir::Value getGroupMmaChunkOffset(mlir::ImplicitLocOpBuilder &b,
                                             const GroupMmaLayout &layout,
                                             mlir::Value row,
                                             mlir::Value chunk) const;
  /// Element `j` (< accPerThread) of a thread's accumulators; and the (row,
  /// column) of D that element `j` of thread `thread` (an index in the
  /// group) holds.
  virtual mlir::Value groupMmaExtract(mlir::ImplicitLocOpBuilder &b,
                                      const GroupMmaLayout &layout,
                                      mlir::Value acc, int64_t j) const;
  virtual std::pair<mlir::Value, mlir::Value>
  getGroupMmaAccumulator(mlir::ImplicitLocOpBuilder &b,
                         const GroupMmaLayout &layout, mlir::Value thread,
                         int64_t j) const;
  /// Makes this thread's completed writes to shared memory (stores or
  /// copyToShared) visible to the group MMAs that follow a barrier after it.
  virtual void fenceSharedForGroupMma(mlir::ImplicitLocOpBuilder &b) const;
  /// Opens a batch of group MMAs: after it, the accumulators are the
  /// MMAs' until a wait completes the batch.
  virtual void beginGroupMmas(mlir::ImplicitLocOpBuilder &b) const;
  /// The group MMA operand of the tile at shared-memory byte address `tile`
  /// (i64, the layout's alignment), made once for all of its k steps.
  virtual mlir::Value groupMmaTile(mlir::ImplicitLocOpBuilder &b,
                                   const GroupMmaLayout &layout,
                                   mlir::Value tile) const;
  /// acc + A * B over k step `kStep` (< rowBytes() / (k * element bytes)) of
  /// the A and B tiles `aTile` and `bTile` (groupMmaTile's); A * B alone
  /// where `acc` is null (no instruction initialises the accumulators, which
  /// an MMA still in flight across a loop's iterations needs); asynchronous
  /// until committed and waited for.
  virtual mlir::Value groupMma(mlir::ImplicitLocOpBuilder &b,
                               const GroupMmaLayout &layout, mlir::Value aTile,
                               mlir::Value bTile, int64_t kStep,
                               mlir::Value acc) const;
  /// Closes the batch of group MMAs issued since the last commit, and waits
  /// until at most `pending` committed batches are in flight.
  virtual void commitGroupMmas(mlir::ImplicitLocOpBuilder &b) const;
  virtual void waitGroupMmas(mlir::ImplicitLocOpBuilder &b,
                             int64_t pending) const;

protected:
  /// The target's MMA shape for `element` with m x n x k, if listed.
  decode::MmaShapeAttr findMmaShape(mlir::Type element, int64_t m, int64_t n,
                                    int64_t k) const;
  /// The target's group MMA shape for `element` whose widths include `n`.
  decode::GroupMmaShapeAttr findGroupMmaShape(mlir::Type element,
                                              int64_t n) const;

private:
  decode::GpuTargetAttr gpuTarget;
};

/// The vendor implementations (Primitives/NVVM, Primitives/ROCDL).
std::unique_ptr<GpuPrimitives>
createNVVMPrimitives(decode::GpuTargetAttr target);
std::unique_ptr<GpuPrimitives>
createROCDLPrimitives(decode::GpuTargetAttr target);

/// The module's #decode.gpu_target, else the known-targets table's for the
/// comma-separated archs of `archs` (a pass option); errors name `pass`.
mlir::FailureOr<decode::GpuTargetAttr> resolveGpuTarget(mlir::ModuleOp module,
                                                        llvm::StringRef archs,
                                                        llvm::StringRef pass);

/// `kind` of two f32 values.
mlir::Value combine(mlir::ImplicitLocOpBuilder &b, ReduceKind kind,
                    mlir::Value x, mlir::Value y);

} // namespace fdc::gpu

#endif // FDC_LIB_CONVERSION_DECODETOGPU_PRIMITIVES_GPUPRIMITIVES_H
