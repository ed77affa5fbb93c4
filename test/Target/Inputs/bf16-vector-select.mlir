// From the IR fuzzer (seed 20262057): a bf16 model whose vectorised code
// makes the x86 back end call __truncsfbf2, which Debian 12's libgcc lacks.
decode.model @fuzz attributes {config = {architecture = "LlamaForCausalLM", head_dim = 4 : i64, hidden_size = 128 : i64, intermediate_size = 128 : i64, max_position_embeddings = 64 : i64, num_attention_heads = 2 : i64, num_hidden_layers = 1 : i64, num_key_value_heads = 1 : i64, rms_norm_eps = 1.000000015e-01 : f32, rope_theta = 1.000000000e+04 : f32, tie_word_embeddings = false, vocab_size = 64 : i64}} {
  decode.weight @"model.embed_tokens.weight" : tensor<64x128xbf16>
  decode.weight @"model.layers.0.input_layernorm.weight" : tensor<128xbf16>
  decode.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<8x128xbf16>
  decode.weight @"model.layers.0.self_attn.q_proj.bias" : tensor<8xbf16>
  decode.weight @"model.layers.0.self_attn.k_proj.weight" : tensor<4x128xbf16>
  decode.weight @"model.layers.0.self_attn.k_proj.bias" : tensor<4xbf16>
  decode.weight @"model.layers.0.self_attn.v_proj.weight" : tensor<4x128xbf16>
  decode.weight @"model.layers.0.self_attn.v_proj.bias" : tensor<4xbf16>
  decode.weight @"model.layers.0.self_attn.o_proj.weight" : tensor<128x8xbf16>
  decode.weight @"model.layers.0.post_attention_layernorm.weight" : tensor<128xbf16>
  decode.weight @"model.layers.0.mlp.up_proj.weight" : !decode.tiled_csl<128x128xbf16, tile = 128x64>
  decode.weight @"model.layers.0.mlp.down_proj.weight" : !decode.tiled_csl<128x128xbf16, tile = 128x64>
  decode.weight @"model.norm.weight" : tensor<128xbf16>
  decode.weight @"lm_head.weight" : tensor<64x128xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>) -> (tensor<?x64xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %w1 = decode.weight_ref @"model.embed_tokens.weight" : tensor<64x128xbf16>
    %h2 = decode.embedding %w1[%tokens] : tensor<64x128xbf16>, tensor<?xi32> -> tensor<?x128xbf16>
    %w3 = decode.weight_ref @"model.layers.0.input_layernorm.weight" : tensor<128xbf16>
    %n4 = decode.rms_norm %h2, %w3 {eps = 1.000000015e-01 : f32} : tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>
    %w5 = decode.weight_ref @"model.layers.0.self_attn.q_proj.weight" : tensor<8x128xbf16>
    %w6 = decode.weight_ref @"model.layers.0.self_attn.q_proj.bias" : tensor<8xbf16>
    %y7 = decode.linear %n4, %w5 bias %w6 : tensor<?x128xbf16>, tensor<8x128xbf16>, tensor<8xbf16> -> tensor<?x8xbf16>
    %w8 = decode.weight_ref @"model.layers.0.self_attn.k_proj.weight" : tensor<4x128xbf16>
    %w9 = decode.weight_ref @"model.layers.0.self_attn.k_proj.bias" : tensor<4xbf16>
    %y10 = decode.linear %n4, %w8 bias %w9 : tensor<?x128xbf16>, tensor<4x128xbf16>, tensor<4xbf16> -> tensor<?x4xbf16>
    %w11 = decode.weight_ref @"model.layers.0.self_attn.v_proj.weight" : tensor<4x128xbf16>
    %w12 = decode.weight_ref @"model.layers.0.self_attn.v_proj.bias" : tensor<4xbf16>
    %y13 = decode.linear %n4, %w11 bias %w12 : tensor<?x128xbf16>, tensor<4x128xbf16>, tensor<4xbf16> -> tensor<?x4xbf16>
    %hd14 = tensor.expand_shape %y7 [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xbf16> into tensor<?x2x4xbf16>
    %hd15 = tensor.expand_shape %y10 [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xbf16> into tensor<?x1x4xbf16>
    %hd16 = tensor.expand_shape %y13 [[0], [1, 2]] output_shape [%m, 1, 4] : tensor<?x4xbf16> into tensor<?x1x4xbf16>
    %c17 = decode.kv_append %hd15, %hd16 into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x1x4xbf16>, tensor<?x1x4xbf16> into !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>
    %a18 = decode.attention %hd14, %c17[%slots, %positions] {layer = 0 : i64, scale = 9.579103589e-01 : f32, softmax = #decode.softmax<online>} : tensor<?x2x4xbf16>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16> -> tensor<?x2x4xbf16>
    %af19 = tensor.collapse_shape %a18 [[0], [1, 2]] : tensor<?x2x4xbf16> into tensor<?x8xbf16>
    %w20 = decode.weight_ref @"model.layers.0.self_attn.o_proj.weight" : tensor<128x8xbf16>
    %y21 = decode.linear %af19, %w20 residual %h2 : tensor<?x8xbf16>, tensor<128x8xbf16>, tensor<?x128xbf16> -> tensor<?x128xbf16>
    %w22 = decode.weight_ref @"model.layers.0.post_attention_layernorm.weight" : tensor<128xbf16>
    %n23 = decode.rms_norm %y21, %w22 {eps = 1.000000015e-01 : f32} : tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>
    %w24 = decode.weight_ref @"model.layers.0.mlp.up_proj.weight" : !decode.tiled_csl<128x128xbf16, tile = 128x64>
    %y25 = decode.sparse_linear %n23, %w24 : tensor<?x128xbf16>, !decode.tiled_csl<128x128xbf16, tile = 128x64> -> tensor<?x128xbf16>
    %w26 = decode.weight_ref @"model.layers.0.mlp.down_proj.weight" : !decode.tiled_csl<128x128xbf16, tile = 128x64>
    %y27 = decode.sparse_linear %y25, %w26 residual %y21 : tensor<?x128xbf16>, !decode.tiled_csl<128x128xbf16, tile = 128x64>, tensor<?x128xbf16> -> tensor<?x128xbf16>
    %w28 = decode.weight_ref @"model.norm.weight" : tensor<128xbf16>
    %n29 = decode.rms_norm %y27, %w28 {eps = 1.000000015e-01 : f32} : tensor<?x128xbf16>, tensor<128xbf16> -> tensor<?x128xbf16>
    %w30 = decode.weight_ref @"lm_head.weight" : tensor<64x128xbf16>
    %y31 = decode.linear %n29, %w30 : tensor<?x128xbf16>, tensor<64x128xbf16> -> tensor<?x64xf32>
    %next32 = decode.sample %y31, %uniform, %temperature, %top_k, %top_p : tensor<?x64xf32> -> tensor<?xi32>
    return %y31, %next32, %c17 : tensor<?x64xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, bf16>
  }
}
