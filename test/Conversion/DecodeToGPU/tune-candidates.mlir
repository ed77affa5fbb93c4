// convert-decode-to-gpu{tuning-candidates}: every distinct decode.linear
// signature that has a choice lists its candidates (getLinearCandidates:
// gemv with 2, 4 and 8 rows a block, then flat_gemm over row_tiles x batch_tiles x subgroups, then ten
// tiled_gemms, four of them split in K, then on sm_90a group_gemms, each
// complete and checked), with the
// workspace its split-K candidates take, and fdc_tune_launch launches the
// one it is given on the buffers of FdcTuneArgs.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90 tuning-candidates=1" | FileCheck %s --check-prefix=SM90
// SM90: fdc.tune_signatures = [{activation = "none", bias = false, candidates = [#decode.kernel<"gemv", {rows_per_block = 2 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"gemv", {rows_per_block = 8 : i64, vector_bytes = 16 : i64}>,
// SM90-SAME: #decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 4 : i64, row_tiles = 1 : i64, subgroups = 4 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 4 : i64, row_tiles = 1 : i64, subgroups = 8 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, k_unroll = 4 : i64, row_tiles = 1 : i64, subgroups = 16 : i64}>,
// SM90-SAME: #decode.kernel<"flat_gemm", {batch_tiles = 2 : i64, k_unroll = 2 : i64, row_tiles = 1 : i64, subgroups = 4 : i64}>,
// SM90-SAME: #decode.kernel<"flat_gemm", {batch_tiles = 4 : i64, k_unroll = 2 : i64, row_tiles = 2 : i64, subgroups = 16 : i64}>,
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 4 : i64, warps_m = 1 : i64, warps_n = 4 : i64}>,
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 2 : i64, k_tile = 128 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 3 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>,
// 128 x 64 tiles in dynamic shared memory (4 stages of 192 x 64 bf16 = 96
// KiB), whole and split in K.
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 4 : i64, split_k = 1 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>,
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 4 : i64, split_k = 2 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>,
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 64 : i64, row_tiles = 4 : i64, split_k = 4 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>,
// SM90-SAME: #decode.kernel<"tiled_gemm", {batch_tiles = 4 : i64, k_tile = 32 : i64, row_tiles = 2 : i64, split_k = 4 : i64, stages = 4 : i64, warps_m = 2 : i64, warps_n = 2 : i64}>], dtype = "bf16", input_dtype = "bf16", k = 512 : i64, n = 512 : i64, out_dtype = "bf16", out_features = 512 : i64, residual = false,
// The largest split (4 ways) of N = 512 f32 per batch row.
// SM90-SAME: workspace_bytes_per_row = 8192 : i64}
// The silu_gate_up signature (2 x 512 outputs) and the f32 logits.
// SM90-SAME: {activation = "silu_gate_up", {{.*}}n = 2048 : i64, out_dtype = "bf16", out_features = 1024 : i64, residual = false, workspace_bytes_per_row = 32768 : i64}
// SM90-SAME: input_dtype = "bf16", k = 512 : i64, n = 1000 : i64, out_dtype = "f32", out_features = 1000 : i64, residual = false, workspace_bytes_per_row = 16000 : i64}]
// SM90: func.func @fdc_model_step(
// SM90: func.func @fdc_tune_launch(%arg0: !llvm.ptr) attributes {fdc.device_field = 9 : i64}
// 33 candidates per signature (32 for silu_gate_up, whose rows fill two
// stages of the 128-wide k tile past the static shared memory), 6
// signatures: one case per pair.
// SM90-COUNT-197: cf.cond_br
// SM90-NOT: cf.cond_br
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90 tuning-candidates=1" | FileCheck %s --check-prefix=COUNT
// COUNT-COUNT-33: #decode.kernel<
// COUNT-SAME: dtype = "bf16", input_dtype = "bf16", k = 512 : i64, n = 512 : i64,

