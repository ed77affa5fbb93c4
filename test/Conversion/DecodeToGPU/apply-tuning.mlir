// decode-apply-tuning writes a tuning file's measured tables on the linears
// whose signature (N, K, dtype, activation, bias, residual) it lists, marked
// "tuned"; the others keep the heuristic table, and a hand-written kernel
// is kept.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%S/Inputs/tuning-sm90.json target=sm_90" | FileCheck %s
// CHECK: decode.linear {{.*}}{decode.kernel = #decode.dispatch<max_batch = [2, 64], kernels = [#decode.kernel<"gemv", {rows_per_block = 8 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 3 : i64, row_tiles = 2 : i64, subgroups = 8 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 4 : i64, k_unroll = 2 : i64, row_tiles = 1 : i64, subgroups = 4 : i64}>]>, decode.kernel_source = "tuned"} : tensor<?x512xbf16>, tensor<512x512xbf16>
// CHECK-NEXT: decode.linear %{{[0-9]+}}, %{{[0-9]+}} : tensor<?x512xbf16>, tensor<256x512xbf16>
// CHECK: decode.linear %{{[a-z0-9]+}}, %{{[0-9]+}} residual %{{[0-9]+}} : tensor<?x512xbf16>, tensor<512x512xbf16>
// CHECK: decode.linear {{.*}}decode.kernel = #decode.dispatch<max_batch = [], kernels = [#decode.kernel<"gemv", {rows_per_block = 2 : i64, vector_bytes = 16 : i64}>]>, decode.kernel_source = "tuned"}
// CHECK: decode.linear {{.*}}decode.kernel_source = "tuned"{{.*}}tensor<512x512xbf16>
// CHECK: decode.linear %{{[0-9]+}}, %{{[0-9]+}} : tensor<?x512xbf16>, tensor<1000x512xbf16> -> tensor<?x1000xf32>

// Then decode-select-kernels fills the heuristic table of the others, and
// the manifest's tables say which is which.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%S/Inputs/tuning-sm90.json target=sm_90" --decode-select-kernels | FileCheck %s --check-prefix=SELECT
// SELECT: decode.linear {{.*}}max_batch = [2, 64]{{.*}}decode.kernel_source = "tuned"
// SELECT-NEXT: decode.linear {{.*}}max_batch = [8, 16, 32, 64]
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --decode-apply-tuning="file=%S/Inputs/tuning-sm90.json target=sm_90" --convert-decode-to-gpu | FileCheck %s --check-prefix=TABLES
// TABLES: fdc.linear_tables = [{activation = "none", bias = false, count = 2 : i64, dtype = "bf16", k = 512 : i64, kernels = #decode.dispatch<max_batch = [2, 64], {{.*}}>, n = 512 : i64, residual = false, source = "tuned"}, {activation = "none", bias = false, count = 4 : i64, dtype = "bf16", k = 512 : i64, kernels = #decode.dispatch<max_batch = [8, 16, 32, 64], {{.*}}>, n = 256 : i64, residual = false, source = "heuristic"}
// TABLES-SAME: {activation = "silu_gate_up", bias = false, count = 2 : i64, dtype = "bf16", k = 512 : i64, kernels = #decode.dispatch<max_batch = [], kernels = [#decode.kernel<"gemv", {rows_per_block = 2 : i64, vector_bytes = 16 : i64}>]>, n = 2048 : i64, residual = false, source = "tuned"}

// A kernel written by hand wins over the file; a table written by hand is
// "ir", decode-select-kernels's default stays "heuristic".
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {rows_per_block = 16}>} :/' %S/Inputs/head128-bf16.mlir > %t.pinned.mlir
// RUN: fdc-opt %t.pinned.mlir --decode-assign-weight-layout --decode-apply-tuning="file=%S/Inputs/tuning-sm90.json target=sm_90" --decode-select-kernels --convert-decode-to-gpu | FileCheck %s --check-prefix=PINNED
// PINNED: fdc.linear_tables = [{activation = "none", bias = false, count = 1 : i64, dtype = "bf16", k = 512 : i64, kernels = #decode.kernel<"gemv", {rows_per_block = 16 : i64, vector_bytes = 16 : i64}>, n = 512 : i64, residual = false, source = "ir"}, {activation = "none", bias = false, count = 4 : i64, {{.*}}source = "heuristic"}, {{.*}}max_batch = [2, 64]{{.*}}source = "tuned"}

