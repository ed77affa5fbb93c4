// Flash-LLM's SpMM on the group MMA (kernel family "group_spmm", sm_90a's
// wgmma): a block streams one Tiled-CSL tile row's words in 16-byte vectors,
// scatters them into a zeroed stage in the group MMA's swizzled layout, and
// the MMA unit multiplies it by the batch rows cp.async-copied into the same
// stage, both operands read from shared memory.

// The default on sm_90a: flash_spmm up to 8 batch rows, then group_spmm
// with blocks of 16 and 32 (FlashSpmm.cpp's dispatch says why), K split as
// flash_spmm's; on sm_90 (no wgmma) flash_spmm throughout
// (flash-spmm.mlir). A decode.kernel pins group_spmm, its entries
// completed from the family's defaults (one warpgroup of two 64-row MMA
// tiles per 128-row tile row, a batch of 8 columns, K whole).
// RUN: fdc-opt %S/Inputs/sparse-linear-f16.mlir --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: decode.sparse_linear {{.*}} {decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm", {batch_tiles = 1 : i64, {{.*}}}>, #decode.kernel<"group_spmm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 2 : i64, vectors = 5 : i64}>, #decode.kernel<"group_spmm", {batch = 32 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 2 : i64, vectors = 5 : i64}>]>} : tensor<?x1024xf16>, !decode.tiled_csl<1000x1024xf16
// DEFAULT: decode.sparse_linear {{.*}} {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm", {{.*}}}>, #decode.kernel<"group_spmm", {batch = 16 : i64, {{.*}}}>, #decode.kernel<"group_spmm", {batch = 32 : i64, {{.*}}}>]>}
// [11008, 4096] (86 tile rows of 64 k tiles): four blocks of 16 batch
// rows fit an H100 SM, so 6 splits make 516 blocks, one wave of 528; three
// of 32 fit, and 4 splits make 344 blocks, one wave of 396.
// RUN: sed -e 's/1000x1024xf16/11008x4096xf16/g' -e 's/256x1024xf16/256x4096xf16/g' -e 's/?x1024xf16/?x4096xf16/g' -e 's/?x1000xf16/?x11008xf16/g' -e 's/1024x1000xf16/1024x11008xf16/g' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=WAVES
// WAVES: decode.sparse_linear {{.*}} {decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm", {batch_tiles = 1 : i64, {{.*}} split_k = 6 : i64, {{.*}}}>, #decode.kernel<"group_spmm", {batch = 16 : i64, {{.*}} split_k = 6 : i64, {{.*}}}>, #decode.kernel<"group_spmm", {batch = 32 : i64, {{.*}} split_k = 4 : i64, {{.*}}}>]>} : tensor<?x4096xf16>, !decode.tiled_csl<11008x4096xf16
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=PINNED
// PINNED: decode.sparse_linear {{.*}} {decode.kernel = #decode.kernel<"group_spmm", {batch = 8 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 1 : i64, vectors = 5 : i64}>} : tensor<?x1024xf16>, !decode.tiled_csl<1000x1024xf16

// The kernel (pinned, 2 splits): 3 stages of 1 KiB-aligned (128 weight rows + 8 batch rows) x
// 128 bytes, and 1 KiB for the alignment; the word vectors of tiles 0 and
// 1 loaded before the kernel waits for the one before it; a tile's MMAs
// issued after the barrier, then the next tile zeroed, scattered and
// fenced for the MMA unit, then the MMAs waited for: one barrier per tile.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {split_k = 2}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=KERNEL
// KERNEL: gpu.func @[[K:sparse_linear_[0-9]+]]({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 2>}
// KERNEL: memref.view {{.*}} to memref<26624xf16, #gpu.address_space<workgroup>>
// KERNEL: vector.load {{.*}} {alignment = 16 : i64} : memref<1048708xi32>, vector<4xi32>
// KERNEL: nvvm.griddepcontrol wait
// KERNEL: vector.store {{.*}} : memref<26624xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// KERNEL: nvgpu.device_async_copy {{.*}} : memref<?x1024xf16> to memref<26624xf16, #gpu.address_space<workgroup>>
// KERNEL: gpu.barrier
// KERNEL: memref.store {{.*}} : memref<26624xf16, #gpu.address_space<workgroup>>
// KERNEL: nvvm.cp.async.wait.group 0
// KERNEL-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// The first tile, peeled: its MMAs start the sums.
// KERNEL: gpu.barrier
// KERNEL: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 8, k = 16>, D[<f32>, <zero>]
// KERNEL: nvvm.wgmma.commit.group.sync.aligned
// KERNEL: scf.for
// KERNEL: nvvm.fence.proxy
// KERNEL-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// KERNEL: scf.for {{.*}} iter_args
// KERNEL-NEXT: gpu.barrier
// KERNEL: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 8, k = 16>, D[<f32>, <one>]
// KERNEL: nvvm.wgmma.commit.group.sync.aligned
// KERNEL: vector.load {{.*}} : memref<1048708xi32>, vector<4xi32>
// KERNEL: nvgpu.device_async_copy
// KERNEL: scf.if
// KERNEL: vector.store {{.*}} : memref<26624xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// KERNEL: memref.store {{.*}} : memref<26624xf16, #gpu.address_space<workgroup>>
// KERNEL: nvvm.cp.async.wait.group 0
// KERNEL-NEXT: nvvm.fence.proxy
// KERNEL-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// The 2 splits of a tile row add their sums in their cluster.
// KERNEL: nvvm.cluster.wait {aligned}
// KERNEL: nvvm.mapa
// KERNEL: gpu.return
// KERNEL: func.func @fdc_model_step
// KERNEL: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %c8, %c2) {{.*}} dynamic_shared_memory_size %c53248_i32

