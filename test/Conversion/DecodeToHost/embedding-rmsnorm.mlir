// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --split-input-file --fdc-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=scf. --implicit-check-not=memref. \
// RUN:       --implicit-check-not=arith. --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:       --implicit-check-not=unrealized_conversion_cast --implicit-check-not=decode.

// decode.embedding and decode.rms_norm (f32). The step returns its tokens as
// the next tokens: a step argument returned is copied to the caller's buffer.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK-NOT:     decode.
// The batch size M is field 0 of FdcStepArgs.
// CHECK:         %[[M_PTR:.*]] = llvm.getelementptr %arg0[0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[M_I64:.*]] = llvm.load %[[M_PTR]] : !llvm.ptr -> i64
// CHECK:         %[[M:.*]] = arith.index_cast %[[M_I64]] : i64 to index
// The tokens (field 5) become a memref<?xi32> over the caller's array.
// CHECK:         llvm.getelementptr %arg0[5] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[TOKENS:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<?xi32>
// The KV cache (field 4): [slots][layers][2][kv_heads][max_context][head_dim].
// CHECK:         llvm.getelementptr %arg0[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} to memref<?x1x2x1x?x4xf32>
// The logits (field 12) and next tokens (field 13) are the caller's buffers.
// CHECK:         llvm.getelementptr %arg0[12] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[LOGITS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xf32>
// CHECK:         llvm.getelementptr %arg0[13] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[NEXT:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// The embedding table is at offset 0 of the weight arena (field 3).
// CHECK:         %[[ARENA0:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK:         llvm.getelementptr %[[ARENA0]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %[[TABLE:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<16x8xf32>
// decode.embedding: rows gathered into a heap buffer.
// CHECK:         %[[H:.*]] = memref.alloc(%[[M]]) : memref<?x8xf32>
// CHECK:         %[[NTOK:.*]] = memref.dim %[[TOKENS]], %{{.*}} : memref<?xi32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %[[NTOK]] step %{{.*}} {
// CHECK:           %[[TOK_I32:.*]] = memref.load %[[TOKENS]][%[[I]]] : memref<?xi32>
// CHECK:           %[[TOK_IDX:.*]] = arith.index_cast %[[TOK_I32]] : i32 to index
// The id is clamped into the table's 16 rows.
// CHECK:           %[[TOK_LO:.*]] = arith.maxsi %[[TOK_IDX]], %{{.*}} : index
// CHECK:           %[[C15:.*]] = arith.constant 15 : index
// CHECK:           %[[TOK:.*]] = arith.minsi %[[TOK_LO]], %[[C15]] : index
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[X:.*]] = memref.load %[[TABLE]][%[[TOK]], %[[J]]] : memref<16x8xf32>
// CHECK:             memref.store %[[X]], %[[H]][%[[I]], %[[J]]] : memref<?x8xf32>
// The norm weight follows at the next multiple of 256 bytes: 16*8*4 = 512.
// CHECK:         llvm.getelementptr %{{.*}}[512] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK:         %[[NORM:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<8xf32>
// decode.rms_norm: sum of squares, mean, rsqrt(mean + eps), scale; written
// straight into the caller's logits.
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[SS:.*]] = scf.for %[[J:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:[^ ]+]] = %[[ZERO]]) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %[[H]][%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK:             %[[X2:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK:             %[[SUM:.*]] = arith.addf %[[ACC]], %[[X2]] : f32
// CHECK:             scf.yield %[[SUM]] : f32
// CHECK:           %[[N:.*]] = arith.constant 8.000000e+00 : f32
// CHECK:           %[[MEAN:.*]] = arith.divf %[[SS]], %[[N]] : f32
// CHECK:           %[[EPS:.*]] = arith.constant 9.99999974E-6 : f32
// CHECK:           %[[VAR:.*]] = arith.addf %[[MEAN]], %[[EPS]] : f32
// CHECK:           %[[RSQRT:.*]] = math.rsqrt %[[VAR]] : f32
// CHECK:           scf.for %[[J:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[X:.*]] = memref.load %[[H]][%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK:             %[[NX:.*]] = arith.mulf %[[X]], %[[RSQRT]] : f32
// CHECK:             %[[W:.*]] = memref.load %[[NORM]][%[[J]]] : memref<8xf32>
// CHECK:             %[[Y:.*]] = arith.mulf %[[NX]], %[[W]] : f32
// CHECK:             memref.store %[[Y]], %[[LOGITS]][%[[I]], %[[J]]] : memref<?x8xf32>
// CHECK:         memref.copy %[[TOKENS]], %[[NEXT]] : memref<?xi32> to memref<?xi32>
// CHECK:         memref.dealloc %[[H]] : memref<?x8xf32>
// CHECK:         return
// CHECK-NEXT:  }

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.call @malloc
// LLVM:         llvm.intr.sqrt
// LLVM:         "llvm.intr.memcpy"
// LLVM:         llvm.call @free
// LLVM:         llvm.return
decode.model @embed_norm attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  decode.weight @norm : tensor<8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %w = decode.weight_ref @norm : tensor<8xf32>
    %x = decode.rms_norm %h, %w {eps = 1.0e-05 : f32} : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
    return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// bf16 activations: loads widen to f32, the normalised value is rounded to
// bf16 before the weight scales it (as Hugging Face does), stores narrow.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         memref.alloc(%{{.*}}) : memref<?x8xbf16>
// CHECK:         scf.for
// CHECK:           memref.load %{{.*}} : memref<16x8xbf16>
// CHECK:           memref.store %{{.*}} : memref<?x8xbf16>
// CHECK:         %[[XN:.*]] = memref.alloc(%{{.*}}) : memref<?x8xbf16>
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} iter_args
// CHECK:             %[[LOAD:.*]] = memref.load %{{.*}} : memref<?x8xbf16>
// CHECK:             arith.extf %[[LOAD]] : bf16 to f32
// CHECK:           math.rsqrt
// CHECK:           scf.for
// CHECK:             %[[NX:.*]] = arith.mulf
// CHECK:             %[[ROUND:.*]] = arith.truncf %[[NX]] : f32 to bf16
// CHECK:             %[[BACK:.*]] = arith.extf %[[ROUND]] : bf16 to f32
// CHECK:             %[[W:.*]] = memref.load %{{.*}} : memref<8xbf16>
// CHECK:             %[[WF:.*]] = arith.extf %[[W]] : bf16 to f32
// CHECK:             %[[Y:.*]] = arith.mulf %[[BACK]], %[[WF]] : f32
// CHECK:             %[[YB:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK:             memref.store %[[YB]], %[[XN]]
// CHECK:         memref.dealloc
// CHECK:         memref.dealloc
// CHECK:         return

// bf16 <-> f32 conversions become integer arithmetic (no libgcc helpers).
// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM-NOT:     fptrunc
// LLVM:         llvm.return
decode.model @embed_norm_bf16 attributes {config = {vocab_size = 4 : i64}} {
  decode.weight @emb : tensor<16x8xbf16>
  decode.weight @norm : tensor<8xbf16>
  decode.weight @head : tensor<4x8xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>) -> (tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>) {
    %e = decode.weight_ref @emb : tensor<16x8xbf16>
    %h = decode.embedding %e[%tokens] : tensor<16x8xbf16>, tensor<?xi32> -> tensor<?x8xbf16>
    %w = decode.weight_ref @norm : tensor<8xbf16>
    %x = decode.rms_norm %h, %w {eps = 1.0e-05 : f32} : tensor<?x8xbf16>, tensor<8xbf16> -> tensor<?x8xbf16>
    %wh = decode.weight_ref @head : tensor<4x8xbf16>
    %logits = decode.linear %x, %wh : tensor<?x8xbf16>, tensor<4x8xbf16> -> tensor<?x4xf32>
    %next = decode.argmax %logits : tensor<?x4xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>
  }
}
