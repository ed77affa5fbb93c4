// Butterfly exchanges over a wave64 (gpu.shuffle xor, width 64). Within 32
// lanes they are ds_swizzle everywhere. Across the halves, CDNA's
// ds_bpermute reaches every lane; RDNA's stays within a half, so gfx1100
// swaps the halves with v_permlane64 (and never gets MLIR 22's permlane
// swaps, which only gfx950 has). gfx10 has no v_permlane64: an error.

// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx942 subgroup-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=CDNA --implicit-check-not=gpu.shuffle --implicit-check-not=permlane
// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx1100 subgroup-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=RDNA --implicit-check-not=gpu.shuffle --implicit-check-not=ds_bpermute \
// RUN:     --implicit-check-not=permlane16.swap --implicit-check-not=permlane32.swap
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx1030 subgroup-size=64}))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=GFX10

gpu.module @fdc_kernels {
  gpu.func @butterfly(%in: memref<?xf32>) kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
    %tid = gpu.thread_id x
    %v = memref.load %in[%tid] : memref<?xf32>
    %c64 = arith.constant 64 : i32
    %c16 = arith.constant 16 : i32
    %c32 = arith.constant 32 : i32
    %a, %va = gpu.shuffle xor %v, %c16, %c64 : f32
    // GFX10: kernel-pipelines-shuffles.mlir:[[@LINE+1]]:15: error: 'gpu.shuffle' op exchanges the halves of a wave64, which needs v_permlane64 (gfx11+); not available on gfx1030
    %b, %vb = gpu.shuffle xor %a, %c32, %c64 : f32
    memref.store %b, %in[%tid] : memref<?xf32>
    gpu.return
  }
}

// CDNA-LABEL: llvm.func @butterfly(
// CDNA:       rocdl.ds_swizzle
// CDNA:       rocdl.ds_bpermute
// CDNA:       llvm.return

// RDNA-LABEL: llvm.func @butterfly(
// RDNA:       rocdl.ds_swizzle
// RDNA:       llvm.call_intrinsic "llvm.amdgcn.permlane64"(%{{.*}}) : (f32) -> f32
// RDNA:       llvm.return
