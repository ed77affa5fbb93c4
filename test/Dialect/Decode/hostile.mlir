// RUN: fdc-opt %s -split-input-file -verify-diagnostics

// Hostile and careless input (issue 10): IR the verifier accepts must compile
// to a step that cannot read or write outside its buffers for any step input
// the runtime admits (token ids in [0, vocab_size), slots in [0, num_slots),
// positions in [0, max_context)).

// An embedding table with fewer rows than the vocabulary: token 511 would read
// past it.
decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  decode.weight @embed : tensor<8x256xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @embed : tensor<8x256xf32>
    // expected-error @+1 {{'decode.embedding' op table @embed has 8 rows, fewer than the vocabulary's 512 tokens (config vocab_size); token ids up to 511 would read past it}}
    %x = decode.embedding %e[%tokens] : tensor<8x256xf32>, tensor<?xi32> -> tensor<?x256xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Without vocab_size in the config, the logits width is the vocabulary.
decode.model @m attributes {config = {}} {
  decode.weight @embed : tensor<511x4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @embed : tensor<511x4xf32>
    // expected-error @+1 {{'decode.embedding' op table @embed has 511 rows, fewer than the vocabulary's 512 tokens (the logits width); token ids up to 511 would read past it}}
    %x = decode.embedding %e[%tokens] : tensor<511x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// A table computed in the step with a dynamic row count.
decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %t = tensor.empty(%c1) : tensor<?x4xf32>
    // expected-error @+1 {{'decode.embedding' op table of type 'tensor<?x4xf32>' must have a static row count of at least 512 (config vocab_size)}}
    %x = decode.embedding %t[%tokens] : tensor<?x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// More rows than the vocabulary is fine (padded tables).
decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  decode.weight @embed : tensor<640x4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @embed : tensor<640x4xf32>
    %x = decode.embedding %e[%tokens] : tensor<640x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Index operands must be the step arguments the runtime bound-checks.
decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  decode.weight @embed : tensor<512x4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @embed : tensor<512x4xf32>
    // expected-error @+1 {{'decode.embedding' op tokens must be the step argument 'tokens' (#0), got the step argument 'slots' (#2)}}
    %x = decode.embedding %e[%slots] : tensor<512x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    // expected-error @+1 {{'decode.kv_append' op slots must be the step argument 'slots' (#2), got the step argument 'tokens' (#0)}}
    %c2 = decode.kv_append %k, %k into %cache[%tokens, %positions] {layer = 0 : i64} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    // expected-error @+1 {{'decode.kv_append' op positions must be the step argument 'positions' (#1), got the step argument 'slots' (#2)}}
    %c2 = decode.kv_append %k, %k into %cache[%slots, %slots] {layer = 0 : i64} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    %p = arith.addi %positions, %positions : tensor<?xi32>
    // expected-error @+1 {{'decode.kv_append' op positions must be the step argument 'positions' (#1), got a value computed inside the step}}
    %c2 = decode.kv_append %k, %k into %cache[%slots, %p] {layer = 0 : i64} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    // expected-error @+1 {{'decode.attention' op slots must be the step argument 'slots' (#2), got the step argument 'positions' (#1)}}
    %a = decode.attention %k, %cache[%positions, %slots] {layer = 0 : i64, scale = 0.5 : f32, softmax = #decode.softmax<online>} : tensor<?x1x4xf32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32> -> tensor<?x1x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    // expected-error @+1 {{'decode.attention' op positions must be the step argument 'positions' (#1), got the step argument 'top_k' (#4)}}
    %a = decode.attention %k, %cache[%slots, %top_k] {layer = 0 : i64, scale = 0.5 : f32, softmax = #decode.softmax<online>} : tensor<?x1x4xf32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32> -> tensor<?x1x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c1 = arith.constant 1 : index
    %k = tensor.empty(%c1) : tensor<?x1x4xf32>
    // expected-error @+1 {{'decode.rope' op positions must be the step argument 'positions' (#1), got the step argument 'tokens' (#0)}}
    %r = decode.rope %k, %tokens {rotary_dim = 4 : i64, theta = 1.0e4 : f32} : tensor<?x1x4xf32> -> tensor<?x1x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// NaN and infinities in the config have no JSON spelling.
// expected-error @+1 {{'decode.model' op config rms_norm_eps = nan is not a finite number}}
decode.model @m attributes {config = {rms_norm_eps = 0x7FC00000 : f32, vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config rope_scaling.factor = inf is not a finite number}}
decode.model @m attributes {config = {rope_scaling = {factor = 0x7F800000 : f32}, vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config eps_list[1] = -inf is not a finite number}}
decode.model @m attributes {config = {eps_list = [1.0 : f32, 0xFF800000 : f32], vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// The keys the model library and the runtime read.
// expected-error @+1 {{'decode.model' op config vocab_size must be an integer, got "512"}}
decode.model @m attributes {config = {vocab_size = "512"}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config vocab_size must be an integer, got 5.120000e+02 : f32}}
decode.model @m attributes {config = {vocab_size = 512.0 : f32}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config vocab_size must be an integer, got true}}
decode.model @m attributes {config = {vocab_size = true}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config max_position_embeddings must be in [1, 2147483647], got 0}}
decode.model @m attributes {config = {max_position_embeddings = 0 : i64, vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config max_position_embeddings must be in [1, 2147483647], got -4096}}
decode.model @m attributes {config = {max_position_embeddings = -4096 : i64, vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config max_position_embeddings must be in [1, 2147483647], got 4294967296}}
decode.model @m attributes {config = {max_position_embeddings = 4294967296 : i64, vocab_size = 512 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op config vocab_size must be in [1, 2147483647], got 0}}
decode.model @m attributes {config = {vocab_size = 0 : i64}} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %tokens, %cache : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Float attributes: NaN and infinities fail every bound.
func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op eps must be positive and finite, got nan}}
  %0 = decode.rms_norm %x, %w {eps = 0x7FC00000 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op eps must be positive and finite, got inf}}
  %0 = decode.rms_norm %x, %w {eps = 0x7F800000 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op eps must be positive and finite, got -1e-05}}
  %0 = decode.rms_norm %x, %w {eps = -1.0e-5 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op theta must be finite and greater than 1, got nan}}
  %0 = decode.rope %x, %p {rotary_dim = 32 : i64, theta = 0x7FC00000 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op theta must be finite and greater than 1, got inf}}
  %0 = decode.rope %x, %p {rotary_dim = 32 : i64, theta = 0x7F800000 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op scale must be positive and finite, got nan}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0x7FC00000 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op scale must be positive and finite, got inf}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0x7F800000 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
  return
}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> phi must be finite, got nan}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0x7FF8000000000000, lo = -5.0, hi = 5.0>}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> phi must be finite, got inf}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0x7FF0000000000000, lo = -5.0, hi = 5.0>}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> lo must be finite, got -inf}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0.0, lo = 0xFFF0000000000000, hi = 5.0>}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> hi must be finite, got nan}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0.0, lo = -5.0, hi = 0x7FF8000000000000>}

