// RUN: fdc-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(convert-decode-to-host)'

// Errors of convert-decode-to-host. (Weights carry explicit offsets, as
// decode-assign-weight-layout would set them, except where their absence is
// the error.)

// The host lowering updates the cache in place: the cache value kv_append
// consumed is gone once it ran.
decode.model @read_after_append attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %c1 = decode.kv_append %q, %q into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x4xf32>, tensor<?x2x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
    // expected-error @+1 {{'decode.attention' op reads a KV cache value after 'decode.kv_append' updated it; the host lowering updates the cache in place}}
    %a = decode.attention %q, %cache[%slots, %positions] {layer = 0 : i64, scale = 5.000000e-01 : f32, softmax = #decode.softmax<online>} : tensor<?x2x4xf32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32> -> tensor<?x2x4xf32>
    %l = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
    return %l, %tokens, %c1 : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

// Returning the cache value from before the append is a read too.
decode.model @return_old_cache attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %c1 = decode.kv_append %q, %q into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x4xf32>, tensor<?x2x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
    // expected-error @+1 {{'func.return' op reads a KV cache value after 'decode.kv_append' updated it}}
    return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

// Two appends into one cache value.
decode.model @append_twice attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %q = tensor.expand_shape %x [[0], [1, 2]] output_shape [%m, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %c1 = decode.kv_append %q, %q into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x4xf32>, tensor<?x2x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
    // expected-error @+1 {{'decode.kv_append' op reads a KV cache value after 'decode.kv_append' updated it}}
    %c2 = decode.kv_append %q, %q into %cache[%slots, %positions] {layer = 0 : i64} : tensor<?x2x4xf32>, tensor<?x2x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
    return %x, %tokens, %c2 : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 2, head_dim = 4, f32>
  }
}

// -----

// The collectives sum.
decode.model @all_reduce attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 2 : i64} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'decode.all_reduce' op only sum all-reduces are supported by the host lowering}}
    %r = decode.all_reduce max %x {group_size = 2 : i64} : tensor<?x8xf32>
    return %r, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Weights must have been placed in the arena.
decode.model @no_offset attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    // expected-error @+1 {{'decode.weight_ref' op weight @emb has no arena offset; run decode-assign-weight-layout first}}
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @tensor_constant attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    // expected-error @+1 {{'arith.constant' op tensor constants are not supported by the host lowering}}
    %w = arith.constant dense<1.0> : tensor<16x8xf32>
    %x = decode.embedding %w[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @unknown_op attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'math.exp' op is not supported by the host lowering}}
    %y = math.exp %x : tensor<?x8xf32>
    return %y, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{convert-decode-to-host expects exactly one 'decode.model', found 0}}
module {
  func.func @f() {
    return
  }
}

// -----

// expected-error @+1 {{convert-decode-to-host expects exactly one 'decode.model', found 2}}
module {
  decode.model @a attributes {config = {vocab_size = 8 : i64}} {
    decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
    func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
      %e = decode.weight_ref @emb : tensor<16x8xf32>
      %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
      return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
    }
  }
  decode.model @b attributes {config = {vocab_size = 8 : i64}} {
    decode.weight @emb : tensor<16x8xf32> {offset = 0 : i64}
    func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
      %e = decode.weight_ref @emb : tensor<16x8xf32>
      %x = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
      return %x, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
    }
  }
}
