// decode-select-kernels writes each kernel op's family and complete config
// for the target; a kernel written by hand is kept, checked and completed,
// and convert-decode-to-gpu builds what it names.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-select-kernels=target=gfx90a | FileCheck %s --check-prefix=GFX90A

// The 512-wide model's rows leave the units idle (N / m row tiles below
// the units), so from M = 1 to n a flat GEMM with the workgroup's most
// subgroups (32 x 32 lanes on sm_90, 16 x 64 on gfx90a) runs, not GEMV.
// SM90: module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90"
// SM90: decode.embedding {{.*}}{decode.kernel = #decode.kernel<"embedding", {threads = 256 : i64, vector_bytes = 16 : i64}>}
// SM90: decode.rms_norm {{.*}}{decode.kernel = #decode.kernel<"rms_norm", {threads = 256 : i64}>
// SM90: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [8, 16, 32, 64], kernels = [#decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 8 : i64, row_tiles = 1 : i64, subgroups = 32 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 2 : i64, k_unroll = 2 : i64, row_tiles = 1 : i64, subgroups = 16 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 4 : i64, k_unroll = 2 : i64, row_tiles = 2 : i64, subgroups = 16 : i64}>, #decode.kernel<"tiled_gemm", {batch_tiles = 2 : i64, k_tile = 128 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 3 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>, #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 4 : i64, split_k = 4 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>]>}
// SM90: decode.rope {{.*}}decode.kernel = #decode.kernel<"rope", {threads = 256 : i64}>
// SM90: decode.kv_append {{.*}}{decode.kernel = #decode.kernel<"kv_append", {}>
// SM90: decode.attention {{.*}}decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 0 : i64, cluster_splits = 2 : i64, f32_operands = 1 : i64, fragment_loads = 1 : i64, heads_as_b = 1 : i64, max_splits = 128 : i64, min_split_length = 64 : i64, min_splits = 1 : i64, prefetch = 0 : i64, register_softmax = 0 : i64, softmax_lanes = 64 : i64, stages = 2 : i64, subgroups = 4 : i64, waves_per_unit = 2 : i64}>
// SM90: decode.sample {{.*}}{decode.kernel = #decode.kernel<"sample", {threads = 1024 : i64}>}
// GFX90A: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [16, 32, 64], kernels = [#decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 8 : i64, row_tiles = 1 : i64, subgroups = 16 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 2 : i64,

// N = 4096 leaves H100 units idle with 64-row tiles (64 blocks for 132 SMs):
// above 16 rows, the wide tiled GEMM (128 x 64 tiles in dynamic shared
// memory), K split 4 ways. Above 64 rows every shape takes it (N = 512
// above: split 4 ways too).
// RUN: fdc-opt %S/Inputs/linear-4096x4096-bf16.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=SPLIT
// SPLIT: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [1, 8, 16], kernels = [#decode.kernel<"gemv", {{.*}}>, #decode.kernel<"flat_gemm", {{.*}}>, #decode.kernel<"flat_gemm", {{.*}}>, #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 4 : i64, split_k = 4 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>]>} : tensor<?x4096xbf16>, tensor<4096x4096xbf16>

