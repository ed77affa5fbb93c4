// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --fdc-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=scf. --implicit-check-not=memref. \
// RUN:       --implicit-check-not=arith. --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:       --implicit-check-not=unrealized_conversion_cast --implicit-check-not=decode.

// decode.linear: y[i, j] = sum_k x[i, k] * W[j, k], with the silu_gate_up
// epilogue (W = [gate; up]), a residual, and a bias.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         llvm.getelementptr %arg0[12] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[LOGITS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x6xf32>
// CHECK:         llvm.getelementptr %arg0[13] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[NEXT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[X:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>

// silu_gate_up: gate row j and up row j + 4 of the [8 x 8] weight (at 512).
// CHECK:         llvm.getelementptr %{{.*}}[512] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %[[WGU:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<8x8xf32>
// CHECK:         %[[G:.*]] = memref.alloc(%{{.*}}) : memref<?x4xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[N:.*]] = arith.constant 4 : index
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK:             %[[GATE:.*]] = scf.for %[[K:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[^ ]+]] = %{{.*}}) -> (f32) {
// CHECK:               %[[XV:.*]] = memref.load %[[X]][%[[I]], %[[K]]] : memref<?x8xf32>
// CHECK:               %[[WV:.*]] = memref.load %[[WGU]][%[[J]], %[[K]]] : memref<8x8xf32>
// CHECK:               %[[P:.*]] = arith.mulf %[[XV]], %[[WV]] : f32
// CHECK:               %[[S:.*]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK:               scf.yield %[[S]] : f32
// CHECK:             %[[UPROW:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:             %[[UP:.*]] = scf.for %[[K:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[^ ]+]] = %{{.*}}) -> (f32) {
// CHECK:               memref.load %[[WGU]][%[[UPROW]], %[[K]]] : memref<8x8xf32>
// CHECK:             %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:             %[[NEG:.*]] = arith.subf %{{.*}}, %[[GATE]] : f32
// CHECK:             %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK:             %[[DEN:.*]] = arith.addf %[[ONE]], %[[E]] : f32
// CHECK:             %[[SILU:.*]] = arith.divf %[[GATE]], %[[DEN]] : f32
// CHECK:             %[[Y:.*]] = arith.mulf %[[SILU]], %[[UP]] : f32
// CHECK:             memref.store %[[Y]], %[[G]][%[[I]], %[[J]]] : memref<?x4xf32>

// Residual: the down projection adds x[i, j].
// CHECK:         %[[WD:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<8x4xf32>
// CHECK:         %[[D:.*]] = memref.alloc(%{{.*}}) : memref<?x8xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[DOT:.*]] = scf.for
// CHECK:               memref.load %[[G]]
// CHECK:               memref.load %[[WD]]
// CHECK:             %[[R:.*]] = memref.load %[[X]][%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK:             %[[Y:.*]] = arith.addf %[[DOT]], %[[R]] : f32
// CHECK:             memref.store %[[Y]], %[[D]][%[[I]], %[[J]]] : memref<?x8xf32>

// Bias: the lm head adds b[j], straight into the caller's logits.
// CHECK:         %[[WH:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<6x8xf32>
// CHECK:         %[[B:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<6xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[DOT:.*]] = scf.for
// CHECK:               memref.load %[[D]]
// CHECK:               memref.load %[[WH]]
// CHECK:             %[[BV:.*]] = memref.load %[[B]][%[[J]]] : memref<6xf32>
// CHECK:             %[[Y:.*]] = arith.addf %[[DOT]], %[[BV]] : f32
// CHECK:             memref.store %[[Y]], %[[LOGITS]][%[[I]], %[[J]]] : memref<?x6xf32>
// CHECK:         memref.dealloc %[[X]] : memref<?x8xf32>
// CHECK:         memref.dealloc %[[G]] : memref<?x4xf32>
// CHECK:         memref.dealloc %[[D]] : memref<?x8xf32>
// CHECK-NOT:     memref.dealloc
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.intr.exp
// LLVM:         llvm.return
decode.model @linear attributes {config = {vocab_size = 6 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  decode.weight @gate_up : tensor<8x8xf32>
  decode.weight @down : tensor<8x4xf32>
  decode.weight @head : tensor<6x8xf32>
  decode.weight @head_bias : tensor<6xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x6xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %wgu = decode.weight_ref @gate_up : tensor<8x8xf32>
    %g = decode.linear %x, %wgu {activation = #decode<activation silu_gate_up>} : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x4xf32>
    %wd = decode.weight_ref @down : tensor<8x4xf32>
    %d = decode.linear %g, %wd residual %x : tensor<?x4xf32>, tensor<8x4xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %wh = decode.weight_ref @head : tensor<6x8xf32>
    %b = decode.weight_ref @head_bias : tensor<6xf32>
    %logits = decode.linear %d, %wh bias %b : tensor<?x8xf32>, tensor<6x8xf32>, tensor<6xf32> -> tensor<?x6xf32>
    %next = decode.argmax %logits : tensor<?x6xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x6xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
