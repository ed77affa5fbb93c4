decode.model @sparse_linear_f16 attributes {config = {vocab_size = 128 : i64}} {
  decode.weight @"table" : tensor<256x1024xf16>
  decode.weight @"w" : !decode.tiled_csl<1000x1024xf16, tile = 128x64>
  decode.weight @"gu" : !decode.tiled_csl<1024x1000xf16, tile = 128x64>
  decode.weight @"head" : tensor<128x512xf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f16>) -> (tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f16>) {
    %table = decode.weight_ref @"table" : tensor<256x1024xf16>
    %x = decode.embedding %table[%tokens] : tensor<256x1024xf16>, tensor<?xi32> -> tensor<?x1024xf16>
    %w = decode.weight_ref @"w" : !decode.tiled_csl<1000x1024xf16, tile = 128x64>
    %y = decode.sparse_linear %x, %w : tensor<?x1024xf16>, !decode.tiled_csl<1000x1024xf16, tile = 128x64> -> tensor<?x1000xf16>
    %gu = decode.weight_ref @"gu" : !decode.tiled_csl<1024x1000xf16, tile = 128x64>
    %g = decode.sparse_linear %y, %gu {activation = #decode<activation silu_gate_up>} : tensor<?x1000xf16>, !decode.tiled_csl<1024x1000xf16, tile = 128x64> -> tensor<?x512xf16>
    %head = decode.weight_ref @"head" : tensor<128x512xf16>
    %logits = decode.linear %g, %head : tensor<?x512xf16>, tensor<128x512xf16> -> tensor<?x128xf32>
    %next = decode.argmax %logits : tensor<?x128xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x128xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, f16>
  }
}
