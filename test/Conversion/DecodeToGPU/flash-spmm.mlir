// Flash-LLM's SpMM (kernel family "flash_spmm") of decode.sparse_linear: a
// block streams one Tiled-CSL tile row's words in 16-byte vectors, scatters
// them into a zeroed dense tile in shared memory, and runs the tiled GEMM's
// MMAs on it with the batch rows cp.async-copied into the same stage.

// The default: a dispatch over the batch, one to four MMA batch tiles per
// block (on sm_90a group_spmm takes the batches over 8: group-spmm.mlir),
// K split into whole waves of the blocks the units hold at once (see
// chooseSpmmSplitK), keeping 8 k tiles per split; 5 register vectors of
// words per thread (a tile at 70 % sparsity), loaded one tile ahead.
// RUN: fdc-opt %S/Inputs/sparse-linear-f16.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=SELECT
// SELECT: decode.sparse_linear {{.*}} {decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm", {batch_tiles = 1 : i64, prefetch = 1 : i64, row_tiles = 2 : i64, split_k = 2 : i64, vectors = 5 : i64, warps_n = 4 : i64}>, #decode.kernel<"flash_spmm", {batch_tiles = 2 : i64, {{.*}}}>, #decode.kernel<"flash_spmm", {batch_tiles = 4 : i64, {{.*}}}>]>} : tensor<?x1024xf16>, !decode.tiled_csl<1000x1024xf16
// SELECT: decode.sparse_linear {{.*}} {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm"
// Whole waves: [11008, 4096] has 86 tile rows of 64 k tiles. Four blocks of
// one or two batch tiles fit an H100 SM (51 or 54 KiB of stages), so 6
// splits make 516 blocks, one wave of 528; three of four batch tiles (60
// KiB) fit, and 4 splits make 344 blocks, one wave of 396.
// RUN: sed -e 's/1000x1024xf16/11008x4096xf16/g' -e 's/256x1024xf16/256x4096xf16/g' -e 's/?x1024xf16/?x4096xf16/g' -e 's/?x1000xf16/?x11008xf16/g' -e 's/1024x1000xf16/1024x11008xf16/g' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=WAVES
// WAVES: decode.sparse_linear {{.*}} {decode.kernel = #decode.dispatch<max_batch = [8, 16], kernels = [#decode.kernel<"flash_spmm", {batch_tiles = 1 : i64, {{.*}} split_k = 6 : i64, {{.*}}}>, #decode.kernel<"flash_spmm", {batch_tiles = 2 : i64, {{.*}} split_k = 6 : i64, {{.*}}}>, #decode.kernel<"flash_spmm", {batch_tiles = 4 : i64, {{.*}} split_k = 4 : i64, {{.*}}}>]>} : tensor<?x4096xf16>, !decode.tiled_csl<11008x4096xf16
// On CDNA (64 KiB of LDS) the widest batch tile is two MMA tiles of 16,
// and the gate-up halves' three stages do not fit: sparse_row_scan serves it.
// RUN: fdc-opt %S/Inputs/sparse-linear-f16.mlir --decode-select-kernels=target=gfx942 | FileCheck %s --check-prefix=CDNA
// CDNA: decode.sparse_linear {{.*}} {decode.kernel = #decode.dispatch<max_batch = [16], kernels = [#decode.kernel<"flash_spmm", {batch_tiles = 1 : i64, {{.*}}}>, #decode.kernel<"flash_spmm", {batch_tiles = 2 : i64, {{.*}}}>]>}
// CDNA: decode.sparse_linear {{.*}} {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.kernel<"sparse_row_scan", {threads = 256 : i64}>}

