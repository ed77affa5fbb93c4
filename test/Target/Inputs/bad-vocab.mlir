// The logits are 8 wide but the config says vocab_size = 4.
decode.model @bad attributes {config = {vocab_size = 4 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %next = decode.argmax %h : tensor<?x8xf32> -> tensor<?xi32>
    return %h, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