// sm_90a adds the group GEMM (wgmma). N = 4096 leaves units idle with
// 64-row tiles but fills half of them: up to 16 rows, M = 1 too, one tile
// per block with K split 2 ways (132 / 64), 16 stages of 16 batch columns;
// to 64 rows K whole, the deepest pipeline that fits (16 stages), the
// narrowest batch tile whose blocks fit one wave (16 columns to 32 rows, 32
// to 64). Above 64 rows that tile would be 64 of 128 columns: the whole
// batch is one tile of 128 and K is split 2 ways, 9 stages of 24 KiB. The
// 128-row head splits K 16 ways (132 / 2, at most 16), 4 k tiles a split
// and so 5 stages; its K >= 2N, but its 2 x 64 tiles and k tiles do not
// exceed the 132 units, so up to 16 rows the flat GEMM stays; its two row
// tiles leave the units idle, so from M = 1 (not GEMV).
// RUN: fdc-opt %S/Inputs/linear-4096x4096-bf16.mlir --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=GROUP
// GROUP: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [16, 32, 64], kernels = [#decode.kernel<"group_gemm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 2 : i64, stages = 16 : i64}>, #decode.kernel<"group_gemm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 16 : i64}>, #decode.kernel<"group_gemm", {batch = 32 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 16 : i64}>, #decode.kernel<"group_gemm", {batch = 128 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 2 : i64, stages = 9 : i64}>]>} : tensor<?x4096xbf16>, tensor<4096x4096xbf16>
// GROUP: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [8, 16, 32, 64], kernels = [#decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 8 : i64, row_tiles = 1 : i64, subgroups = 32 : i64}>, #decode.kernel<"flat_gemm", {{.*}}>, #decode.kernel<"group_gemm", {batch = 32 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 16 : i64, stages = 5 : i64}>, {{.*}}]>} : tensor<?x4096xbf16>, tensor<128x4096xbf16>
// With a residual added, GEMV keeps M = 1 (measured faster in the 7B-wide
// step at B = 1); the rest as above.
// RUN: sed 's/%y = decode.linear %x, %w : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>/%y = decode.linear %x, %w residual %x : tensor<?x4096xbf16>, tensor<4096x4096xbf16>, tensor<?x4096xbf16> -> tensor<?x4096xbf16>/' %S/Inputs/linear-4096x4096-bf16.mlir \
// RUN:   | fdc-opt --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=RESIDUAL
// RESIDUAL: decode.linear {{.*}} residual {{.*}}{decode.kernel = #decode.dispatch<max_batch = [1, 16, 32, 64], kernels = [#decode.kernel<"gemv", {{.*}}>, #decode.kernel<"group_gemm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 2 : i64, stages = 16 : i64}>,

// Where N / 64 tiles fill the units (N = 12288 on the H100): from 2 rows
// two row tiles per block, K whole, 6 stages, batch tiles of at least 32
// columns; GEMV keeps M = 1.
// RUN: fdc-opt %S/Inputs/linear-12288x4096-bf16.mlir --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=WIDE
// WIDE: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [1, 32, 64], kernels = [#decode.kernel<"gemv", {{.*}}>, #decode.kernel<"group_gemm", {batch = 32 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 1 : i64, stages = 6 : i64}>, #decode.kernel<"group_gemm", {batch = 64 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 1 : i64, stages = 6 : i64}>, #decode.kernel<"group_gemm", {batch = 128 : i64, groups = 1 : i64, row_tiles = 2 : i64, split_k = 1 : i64, stages = 6 : i64}>]>} : tensor<?x4096xbf16>, tensor<12288x4096xbf16>
// SiLU-gate-up whose halves' tiles fill the units ([2 x 12288, 4096]): one
// row tile a half, batch tiles of 32 columns from M = 1 (no GEMV).
// RUN: sed -e 's/tensor<12288x4096xbf16>/tensor<24576x4096xbf16>/g' -e 's/%y = decode.linear %x, %w :/%y = decode.linear %x, %w {activation = #decode<activation silu_gate_up>} :/' %S/Inputs/linear-12288x4096-bf16.mlir \
// RUN:   | fdc-opt --decode-select-kernels=target=sm_90a | FileCheck %s --check-prefix=GATEUP
// GATEUP: decode.linear {{.*}}{activation = #decode<activation silu_gate_up>, decode.kernel = #decode.dispatch<max_batch = [32, 64], kernels = [#decode.kernel<"group_gemm", {batch = 32 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 6 : i64}>, #decode.kernel<"group_gemm", {batch = 64 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 6 : i64}>, #decode.kernel<"group_gemm", {batch = 128 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 6 : i64}>]>}

// f32 weights have no MMA: one GEMV for every batch size; an f32 cache
// neither: the per-query-head attention.
// RUN: sed 's/bf16/f32/g' %S/Inputs/head128-bf16.mlir | fdc-opt --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=F32
// F32-NOT: decode.dispatch
// F32: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>}
// F32-NOT: decode.dispatch
// F32: decode.attention {{.*}}decode.kernel = #decode.kernel<"split_kv_attention", {max_splits = 64 : i64, min_split_length = 64 : i64, subgroups = 4 : i64, waves_per_unit = 2 : i64}>

