//===- ROCDLPrimitives.cpp - GPU building blocks for AMD GPUs -------------===//
//
// Subgroup reductions are gpu.subgroup_reduce ops, which the AMDGPU pipeline
// lowers to DPP row operations (row_shr / row_bcast, and a permlane or
// readlane across rows) where the chipset has them, and to ds_bpermute
// shuffles otherwise: cheaper than a chain of LDS-routed shuffles.
//
// The matrix multiply-accumulate is MFMA 16x16x16 on wave64 (CDNA: lane l
// holds row l % 16 of A, column l % 16 of B, k values 4 (l / 16) .. + 3, and
// D rows 4 (l / 16) .. + 3 of column l % 16) and WMMA 16x16x16 on wave32
// (RDNA3: lane l holds row / column l % 16 with all 16 k values, and D rows
// 2j + l / 16 of column l % 16), as the known-targets table's MMA family
// says, in the arch's native wave size only; a library for CDNA and RDNA
// together lists no MMA (KnownTargets.cpp).
//
//===----------------------------------------------------------------------===//

#include "../GpuPrimitives.h"

#include "fdc/Dialect/Decode/IR/KnownTargets.h"

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"

using namespace mlir;
using namespace fdc;
using namespace fdc::gpu;

namespace {
class ROCDLPrimitives : public GpuPrimitives {
public:
  using GpuPrimitives::GpuPrimitives;

  Value subgroupReduce(ImplicitLocOpBuilder &b, Value value, ReduceKind kind,
                       int64_t clusterSize) const override {
    if (clusterSize == 1)
      return value;
    auto operation = kind == ReduceKind::Max
                         ? mlir::gpu::AllReduceOperation::MAXIMUMF
                         : mlir::gpu::AllReduceOperation::ADD;
    std::optional<uint32_t> cluster;
    if (clusterSize != subgroupSize())
      cluster = static_cast<uint32_t>(clusterSize);
    return mlir::gpu::SubgroupReduceOp::create(b, value, operation,
                                               /*uniform=*/true, cluster);
  }

  /// A wavefront runs its lanes together and its LDS accesses in order; a
  /// wavefront-scope fence keeps the compiler from reordering them.
  void subgroupBarrier(ImplicitLocOpBuilder &b) const override {
    LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "wavefront");
  }

  std::optional<MmaLayout> getMmaLayout(Type element) const override {
    decode::MmaShapeAttr shape = findMmaShape(element, 16, 16, 16);
    // The layouts below are those of the arch's native wave size (its
    // preferred subgroup in the known-targets table).
    StringRef arch = target().getArch().getValue();
    SmallVector<int64_t> waves = decode::getSubgroupChoices(arch);
    bool nativeWave = !waves.empty() && subgroupSize() == waves.front();
    StringRef family = decode::getKnownMmaFamily(arch);
    if (!shape || !nativeWave || (family != "mfma" && family != "wmma"))
      return std::nullopt;
    if (isWmma())
      return MmaLayout{shape, /*kPerLane=*/16, /*aRowsPerLane=*/1,
                       /*accPerLane=*/8};
    return MmaLayout{shape, /*kPerLane=*/4, /*aRowsPerLane=*/1,
                     /*accPerLane=*/4};
  }

  Value getMmaARow(ImplicitLocOpBuilder &b, const MmaLayout &, Value lane,
                   int64_t) const override {
    return arith::RemUIOp::create(b, lane, index(b, 16));
  }
  Value getMmaBColumn(ImplicitLocOpBuilder &b, const MmaLayout &,
                      Value lane) const override {
    return arith::RemUIOp::create(b, lane, index(b, 16));
  }
  Value getMmaKGroup(ImplicitLocOpBuilder &b, const MmaLayout &,
                     Value lane) const override {
    if (isWmma())
      return index(b, 0);
    return arith::DivUIOp::create(b, lane, index(b, 16));
  }
  std::pair<Value, Value> getMmaAccumulator(ImplicitLocOpBuilder &b,
                                            const MmaLayout &, Value lane,
                                            Value j) const override {
    Value column = arith::RemUIOp::create(b, lane, index(b, 16));
    Value half = arith::DivUIOp::create(b, lane, index(b, 16));
    // WMMA: row 2j + lane / 16; MFMA: row 4 (lane / 16) + j.
    Value row = isWmma()
                    ? arith::AddIOp::create(
                          b, half, arith::MulIOp::create(b, j, index(b, 2)))
                          .getResult()
                    : arith::AddIOp::create(
                          b, arith::MulIOp::create(b, half, index(b, 4)), j)
                          .getResult();
    return {row, column};
  }