// The kernel: 3 stages x (128 weight rows + 8 batch rows) x 64 k of f16;
// the offsets (u32 loads), 16-byte word vectors, zeroed tiles, 2-byte
// scatters, cp.async batch rows, one barrier per tile, and mma.sync.
// RUN: fdc-opt %S/Inputs/sparse-linear-f16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=SM90
// SM90: gpu.func @[[K:sparse_linear_[0-9]+]]({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 2>}
// SM90: gpu.dynamic_shared_memory
// SM90: memref.view {{.*}} to memref<26112xf16, #gpu.address_space<workgroup>>
// SM90: vector.store {{.*}} : memref<26112xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// SM90: nvgpu.device_async_copy {{.*}} : memref<?x1024xf16> to memref<26112xf16, #gpu.address_space<workgroup>>
// SM90: memref.load {{.*}} : memref<1048708xi32>
// A thread loads only its vectors inside the tile's run (the others are
// zeros, never scattered).
// SM90: scf.if {{.*}} -> (vector<4xi32>)
// SM90: vector.load {{.*}} {alignment = 16 : i64} : memref<1048708xi32>, vector<4xi32>
// SM90-NEXT: scf.yield {{.*}} : vector<4xi32>
// SM90-NEXT: } else {
// SM90-NEXT: arith.constant dense<0> : vector<4xi32>
// SM90-NEXT: scf.yield {{.*}} : vector<4xi32>
// SM90: gpu.barrier
// SM90: scf.for
// A word goes to its row's 16-byte chunk XOR the row mod 8 (group_spmm's
// 128-byte swizzle, for which the packed order spreads the banks): its
// location XOR 8 elements per unit of row mod 8.
// SM90: %[[LOC:.*]] = arith.minui %{{.*}}, %c8191_i32 : i32
// SM90: %[[ROW:.*]] = arith.divui %[[LOC]], %c64_i32{{.*}} : i32
// SM90: %[[PERIOD:.*]] = arith.andi %[[ROW]], %c7_i32{{.*}} : i32
// SM90: %[[MASK:.*]] = arith.muli %[[PERIOD]], %c8_i32{{.*}} : i32
// SM90: %[[ELEMENT:.*]] = arith.xori %[[LOC]], %[[MASK]] : i32
// SM90: arith.index_castui %[[ELEMENT]] : i32 to index
// SM90: memref.store {{.*}} : memref<26112xf16, #gpu.address_space<workgroup>>
// SM90: nvvm.cp.async.wait.group 1
// SM90-NEXT: gpu.barrier
// SM90: nvvm.mma.sync
// The 2 splits of K (16 k tiles, at least 8 per split) of a tile row form a
// cluster and add their sums there (as the tiled GEMM's, tiled-gemm.mlir).
// SM90: nvvm.cluster.wait {aligned}
// SM90: nvvm.mapa
// SM90: nvvm.cluster.wait {aligned}
// SM90-NEXT: gpu.return
// Grid: batch tiles x tile rows (1000 rows: 8) x the splits; no
// linear_epilogue.
// SM90: func.func @fdc_model_step
// SM90: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %c8, %c2) {{.*}} dynamic_shared_memory_size %c52224_i32
// SM90-NOT: gpu.launch_func
// SM90: gpu.launch_func @fdc_kernels::@{{sparse_linear_[0-9]+}}

// The packed word order spreads a store instruction over 32 shared-memory
// banks of 4 bytes (a format constant). A target with 64 such banks keeps
// that spread; one with 16 does not, which the lowering says once, in a
// remark: the kernels are the same, their stores only meet more conflicts.
// RUN: sed -e '1s/^/module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 8, k = 16, a = f16, acc = f32>], shared_memory_banks = 16>} {\n/' -e '$a}' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu -o /dev/null 2>&1 | FileCheck %s --check-prefix=BANKS16
// BANKS16: remark: Tiled-CSL words are packed in an order for 32 shared-memory banks of 4 bytes, the target has 16 of 4: kernels that scatter them into shared memory (flash_spmm, group_spmm) may meet more bank conflicts (slower, not wrong)
// BANKS16-NOT: remark
// RUN: sed -e '1s/^/module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 8, k = 16, a = f16, acc = f32>], shared_memory_banks = 64>} {\n/' -e '$a}' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu -o /dev/null 2>&1 | FileCheck %s --allow-empty --check-prefix=BANKS64
// BANKS64-NOT: remark
// Without an MMA the sparse linears run sparse_row_scan, which scatters
// nothing: no remark on 16 banks either.
// RUN: sed -e '1s/^/module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_banks = 16>} {\n/' -e '$a}' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu 2>&1 | FileCheck %s --check-prefix=SCAN16
// SCAN16-NOT: remark
// SCAN16: gpu.launch_func @fdc_kernels::@{{sparse_linear_[0-9]+}}
// SCAN16-NOT: remark

