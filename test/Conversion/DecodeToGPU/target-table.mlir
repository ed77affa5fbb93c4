// The known-targets table: the target option's archs become the module's
// #decode.gpu_target, which every generator reads.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=SM90A
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90,sm_80 | FileCheck %s --check-prefix=FAT
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a,sm_90 | FileCheck %s --check-prefix=PLAIN
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx90a | FileCheck %s --check-prefix=GFX90A
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx1100 | FileCheck %s --check-prefix=GFX1100
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx1100,gfx90a | FileCheck %s --check-prefix=MIXED
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_75 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90,gfx942 2>&1 | FileCheck %s --check-prefix=VENDORS
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu 2>&1 | FileCheck %s --check-prefix=NONE

// SM90: decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 8, k = 16, a = f16, acc = f32>, #decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>], dependent_launch = true, cluster_workgroups = 8>
// sm_90 launches each kernel before the one before it ends: every kernel
// first waits for that one. None signals its dependents early (their blocks
// would crowd the SMs it still runs on).
// SM90: gpu.func @{{embedding_[0-9]+}}(
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90: gpu.func @{{sample_[0-9]+}}(
// SM90-NEXT: nvvm.griddepcontrol wait
// SM90-NOT: launch_dependents
// sm_90a adds the warpgroup MMA (wgmma) on shared-memory operands.
// SM90A: #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132,
// SM90A-SAME: group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = f16, acc = f32, row_bytes = 128>, #decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>], dependent_launch = true, cluster_workgroups = 8>
// Beside plain sm_90 (one PTX for both) it has none.
// PLAIN: decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 8, k = 16, a = f16, acc = f32>, #decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>], dependent_launch = true, cluster_workgroups = 8>
// The first arch sizes the grids; shared memory is what every arch has;
// sm_80 has neither dependent launch nor clusters, so neither has the
// library.
// FAT: #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 166912,
// FAT-NOT: dependent_launch
// FAT-NOT: cluster_workgroups
// FAT-NOT: griddepcontrol
// GFX90A: #decode.gpu_target<vendor = amd, arch = "gfx90a", subgroup = 64, units = 110, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 32, n = 32, k = 8, a = f16, acc = f32>, #decode.mma<m = 16, n = 16, k = 16, a = f16, acc = f32>, #decode.mma<m = 32, n = 32, k = 8, a = bf16, acc = f32>, #decode.mma<m = 16, n = 16, k = 16, a = bf16, acc = f32>]>
// The greedy head takes its load width from the table's vector_bytes (16:
// four f32 a load, eight in flight per thread) and a block of the most
// threads a workgroup may have (max_workgroup_size), on AMD as on NVIDIA.
// GFX90A: gpu.func @{{sample_[0-9]+}}({{.*}}known_block_size = array<i32: 1024, 1, 1>
// GFX90A-COUNT-8: vector.load %{{.*}} : memref<?x1000xf32>, vector<4xf32>
// GFX90A-NOT: griddepcontrol
// GFX942: #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304,
// RDNA3 alone runs wave32; beside CDNA the library's kernels are wave64.
// Every known target has 32 shared-memory banks of 4 bytes, the attribute's
// default, which it does not print (AttrsTest.KnownTargetsHaveSharedMemoryBanks
// reads them): RDNA3's 64 LDS banks per WGP are two sets of 32, one per pair
// of SIMDs.
// GFX1100: #decode.gpu_target<vendor = amd, arch = "gfx1100", subgroup = 32, units = 96,
// GFX1100-NOT: shared_memory_bank
// MIXED: #decode.gpu_target<vendor = amd, arch = "gfx1100", subgroup = 64, units = 96, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = []>
// UNKNOWN: error: unknown GPU arch 'sm_75'; known archs: sm_80, sm_86, sm_89, sm_90, sm_90a, gfx90a, gfx942, gfx1100
// VENDORS: error: GPU archs 'sm_90' and 'gfx942' are of different vendors: one library holds code for one vendor
// NONE: error: convert-decode-to-gpu needs a GPU target: the module's 'decode.gpu_target' attribute or the pass option target=ARCH[,ARCH...]
