// The tiled GEMM (kernel family "tiled_gemm"): K staged through shared
// memory in `stages` buffers. On NVIDIA the copies are cp.async
// (nvgpu.device_async_copy, zero-filling rows past N / M and k past K), in
// commit groups with stages - 2 left in flight before each tile's MMAs; on
// AMD they go through registers into the LDS and feed MFMA. Each stage row
// holds the weight rows (both halves of SiLU-gate-up), then the batch rows.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"tiled_gemm", {warps_n = 2, warps_m = 2, row_tiles = 2, batch_tiles = 2, k_tile = 64, stages = 3}>} :/' %S/Inputs/head128-bf16.mlir > %t.tiled.mlir
// RUN: fdc-opt %t.tiled.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=SM90
// 3 stages x (64 weight rows + 32 batch rows) x 64 k of bf16, 4 subgroups.
// SM90: gpu.func @[[K:linear_[0-9]+]]({{.*}}) workgroup(%{{.*}} : memref<18432xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// SM90: nvgpu.device_async_copy {{.*}} : memref<512x512xbf16{{.*}}> to memref<18432xbf16, #gpu.address_space<workgroup>>
// SM90: nvvm.cp.async.commit.group
// SM90: scf.for
// SM90: nvvm.cp.async.wait.group 1
// SM90-NEXT: gpu.barrier
// SM90: vector.load {{.*}} : memref<18432xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// SM90: nvvm.mma.sync
// SM90: gpu.return
// Grid x covers the batch in blocks of 32 rows, grid y N in blocks of 64.
// SM90: func.func @fdc_model_step
// SM90: %[[ROWS:.*]] = arith.constant 32 : i64
// SM90: arith.ceildivsi %{{.*}}, %[[ROWS]] : i64
// SM90: gpu.launch_func @fdc_kernels::@[[K]]

// RUN: fdc-opt %t.tiled.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=GFX942
// GFX942: gpu.func @{{linear_[0-9]+}}({{.*}}) workgroup(%{{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// GFX942-NOT: nvgpu.device_async_copy
// GFX942: vector.store {{.*}} : memref<{{[0-9]+}}xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// GFX942: amdgpu.mfma

// The PTX: cp.async of 16 bytes, bypassing L1.
// RUN: fdc-opt %t.tiled.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 --fdc-lower-kernel-launches --fdc-nvvm-kernels | FileCheck %s --check-prefix=NVVM
// NVVM: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg

// A config the family cannot build is refused, naming the op.
// RUN: sed 's/k_tile = 64, stages = 3/k_tile = 48, stages = 3/' %t.tiled.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=KTILE
// KTILE: error: 'decode.linear' op kernel 'tiled_gemm': k_tile 48 must be a multiple of 32 (one vector-wide run of k per lane of the MMA)
// RUN: sed 's/k_tile = 64, stages = 3/k_tile = 256, stages = 8/' %t.tiled.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: error: 'decode.linear' op kernel 'tiled_gemm': 8 stages of 96 x 256 elements take 393216 bytes of shared memory, more than the 232448 a workgroup may use on the target
// RUN: sed 's/k_tile = 64, stages = 3/k_tile = 64, stages = 3, split_k = 7/' %t.tiled.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=SPLITK
// SPLITK: error: 'decode.linear' op kernel 'tiled_gemm': split_k 7 leaves a split without k tiles (K = 512 has 8 tiles of 64)
// RUN: sed 's/%g_0 = decode.linear %x2_0, %wgu_0 {activation = #decode<activation silu_gate_up>}/%g_0 = decode.linear %x2_0, %wgu_0 {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.kernel<"tiled_gemm", {row_tiles = 4, batch_tiles = 8, warps_n = 1, warps_m = 1, k_tile = 32, stages = 2}>}/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=ACC
// ACC: error: 'decode.linear' op kernel 'tiled_gemm': a lane would hold 256 f32 accumulators (at most 128)
// RUN: sed 's/warps_n = 2, warps_m = 2/warps_n = 32, warps_m = 2/' %t.tiled.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=WARPS
// WARPS: error: 'decode.linear' op kernel 'tiled_gemm': warps_n * warps_m = 64 subgroups exceed the target's 32 per workgroup