// -----

// Sizes that do not fit in 64 bits.
decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w of type 'tensor<4611686018427387904x4xf32>' takes more than 2^63 - 1 bytes}}
  decode.weight @w : tensor<4611686018427387904x4xf32>
}

// -----

// expected-error @+1 {{!decode.kv_cache of 4611686018427387904 layers, 1 kv_heads and head_dim 4 takes more than 2^63 - 1 bytes per token}}
func.func private @f(!decode.kv_cache<layers = 4611686018427387904, kv_heads = 1, head_dim = 4, f32>)

// -----

// expected-error @+1 {{!decode.kv_cache of 1 layers, 1 kv_heads and head_dim 4611686018427387904 takes more than 2^63 - 1 bytes per token}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4611686018427387904, f16>)

// -----

// expected-error @+1 {{!decode.qtensor of 4611686018427387904x4611686018427387904 takes more than 2^63 - 1 bytes}}
func.func private @f(!decode.qtensor<4611686018427387904x4611686018427387904xi4, group_size = 128, scale = f16>)

// -----

// expected-error @+1 {{!decode.tiled_csl tile of 4294967296x4294967296 elements does not fit 16-bit locations}}
func.func private @f(!decode.tiled_csl<4294967296x4294967296xf16, tile = 4294967296x4294967296>)

// -----

// expected-error @+1 {{!decode.tiled_csl of 4611686018427387904x128 takes more than 2^63 - 1 bytes}}
func.func private @f(!decode.tiled_csl<4611686018427387904x128xf16, tile = 128x64>)

// -----

// A per-sequence tensor with a dynamic inner dimension: the kernels would take
// the dynamic marker for the hidden size.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    // expected-error @+1 {{'decode.embedding' op result #0 of type 'tensor<?x?xf32>' is computed per sequence, so it must have a dynamic batch dimension and static others (tensor<?x...>)}}
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x?xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x8xf32>
    return %l, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// A per-sequence tensor with a static batch dimension: 4 rows would be
