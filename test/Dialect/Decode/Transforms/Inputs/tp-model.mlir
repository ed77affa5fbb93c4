// One Llama layer with a tied LM head (the embedding's weight), as the
// frontend emits it: hidden 16, 4 query heads and 2 KV heads of 4, MLP 32,
// vocabulary 8.
decode.model @tp attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @"embed" : tensor<8x16xf32>
  decode.weight @"ln" : tensor<16xf32>
  decode.weight @"q" : tensor<16x16xf32>
  decode.weight @"k" : tensor<8x16xf32>
  decode.weight @"v" : tensor<8x16xf32>
  decode.weight @"o" : tensor<16x16xf32>
  decode.weight @"gate_up" = concat ["gate", "up"] : tensor<64x16xf32>
  decode.weight @"down" : tensor<16x32xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %emb = decode.weight_ref @"embed" : tensor<8x16xf32>
    %h0 = decode.embedding %emb[%tokens] : tensor<8x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    %ln = decode.weight_ref @"ln" : tensor<16xf32>
    %x = decode.rms_norm %h0, %ln {eps = 1.0e-05 : f32} : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %wq = decode.weight_ref @"q" : tensor<16x16xf32>
    %wk = decode.weight_ref @"k" : tensor<8x16xf32>
    %wv = decode.weight_ref @"v" : tensor<8x16xf32>
    %q = decode.linear %x, %wq : tensor<?x16xf32>, tensor<16x16xf32> -> tensor<?x16xf32>
    %k = decode.linear %x, %wk : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
    %v = decode.linear %x, %wv : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 4, 4] : tensor<?x16xf32> into tensor<?x4x4xf32>
    %kh = tensor.expand_shape %k [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %vh = tensor.expand_shape %v [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %qr = decode.rope %qh, %positions {rotary_dim = 4 : i64, theta = 10000.0 : f32} : tensor<?x4x4xf32> -> tensor<?x4x4xf32>
    %kr = decode.rope %kh, %positions {rotary_dim = 4 : i64, theta = 10000.0 : f32} : tensor<?x2x4xf32> -> tensor<?x2x4xf32>
    %c1 = decode.kv_append %kr, %vh into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x4xf32>, tensor<?x2x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
    %a = decode.attention %qr, %c1[%slots, %positions] {layer = 0 : i64, scale = 0.5 : f32, softmax = #decode.softmax<online>} : tensor<?x4x4xf32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32> -> tensor<?x4x4xf32>
    %af = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x4x4xf32> into tensor<?x16xf32>
    %wo = decode.weight_ref @"o" : tensor<16x16xf32>
    %h1 = decode.linear %af, %wo residual %h0 : tensor<?x16xf32>, tensor<16x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %x2 = decode.rms_norm %h1, %ln {eps = 1.0e-05 : f32} : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    %wgu = decode.weight_ref @"gate_up" : tensor<64x16xf32>
    %g = decode.linear %x2, %wgu {activation = #decode<activation silu_gate_up>} : tensor<?x16xf32>, tensor<64x16xf32> -> tensor<?x32xf32>
    %wd = decode.weight_ref @"down" : tensor<16x32xf32>
    %h2 = decode.linear %g, %wd residual %h1 : tensor<?x32xf32>, tensor<16x32xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
    %logits = decode.linear %h2, %emb : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %c1 : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}