// Above the target's static shared memory (48 KiB on NVIDIA) the stages live
// in the launch's dynamic shared memory, viewed as the same memref (72 KiB
// here). Split-K: grid z splits K's tiles. On a target without clusters
// (sm_80) each block stores its f32 sums into the op's workspace ([M][split_k
// * N] in scratch), and linear_epilogue adds the splits and applies the
// epilogue.
// RUN: sed 's/k_tile = 64, stages = 3/k_tile = 128, stages = 3, split_k = 2/' %t.tiled.mlir > %t.split.mlir
// RUN: fdc-opt %t.split.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_80 | FileCheck %s --check-prefix=SPLIT
// SPLIT: gpu.func @[[K:linear_[0-9]+]]({{[^)]*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// SPLIT: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// SPLIT: memref.view {{.*}} to memref<36864xbf16, #gpu.address_space<workgroup>>
// SPLIT: gpu.block_id z
// SPLIT: nvvm.mma.sync
// SPLIT: memref.store {{.*}} : memref<?x1024xf32>
// SPLIT: gpu.func @[[E:linear_epilogue_[0-9]+]](
// SPLIT: memref.load {{.*}} : memref<?x1024xf32>
// SPLIT: memref.load {{.*}} : memref<?x1024xf32>
// SPLIT: arith.addf
// SPLIT: gpu.return
// SPLIT: func.func @fdc_model_step
// SPLIT: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %{{.*}}, %c2) {{.*}} dynamic_shared_memory_size %c73728_i32
// SPLIT: gpu.launch_func @fdc_kernels::@[[E]]

// On sm_90 the two splits of a tile form a cluster (grid z, cluster
// 1 x 1 x 2): each stores its sums in its own shared memory, and after a
// cluster barrier adds its half of the tile's outputs, four rows at a time,
// loading split 0's then split 1's 16-byte vector (mapa: the cluster rank's
// shared memory; a thread's two chunks, all four loads before the first
// add), applies the epilogue (no bounds checks where the tile lies in the
// output whole) and waits at a second barrier, which orders no memory, for
// the other to finish reading. No workspace, no linear_epilogue.
// RUN: fdc-opt %t.split.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=CLUSTER
// CLUSTER: gpu.func @[[K:linear_[0-9]+]]({{[^)]*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 2>}
// CLUSTER: gpu.block_id z
// CLUSTER: nvvm.mma.sync
// CLUSTER: gpu.barrier
// CLUSTER-COUNT-16: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CLUSTER-NOT: llvm.store
// CLUSTER: nvvm.cluster.arrive {aligned}
// CLUSTER-NEXT: nvvm.cluster.wait {aligned}
// CLUSTER: scf.for
// CLUSTER: nvvm.mapa %{{[0-9]+}}, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER-NEXT: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// CLUSTER: nvvm.mapa %{{[0-9]+}}, %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// CLUSTER-NEXT: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// CLUSTER-COUNT-2: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// CLUSTER-NOT: llvm.load
// CLUSTER: arith.addf {{.*}} : vector<4xf32>
// CLUSTER-NEXT: arith.addf {{.*}} : vector<4xf32>
// CLUSTER-NOT: llvm.load
// CLUSTER: arith.cmpi ule
// CLUSTER-NEXT: scf.if
// CLUSTER-NOT: llvm.load
// CLUSTER: nvvm.cluster.arrive.relaxed {aligned}
// CLUSTER-NEXT: nvvm.cluster.wait {aligned}
// CLUSTER-NEXT: gpu.return
// CLUSTER: func.func @fdc_model_step
// CLUSTER: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %{{.*}}, %c2)
// CLUSTER-NOT: gpu.launch_func
// CLUSTER: gpu.launch_func @fdc_kernels::@{{linear_[0-9]+}}

