// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --fdc-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=scf. --implicit-check-not=memref. \
// RUN:       --implicit-check-not=arith. --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:       --implicit-check-not=unrealized_conversion_cast --implicit-check-not=decode.

// decode.rope with a partial rotary_dim (4 of head_dim 8): element j < 2
// pairs with j + 2 and rotates by position / theta^(2j / rotary_dim); the
// elements past rotary_dim are copied. tensor.expand_shape/collapse_shape
// become memref views, and the logits (a view, not an op's own result) are
// copied to the caller's buffer at the end.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         llvm.getelementptr %arg0[6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[POS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         llvm.getelementptr %arg0[12] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[LOGITS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x16xf32>
// CHECK:         %[[X:.*]] = memref.alloc(%{{.*}}) : memref<?x16xf32>
// CHECK:         %[[XH:.*]] = memref.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 2, 8] : memref<?x16xf32> into memref<?x2x8xf32>
// CHECK:         %[[R:.*]] = memref.alloc(%{{.*}}) : memref<?x2x8xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[P:.*]] = memref.load %[[POS]][%[[I]]] : memref<?xi32>
// CHECK:           %[[PF:.*]] = arith.sitofp %[[P]] : i32 to f32
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[HALF:.*]] = arith.constant 2 : index
// CHECK:             scf.for %[[J:[^ ]+]] = %{{.*}} to %[[HALF]] step %{{.*}} {
// CHECK:               %[[THETA:.*]] = arith.constant 5.000000e+05 : f32
// CHECK:               %[[POW:.*]] = math.powf %[[THETA]], %{{.*}} : f32
// CHECK:               %[[INV:.*]] = arith.divf %{{.*}}, %[[POW]] : f32
// CHECK:               %[[ANGLE:.*]] = arith.mulf %[[PF]], %[[INV]] : f32
// CHECK:               %[[COS:.*]] = math.cos %[[ANGLE]] : f32
// CHECK:               %[[SIN:.*]] = math.sin %[[ANGLE]] : f32
// CHECK:               %[[J2:.*]] = arith.addi %[[J]], %{{.*}} : index
// CHECK:               %[[X1:.*]] = memref.load %[[XH]][%[[I]], %[[H]], %[[J]]] : memref<?x2x8xf32>
// CHECK:               %[[X2:.*]] = memref.load %[[XH]][%[[I]], %[[H]], %[[J2]]] : memref<?x2x8xf32>
// CHECK:               %[[A:.*]] = arith.mulf %[[X1]], %[[COS]] : f32
// CHECK:               %[[B:.*]] = arith.mulf %[[X2]], %[[SIN]] : f32
// CHECK:               %[[Y1:.*]] = arith.subf %[[A]], %[[B]] : f32
// CHECK:               memref.store %[[Y1]], %[[R]][%[[I]], %[[H]], %[[J]]] : memref<?x2x8xf32>
// CHECK:               %[[C:.*]] = arith.mulf %[[X2]], %[[COS]] : f32
// CHECK:               %[[D:.*]] = arith.mulf %[[X1]], %[[SIN]] : f32
// CHECK:               %[[Y2:.*]] = arith.addf %[[C]], %[[D]] : f32
// CHECK:               memref.store %[[Y2]], %[[R]][%[[I]], %[[H]], %[[J2]]] : memref<?x2x8xf32>
// CHECK:             }
// CHECK:             %[[RD:.*]] = arith.constant 4 : index
// CHECK:             %[[HD:.*]] = arith.constant 8 : index
// CHECK:             scf.for %[[J:[^ ]+]] = %[[RD]] to %[[HD]] step %{{.*}} {
// CHECK:               %[[V:.*]] = memref.load %[[XH]][%[[I]], %[[H]], %[[J]]] : memref<?x2x8xf32>
// CHECK:               memref.store %[[V]], %[[R]][%[[I]], %[[H]], %[[J]]] : memref<?x2x8xf32>
// CHECK:         %[[RF:.*]] = memref.collapse_shape %[[R]] {{\[}}[0], [1, 2]] : memref<?x2x8xf32> into memref<?x16xf32>
// CHECK:         memref.copy %[[RF]], %[[LOGITS]] : memref<?x16xf32> to memref<?x16xf32>
// CHECK:         memref.dealloc %[[X]] : memref<?x16xf32>
// CHECK:         memref.dealloc %[[R]] : memref<?x2x8xf32>
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.intr.pow
// LLVM:         llvm.intr.cos
// LLVM:         llvm.intr.sin
// LLVM:         "llvm.intr.memcpy"
// LLVM:         llvm.return
decode.model @rope attributes {config = {vocab_size = 16 : i64}} {
  decode.weight @emb : tensor<32x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x16xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %e = decode.weight_ref @emb : tensor<32x16xf32>
    %x = decode.embedding %e[%tokens] : tensor<32x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %xh = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
    %r = decode.rope %xh, %positions {rotary_dim = 4 : i64, theta = 5.000000e+05 : f32} : tensor<?x2x8xf32> -> tensor<?x2x8xf32>
    %logits = tensor.collapse_shape %r [[0], [1, 2]] : tensor<?x2x8xf32> into tensor<?x16xf32>
    %next = decode.argmax %logits : tensor<?x16xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x16xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
