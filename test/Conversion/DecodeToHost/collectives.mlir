// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --fdc-host-to-llvm | FileCheck %s --check-prefix=LLVM --implicit-check-not=decode.

// A rank's host step calls the group's collectives through
// FdcStepArgs::collective (field 16): all_reduce_sum (field 3 of
// FdcCollectiveApi) with the partial sum, its output, M * 16 elements and
// FDC_DTYPE_F32, then adds the residual; all_gather_columns (field 4) with
// the rank's logits, the whole logits, no workspace, M rows of 4 columns.

// CHECK-LABEL: func.func @fdc_model_step(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[FIELD:.*]] = llvm.getelementptr %[[ARGS]][16] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[API:.*]] = llvm.load %[[FIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[CTXP:.*]] = llvm.getelementptr %[[API]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[CTX:.*]] = llvm.load %[[CTXP]]
// CHECK: %[[FNP:.*]] = llvm.getelementptr %[[API]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[FN:.*]] = llvm.load %[[FNP]]
// CHECK: llvm.call %[[FN]](%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %c0_i64{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// The residual, added once after the sum.
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[GATHER:.*]] = llvm.load
// CHECK: llvm.call %[[GATHER]](%{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32

// LLVM-LABEL: llvm.func @fdc_model_step
// LLVM-COUNT-2: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// LLVM: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
