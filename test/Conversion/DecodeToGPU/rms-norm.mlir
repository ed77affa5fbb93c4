// The rms_norm family: rows that split into 16-byte vectors, few enough per
// thread, are held in registers (each thread loads its vectors of the row
// and of the weight, then the block reduces, then it scales and stores);
// other rows are read twice, an element at a time.
// RUN: fdc-opt %s -split-input-file --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s

// Hidden 4096, bf16, 256 threads: 512 vectors of 8, two per thread, every
// one in the row (no bounds check).
// CHECK-LABEL: gpu.func @rms_norm_{{[0-9]+}}
// CHECK-NOT: arith.cmpi
// CHECK-COUNT-2: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK: math.rsqrt
// CHECK-NOT: scf.if
// CHECK-COUNT-2: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK: gpu.return
decode.model @norm_4096 attributes {config = {vocab_size = 128 : i64}} {
  decode.weight @"table" : tensor<256x4096xbf16>
  decode.weight @"norm" : tensor<4096xbf16>
  decode.weight @"head" : tensor<128x4096xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) -> (tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) {
    %table = decode.weight_ref @"table" : tensor<256x4096xbf16>
    %x = decode.embedding %table[%tokens] : tensor<256x4096xbf16>, tensor<?xi32> -> tensor<?x4096xbf16>
    %g = decode.weight_ref @"norm" : tensor<4096xbf16>
    %n = decode.rms_norm %x, %g {eps = 1.0e-05 : f32} : tensor<?x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>
    %head = decode.weight_ref @"head" : tensor<128x4096xbf16>
    %logits = decode.linear %n, %head : tensor<?x4096xbf16>, tensor<128x4096xbf16> -> tensor<?x128xf32>
    %next = decode.argmax %logits : tensor<?x128xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>
  }
}

// -----

// Hidden 2000 (250 vectors), 64 threads pinned: four vectors a thread, the
// last ones checked against the row's end, their stores guarded.
// CHECK-LABEL: gpu.func @rms_norm_{{[0-9]+}}
// CHECK: arith.cmpi ult
// CHECK-COUNT-8: vector.load
// CHECK: math.rsqrt
// CHECK: scf.if
// CHECK: vector.store %{{.*}} {alignment = 16 : i64} : memref<?x2000xbf16>, vector<8xbf16>
decode.model @norm_2000 attributes {config = {vocab_size = 128 : i64}} {
  decode.weight @"table" : tensor<256x2000xbf16>
  decode.weight @"norm" : tensor<2000xbf16>
  decode.weight @"head" : tensor<128x2000xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) -> (tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) {
    %table = decode.weight_ref @"table" : tensor<256x2000xbf16>
    %x = decode.embedding %table[%tokens] : tensor<256x2000xbf16>, tensor<?xi32> -> tensor<?x2000xbf16>
    %g = decode.weight_ref @"norm" : tensor<2000xbf16>
    %n = decode.rms_norm %x, %g {eps = 1.0e-05 : f32, decode.kernel = #decode.kernel<"rms_norm", {threads = 64}>} : tensor<?x2000xbf16>, tensor<2000xbf16> -> tensor<?x2000xbf16>
    %head = decode.weight_ref @"head" : tensor<128x2000xbf16>
    %logits = decode.linear %n, %head : tensor<?x2000xbf16>, tensor<128x2000xbf16> -> tensor<?x128xf32>
    %next = decode.argmax %logits : tensor<?x128xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>
  }
}

// -----

// Hidden 100 does not split into 16-byte vectors of bf16: two passes, an
// element at a time.
// CHECK-LABEL: gpu.func @rms_norm_{{[0-9]+}}
// CHECK-NOT: vector.load
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?x100xbf16>
// CHECK: math.rsqrt
// CHECK: scf.for
// CHECK: memref.store %{{.*}} : memref<?x100xbf16>
decode.model @norm_100 attributes {config = {vocab_size = 128 : i64}} {
  decode.weight @"table" : tensor<256x100xbf16>
  decode.weight @"norm" : tensor<100xbf16>
  decode.weight @"head" : tensor<128x100xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) -> (tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) {
    %table = decode.weight_ref @"table" : tensor<256x100xbf16>
    %x = decode.embedding %table[%tokens] : tensor<256x100xbf16>, tensor<?xi32> -> tensor<?x100xbf16>
    %g = decode.weight_ref @"norm" : tensor<100xbf16>
    %n = decode.rms_norm %x, %g {eps = 1.0e-05 : f32} : tensor<?x100xbf16>, tensor<100xbf16> -> tensor<?x100xbf16>
    %head = decode.weight_ref @"head" : tensor<128x100xbf16>
    %logits = decode.linear %n, %head : tensor<?x100xbf16>, tensor<128x100xbf16> -> tensor<?x128xf32>
    %next = decode.argmax %logits : tensor<?x128xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>
  }
}