// gqa_attention: the default where the target has an MMA for the cache's
// type (MFMA on gfx90a: P as hi + lo too); on RDNA3 (WMMA: a lane holds all
// 16 k values, so Q and the K and V runs exceed the default's register
// budget) and for f16 with unified max (weights leave f16's range) the
// per-query-head kernel; pinned where it cannot run, an error names the op.
// A bf16 cache's steps: through two shared-memory stages on sm_90 (SM90,
// cp.async), loaded a step ahead in registers on AMD (GFX90A), where a copy
// to shared memory passes through registers.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-select-kernels=target=gfx1100 | FileCheck %s --check-prefix=RDNA
// RDNA: decode.attention {{.*}}decode.kernel = #decode.kernel<"split_kv_attention"
// GFX90A: decode.attention {{.*}}decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 0 : i64, cluster_splits = 0 : i64, f32_operands = 1 : i64, {{.*}} prefetch = 1 : i64, {{.*}} stages = 0 : i64,
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>, decode.kernel = #decode.kernel<"gqa_attention", {}>/; s/bf16/f16/g' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=GQAF16
// GQAF16: error: 'decode.attention' op kernel family 'gqa_attention' needs an MMA of sm_90 on the cache's 'f16' (f16: online softmax only) with at least the group's 2 query heads as rows (heads_as_b = 0), and head_dim 128 a multiple of its k runs and columns
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {f32_operands = 2}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=GQARANGE
// GQARANGE: error: 'decode.attention' op kernel config f32_operands = 2 is outside [0, 1]
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {register_softmax = 2}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=REGRANGE
// REGRANGE: error: 'decode.attention' op kernel config register_softmax = 2 is outside [0, 1]
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {softmax_lanes = 0}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=LANESRANGE
// LANESRANGE: error: 'decode.attention' op kernel config softmax_lanes = 0 is outside [1, 64]
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 65}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=BLOCKSRANGE
// BLOCKSRANGE: error: 'decode.attention' op kernel config blocks_per_unit = 65 is outside [0, 64]
// Splits added in a cluster: a power of two the target can cluster, or 0.
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 6}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=CLUSTERPOW2
// CLUSTERPOW2: error: 'decode.attention' op kernel config cluster_splits = 6 needs a power of two from 2 to the 8 workgroups a cluster of sm_90 holds, or 0 (none)
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 2}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=CLUSTERAMD
// CLUSTERAMD: error: 'decode.attention' op kernel config cluster_splits = 2 needs clusters of workgroups, which gfx942 does not have: 0 (the splits go to attention_reduce)
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 1}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=CLUSTERONE
// CLUSTERONE: error: 'decode.attention' op kernel config cluster_splits = 1 needs a power of two from 2 to the 8 workgroups a cluster of sm_90 holds, or 0 (none)
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 16}>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=CLUSTERRANGE
// CLUSTERRANGE: error: 'decode.attention' op kernel config cluster_splits = 16 is outside [0, 8]
// A dispatch by batch size chooses linear kernels only.
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.dispatch<max_batch = [1], kernels = [#decode.kernel<"split_kv_attention", {}>, #decode.kernel<"gqa_attention", {}>]>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=DISPATCHATTN
// DISPATCHATTN: error: 'decode.attention' op 'decode.kernel' is a #decode.dispatch, which chooses the kernels of decode.linear and decode.sparse_linear only: give it one #decode.kernel

// An INT4 cache: gqa_attention on f16 MMAs (keys and values dequantised in
// registers; P rounded to f16 like the values, each step's loads issued a
// step ahead) with online softmax and a bf16 or f16 query; an f32 query
// (rounded by f16 MMAs) or unified max (weights leave f16's range) keeps
// split_kv_attention. The heads are B columns and the softmax goes through
// shared memory (register_softmax = 1 is a pinned alternative on NVIDIA).
// RUN: sed 's/head_dim = 128, bf16>/head_dim = 128, !decode.int4<groups = 4>>/g' %S/Inputs/head128-bf16.mlir > %t.int4.mlir
// RUN: fdc-opt %t.int4.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=INT4
// INT4: decode.attention {{.*}}decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 0 : i64, cluster_splits = {{[02]}} : i64, f32_operands = 0 : i64, fragment_loads = 0 : i64, heads_as_b = 1 : i64, max_splits = 64 : i64, min_split_length = 64 : i64, min_splits = 1 : i64, prefetch = 1 : i64, register_softmax = 0 : i64, softmax_lanes = 1 : i64,
// RUN: fdc-opt %t.int4.mlir --decode-select-kernels=target=gfx942 | FileCheck %s --check-prefix=INT4
// RUN: sed 's/bf16/f32/g' %t.int4.mlir | fdc-opt --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=INT4F32
// INT4F32: decode.attention {{.*}}decode.kernel = #decode.kernel<"split_kv_attention"
// Under unified max an INT4 cache takes gqa_attention on bf16 MMAs: on sm_90
// the softmax in every lane and the steps' rows through two shared-memory
// stages, four blocks a unit, splits for two waves of them but at least
// four; on gfx942 (wave64, whose 64 lanes do not share a step's 160 pieces
// of 16 bytes evenly) without stages.
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %t.int4.mlir > %t.int4-unified.mlir
// RUN: fdc-opt %t.int4-unified.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=INT4UNIFIED
// INT4UNIFIED: decode.attention {{.*}}decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 4 : i64, cluster_splits = 2 : i64, f32_operands = 0 : i64, fragment_loads = 0 : i64, heads_as_b = 1 : i64, max_splits = 64 : i64, min_split_length = 64 : i64, min_splits = 4 : i64, prefetch = 0 : i64, register_softmax = 1 : i64, softmax_lanes = 1 : i64, stages = 2 : i64, subgroups = 4 : i64, waves_per_unit = 2 : i64}>
// RUN: fdc-opt %t.int4-unified.mlir --decode-select-kernels=target=gfx942 | FileCheck %s --check-prefix=INT4UNIFIED942
// INT4UNIFIED942: decode.attention {{.*}}decode.kernel = #decode.kernel<"gqa_attention", {{{.*}} prefetch = 1 : i64, register_softmax = 0 : i64, softmax_lanes = 1 : i64, stages = 0 : i64,

// A hand-written config is kept and completed; the lowering builds it: 8
// subgroups of a block for the pinned GEMV (8 x 32 threads on sm_90, 8 x 64
// on gfx90a), 4 for the others.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 8}>} :/' %S/Inputs/head128-bf16.mlir > %t.pinned.mlir
// RUN: fdc-opt %t.pinned.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=PINNED
// RUN: fdc-opt %t.pinned.mlir --decode-assign-weight-layout --decode-select-kernels=target=sm_90 --convert-decode-to-gpu | FileCheck %s --check-prefix=BUILT32
// RUN: fdc-opt %t.pinned.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx90a | FileCheck %s --check-prefix=BUILT64
// PINNED: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 8 : i64, vector_bytes = 16 : i64}>} : tensor<?x512xbf16>, tensor<512x512xbf16>
// PINNED-NEXT: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [8, 16, 32, 64], {{.*}}>} : tensor<?x512xbf16>, tensor<256x512xbf16>
// BUILT32-DAG: gpu.func @{{linear_[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// BUILT32-DAG: gpu.func @{{linear_[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// BUILT64-DAG: gpu.func @{{linear_[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 512, 1, 1>}
// BUILT64-DAG: gpu.func @{{linear_[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}

// Bad kernels are refused, naming the op and the entry.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"flat_gemm_v9", {}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: 'decode.linear' op names unknown kernel family 'flat_gemm_v9'; known families: embedding, rms_norm, gemv, flat_gemm, tiled_gemm, group_gemm, sparse_row_scan, flash_spmm, group_spmm, rope, kv_append, split_kv_attention, gqa_attention, argmax, sample
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"rms_norm", {}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=WRONG
// WRONG: error: 'decode.linear' op cannot be lowered by kernel family 'rms_norm'
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {warps = 2}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: 'decode.linear' op kernel config entry 'warps' is not one of gemv's: rows_per_block, vector_bytes
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 32}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: 'decode.linear' op kernel config rows_per_block = 32 is outside [1, 16]
// RUN: sed 's/%x_0 = decode.rms_norm %h0, %ln_0 {eps = 1.0e-05 : f32}/%x_0 = decode.rms_norm %h0, %ln_0 {eps = 1.0e-05 : f32, decode.kernel = #decode.kernel<"rms_norm", {threads = 96}>}/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx90a 2>&1 | FileCheck %s --check-prefix=THREADS
// THREADS: error: 'decode.rms_norm' op kernel config threads = 96 must be a multiple of the subgroup size 64 in [64, 1024] on gfx90a
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {vector_bytes = 32}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=VECTOR
// VECTOR: error: 'decode.linear' op kernel config vector_bytes = 32 must be a power of two in [2, 16] ('bf16' elements, the target's widest load)
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {vector_bytes = 1}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NARROW
// NARROW: error: 'decode.linear' op kernel config vector_bytes = 1 must be a power of two in [2, 16] ('bf16' elements, the target's widest load)
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 4 : ui32}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=UNSIGNED
// UNSIGNED: error: 'decode.linear' op kernel config entry 'rows_per_block' must be a signless integer, got 4 : ui32
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = 3} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOTKERNEL
// NOTKERNEL: error: 'decode.linear' op 'decode.kernel' must be a #decode.kernel or a #decode.dispatch, got 3 : i64
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 1.5}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOTINT
// NOTINT: error: 'decode.linear' op kernel config entry 'rows_per_block' must be a signless integer, got 1.500000e+00 : f64

