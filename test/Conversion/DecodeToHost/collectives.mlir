// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --fdc-host-to-llvm | FileCheck %s --check-prefix=LLVM --implicit-check-not=decode.

// A rank's host step calls the group's collectives through
// FdcStepArgs::collective (field 16): rank 0 (FdcCollectiveApi field 1)
// computes the row-parallel partial sum with the residual, the others
// without; then all_reduce_sum (field 3) with the partial sum, its output,
// M * 16 elements and FDC_DTYPE_F32, and nothing after it adds the residual;
// all_gather_columns (field 4) with the rank's logits, the whole logits, no
// workspace, M rows of 4 columns.

// CHECK-LABEL: func.func @fdc_model_step(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[RFIELD:.*]] = llvm.getelementptr %[[ARGS]][16] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[RAPI:.*]] = llvm.load %[[RFIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[RANKP:.*]] = llvm.getelementptr %[[RAPI]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[RANK:.*]] = llvm.load %[[RANKP]] : !llvm.ptr -> i64
// CHECK: %[[ADDS:.*]] = arith.cmpi eq, %[[RANK]], %{{.*}} : i64
// CHECK: scf.if %[[ADDS]] {
// CHECK: memref.load %{{.*}} : memref<?x16xf32>
// CHECK: } else {
// CHECK-NOT: memref.load %{{.*}} : memref<?x16xf32>
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: %[[FIELD:.*]] = llvm.getelementptr %[[ARGS]][16] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[API:.*]] = llvm.load %[[FIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[CTXP:.*]] = llvm.getelementptr %[[API]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[CTX:.*]] = llvm.load %[[CTXP]]
// CHECK: %[[FNP:.*]] = llvm.getelementptr %[[API]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[FN:.*]] = llvm.load %[[FNP]]
// CHECK: llvm.call %[[FN]](%[[CTX]], %{{.*}}, %{{.*}}, %{{.*}}, %c0_i64{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// The next op is the norm's output buffer: no loop adds the residual.
// CHECK-NEXT: memref.alloc
// CHECK: %[[NONE:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK: llvm.getelementptr %{{.*}}[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[GATHER:.*]] = llvm.load
// CHECK: llvm.call %[[GATHER]](%{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]], %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32

// LLVM-LABEL: llvm.func @fdc_model_step
// LLVM-COUNT-2: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// LLVM: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
