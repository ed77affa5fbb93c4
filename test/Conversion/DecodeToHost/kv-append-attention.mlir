// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --split-input-file --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' \
// RUN:   | fdc-opt --split-input-file --fdc-host-to-llvm \
// RUN:   | FileCheck %s --check-prefix=LLVM --implicit-check-not=scf. --implicit-check-not=memref. \
// RUN:       --implicit-check-not=arith. --implicit-check-not=math. --implicit-check-not=func.func \
// RUN:       --implicit-check-not=unrealized_conversion_cast --implicit-check-not=decode.

// decode.kv_append writes this step's K/V rows into the caller's cache in
// place, at [slot][layer][k=0|v=1][kv_head][position]; decode.attention reads
// positions 0..position of the sequence's slot. Two query heads share one KV
// head (GQA), so query head h reads KV head h / 2.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         llvm.getelementptr %arg0[6] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[POS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         llvm.getelementptr %arg0[7] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[SLOTS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         llvm.getelementptr %arg0[4] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[CACHE:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2x2x1x?x4xf32>
// CHECK:         %[[Q:.*]] = memref.expand_shape %{{.*}} output_shape [%{{.*}}, 2, 4] : memref<?x8xf32> into memref<?x2x4xf32>
// CHECK:         %[[K:.*]] = memref.expand_shape %{{.*}} output_shape [%{{.*}}, 1, 4] : memref<?x4xf32> into memref<?x1x4xf32>
// CHECK:         %[[V:.*]] = memref.expand_shape %{{.*}} output_shape [%{{.*}}, 1, 4] : memref<?x4xf32> into memref<?x1x4xf32>
// kv_append (layer 1): no buffer of its own.
// CHECK-NOT:     memref.alloc
// CHECK:         %[[LAYER:.*]] = arith.constant 1 : index
// CHECK:         %[[KSEL:.*]] = arith.constant 0 : index
// CHECK:         %[[VSEL:.*]] = arith.constant 1 : index
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[SLOT_I32:.*]] = memref.load %[[SLOTS]][%[[I]]] : memref<?xi32>
// CHECK:           %[[SLOT:.*]] = arith.index_cast %[[SLOT_I32]] : i32 to index
// CHECK:           %[[P_I32:.*]] = memref.load %[[POS]][%[[I]]] : memref<?xi32>
// CHECK:           %[[P:.*]] = arith.index_cast %[[P_I32]] : i32 to index
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             scf.for %[[D:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               %[[KV:.*]] = memref.load %[[K]][%[[I]], %[[H]], %[[D]]] : memref<?x1x4xf32>
// CHECK:               memref.store %[[KV]], %[[CACHE]][%[[SLOT]], %[[LAYER]], %[[KSEL]], %[[H]], %[[P]], %[[D]]] : memref<?x2x2x1x?x4xf32>
// CHECK:               %[[VV:.*]] = memref.load %[[V]][%[[I]], %[[H]], %[[D]]] : memref<?x1x4xf32>
// CHECK:               memref.store %[[VV]], %[[CACHE]][%[[SLOT]], %[[LAYER]], %[[VSEL]], %[[H]], %[[P]], %[[D]]] : memref<?x2x2x1x?x4xf32>

// attention, online softmax: a running max rescales the partial sums.
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK:         %[[ACC:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[SLOT:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:           %[[P:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK:           %[[LEN:.*]] = arith.addi %[[P]], %{{.*}} : index
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[GROUP:.*]] = arith.constant 2 : index
// CHECK:             %[[KVH:.*]] = arith.divui %[[H]], %[[GROUP]] : index
// CHECK:             scf.for
// CHECK:               memref.store %{{.*}}, %[[ACC]]
// CHECK:             %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:             %[[STATE:.*]]:2 = scf.for %[[T:[^ ]+]] = %{{.*}} to %[[LEN]] step %{{.*}} iter_args(%[[MAX:[^ ]+]] = %[[NEGINF]], %[[SUM:[^ ]+]] = %{{.*}}) -> (f32, f32) {
// CHECK:               %[[DOT:.*]] = scf.for %[[D:[^ ]+]] = {{.*}} -> (f32) {
// CHECK:                 memref.load %[[CACHE]][%[[SLOT]], %{{.*}}, %{{.*}}, %[[KVH]], %[[T]], %[[D]]] : memref<?x2x2x1x?x4xf32>
// CHECK:                 memref.load %[[Q]][%[[I]], %[[H]], %[[D]]] : memref<?x2x4xf32>
// CHECK:               %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:               %[[S:.*]] = arith.mulf %[[DOT]], %[[SCALE]] : f32
// CHECK:               %[[NEWMAX:.*]] = arith.maximumf %[[MAX]], %[[S]] : f32
// CHECK:               %[[DM:.*]] = arith.subf %[[MAX]], %[[NEWMAX]] : f32
// CHECK:               %[[CORR:.*]] = math.exp %[[DM]] : f32
// CHECK:               %[[DS:.*]] = arith.subf %[[S]], %[[NEWMAX]] : f32
// CHECK:               %[[W:.*]] = math.exp %[[DS]] : f32
// CHECK:               scf.for %[[D:[^ ]+]] = {{.*}} {
// CHECK:                 %[[VAL:.*]] = memref.load %[[CACHE]][%[[SLOT]], %{{.*}}, %{{.*}}, %[[KVH]], %[[T]], %[[D]]] : memref<?x2x2x1x?x4xf32>
// CHECK:                 %[[OLD:.*]] = memref.load %[[ACC]][%[[D]]] : memref<4xf32>
// CHECK:                 %[[A:.*]] = arith.mulf %[[OLD]], %[[CORR]] : f32
// CHECK:                 %[[B:.*]] = arith.mulf %[[W]], %[[VAL]] : f32
// CHECK:                 %[[NEW:.*]] = arith.addf %[[A]], %[[B]] : f32
// CHECK:                 memref.store %[[NEW]], %[[ACC]][%[[D]]] : memref<4xf32>
// CHECK:               %[[SC:.*]] = arith.mulf %[[SUM]], %[[CORR]] : f32
// CHECK:               %[[NEWSUM:.*]] = arith.addf %[[SC]], %[[W]] : f32
// CHECK:               scf.yield %[[NEWMAX]], %[[NEWSUM]] : f32, f32
// CHECK:             scf.for %[[D:[^ ]+]] = {{.*}} {
// CHECK:               %[[NUM:.*]] = memref.load %[[ACC]][%[[D]]] : memref<4xf32>
// CHECK:               %[[O:.*]] = arith.divf %[[NUM]], %[[STATE]]#1 : f32
// CHECK:               memref.store %[[O]], %[[OUT]][%[[I]], %[[H]], %[[D]]] : memref<?x2x4xf32>
// CHECK-NOT:     scf.if
// CHECK:         memref.collapse_shape %[[OUT]]
// CHECK:         memref.dealloc %[[OUT]] : memref<?x2x4xf32>
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.alloca
// arith.maximumf, expanded: NaN-propagating compare and select.
// LLVM:         llvm.fcmp "ugt"
// LLVM:         llvm.fcmp "uno"
// LLVM:         llvm.intr.exp
// LLVM:         llvm.return
decode.model @attention attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb_q : tensor<16x8xf32>
  decode.weight @emb_k : tensor<16x4xf32>
  decode.weight @emb_v : tensor<16x4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %eq = decode.weight_ref @emb_q : tensor<16x8xf32>
    %q = decode.embedding %eq[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %ek = decode.weight_ref @emb_k : tensor<16x4xf32>
    %k = decode.embedding %ek[%tokens] : tensor<16x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %ev = decode.weight_ref @emb_v : tensor<16x4xf32>
    %v = decode.embedding %ev[%tokens] : tensor<16x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
    %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
    %c1 = decode.kv_append %kh, %vh into %cache[%slots, %positions] {layer = 1 : i64} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>
    %a = decode.attention %qh, %c1[%slots, %positions] {layer = 1 : i64, scale = 5.000000e-01 : f32, softmax = #decode.softmax<online>} : tensor<?x2x4xf32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32> -> tensor<?x2x4xf32>
    %logits = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %c1 : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// attention, unified max: every term uses the fixed phi = 2; a score outside
// [phi + lo, phi + hi] = [-8, 12] (lo = -10, hi = 10), or a sum that underflowed to 0, flags the
// row, and scf.if recomputes it with the online scheme.

// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x2x4xf32>
// CHECK:         %[[ACC:.*]] = memref.alloca() : memref<4xf32>
// CHECK:         scf.for %[[I:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[LEN:.*]] = arith.addi
// CHECK:           scf.for %[[H:[^ ]+]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[PHI:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:             %[[LO:.*]] = arith.constant -1.000000e+01 : f32
// CHECK:             %[[HI:.*]] = arith.constant 1.000000e+01 : f32
// CHECK:             %[[FALSE:.*]] = arith.constant false
// CHECK:             %[[STATE:.*]]:2 = scf.for %[[T:[^ ]+]] = %{{.*}} to %[[LEN]] step %{{.*}} iter_args(%[[SUM:[^ ]+]] = %{{.*}}, %[[FLAG:[^ ]+]] = %[[FALSE]]) -> (f32, i1) {
// CHECK-NOT:           arith.maximumf
// CHECK:               %[[DOT:.*]] = scf.for %{{.*}} -> (f32) {
// CHECK:               %[[S:.*]] = arith.mulf %[[DOT]], %{{.*}} : f32
// CHECK:               %[[X:.*]] = arith.subf %[[S]], %[[PHI]] : f32
// CHECK:               %[[BELOW:.*]] = arith.cmpf olt, %[[X]], %[[LO]] : f32
// CHECK:               %[[ABOVE:.*]] = arith.cmpf ogt, %[[X]], %[[HI]] : f32
// CHECK:               %[[OUTSIDE:.*]] = arith.ori %[[BELOW]], %[[ABOVE]] : i1
// CHECK:               %[[W:.*]] = math.exp %[[X]] : f32
// CHECK:               scf.for
// CHECK:                 memref.store %{{.*}}, %[[ACC]]
// CHECK:               %[[NEWSUM:.*]] = arith.addf %[[SUM]], %[[W]] : f32
// CHECK:               %[[NEWFLAG:.*]] = arith.ori %[[FLAG]], %[[OUTSIDE]] : i1
// CHECK:               scf.yield %[[NEWSUM]], %[[NEWFLAG]] : f32, i1
// A sum that overflowed (inf / NaN) or underflowed to 0 flags the row too.
// CHECK:             %[[ACCBAD:.*]] = scf.for {{.*}} -> (i1) {
// CHECK:               math.absf
// CHECK:             %[[INF:.*]] = arith.cmpf ugt, %[[STATE]]#0, %{{.*}} : f32
// CHECK:             %[[BAD:.*]] = arith.ori %[[INF]], %[[ACCBAD]] : i1
// CHECK:             %[[ANY:.*]] = arith.ori %[[STATE]]#1, %[[BAD]] : i1
// CHECK:             %[[ZERO:.*]] = arith.cmpf oeq, %[[STATE]]#0, %{{.*}} : f32
// CHECK:             %[[FLAGGED:.*]] = arith.ori %[[ANY]], %[[ZERO]] : i1
// CHECK:             scf.if %[[FLAGGED]] {
// The fallback: the online scheme, from a cleared accumulator.
// CHECK:               scf.for
// CHECK:                 memref.store %{{.*}}, %[[ACC]]
// CHECK:               %[[ONLINE:.*]]:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK:                 arith.maximumf
// CHECK:                 math.exp
// CHECK:                 math.exp
// CHECK:               scf.for
// CHECK:                 arith.divf %{{.*}}, %[[ONLINE]]#1 : f32
// CHECK:                 memref.store %{{.*}}, %[[OUT]]
// CHECK:             } else {
// CHECK:               scf.for
// CHECK:                 arith.divf %{{.*}}, %[[STATE]]#0 : f32
// CHECK:                 memref.store %{{.*}}, %[[OUT]]
// CHECK:             }
// CHECK:         memref.dealloc %[[OUT]] : memref<?x2x4xf32>
// CHECK:         return

// LLVM-LABEL: llvm.func @fdc_model_step(%arg0: !llvm.ptr)
// LLVM:         llvm.fcmp "olt"
// LLVM:         llvm.fcmp "ogt"
// LLVM:         llvm.cond_br
// LLVM:         llvm.fcmp "uno"
// LLVM:         llvm.return
decode.model @attention_unified_max attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb_q : tensor<16x8xf32>
  decode.weight @emb_k : tensor<16x4xf32>
  decode.weight @emb_v : tensor<16x4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %eq = decode.weight_ref @emb_q : tensor<16x8xf32>
    %q = decode.embedding %eq[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %ek = decode.weight_ref @emb_k : tensor<16x4xf32>
    %k = decode.embedding %ek[%tokens] : tensor<16x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %ev = decode.weight_ref @emb_v : tensor<16x4xf32>
    %v = decode.embedding %ev[%tokens] : tensor<16x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
    %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
    %c1 = decode.kv_append %kh, %vh into %cache[%slots, %positions] {layer = 1 : i64} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>
    %a = decode.attention %qh, %c1[%slots, %positions] {layer = 1 : i64, scale = 5.000000e-01 : f32, softmax = #decode.softmax<unified_max, phi = 2.0, lo = -10.0, hi = 10.0>} : tensor<?x2x4xf32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32> -> tensor<?x2x4xf32>
    %logits = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %c1 : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 1, head_dim = 4, f32>
  }
}