// A column of the cluster's sums takes 4 rows more than the 64-row tile's
// where the target's shared-memory banks ask for it
// (ClusterSplitSums::getColumnPad): on sm_90's 32 banks of 4 bytes an MMA
// fragment's store (8 rows of 4 columns 2 apart) would meet each bank 4
// times in columns of 64 f32s, and meets each once in columns of 68. On a
// made-up sm_90 with 8 banks a store's 32 lanes meet 4 in a bank however
// the columns fall, and they take 64.
// RUN: fdc-opt %t.split.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=PAD32
// RUN: sed -e '1s/^/module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>], cluster_workgroups = 8, shared_memory_banks = 8>} {\n/' -e '$a}' %t.split.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu | FileCheck %s --check-prefix=PAD8
// PAD32: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {{{.*}}nvvm.cluster_dim = array<i32: 1, 1, 2>}
// PAD32: gpu.barrier
// PAD32: %[[STRIDE:.*]] = arith.constant 68 : index
// PAD32-NEXT: arith.muli %{{[0-9]+}}, %[[STRIDE]] : index
// PAD32-NEXT: arith.addi
// PAD32-NEXT: arith.constant 4 : index
// PAD32-NEXT: arith.muli
// PAD32-NEXT: arith.index_cast
// PAD32-NEXT: arith.addi
// PAD32-NEXT: llvm.inttoptr
// PAD32-NEXT: llvm.store {{.*}} : f32, !llvm.ptr<3>
// PAD8: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {{{.*}}nvvm.cluster_dim = array<i32: 1, 1, 2>}
// PAD8: gpu.barrier
// PAD8: %[[STRIDE:.*]] = arith.constant 64 : index
// PAD8-NEXT: arith.muli %{{[0-9]+}}, %[[STRIDE]] : index
// PAD8-NEXT: arith.addi
// PAD8-NEXT: arith.constant 4 : index
// PAD8-NEXT: arith.muli
// PAD8-NEXT: arith.index_cast
// PAD8-NEXT: arith.addi
// PAD8-NEXT: llvm.inttoptr
// PAD8-NEXT: llvm.store {{.*}} : f32, !llvm.ptr<3>

// The lowering gives the dynamic region external linkage (PTX .extern
// .shared), and the launch passes its bytes to the runtime.
// RUN: fdc-opt %t.split.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_80 --fdc-lower-kernel-launches --fdc-nvvm-kernels | FileCheck %s --check-prefix=DYN
// DYN: llvm.mlir.global external @[[DYN:__dynamic_shmem__[0-9]+]]() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// DYN: llvm.mlir.addressof @[[DYN]] : !llvm.ptr<3>
// DYN: %[[BYTES:.*]] = arith.constant 73728 : i32
// DYN: llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[BYTES]], %{{.*}})

// One workspace for the whole step: q and k, both split in K, store their
// partial sums in the same scratch region (each op's is dead once its
// linear_epilogue has run), reserved before the first kernel.
// RUN: sed 's/%k_0 = decode.linear %x_0, %wk_0 :/%k_0 = decode.linear %x_0, %wk_0 {decode.kernel = #decode.kernel<"tiled_gemm", {warps_n = 2, warps_m = 2, row_tiles = 2, batch_tiles = 2, k_tile = 128, stages = 3, split_k = 2}>} :/' %t.split.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_80 | FileCheck %s --check-prefix=WORKSPACE
// WORKSPACE: func.func @fdc_model_step
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_[0-9]+}} blocks in (%{{.*}}, %c8, %c2) {{.*}} args(%{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %[[Q:[0-9]+]] : !llvm.ptr, %[[WS:[0-9]+]] : !llvm.ptr,
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_epilogue_[0-9]+}} {{.*}} args(%[[WS]] : !llvm.ptr, %[[Q]] : !llvm.ptr,
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_[0-9]+}} blocks in (%{{.*}}, %c4, %c2{{.*}}) {{.*}} args(%{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %[[K:[0-9]+]] : !llvm.ptr, %[[WS]] : !llvm.ptr,
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_epilogue_[0-9]+}} {{.*}} args(%[[WS]] : !llvm.ptr, %[[K]] : !llvm.ptr,

// Split-K on AMD (64 KiB of LDS: two stages of 64-wide k fit statically):
// grid z, MFMA, the f32 sums into the workspace, and linear_epilogue.
// RUN: sed 's/k_tile = 64, stages = 3/k_tile = 64, stages = 2, split_k = 2/' %t.tiled.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=GFXSPLIT
// GFXSPLIT: gpu.func @[[K:linear_[0-9]+]]({{.*}}) workgroup(%{{.*}} : memref<16384xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// GFXSPLIT: gpu.block_id z
// GFXSPLIT: amdgpu.mfma
// GFXSPLIT: memref.store {{.*}} : memref<?x1024xf32>
// GFXSPLIT: gpu.func @[[E:linear_epilogue_[0-9]+]](
// GFXSPLIT: func.func @fdc_model_step
// GFXSPLIT: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %{{.*}}, %c2)
// GFXSPLIT: gpu.launch_func @fdc_kernels::@[[E]]