// A dispatch table written by hand is kept, its kernels completed; the step
// branches on the batch and launches one kernel of the table.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.dispatch<max_batch = [4], kernels = [#decode.kernel<"gemv", {}>, #decode.kernel<"flat_gemm", {batch_tiles = 2}>]>} :/' %S/Inputs/head128-bf16.mlir > %t.dispatch.mlir
// RUN: fdc-opt %t.dispatch.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=DISPATCH
// RUN: fdc-opt %t.dispatch.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=BRANCH
// DISPATCH: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [4], kernels = [#decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 2 : i64, k_unroll = 4 : i64, row_tiles = 1 : i64, subgroups = 4 : i64}>]>} : tensor<?x512xbf16>, tensor<512x512xbf16>
// BRANCH-LABEL: func.func @fdc_model_step
// BRANCH: %[[BATCH:.*]] = llvm.load
// BRANCH: %[[BOUND:.*]] = arith.constant 4 : i64
// BRANCH: %[[FITS:.*]] = arith.cmpi sle, %[[BATCH]], %[[BOUND]] : i64
// BRANCH: cf.cond_br %[[FITS]], ^[[GEMV:bb[0-9]+]], ^[[FLAT:bb[0-9]+]]
// BRANCH: ^[[GEMV]]:
// BRANCH: gpu.launch_func  @fdc_kernels::@[[GEMVK:linear_[0-9]+]] blocks in
// BRANCH-NEXT: cf.br ^[[REST:bb[0-9]+]]
// BRANCH: ^[[FLAT]]:
// BRANCH: gpu.launch_func  @fdc_kernels::@[[FLATK:linear_[0-9]+]] blocks in
// BRANCH-NEXT: cf.br ^[[REST]]
// BRANCH: ^[[REST]]:
// RUN: fdc-opt %t.dispatch.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=KERNELS
// KERNELS: gpu.func @{{linear_[0-9]+}}({{.*}}) workgroup({{.*}} : memref<512xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// KERNELS: nvvm.mma.sync

// Bad tables are refused, naming the op.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.dispatch<max_batch = [4, 2], kernels = [#decode.kernel<"gemv", {}>, #decode.kernel<"gemv", {}>, #decode.kernel<"gemv", {}>]>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=ORDER
// ORDER: error: #decode.dispatch max_batch must be increasing and at least 1, got [4, 2]
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.dispatch<max_batch = [4], kernels = [#decode.kernel<"gemv", {}>]>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: #decode.dispatch needs one kernel more than max_batch bounds (the last runs above them), got 1 kernels for 1 bounds
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.dispatch<max_batch = [4], kernels = [#decode.kernel<"gemv", {}>, #decode.kernel<"flat_gemm", {batch_tiles = 9}>]>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=CASE
// CASE: error: 'decode.linear' op kernel config batch_tiles = 9 is outside [1, 8]
// A flat GEMM needs an MMA for its types: none on f32, none on a library for
// CDNA and RDNA together.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"flat_gemm", {}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx1100,gfx90a 2>&1 | FileCheck %s --check-prefix=NOMMA
// NOMMA: error: 'decode.linear' op cannot use kernel 'flat_gemm': it needs f16 or bf16 input and weight, K a multiple of the target's vector width, and a target with a matrix multiply-accumulate for them
