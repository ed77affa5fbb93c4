// decode-select-kernels writes each kernel op's family and complete config
// for the target; a kernel written by hand is kept, checked and completed,
// and convert-decode-to-gpu builds what it names.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=SM90
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-select-kernels=target=gfx90a | FileCheck %s --check-prefix=GFX90A

// SM90: module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90"
// SM90: decode.embedding {{.*}}{decode.kernel = #decode.kernel<"embedding", {threads = 256 : i64, vector_bytes = 16 : i64}>}
// SM90: decode.rms_norm {{.*}}{decode.kernel = #decode.kernel<"rms_norm", {threads = 256 : i64}>
// SM90: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>}
// SM90: decode.rope {{.*}}decode.kernel = #decode.kernel<"rope", {threads = 256 : i64}>
// SM90: decode.kv_append {{.*}}{decode.kernel = #decode.kernel<"kv_append", {}>
// SM90: decode.attention {{.*}}decode.kernel = #decode.kernel<"split_kv_attention", {max_splits = 64 : i64, min_split_length = 64 : i64, subgroups = 4 : i64, waves_per_unit = 2 : i64}>
// SM90: decode.sample {{.*}}{decode.kernel = #decode.kernel<"sample", {threads = 256 : i64}>}
// GFX90A: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>}

// A hand-written config is kept and completed; the lowering builds it: 8
// subgroups of a block for the pinned GEMV (8 x 32 threads on sm_90, 8 x 64
// on gfx90a), 4 for the others.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 8}>} :/' %S/Inputs/head128-bf16.mlir > %t.pinned.mlir
// RUN: fdc-opt %t.pinned.mlir --decode-select-kernels=target=sm_90 | FileCheck %s --check-prefix=PINNED
// RUN: fdc-opt %t.pinned.mlir --decode-assign-weight-layout --decode-select-kernels=target=sm_90 --convert-decode-to-gpu | FileCheck %s --check-prefix=BUILT32
// RUN: fdc-opt %t.pinned.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx90a | FileCheck %s --check-prefix=BUILT64
// PINNED: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 8 : i64, vector_bytes = 16 : i64}>} : tensor<?x512xbf16>, tensor<512x512xbf16>
// PINNED-NEXT: decode.linear {{.*}}{decode.kernel = #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>} : tensor<?x512xbf16>, tensor<256x512xbf16>
// BUILT32: gpu.func @linear_0({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// BUILT32: gpu.func @linear_1({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// BUILT64: gpu.func @linear_0({{.*}}) kernel attributes {known_block_size = array<i32: 512, 1, 1>}
// BUILT64: gpu.func @linear_1({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}

// Bad kernels are refused, naming the op and the entry.
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"flat_gemm_v9", {}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: 'decode.linear' op names unknown kernel family 'flat_gemm_v9'; known families: embedding, rms_norm, gemv, sparse_row_scan, rope, kv_append, split_kv_attention, argmax, sample
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
// VECTOR: error: 'decode.linear' op kernel config vector_bytes = 32 must be a power of two of at most 16
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = 3} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOTKERNEL
// NOTKERNEL: error: 'decode.linear' op 'decode.kernel' must be a #decode.kernel, got 3 : i64
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 1.5}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOTINT
// NOTINT: error: 'decode.linear' op kernel config entry 'rows_per_block' must be an integer, got 1.500000e+00 : f64
