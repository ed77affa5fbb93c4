// A subgroup reduction the vendor's pipeline cannot lower is an error naming
// the op and its type, not a crash in the GPU-to-NVVM conversion: NVVM's
// shuffles move 32 bits, and an i64 sum has no 32-bit breakdown. The DPP
// lowering of ROCDL handles it.

// RUN: not fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-nvvm-kernels))' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NVVM
// RUN: fdc-opt %s --pass-pipeline='builtin.module(gpu.module(fdc-rocdl-kernels{chip=gfx942 subgroup-size=64}))' \
// RUN:   | FileCheck %s --check-prefix=ROCDL

gpu.module @fdc_kernels {
  gpu.func @wide(%in: memref<?xi64>) kernel {
    %tid = gpu.thread_id x
    %v = memref.load %in[%tid] : memref<?xi64>
    // NVVM: kernel-pipelines-errors.mlir:[[@LINE+1]]:10: error: 'gpu.subgroup_reduce' op has no lowering for this target (value type 'i64')
    %s = gpu.subgroup_reduce add %v : (i64) -> i64
    memref.store %s, %in[%tid] : memref<?xi64>
    gpu.return
  }
}
// ROCDL: rocdl.update.dpp {{.*}} : i64
// ROCDL: rocdl.readlane {{.*}} : (i64, i32) -> i64
