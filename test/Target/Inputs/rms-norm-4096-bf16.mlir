// The first model of ../../Conversion/DecodeToGPU/rms-norm.mlir: one rms_norm
// over 4096-wide bf16 rows (rms-norm-isa.test).
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