  /// Every accumulator of a lane is its column lane % 16; the lanes 16
  /// apart share it.
  std::optional<AccumulatorColumns>
  getAccumulatorColumns(const MmaLayout &layout) const override {
    AccumulatorColumns columns;
    columns.columnOf.assign(layout.accPerLane, 0);
    columns.columns = 1;
    for (int64_t mask = 16; mask < subgroupSize(); mask *= 2)
      columns.laneMasks.push_back(mask);
    return columns;
  }

  Value mma(ImplicitLocOpBuilder &b, const MmaLayout &layout,
            ArrayRef<Value> aRows, Value bColumn, Value acc) const override {
    if (isWmma())
      return amdgpu::WMMAOp::create(b, acc.getType(), 16, 16, 16, aRows[0],
                                    bColumn, acc);
    return amdgpu::MFMAOp::create(b, acc.getType(), 16, 16, 16, /*blocks=*/1,
                                  aRows[0], bColumn, acc);
  }

private:
  /// WMMA on RDNA3, MFMA on CDNA: the known-targets table's family.
  /// One v_and_or_b32 per element, the mask in a scalar register and the
  /// bits in a vector register (a VOP3 reads one scalar register on gfx9):
  /// the backend keeps an and and an or of two literal constants apart (a
  /// VOP3 takes no literal on gfx9, one on gfx10+).
  Value maskOr(ImplicitLocOpBuilder &b, Value value, uint32_t mask,
               uint32_t bits) const override {
    Type i32 = b.getI32Type();
    Value maskValue =
        arith::ConstantIntOp::create(b, i32, static_cast<int32_t>(mask));
    Value bitsValue =
        arith::ConstantIntOp::create(b, i32, static_cast<int32_t>(bits));
    auto one = [&](Value word) -> Value {
      return LLVM::InlineAsmOp::create(
                 b, i32, ValueRange{word, maskValue, bitsValue},
                 "v_and_or_b32 $0, $1, $2, $3", "=v,v,s,v",
                 /*has_side_effects=*/false, /*is_align_stack=*/false,
                 LLVM::tailcallkind::TailCallKind::None, LLVM::AsmDialectAttr(),
                 ArrayAttr())
          .getResult(0);
    };
    return perElement(b, value, one);
  }

  /// amdgpu-waves-per-eu (rocdl.waves_per_eu): the backend bounds the VGPRs
  /// of a lane so that each SIMD holds the wavefronts of `workgroups`
  /// workgroups spread over the CU's SIMDs.
  void setMinWorkgroupsPerUnit(mlir::gpu::GPUFuncOp func, int64_t threads,
                               int64_t workgroups) const override {
    int64_t simds = decode::getKnownSimdsPerUnit(target().getArch().getValue());
    if (simds <= 0)
      return;
    int64_t waves = llvm::divideCeil(threads, subgroupSize()) * workgroups;
    func->setAttr(ROCDL::ROCDLDialect::WavesPerEuAttrHelper::getNameStr(),
                  IntegerAttr::get(IntegerType::get(func.getContext(), 32),
                                   llvm::divideCeil(waves, simds)));
  }

  bool isWmma() const {
    return decode::getKnownMmaFamily(target().getArch().getValue()) == "wmma";
  }
  static Value index(ImplicitLocOpBuilder &b, int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
};
} // namespace

std::unique_ptr<GpuPrimitives>
fdc::gpu::createROCDLPrimitives(decode::GpuTargetAttr target) {
  return std::make_unique<ROCDLPrimitives>(target);
}
