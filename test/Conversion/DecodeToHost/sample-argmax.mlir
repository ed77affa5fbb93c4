// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --split-input-file --fdc-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=scf. --implicit-check-not=memref. \
// RUN:       --implicit-check-not=arith. --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:       --implicit-check-not=unrealized_conversion_cast --implicit-check-not=decode.

// decode.sample: temperature <= 0 takes the argmax; otherwise top-k and top-p
// thresholds are found by bisection over order-preserving integer keys of the
// f32 values (33 halvings cover the i32 range), and the first kept token
// whose running mass exceeds uniform * (kept mass) is drawn.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         llvm.getelementptr %arg0[8] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[TEMP:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         llvm.getelementptr %arg0[9] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[TOPK:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         llvm.getelementptr %arg0[10] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[TOPP:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         llvm.getelementptr %arg0[11] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[U:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         llvm.getelementptr %arg0[12] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[LOGITS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xf32>
// CHECK:         llvm.getelementptr %arg0[13] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[NEXT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// The embedding writes the logits straight into the caller's buffer.
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for %[[I:[^ ]+]] = {{.*}} {
// CHECK:           %[[T:.*]] = memref.load %[[TEMP]][%[[I]]] : memref<?xf32>
// CHECK:           %[[GREEDY:.*]] = arith.cmpf ole, %[[T]], %{{.*}} : f32
// CHECK:           scf.if %[[GREEDY]] {
// CHECK:             %[[BEST:.*]]:2 = scf.for {{.*}} -> (f32, index) {
// CHECK:               arith.cmpf ogt
// CHECK:             %[[ID:.*]] = arith.index_cast %[[BEST]]#1 : index to i32
// CHECK:             memref.store %[[ID]], %[[NEXT]][%[[I]]] : memref<?xi32>
// CHECK:           } else {
// The row's temperature (the kernel may reload it).
// CHECK:             %[[T2:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK:             %[[K32:.*]] = memref.load %[[TOPK]][%[[I]]] : memref<?xi32>
// CHECK:             %[[K:.*]] = arith.extsi %[[K32]] : i32 to i64
// Top-k: bisection over the keys of z = logits / T.
// CHECK:             %[[C33:.*]] = arith.constant 33 : index
// CHECK:             %[[KTH:.*]]:2 = scf.for %{{.*}} to %[[C33]] {{.*}} -> (i64, i64) {
// CHECK:               %[[COUNT:.*]] = scf.for {{.*}} -> (i64) {
// CHECK:                 %[[Z:.*]] = arith.divf %{{.*}}, %[[T2]] : f32
// CHECK:                 %[[BITS:.*]] = arith.bitcast %[[Z]] : f32 to i32
// CHECK:                 arith.xori %[[BITS]], %{{.*}} : i32
// CHECK:               arith.cmpi sge, %[[COUNT]], %[[K]] : i64
// CHECK:             %[[ZMAX:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:               arith.maximumf
// CHECK:             %[[TOTAL:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:               %[[SHIFTED:.*]] = arith.subf %{{.*}}, %[[ZMAX]] : f32
// CHECK:               math.exp %[[SHIFTED]] : f32
// Top-p: bisection over the bits of the (non-negative) probabilities.
// CHECK:             %[[P:.*]] = memref.load %[[TOPP]][%[[I]]] : memref<?xf32>
// CHECK:             %[[USEP:.*]] = arith.cmpf olt, %[[P]], %{{.*}} : f32
// CHECK:             %[[TARGET:.*]] = arith.mulf %[[P]], %[[TOTAL]] : f32
// CHECK:             %[[PK:.*]]:2 = scf.for {{.*}} -> (i64, i64) {
// CHECK:               %[[MASS:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:               arith.cmpf oge, %[[MASS]], %[[TARGET]] : f32
// CHECK:             %[[KEPT:.*]] = scf.for {{.*}} -> (f32) {
// The draw, and the scan for the first kept token past it.
// CHECK:             %[[UV:.*]] = memref.load %[[U]][%[[I]]] : memref<?xf32>
// CHECK:             %[[DRAW:.*]] = arith.mulf %[[UV]], %[[KEPT]] : f32
// CHECK:             %[[SCAN:.*]]:4 = scf.for {{.*}} -> (f32, index, i1, index) {
// CHECK:               arith.cmpf ogt, %{{.*}}, %[[DRAW]] : f32
// CHECK:             %[[PICK:.*]] = arith.select %[[SCAN]]#2, %[[SCAN]]#1, %[[SCAN]]#3 : index
// CHECK:             %[[ID:.*]] = arith.index_cast %[[PICK]] : index to i32
// CHECK:             memref.store %[[ID]], %[[NEXT]][%[[I]]] : memref<?xi32>
// CHECK:           }
// CHECK-NOT:     memref.dealloc
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.bitcast %{{.*}} : f32 to i32
// LLVM:         llvm.intr.exp
// LLVM:         llvm.return
decode.model @sample attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %logits = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// decode.argmax: the first index of the largest logit (ties keep the first).

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         llvm.getelementptr %arg0[12] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[LOGITS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xf32>
// CHECK:         llvm.getelementptr %arg0[13] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[NEXT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[M:.*]] = memref.dim %[[LOGITS]], %{{.*}} : memref<?x8xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %[[M]] step %{{.*}} {
// CHECK:           %[[V:.*]] = arith.constant 8 : index
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           %[[BEST:.*]]:2 = scf.for %[[J:[^ ]+]] = %{{.*}} to %[[V]] step %{{.*}} iter_args(%[[MAX:[^ ]+]] = %[[NEGINF]], %[[ARG:[^ ]+]] = %{{.*}}) -> (f32, index) {
// CHECK:             %[[X:.*]] = memref.load %[[LOGITS]][%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK:             %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[MAX]] : f32
// CHECK:             %[[NEWMAX:.*]] = arith.select %[[GT]], %[[X]], %[[MAX]] : f32
// CHECK:             %[[NEWARG:.*]] = arith.select %[[GT]], %[[J]], %[[ARG]] : index
// CHECK:             scf.yield %[[NEWMAX]], %[[NEWARG]] : f32, index
// CHECK:           %[[ID:.*]] = arith.index_cast %[[BEST]]#1 : index to i32
// CHECK:           memref.store %[[ID]], %[[NEXT]][%[[I]]] : memref<?xi32>
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.fcmp "ogt"
// LLVM:         llvm.return
decode.model @argmax attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %logits = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
