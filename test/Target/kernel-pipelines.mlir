// The vendors' kernel pipelines on a gpu.module (what fdc compile runs before
// serialising), for the subgroup reductions kernel generators emit:
// on AMD, DPP within rows (quad_perm 0xB1 = 177 and 0x4E = 78, row_half_mirror
// 321, row_mirror 320), then across rows: row_bcast:15 (322) and
// row_bcast:31 (323) and a readlane of lane 63 for wave64 on CDNA,
// permlanex16 and a readlane of lane 31 for wave32 on RDNA; a clustered
// reduction stays in its rows. On NVIDIA, butterfly shuffles over 32 lanes.

// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx942 subgroup-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=CDNA --implicit-check-not=gpu.subgroup_reduce
// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx90a subgroup-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=CDNA --implicit-check-not=gpu.subgroup_reduce
// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx1100 subgroup-size=32}))' \
// RUN:   | FileCheck %s --check-prefix=RDNA32 --implicit-check-not=gpu.subgroup_reduce
// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-nvvm-kernels))' \
// RUN:   | FileCheck %s --check-prefix=NVVM --implicit-check-not=gpu.subgroup_reduce

gpu.module @fdc_kernels {
  gpu.func @reduce(%in: memref<?xf32>, %out: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %in[%tid] : memref<?xf32>
    %sum = gpu.subgroup_reduce add %v : (f32) -> f32
    %cluster = gpu.subgroup_reduce add %v cluster(size = 8) : (f32) -> f32
    %r = arith.addf %sum, %cluster : f32
    memref.store %r, %out[%tid] : memref<?xf32>
    gpu.return
  }
}

// CDNA:      llvm.func @reduce(
// CDNA-SAME: rocdl.kernel
// CDNA:      %[[LANE63:.*]] = llvm.mlir.constant(63 : i32) : i32
// CDNA:      rocdl.update.dpp {{.*}} with 177, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 78, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 321, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 320, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 322, 10, 15, false : f32
// CDNA:      rocdl.update.dpp {{.*}} with 323, 15, 15, true : f32
// CDNA:      rocdl.readlane %{{.*}}, %[[LANE63]]
// The 8-lane cluster: quad_perm and row_half_mirror only.
// CDNA:      rocdl.update.dpp {{.*}} with 177, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 78, 15, 15, true : f32
// CDNA:      rocdl.update.dpp {{.*}} with 321, 15, 15, true : f32
// CDNA-NOT:  rocdl.update.dpp
// CDNA-NOT:  rocdl.readlane
// CDNA:      llvm.return

// RDNA32:      llvm.func @reduce(
// RDNA32:      %[[LANE31:.*]] = llvm.mlir.constant(31 : i32) : i32
// RDNA32:      rocdl.update.dpp {{.*}} with 320, 15, 15, true : f32
// RDNA32:      rocdl.permlanex16
// RDNA32:      rocdl.readlane %{{.*}}, %[[LANE31]]
// RDNA32-NOT:  rocdl.permlanex16
// RDNA32:      llvm.return

// NVVM:      llvm.func @reduce(
// NVVM-COUNT-5: nvvm.shfl.sync  bfly
// NVVM-COUNT-3: nvvm.shfl.sync  bfly
// NVVM-NOT:  nvvm.shfl.sync
// NVVM:      llvm.return
