decode.model @one_linear_bf16 attributes {config = {vocab_size = 128 : i64}} {
  decode.weight @"table" : tensor<256x520xbf16>
  decode.weight @"w" : tensor<4000x520xbf16>
  decode.weight @"head" : tensor<128x4000xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) -> (tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>) {
    %table = decode.weight_ref @"table" : tensor<256x520xbf16>
    %x = decode.embedding %table[%tokens] : tensor<256x520xbf16>, tensor<?xi32> -> tensor<?x520xbf16>
    %w = decode.weight_ref @"w" : tensor<4000x520xbf16>
    %y = decode.linear %x, %w : tensor<?x520xbf16>, tensor<4000x520xbf16> -> tensor<?x4000xbf16>
    %head = decode.weight_ref @"head" : tensor<128x4000xbf16>
    %logits = decode.linear %y, %head : tensor<?x4000xbf16>, tensor<128x4000xbf16> -> tensor<?x128xf32>
    %next = decode.argmax %logits : tensor<?x128xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, bf16>
  }
}