// sm_90a adds 48 group GEMMs (wgmma): batch tiles of 16 to 128 columns,
// one group of one or two row tiles or two groups of one, K whole or split
// 2 or 4 ways, each with the most stages that fit up to 6 and, K whole (8
// k tiles here, so at most 9 stages), up to 16.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90a tuning-candidates=1" | FileCheck %s --check-prefix=SM90A
// The first signature's list: its first group GEMM, the same with 9
// stages, then exactly 46 more before the list ends.
// SM90A: fdc.tune_signatures = [{activation = "none", bias = false, candidates = [#decode.kernel<"gemv"
// SM90A-SAME: #decode.kernel<"group_gemm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 6 : i64}>, #decode.kernel<"group_gemm", {batch = 16 : i64, groups = 1 : i64, row_tiles = 1 : i64, split_k = 1 : i64, stages = 9 : i64}>{{(, #decode.kernel<"group_gemm", [^>]*>){46}()}}], dtype = "bf16", input_dtype = "bf16", k = 512 : i64, n = 512 : i64,

// The launches read the FdcDeviceApi from FdcTuneArgs::device (field 9).
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90 tuning-candidates=1" --fdc-lower-kernel-launches | FileCheck %s --check-prefix=LAUNCH
// LAUNCH: func.func @fdc_tune_launch(%[[ARGS:.*]]: !llvm.ptr)
// LAUNCH: llvm.getelementptr %[[ARGS]][9] : (!llvm.ptr) -> !llvm.ptr, i64
// LAUNCH: llvm.call

// gfx1100: 32 lanes and 1024 threads hold 16 subgroups too; wave64 gfx90a
// caps the flat GEMMs at 16 subgroups as well.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=gfx90a tuning-candidates=1" | FileCheck %s --check-prefix=GFX90A
// GFX90A: fdc.tune_signatures = [{activation = "none", bias = false, candidates = [#decode.kernel<"gemv", {rows_per_block = 2 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"gemv", {rows_per_block = 4 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"gemv", {rows_per_block = 8 : i64, vector_bytes = 16 : i64}>, #decode.kernel<"flat_gemm", {batch_tiles = 1 : i64, {{.*}}subgroups = 4 : i64}>

// f32 weights have no flat GEMM: nothing to choose (GEMV's default alone),
// nothing to tune, and without the option no entry point.
// RUN: sed 's/bf16/f32/g' %S/Inputs/head128-bf16.mlir | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90 tuning-candidates=1" | FileCheck %s --check-prefix=F32
// F32: fdc.tune_signatures = []
// F32: func.func @fdc_tune_launch
// F32-NOT: gpu.launch_func
// F32: return
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=PLAIN
// PLAIN-NOT: fdc.tune_signatures
// PLAIN-NOT: fdc_tune_launch

// A signature's candidates let the next launch start early (griddepcontrol
// launch_dependents) only where the step's kernels of its first op do,
// so that fdc tune times them as the step runs them: a lone linear, which
// argmax follows, signals in neither (before, every candidate signalled).
// RUN: sed '/%y = decode.linear/d; s/128x4000xbf16/128x520xbf16/g; s/linear %y, %head : tensor<?x4000xbf16>/linear %x, %head : tensor<?x520xbf16>/' %S/Inputs/one-linear-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90a tuning-candidates=1" \
// RUN:   | FileCheck %s --check-prefix=ALONE --implicit-check-not=launch_dependents
// ALONE:          fdc.tune_signatures = [{{{.*}}k = 520 : i64, n = 128 : i64
// ALONE:          nvvm.griddepcontrol wait
// ALONE-LABEL:    func.func @fdc_tune_launch(
// ALONE-COUNT-40:   gpu.launch_func
// The 4000 x 520 linear, which the head (another linear) follows, signals
// in its step kernels and in its candidates too: more kernels signal than
// the step's few.
// RUN: fdc-opt %S/Inputs/one-linear-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu="target=sm_90a tuning-candidates=1" \
// RUN:   | FileCheck %s --check-prefix=FOLLOWED
// FOLLOWED:          fdc.tune_signatures = [{{{.*}}k = 520 : i64, n = 4000 : i64
// FOLLOWED-COUNT-20: nvvm.griddepcontrol launch_dependents
