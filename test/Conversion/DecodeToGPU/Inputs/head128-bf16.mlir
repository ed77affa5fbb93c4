decode.model @head128_bfloat16 attributes {config = {architecture = "LlamaForCausalLM", head_dim = 128 : i64, hidden_size = 512 : i64, intermediate_size = 1024 : i64, max_position_embeddings = 2048 : i64, num_attention_heads = 4 : i64, num_hidden_layers = 2 : i64, num_key_value_heads = 2 : i64, rms_norm_eps = 1.0e-05 : f32, rope_theta = 10000.0 : f32, tie_word_embeddings = false, vocab_size = 1000 : i64}} {
  decode.weight @"model.embed_tokens.weight" : tensor<1000x512xbf16>
  decode.weight @"model.layers.0.input_layernorm.weight" : tensor<512xbf16>
  decode.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<512x512xbf16>
  decode.weight @"model.layers.0.self_attn.k_proj.weight" : tensor<256x512xbf16>
  decode.weight @"model.layers.0.self_attn.v_proj.weight" : tensor<256x512xbf16>
  decode.weight @"model.layers.0.self_attn.o_proj.weight" : tensor<512x512xbf16>
  decode.weight @"model.layers.0.post_attention_layernorm.weight" : tensor<512xbf16>
  decode.weight @"model.layers.0.mlp.gate_up_proj.weight" = concat ["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"] : tensor<2048x512xbf16>
  decode.weight @"model.layers.0.mlp.down_proj.weight" : tensor<512x1024xbf16>
  decode.weight @"model.layers.1.input_layernorm.weight" : tensor<512xbf16>
  decode.weight @"model.layers.1.self_attn.q_proj.weight" : tensor<512x512xbf16>
  decode.weight @"model.layers.1.self_attn.k_proj.weight" : tensor<256x512xbf16>
  decode.weight @"model.layers.1.self_attn.v_proj.weight" : tensor<256x512xbf16>
  decode.weight @"model.layers.1.self_attn.o_proj.weight" : tensor<512x512xbf16>
  decode.weight @"model.layers.1.post_attention_layernorm.weight" : tensor<512xbf16>
  decode.weight @"model.layers.1.mlp.gate_up_proj.weight" = concat ["model.layers.1.mlp.gate_proj.weight", "model.layers.1.mlp.up_proj.weight"] : tensor<2048x512xbf16>
  decode.weight @"model.layers.1.mlp.down_proj.weight" : tensor<512x1024xbf16>
  decode.weight @"model.norm.weight" : tensor<512xbf16>
  decode.weight @"lm_head.weight" : tensor<1000x512xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16>) -> (tensor<?x1000xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %emb = decode.weight_ref @"model.embed_tokens.weight" : tensor<1000x512xbf16>
    %h0 = decode.embedding %emb[%tokens] : tensor<1000x512xbf16>, tensor<?xi32> -> tensor<?x512xbf16>
    %ln_0 = decode.weight_ref @"model.layers.0.input_layernorm.weight" : tensor<512xbf16>
    %x_0 = decode.rms_norm %h0, %ln_0 {eps = 1.0e-05 : f32} : tensor<?x512xbf16>, tensor<512xbf16> -> tensor<?x512xbf16>
    %wq_0 = decode.weight_ref @"model.layers.0.self_attn.q_proj.weight" : tensor<512x512xbf16>
    %wk_0 = decode.weight_ref @"model.layers.0.self_attn.k_proj.weight" : tensor<256x512xbf16>
    %wv_0 = decode.weight_ref @"model.layers.0.self_attn.v_proj.weight" : tensor<256x512xbf16>
    %q_0 = decode.linear %x_0, %wq_0 : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>
    %k_0 = decode.linear %x_0, %wk_0 : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
    %v_0 = decode.linear %x_0, %wv_0 : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
    %qh_0 = tensor.expand_shape %q_0 [[0], [1, 2]] output_shape [%m, 4, 128] : tensor<?x512xbf16> into tensor<?x4x128xbf16>
    %kh_0 = tensor.expand_shape %k_0 [[0], [1, 2]] output_shape [%m, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
    %vh_0 = tensor.expand_shape %v_0 [[0], [1, 2]] output_shape [%m, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
    %qr_0 = decode.rope %qh_0, %positions {rotary_dim = 128 : i64, theta = 10000.0 : f32} : tensor<?x4x128xbf16> -> tensor<?x4x128xbf16>
    %kr_0 = decode.rope %kh_0, %positions {rotary_dim = 128 : i64, theta = 10000.0 : f32} : tensor<?x2x128xbf16> -> tensor<?x2x128xbf16>
    %c1 = decode.kv_append %kr_0, %vh_0 into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16>
    %a_0 = decode.attention %qr_0, %c1[%slots, %positions] {layer = 0 : i64, scale = 0.088388346 : f32, softmax = #decode.softmax<online>} : tensor<?x4x128xbf16>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16> -> tensor<?x4x128xbf16>
    %af_0 = tensor.collapse_shape %a_0 [[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
    %wo_0 = decode.weight_ref @"model.layers.0.self_attn.o_proj.weight" : tensor<512x512xbf16>
    %h1 = decode.linear %af_0, %wo_0 residual %h0 : tensor<?x512xbf16>, tensor<512x512xbf16>, tensor<?x512xbf16> -> tensor<?x512xbf16>
    %pln_0 = decode.weight_ref @"model.layers.0.post_attention_layernorm.weight" : tensor<512xbf16>
    %x2_0 = decode.rms_norm %h1, %pln_0 {eps = 1.0e-05 : f32} : tensor<?x512xbf16>, tensor<512xbf16> -> tensor<?x512xbf16>
    %wgu_0 = decode.weight_ref @"model.layers.0.mlp.gate_up_proj.weight" : tensor<2048x512xbf16>
    %g_0 = decode.linear %x2_0, %wgu_0 {activation = #decode<activation silu_gate_up>} : tensor<?x512xbf16>, tensor<2048x512xbf16> -> tensor<?x1024xbf16>
    %wd_0 = decode.weight_ref @"model.layers.0.mlp.down_proj.weight" : tensor<512x1024xbf16>
    %h2 = decode.linear %g_0, %wd_0 residual %h1 : tensor<?x1024xbf16>, tensor<512x1024xbf16>, tensor<?x512xbf16> -> tensor<?x512xbf16>
    %ln_1 = decode.weight_ref @"model.layers.1.input_layernorm.weight" : tensor<512xbf16>
    %x_1 = decode.rms_norm %h2, %ln_1 {eps = 1.0e-05 : f32} : tensor<?x512xbf16>, tensor<512xbf16> -> tensor<?x512xbf16>
    %wq_1 = decode.weight_ref @"model.layers.1.self_attn.q_proj.weight" : tensor<512x512xbf16>
    %wk_1 = decode.weight_ref @"model.layers.1.self_attn.k_proj.weight" : tensor<256x512xbf16>
    %wv_1 = decode.weight_ref @"model.layers.1.self_attn.v_proj.weight" : tensor<256x512xbf16>
    %q_1 = decode.linear %x_1, %wq_1 : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>
    %k_1 = decode.linear %x_1, %wk_1 : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
    %v_1 = decode.linear %x_1, %wv_1 : tensor<?x512xbf16>, tensor<256x512xbf16> -> tensor<?x256xbf16>
    %qh_1 = tensor.expand_shape %q_1 [[0], [1, 2]] output_shape [%m, 4, 128] : tensor<?x512xbf16> into tensor<?x4x128xbf16>
    %kh_1 = tensor.expand_shape %k_1 [[0], [1, 2]] output_shape [%m, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
    %vh_1 = tensor.expand_shape %v_1 [[0], [1, 2]] output_shape [%m, 2, 128] : tensor<?x256xbf16> into tensor<?x2x128xbf16>
    %qr_1 = decode.rope %qh_1, %positions {rotary_dim = 128 : i64, theta = 10000.0 : f32} : tensor<?x4x128xbf16> -> tensor<?x4x128xbf16>
    %kr_1 = decode.rope %kh_1, %positions {rotary_dim = 128 : i64, theta = 10000.0 : f32} : tensor<?x2x128xbf16> -> tensor<?x2x128xbf16>
    %c2 = decode.kv_append %kr_1, %vh_1 into %c1[%slots, %positions] {layer = 1 : i64} : tensor<?x2x128xbf16>, tensor<?x2x128xbf16> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16>
    %a_1 = decode.attention %qr_1, %c2[%slots, %positions] {layer = 1 : i64, scale = 0.088388346 : f32, softmax = #decode.softmax<online>} : tensor<?x4x128xbf16>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16> -> tensor<?x4x128xbf16>
    %af_1 = tensor.collapse_shape %a_1 [[0], [1, 2]] : tensor<?x4x128xbf16> into tensor<?x512xbf16>
    %wo_1 = decode.weight_ref @"model.layers.1.self_attn.o_proj.weight" : tensor<512x512xbf16>
    %h3 = decode.linear %af_1, %wo_1 residual %h2 : tensor<?x512xbf16>, tensor<512x512xbf16>, tensor<?x512xbf16> -> tensor<?x512xbf16>
    %pln_1 = decode.weight_ref @"model.layers.1.post_attention_layernorm.weight" : tensor<512xbf16>
    %x2_1 = decode.rms_norm %h3, %pln_1 {eps = 1.0e-05 : f32} : tensor<?x512xbf16>, tensor<512xbf16> -> tensor<?x512xbf16>
    %wgu_1 = decode.weight_ref @"model.layers.1.mlp.gate_up_proj.weight" : tensor<2048x512xbf16>
    %g_1 = decode.linear %x2_1, %wgu_1 {activation = #decode<activation silu_gate_up>} : tensor<?x512xbf16>, tensor<2048x512xbf16> -> tensor<?x1024xbf16>
    %wd_1 = decode.weight_ref @"model.layers.1.mlp.down_proj.weight" : tensor<512x1024xbf16>
    %h4 = decode.linear %g_1, %wd_1 residual %h3 : tensor<?x1024xbf16>, tensor<512x1024xbf16>, tensor<?x512xbf16> -> tensor<?x512xbf16>
    %fn = decode.weight_ref @"model.norm.weight" : tensor<512xbf16>
    %hn = decode.rms_norm %h4, %fn {eps = 1.0e-05 : f32} : tensor<?x512xbf16>, tensor<512xbf16> -> tensor<?x512xbf16>
    %lm = decode.weight_ref @"lm_head.weight" : tensor<1000x512xbf16>
    %logits = decode.linear %hn, %lm : tensor<?x512xbf16>, tensor<1000x512xbf16> -> tensor<?x1000xf32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x1000xf32> -> tensor<?xi32>
    return %logits, %next, %c2 : tensor<?x1000xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 128, bf16>
  }
}