// A scattered word goes to its row's 16-byte chunk XOR the row's index in
// its 8-row period (the 128-byte swizzle), as the MMA reads the tile.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {split_k = 2}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=SCATTER
// SCATTER: gpu.func @{{sparse_linear_[0-9]+}}
// SCATTER: %[[WORD:.*]] = vector.extract %{{.*}}[0] : i32 from vector<4xi32>
// SCATTER: %[[LOC:.*]] = arith.shrui %[[WORD]], %{{.*}} : i32
// SCATTER: %[[CLAMPED:.*]] = arith.minui %[[LOC]], %c8191_i32{{.*}} : i32
// SCATTER: %[[BITS:.*]] = arith.trunci %[[WORD]] : i32 to i16
// SCATTER: %[[VALUE:.*]] = arith.bitcast %[[BITS]] : i16 to f16
// SCATTER: %[[INDEX:.*]] = arith.index_castui %[[CLAMPED]] : i32 to index
// SCATTER: %[[ROW:.*]] = arith.divui %[[INDEX]], %c64{{.*}} : index
// SCATTER: %[[COLUMN:.*]] = arith.remui %[[INDEX]], %c64{{.*}} : index
// SCATTER: %[[CHUNK:.*]] = arith.divui %[[COLUMN]], %c8{{.*}} : index
// SCATTER: %[[PERIOD:.*]] = arith.remui %[[ROW]], %c8{{.*}} : index
// SCATTER: arith.xori %[[CHUNK]], %[[PERIOD]] : index
// SCATTER: memref.store %[[VALUE]], %{{.*}} : memref<26624xf16, #gpu.address_space<workgroup>>

// Three splits: the sums go through the workspace, linear_epilogue adds
// them, and a block lets it launch once its MMAs are done.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {split_k = 3}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=EPILOGUE
// EPILOGUE: gpu.func @[[K:sparse_linear_[0-9]+]]({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
// EPILOGUE: scf.for {{.*}} iter_args
// EPILOGUE: nvvm.wgmma.wait.group.sync.aligned 0
// EPILOGUE-NOT: memref.store {{.*}} : memref<?x3000xf32>
// EPILOGUE: nvvm.griddepcontrol launch_dependents
// EPILOGUE: memref.store {{.*}} : memref<?x3000xf32>
// EPILOGUE: gpu.func @{{linear_epilogue_[0-9]+}}(
// EPILOGUE-NEXT: nvvm.griddepcontrol wait

// Configs the family refuses, by name.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {row_tiles = 1}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: error: 'decode.sparse_linear' op kernel 'group_spmm': groups * row_tiles * 64 = 64 rows per block must be the tile's 128 rows
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {batch = 12}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: error: 'decode.sparse_linear' op cannot use kernel 'group_spmm' with batch 12: it needs f16 or bf16 input, K a multiple of the target's vector width, and a group MMA of the target (#decode.gpu_target's group_mma) of that width
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOGROUP
// NOGROUP: error: 'decode.sparse_linear' op cannot use kernel 'group_spmm' with batch 8
// No AMD target lists a group MMA: pinned there, it is refused the same way.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=NOGROUP
// A tile of 32 columns is not one 128-byte row of the layout.
// RUN: sed -e 's/tile = 128x64/tile = 128x32/g' -e 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=TILE
// TILE: error: 'decode.sparse_linear' op kernel 'group_spmm': the tile's 32 columns must be one row of the group MMA's layout (64 elements)
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"group_spmm", {split_k = 12}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=SPLIT
// SPLIT: error: 'decode.sparse_linear' op kernel 'group_spmm': split_k 12 leaves a split without k tiles (K = 1024 has 16 tiles of 64)