// Errors name the file and the entry.
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.missing.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot read tuning file '{{.*}}.missing.json': No such file or directory
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: error: decode-apply-tuning needs a tuning file (file=...)
// RUN: head -c 200 %S/Inputs/tuning-sm90.json > %t.truncated.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.truncated.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=JSON
// JSON: error: tuning file '{{.*}}.truncated.json' is not valid JSON: {{.*}}
// RUN: sed 's/"flat_gemm", "config": {"row_tiles": 2/"tiled_gemm_v9", "config": {"row_tiles": 2/' %S/Inputs/tuning-sm90.json > %t.family.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.family.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=FAMILY
// FAMILY: error: tuning file '{{.*}}.family.json': signatures[0].dispatch.kernels[1]: unknown kernel family 'tiled_gemm_v9'; known families: embedding, rms_norm, gemv, flat_gemm,
// RUN: sed 's/"rows_per_block": 8/"rows_per_block": 64/' %S/Inputs/tuning-sm90.json > %t.config.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.config.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=CONFIG
// CONFIG: error: 'decode.linear' op tuning file '{{.*}}.config.json': signatures[0].dispatch.kernels[0]: 'decode.linear' op kernel config rows_per_block = 64 is outside [1, 32]
// RUN: sed 's/"subgroups": 8, "k_unroll": 3/"subgroups": 8, "k_unroll": 3, "warps": 2/' %S/Inputs/tuning-sm90.json > %t.entry.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.entry.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: signatures[0].dispatch.kernels[1]: 'decode.linear' op kernel config entry 'warps' is not one of flat_gemm's
// RUN: sed 's/"k_unroll": 3/"k_unroll": "3"/' %S/Inputs/tuning-sm90.json > %t.type.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.type.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=TYPE
// TYPE: error: tuning file '{{.*}}.type.json': signatures[0].dispatch.kernels[1]: config entry 'k_unroll' must be an integer
// RUN: sed 's/"max_batch": \[2, 64\]/"max_batch": [64, 2]/' %S/Inputs/tuning-sm90.json > %t.bounds.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.bounds.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=BOUNDS
// BOUNDS: error: tuning file '{{.*}}.bounds.json': signatures[0].dispatch.max_batch[1]: bounds must be increasing integers in [1, 2147483648]
// RUN: sed 's/"max_batch": \[2, 64\]/"max_batch": [2]/' %S/Inputs/tuning-sm90.json > %t.count.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.count.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT: error: tuning file '{{.*}}.count.json': signatures[0].dispatch: needs one kernel more than max_batch bounds (the last runs above them), got 3 kernels for 1 bounds
// RUN: sed 's/"n": 999/"n": 512/' %S/Inputs/tuning-sm90.json > %t.twice.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.twice.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: tuning file '{{.*}}.twice.json': signatures[2]: signature (n=512 k=512 dtype=bf16 activation=none bias=0 residual=0) is listed twice, first as signatures[0]
// RUN: sed 's/"activation": "silu_gate_up"/"activation": "gelu"/' %S/Inputs/tuning-sm90.json > %t.act.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.act.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=ACT
// ACT: error: tuning file '{{.*}}.act.json': signatures[1]: unknown activation 'gelu' (none or silu_gate_up)
// RUN: sed 's/"fdc_tuning_version": 1/"fdc_tuning_version": 2/' %S/Inputs/tuning-sm90.json > %t.version.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.version.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=VERSION
// VERSION: error: tuning file '{{.*}}.version.json': the file: fdc_tuning_version 2 is not supported (this compiler reads 1)
// RUN: sed 's/"n": 512, "k": 512/"n": -512, "k": 512/' %S/Inputs/tuning-sm90.json > %t.range.json
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%t.range.json target=sm_90" 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: tuning file '{{.*}}.range.json': signatures[0]: 'n' must be an integer in [1, 2147483647]

// A table measured on another GPU is refused.
// RUN: not fdc-opt %S/Inputs/head128-bf16.mlir --decode-apply-tuning="file=%S/Inputs/tuning-sm90.json target=sm_80" 2>&1 | FileCheck %s --check-prefix=ARCH
// ARCH: error: tuning file '{{.*}}tuning-sm90.json' was measured on sm_90, but the kernels are generated for sm_80; tune on an sm_80 GPU