// allocated while the kernels write one per live sequence.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    // expected-error @+1 {{'decode.embedding' op result #0 of type 'tensor<4x8xf32>' is computed per sequence}}
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<4x8xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x8xf32>
    return %l, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// An activation computed from constants alone has its own row count: argmax
// would write 16 rows into a result sized for the live batch.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %c16 = arith.constant 16 : index
    %rows = tensor.empty(%c16) : tensor<?x8xf32>
    // expected-error @+1 {{'decode.argmax' op logits must be computed from the step's inputs (one row per sequence), got a value computed from weights and constants alone, of type 'tensor<?x8xf32>'}}
    %next = decode.argmax %rows : tensor<?x8xf32> -> tensor<?xi32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    return %h, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// A linear whose residual comes from weights alone.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  decode.weight @w : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %w = decode.weight_ref @w : tensor<8x8xf32>
    %c4 = arith.constant 4 : index
    %r = tensor.empty(%c4) : tensor<?x8xf32>
    // expected-error @+1 {{'decode.linear' op residual must be computed from the step's inputs (one row per sequence)}}
    %x = decode.linear %h, %w residual %r : tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %next = decode.argmax %x : tensor<?x8xf32> -> tensor<?xi32>
    return %x, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Sampling parameters are the step's own arguments, which the runtime checks.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'decode.sample' op top_k must be the step argument 'top_k' (#4), got the step argument 'positions' (#1)}}
    %next = decode.sample %h, %uniform, %temperature, %positions, %top_p : tensor<?x8xf32> -> tensor<?xi32>
    return %h, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// A weight operand computed per sequence: rms_norm would read 64 elements of
// a per-sequence vector that holds one per live sequence.
decode.model @m attributes {config = {vocab_size = 64 : i64}} {
  decode.weight @emb : tensor<64x64xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x64xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<64x64xf32>
    %h = decode.embedding %e[%tokens] : tensor<64x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    // expected-error @+1 {{'decode.rms_norm' op weight must be a weight (computed from weights and constants alone, with a static shape), got a value computed per sequence of type 'tensor<?xf32>'}}
    %x = decode.rms_norm %h, %temperature {eps = 1.0e-05 : f32} : tensor<?x64xf32>, tensor<?xf32> -> tensor<?x64xf32>
    %next = decode.argmax %x : tensor<?x64xf32> -> tensor<?xi32>
    return %x, %next, %cache : tensor<?x64xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// A linear bias computed per sequence.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  decode.weight @w : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %w = decode.weight_ref @w : tensor<8x8xf32>
    // expected-error @+1 {{'decode.linear' op bias must be a weight (computed from weights and constants alone, with a static shape), got a value computed per sequence of type 'tensor<?xf32>'}}
    %x = decode.linear %h, %w bias %top_p : tensor<?x8xf32>, tensor<8x8xf32>, tensor<?xf32> -> tensor<?x8xf32>
    %next = decode.argmax %x : tensor<?x8xf32> -> tensor<?xi32>
    return %x, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Collapsing the batch into another dimension makes 4 rows per sequence.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x32xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x32xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %h3 = tensor.expand_shape %h [[0], [1, 2]] output_shape [%m, 4, 8] : tensor<?x32xf32> into tensor<?x4x8xf32>
    // expected-error @+1 {{'tensor.collapse_shape' op reshapes a per-sequence value: the batch dimension must be a reassociation group of its own ([0])}}
    %rows = tensor.collapse_shape %h3 [[0, 1], [2]] : tensor<?x4x8xf32> into tensor<?x8xf32>
    %next = decode.argmax %rows : tensor<?x8xf32> -> tensor<?xi32>
    return %rows, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// An expand whose batch size is a constant, not the batch.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x8xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    %big = arith.constant 100000 : index
    // expected-error @+1 {{'tensor.expand_shape' op reshapes a per-sequence value: output_shape[0] must be the batch, a tensor.dim of a per-sequence value at index 0}}
    %h3 = tensor.expand_shape %h [[0], [1, 2]] output_shape [%big, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x8xf32>
    return %l, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// Logits wider than the vocabulary: argmax could pick an id no table has.
decode.model @m attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @emb : tensor<16x16xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %e = decode.weight_ref @emb : tensor<16x16xf32>
    %h = decode.embedding %e[%tokens] : tensor<16x16xf32>, tensor<?xi32> -> tensor<?x16xf32>
    // expected-error @+1 {{'decode.argmax' op logits width 16 must be the vocabulary's 8 (ids it picks index the embedding tables)}}
    %next = decode.argmax %h : tensor<?x16xf32> -> tensor<?xi32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x8xf32>
    return %l, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
