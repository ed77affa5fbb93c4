// RUN: fdc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2}))'

// What the pass cannot split is refused, naming the op and the value.

decode.model @odd_heads attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @q : tensor<12x8xf32>
  decode.weight @lm : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %lm = decode.weight_ref @lm : tensor<8x8xf32>
    %x = decode.embedding %lm[%tokens] : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %wq = decode.weight_ref @q : tensor<12x8xf32>
    %q = decode.linear %x, %wq : tensor<?x8xf32>, tensor<12x8xf32> -> tensor<?x12xf32>
    // expected-error @+1 {{'tensor.expand_shape' op cannot be split over 2 tensor-parallel ranks: its 3 heads are not a multiple of 2}}
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 3, 4] : tensor<?x12xf32> into tensor<?x3x4xf32>
    %logits = decode.linear %x, %lm : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

decode.model @odd_vocabulary attributes {config = {vocab_size = 7 : i64}} {
  decode.weight @lm : tensor<7x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x7xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %lm = decode.weight_ref @lm : tensor<7x8xf32>
    %x = decode.embedding %lm[%tokens] : tensor<7x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'decode.linear' op cannot be split over 2 tensor-parallel ranks: its 7 vocabulary entries are not a multiple of 2}}
    %logits = decode.linear %x, %lm : tensor<?x8xf32>, tensor<7x8xf32> -> tensor<?x7xf32>
    %next = decode.argmax %logits : tensor<?x7xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x7xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

decode.model @int4_head attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<8x64xf32>
  decode.weight @lm : !decode.qtensor<8x64xi4, group_size = 32, scale = f16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %emb = decode.weight_ref @emb : tensor<8x64xf32>
    %x = decode.embedding %emb[%tokens] : tensor<8x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %lm = decode.weight_ref @lm : !decode.qtensor<8x64xi4, group_size = 32, scale = f16>
    // expected-error @+1 {{'decode.linear' op cannot be split over tensor-parallel ranks: weight @lm of type '!decode.qtensor<8x64xi4, group_size = 32, scale = f16>' is not a dense matrix (INT4 and Tiled-CSL weights are not sharded yet)}}
    %logits = decode.linear %x, %lm : tensor<?x64xf32>, !decode.qtensor<8x64xi4, group_size = 32, scale = f16> -> tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

decode.model @biased_heads attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<8x8xf32>
  decode.weight @q : tensor<8x8xf32>
  decode.weight @qb : tensor<8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %emb = decode.weight_ref @emb : tensor<8x8xf32>
    %x = decode.embedding %emb[%tokens] : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %wq = decode.weight_ref @q : tensor<8x8xf32>
    %b = decode.weight_ref @qb : tensor<8xf32>
    // expected-error @+1 {{'decode.linear' op cannot be split over tensor-parallel ranks: it has a bias ('tensor<8xf32>'), which a column-parallel linear does not take yet}}
    %q = decode.linear %x, %wq bias %b : tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<?x8xf32>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %logits = decode.linear %x, %emb : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op is already sharded (tensor_parallel = 2)}}
decode.model @sharded attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 2 : i64} {
  decode.weight @lm : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %lm = decode.weight_ref @lm : tensor<8x8xf32>
    %x = decode.embedding %lm[%tokens] : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %logits = decode.linear %x, %lm : tensor<?x8xf32>, tensor<8x8xf32> -> tensor<?x8xf32>
    %next = decode.argmax %logits : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}
