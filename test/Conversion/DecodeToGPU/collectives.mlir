// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90})' | FileCheck %s
// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-gpu{target=gfx942})' | FileCheck %s
// RUN: fdc-opt %S/../../Dialect/Decode/Transforms/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2},decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90},fdc-lower-kernel-launches)' \
// RUN:   | FileCheck %s --check-prefix=LAUNCH --implicit-check-not=gpu.launch_func

// A rank's GPU step: rank 0 adds a row-parallel linear's residual in its
// partial product's epilogue (the kernels with the residual argument, in the
// branch taken where FdcCollectiveApi field 1, the rank, is 0), the other
// ranks run the product alone; then the all-reduce is a call of the
// runtime's all_reduce_sum (FdcStepArgs field 16, FdcCollectiveApi field 3)
// on the partial sum's and the result's device buffers, and no kernel runs
// after it. The gather calls all_gather_columns (field 4) with the step's
// workspace. A failed call returns from the step.

// CHECK-NOT: gpu.func @residual_add
// CHECK-LABEL: func.func @fdc_model_step(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[RFIELD:.*]] = llvm.getelementptr %[[ARGS]][16] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[RAPI:.*]] = llvm.load %[[RFIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[RANKP:.*]] = llvm.getelementptr %[[RAPI]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[RANK:.*]] = llvm.load %[[RANKP]] : !llvm.ptr -> i64
// CHECK: %[[ADDS:.*]] = arith.cmpi eq, %[[RANK]], %{{.*}} : i64
// CHECK: cf.cond_br %[[ADDS]], ^[[WITH:.*]], ^[[WITHOUT:.*]]
// CHECK: ^[[WITH]]:
// CHECK: gpu.launch_func @fdc_kernels::@{{[a-z_]+}}_{{[0-9]+}} {{.*}} args(%[[IN:.*]] : !llvm.ptr, %[[W:.*]] : !llvm.ptr, %[[OUT:.*]] : !llvm.ptr, %[[RES:.*]] : !llvm.ptr, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: cf.br ^[[JOIN:.*]]
// CHECK: ^[[WITHOUT]]:
// CHECK: gpu.launch_func @fdc_kernels::@{{[a-z_]+}}_{{[0-9]+}} {{.*}} args(%[[IN]] : !llvm.ptr, %[[W]] : !llvm.ptr, %[[OUT]] : !llvm.ptr, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: cf.br ^[[JOIN]]
// CHECK: ^[[JOIN]]:
// CHECK: %[[FIELD:.*]] = llvm.getelementptr %[[ARGS]][16] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[API:.*]] = llvm.load %[[FIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.getelementptr %[[API]][3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[STATUS:.*]] = llvm.call %{{.*}}(%{{.*}}, %[[OUT]], %{{.*}}, %{{.*}}, %{{.*}}) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// CHECK: %[[FAILED:.*]] = arith.cmpi ne, %[[STATUS]], %{{.*}} : i32
// CHECK: cf.cond_br %[[FAILED]], ^[[EXIT:.*]], ^[[REST:.*]]
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: return
// CHECK: ^[[REST]]:
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.launch_func @fdc_kernels::@rms_norm_{{[0-9]+}}
// CHECK: llvm.getelementptr %{{.*}}[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32

// LAUNCH-LABEL: func.func @fdc_model_step
// LAUNCH-COUNT-2: : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64) -> i32
// LAUNCH: : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64) -> i32
