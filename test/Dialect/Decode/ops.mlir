// RUN: fdc-opt %s | FileCheck %s
// Round trip: printing and re-parsing yields the same IR.
// RUN: fdc-opt %s | fdc-opt | FileCheck %s
// RUN: fdc-opt %s --mlir-print-op-generic | fdc-opt | FileCheck %s

// A one-layer GQA model in the form the frontend emits.
// CHECK-LABEL: decode.model @tiny_llama attributes {config = {
// CHECK-SAME: vocab_size = 512 : i64
decode.model @tiny_llama attributes {config = {architecture = "LlamaForCausalLM", head_dim = 32 : i64, hidden_size = 256 : i64, num_attention_heads = 8 : i64, num_hidden_layers = 1 : i64, num_key_value_heads = 2 : i64, vocab_size = 512 : i64}} {
  // CHECK: decode.weight @model.embed_tokens.weight : tensor<512x256xf32>
  decode.weight @"model.embed_tokens.weight" : tensor<512x256xf32>
  decode.weight @"model.layers.0.input_layernorm.weight" : tensor<256xf32>
  decode.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<256x256xf32>
  decode.weight @"model.layers.0.self_attn.k_proj.weight" : tensor<64x256xf32>
  decode.weight @"model.layers.0.self_attn.v_proj.weight" : tensor<64x256xf32>
  decode.weight @"model.layers.0.self_attn.o_proj.weight" : tensor<256x256xf32>
  decode.weight @"model.layers.0.post_attention_layernorm.weight" : tensor<256xf32>
  // CHECK: decode.weight @model.layers.0.mlp.gate_up_proj.weight = concat ["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"] : tensor<1024x256xf32>
  decode.weight @"model.layers.0.mlp.gate_up_proj.weight" = concat ["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"] : tensor<1024x256xf32>
  decode.weight @"model.layers.0.mlp.down_proj.weight" : tensor<256x512xf32>
  decode.weight @"model.norm.weight" : tensor<256xf32>
  // CHECK: func.func @step(%{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xf32>, %{{.*}}: tensor<?xi32>, %{{.*}}: tensor<?xf32>, %{{.*}}: tensor<?xf32>, %{{.*}}: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>)
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    // CHECK: %[[EMB:.*]] = decode.weight_ref @model.embed_tokens.weight : tensor<512x256xf32>
    %emb = decode.weight_ref @"model.embed_tokens.weight" : tensor<512x256xf32>
    // CHECK: %[[H0:.*]] = decode.embedding %[[EMB]][%{{.*}}] : tensor<512x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
    %h0 = decode.embedding %emb[%tokens] : tensor<512x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
    %ln = decode.weight_ref @"model.layers.0.input_layernorm.weight" : tensor<256xf32>
    // CHECK: decode.rms_norm %[[H0]], %{{.*}} {eps = 9.99999974E-6 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
    %x = decode.rms_norm %h0, %ln {eps = 9.99999974E-6 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
    %wq = decode.weight_ref @"model.layers.0.self_attn.q_proj.weight" : tensor<256x256xf32>
    %wk = decode.weight_ref @"model.layers.0.self_attn.k_proj.weight" : tensor<64x256xf32>
    %wv = decode.weight_ref @"model.layers.0.self_attn.v_proj.weight" : tensor<64x256xf32>
    // CHECK: decode.linear %{{.*}}, %{{.*}} : tensor<?x256xf32>, tensor<256x256xf32> -> tensor<?x256xf32>
    %q = decode.linear %x, %wq : tensor<?x256xf32>, tensor<256x256xf32> -> tensor<?x256xf32>
    %k = decode.linear %x, %wk : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
    %v = decode.linear %x, %wv : tensor<?x256xf32>, tensor<64x256xf32> -> tensor<?x64xf32>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 8, 32] : tensor<?x256xf32> into tensor<?x8x32xf32>
    %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%m, 2, 32] : tensor<?x64xf32> into tensor<?x2x32xf32>
    %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [%m, 2, 32] : tensor<?x64xf32> into tensor<?x2x32xf32>
    // CHECK: decode.rope %{{.*}}, %{{.*}} {rotary_dim = 32 : i64, theta = 1.000000e+04 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
    %qr = decode.rope %qh, %positions {rotary_dim = 32 : i64, theta = 1.000000e+04 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
    %kr = decode.rope %kh, %positions {rotary_dim = 32 : i64, theta = 1.000000e+04 : f32} : tensor<?x2x32xf32> -> tensor<?x2x32xf32>
    // CHECK: %[[C1:.*]] = decode.kv_append %{{.*}}, %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}] {layer = 0 : i64} : tensor<?x2x32xf32>, tensor<?x2x32xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>
    %c1 = decode.kv_append %kr, %vh into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x32xf32>, tensor<?x2x32xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>
    // CHECK: decode.attention %{{.*}}, %[[C1]][%{{.*}}, %{{.*}}] {layer = 0 : i64, scale = 0.176776692 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
    %a = decode.attention %qr, %c1[%slots, %positions] {layer = 0 : i64, scale = 0.176776692 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
    %af = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x8x32xf32> into tensor<?x256xf32>
    %wo = decode.weight_ref @"model.layers.0.self_attn.o_proj.weight" : tensor<256x256xf32>
    // CHECK: decode.linear %{{.*}}, %{{.*}} residual %[[H0]] : tensor<?x256xf32>, tensor<256x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
    %h1 = decode.linear %af, %wo residual %h0 : tensor<?x256xf32>, tensor<256x256xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
    %pln = decode.weight_ref @"model.layers.0.post_attention_layernorm.weight" : tensor<256xf32>
    %x2 = decode.rms_norm %h1, %pln {eps = 9.99999974E-6 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
    %wgu = decode.weight_ref @"model.layers.0.mlp.gate_up_proj.weight" : tensor<1024x256xf32>
    // CHECK: decode.linear %{{.*}}, %{{.*}} {activation = #decode<activation silu_gate_up>} : tensor<?x256xf32>, tensor<1024x256xf32> -> tensor<?x512xf32>
    %g = decode.linear %x2, %wgu {activation = #decode<activation silu_gate_up>} : tensor<?x256xf32>, tensor<1024x256xf32> -> tensor<?x512xf32>
    %wd = decode.weight_ref @"model.layers.0.mlp.down_proj.weight" : tensor<256x512xf32>
    %h2 = decode.linear %g, %wd residual %h1 : tensor<?x512xf32>, tensor<256x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32>
    %fn = decode.weight_ref @"model.norm.weight" : tensor<256xf32>
    %hn = decode.rms_norm %h2, %fn {eps = 9.99999974E-6 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
    // Tied embeddings: the lm_head reads the embedding table.
    // CHECK: %[[LOGITS:.*]] = decode.linear %{{.*}}, %[[EMB]] : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
    %logits = decode.linear %hn, %emb : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
    // CHECK: decode.sample %[[LOGITS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x512xf32> -> tensor<?xi32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x512xf32> -> tensor<?xi32>
    return %logits, %next, %c1 : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 32, f32>
  }
}

// Every other op, attribute and type, outside a model.
// CHECK-LABEL: func.func @other_ops
func.func @other_ops(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>,
                     %b: tensor<4096xbf16>, %qw: !decode.qtensor<4096x4096xi4, group_size = 128, scale = f16>,
                     %sw: !decode.tiled_csl<4096x4096xf16, tile = 128x64>, %xh: tensor<?x4096xf16>,
                     %q: tensor<?x32x128xbf16>, %k: tensor<?x8x128xbf16>,
                     %c4: !decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, !decode.int4<groups = 4>>,
                     %slots: tensor<?xi32>, %pos: tensor<?xi32>, %logits: tensor<?x32000xf32>, %d: index) {
  // CHECK: decode.linear %{{.*}}, %{{.*}} bias %{{.*}} : tensor<?x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>
  %0 = decode.linear %x, %w bias %b : tensor<?x4096xbf16>, tensor<4096x4096xbf16>, tensor<4096xbf16> -> tensor<?x4096xbf16>
  // CHECK: decode.linear %{{.*}}, %{{.*}} : tensor<?x4096xbf16>, !decode.qtensor<4096x4096xi4, group_size = 128, scale = f16> -> tensor<?x4096xbf16>
  %1 = decode.linear %x, %qw : tensor<?x4096xbf16>, !decode.qtensor<4096x4096xi4, group_size = 128, scale = f16> -> tensor<?x4096xbf16>
  // CHECK: decode.sparse_linear %{{.*}}, %{{.*}} : tensor<?x4096xf16>, !decode.tiled_csl<4096x4096xf16, tile = 128x64> -> tensor<?x4096xf16>
  %2 = decode.sparse_linear %xh, %sw : tensor<?x4096xf16>, !decode.tiled_csl<4096x4096xf16, tile = 128x64> -> tensor<?x4096xf16>
  // CHECK: decode.sparse_linear %{{.*}}, %{{.*}} residual %{{.*}} {activation = #decode<activation silu_gate_up>} : tensor<?x4096xf16>, !decode.tiled_csl<4096x4096xf16, tile = 128x64>, tensor<?x2048xf16> -> tensor<?x2048xf16>
  %r = tensor.extract_slice %2[0, 0] [%d, 2048] [1, 1] : tensor<?x4096xf16> to tensor<?x2048xf16>
  %7 = decode.sparse_linear %xh, %sw residual %r {activation = #decode<activation silu_gate_up>} : tensor<?x4096xf16>, !decode.tiled_csl<4096x4096xf16, tile = 128x64>, tensor<?x2048xf16> -> tensor<?x2048xf16>
  // CHECK: decode.kv_append {{.*}} into !decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, !decode.int4<groups = 4>>
  %c5 = decode.kv_append %k, %k into %c4[%slots, %pos] {layer = 31 : i64} : tensor<?x8x128xbf16>, tensor<?x8x128xbf16> into !decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, !decode.int4<groups = 4>>
  // CHECK: decode.attention {{.*}} {layer = 31 : i64, scale = 0.0883883461 : f32, softmax = #decode.softmax<unified_max, phi = 6.000000e+00, lo = -6.000000e+01, hi = 2.000000e+01>, splits = 16 : i64}
  %3 = decode.attention %q, %c5[%slots, %pos] {layer = 31 : i64, scale = 0.0883883461 : f32, softmax = #decode.softmax<unified_max, phi = 6.0, lo = -60.0, hi = 20.0>, splits = 16 : i64} : tensor<?x32x128xbf16>, !decode.kv_cache<layers = 32, kv_heads = 8, head_dim = 128, !decode.int4<groups = 4>> -> tensor<?x32x128xbf16>
  // CHECK: decode.argmax %{{.*}} : tensor<?x32000xf32> -> tensor<?xi32>
  %4 = decode.argmax %logits : tensor<?x32000xf32> -> tensor<?xi32>
  // CHECK: decode.all_reduce sum %{{.*}} {group_size = 2 : i64} : tensor<?x4096xbf16>
  %5 = decode.all_reduce sum %0 {group_size = 2 : i64} : tensor<?x4096xbf16>
  // CHECK: decode.all_reduce max %{{.*}} : tensor<?x4096xbf16>
  %6 = decode.all_reduce max %0 : tensor<?x4096xbf16>
  // CHECK: decode.all_reduce sum %{{.*}} residual %{{.*}} {group_size = 2 : i64} : tensor<?x4096xbf16>, tensor<?x4096xbf16>
  %8 = decode.all_reduce sum %0 residual %1 {group_size = 2 : i64} : tensor<?x4096xbf16>, tensor<?x4096xbf16>
  // CHECK: decode.all_gather %{{.*}} {group_size = 2 : i64} : tensor<?x4096xbf16> -> tensor<?x8192xbf16>
  %9 = decode.all_gather %0 {group_size = 2 : i64} : tensor<?x4096xbf16> -> tensor<?x8192xbf16>
  return
}
