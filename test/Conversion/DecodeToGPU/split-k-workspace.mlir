// The step's workspace holds the f32 partial sums of kernels that split K
// and add their splits in a second kernel (linear_epilogue); a kernel whose
// splits add their sums in a cluster (sm_90a, two splits) takes none, so
// its scratch per sequence is that of K whole.
// RUN: sed 's/%y = decode.linear %x, %w :/%y = decode.linear %x, %w {decode.kernel = #decode.kernel<"group_gemm", {groups = 1, row_tiles = 1, batch = 8, stages = 4, split_k = 1}>} :/' %S/Inputs/one-linear-bf16.mlir > %t.whole.mlir
// RUN: fdc-opt %t.whole.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=WHOLE
// RUN: sed 's/split_k = 1/split_k = 2/' %t.whole.mlir | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=CLUSTER
// RUN: sed 's/split_k = 1/split_k = 3/' %t.whole.mlir | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=WORKSPACE
// WHOLE: fdc.scratch_bytes_per_sequence = 17232 : i64
// (With 2 x 4000 f32 sums a batch row reserved, as before: 41040.)
// CLUSTER: fdc.scratch_bytes_per_sequence = 17232 : i64
// CLUSTER: nvvm.cluster_dim = array<i32: 1, 1, 2>
// Three splits: 3 x 4000 f32 sums a batch row, in scratch that the
// embedding's rows (dead by then) partly share.
// WORKSPACE: fdc.scratch_bytes_per_sequence = 57040 : i64
// WORKSPACE-NOT: nvvm.cluster_dim
// WORKSPACE: fdc_model_step