// Four splits (no cluster reduction past two): each block stores its sums in
// the workspace, and linear_epilogue adds them. Once its MMAs are done a
// block lets that kernel launch (griddepcontrol.launch_dependents after the
// k loop, before the stores); the epilogue waits for this kernel's end at
// its start.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"flash_spmm", {split_k = 4}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=EPILOGUE
// EPILOGUE: gpu.func @[[K:sparse_linear_[0-9]+]]({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
// EPILOGUE-NEXT: nvvm.griddepcontrol wait
// EPILOGUE: scf.for
// EPILOGUE: nvvm.mma.sync
// EPILOGUE-NOT: memref.store {{.*}} : memref<?x4000xf32>
// EPILOGUE: nvvm.griddepcontrol launch_dependents
// EPILOGUE: memref.store {{.*}} : memref<?x4000xf32>
// EPILOGUE: gpu.func @[[E:linear_epilogue_[0-9]+]](
// EPILOGUE-NEXT: nvvm.griddepcontrol wait
// EPILOGUE: func.func @fdc_model_step
// EPILOGUE: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %c8, %c4)
// EPILOGUE-NOT: gpu.launch_func
// EPILOGUE: gpu.launch_func @fdc_kernels::@[[E]]
// On gfx942 (no dependent launch) the kernel signals nothing; the epilogue
// follows it alike.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"flash_spmm", {split_k = 4}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=EPILOGUE942 --implicit-check-not=griddepcontrol
// EPILOGUE942: gpu.func @[[K:sparse_linear_[0-9]+]](
// EPILOGUE942: amdgpu.mfma
// EPILOGUE942: memref.store {{.*}} : memref<?x4000xf32>
// EPILOGUE942: gpu.func @[[E:linear_epilogue_[0-9]+]](
// EPILOGUE942: func.func @fdc_model_step
// EPILOGUE942: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %c8, %c4)
// EPILOGUE942-NOT: gpu.launch_func
// EPILOGUE942: gpu.launch_func @fdc_kernels::@[[E]]

// Pinned configs the family cannot build are refused, naming the op.
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"flash_spmm", {warps_n = 2, row_tiles = 2}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: error: 'decode.sparse_linear' op kernel 'flash_spmm': warps_n * row_tiles * 16 = 64 rows per block must be the tile's 128 rows
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"flash_spmm", {split_k = 12}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=SPLIT
// SPLIT: error: 'decode.sparse_linear' op kernel 'flash_spmm': split_k 12 leaves a split without k tiles (K = 1024 has 16 tiles of 64)
// RUN: sed 's/%y = decode.sparse_linear %x, %w :/%y = decode.sparse_linear %x, %w {decode.kernel = #decode.kernel<"flash_spmm", {vectors = 17}>} :/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=VECTORS
// VECTORS: error: 'decode.sparse_linear' op kernel config vectors = 17 is outside [0, 16]
// RUN: sed 's/%g = decode.sparse_linear %y, %gu {activation = #decode<activation silu_gate_up>}/%g = decode.sparse_linear %y, %gu {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.kernel<"flash_spmm", {batch_tiles = 8}>}/' %S/Inputs/sparse-linear-f16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=LDS
// LDS: error: 'decode.sparse_linear' op kernel 'flash_spmm': 3 stages of 384 x 64 elements take 147456 bytes of shared memory, more than the 65536 a workgroup may use on the target
