// RUN: fdc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{!decode.int4 groups must be positive, got 0}}
func.func private @f(!decode.int4<groups = 0>)

// -----

// expected-error @+1 {{!decode.kv_cache INT4 group count 3 does not divide head_dim 128}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 128, !decode.int4<groups = 3>>)

// -----

// expected-error @+1 {{!decode.kv_cache INT4 group size 1 must be even (two nibbles per byte)}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, !decode.int4<groups = 4>>)

// -----

// expected-error @+1 {{!decode.kv_cache layers must be positive, got 0}}
func.func private @f(!decode.kv_cache<layers = 0, kv_heads = 1, head_dim = 128, f16>)

// -----

// expected-error @+1 {{!decode.kv_cache kv_heads must be positive, got 0}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 0, head_dim = 128, f16>)

// -----

// expected-error @+1 {{!decode.kv_cache head_dim must be positive, got -1}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = -1, f16>)

// -----

// expected-error @+1 {{!decode.kv_cache element type must be f32, f16, bf16 or !decode.int4, got 'i8'}}
func.func private @f(!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 128, i8>)

// -----

// expected-error @+1 {{!decode.qtensor group_size 100 does not divide K = 4096}}
func.func private @f(!decode.qtensor<4096x4096xi4, group_size = 100, scale = f16>)

// -----

// expected-error @+1 {{!decode.qtensor must be 2-D [N, K], got rank 1}}
func.func private @f(!decode.qtensor<4096xi4, group_size = 128, scale = f16>)

// -----

// expected-error @+1 {{!decode.qtensor scale type must be f16, bf16 or f32, got 'i8'}}
func.func private @f(!decode.qtensor<64x128xi4, group_size = 128, scale = i8>)

// -----

// expected-error @+1 {{!decode.tiled_csl tile of 3x3 elements is not a multiple of 4 (tile runs are padded to whole 16-byte vectors)}}
func.func private @f(!decode.tiled_csl<128x100xf16, tile = 3x3>)

// -----

// expected-error @+1 {{!decode.tiled_csl tile dimension 0 along K must be positive}}
func.func private @f(!decode.tiled_csl<128x100xf16, tile = 128x0>)

// -----

// expected-error @+1 {{!decode.tiled_csl element type must be f16 or bf16, got 'f32'}}
func.func private @f(!decode.tiled_csl<128x128xf32, tile = 128x64>)

// -----

// expected-error @+1 {{!decode.tiled_csl shape and tile must be 2-D}}
func.func private @f(!decode.tiled_csl<128x128xf16, tile = 128>)

// -----

// expected-error @+1 {{!decode.tiled_csl tile of 512x256 elements does not fit 16-bit locations}}
func.func private @f(!decode.tiled_csl<512x256xf16, tile = 512x256>)

// -----

// expected-error @+1 {{unknown softmax scheme 'fast'; expected 'online' or 'unified_max'}}
func.func private @f() attributes {s = #decode.softmax<fast>}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> needs lo < hi, got lo = 5, hi = -5}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0.0, lo = 5.0, hi = -5.0>}

// -----

// expected-error @+1 {{#decode.softmax<unified_max> hi = 100 overflows exp() in f32 (must be <= 88)}}
func.func private @f() attributes {s = #decode.softmax<unified_max, phi = 0.0, lo = -5.0, hi = 100.0>}

// -----

// expected-error @+1 {{'decode.model' op has no step function ('func.func @step')}}
decode.model @m attributes {config = {}} {
  decode.weight @w : tensor<4xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step argument #1 (positions) must be 'tensor<?xi32>', got 'tensor<?xi64>'}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi64>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %t, %c : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step function must take 8 arguments (tokens, positions, slots, temperature, top_k, top_p, uniform, cache), got 1}}
  func.func @step(%t: tensor<?xi32>) {
    return
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step argument #7 (cache) must be a !decode.kv_cache, got 'tensor<?xf32>'}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: tensor<?xf32>) {
    return
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step function must return (logits, next_tokens, cache), got 0 results}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    return
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step result #0 (logits) must be tensor<?xVxf32>, got 'tensor<?x512xbf16>'}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xbf16>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xbf16>
    return %l, %t, %c : tensor<?x512xbf16>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step result #1 (next_tokens) must be tensor<?xi32>, got 'tensor<?xi64>'}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi64>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    %n = tensor.empty(%c0) : tensor<?xi64>
    return %l, %n, %c : tensor<?x512xf32>, tensor<?xi64>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step result #2 (cache) must have the argument's type}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, tensor<?xf32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    %n = tensor.empty(%c0) : tensor<?xf32>
    return %l, %t, %n : tensor<?x512xf32>, tensor<?xi32>, tensor<?xf32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 1000 : i64}} {
  // expected-error @+1 {{'func.func' op logits width 512 does not match config vocab_size = 1000}}
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %t, %c : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'arith.constant' op is not allowed directly in 'decode.model'}}
  %x = arith.constant 0 : index
}

// -----

// expected-error @+1 {{'decode.weight' op expects parent op 'decode.model'}}
decode.weight @w : tensor<4xf32>

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w must have a static shape, got 'tensor<?xf32>'}}
  decode.weight @w : tensor<?xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w element type must be f32, f16 or bf16, got 'i8'}}
  decode.weight @w : tensor<4xi8>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w must be a tensor, !decode.qtensor or !decode.tiled_csl, got 'f32'}}
  decode.weight @w : f32
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w concatenates no sources}}
  decode.weight @w = concat [] : tensor<4xf32>
}


// -----

decode.model @m attributes {config = {}} {
  decode.weight @w : tensor<4xf32>
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    // expected-error @+1 {{'decode.weight_ref' op type 'tensor<8xf32>' does not match weight @w declared as 'tensor<4xf32>'}}
    %w = decode.weight_ref @w : tensor<8xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %t, %c : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

decode.model @m attributes {config = {}} {
  func.func @step(%t: tensor<?xi32>, %p: tensor<?xi32>, %s: tensor<?xi32>, %temp: tensor<?xf32>, %k: tensor<?xi32>, %tp: tensor<?xf32>, %u: tensor<?xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) -> (tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>) {
    // expected-error @+1 {{'decode.weight_ref' op references undeclared weight @nope}}
    %w = decode.weight_ref @nope : tensor<8xf32>
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x512xf32>
    return %l, %t, %c : tensor<?x512xf32>, tensor<?xi32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  }
}

// -----

func.func @f() {
  // expected-error @+1 {{'decode.weight_ref' op must be inside a 'decode.model'}}
  %w = decode.weight_ref @w : tensor<8xf32>
  return
}

// -----

func.func @f(%t: tensor<512x256xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'decode.embedding' op result hidden dimension = 128 does not match table hidden dimension = 256}}
  %0 = decode.embedding %t[%i] : tensor<512x256xf32>, tensor<?xi32> -> tensor<?x128xf32>
  return
}

// -----

func.func @f(%t: tensor<512x256xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'decode.embedding' op result element type 'bf16' does not match table element type 'f32'}}
  %0 = decode.embedding %t[%i] : tensor<512x256xf32>, tensor<?xi32> -> tensor<?x256xbf16>
  return
}

// -----

func.func @f(%t: tensor<512x256xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{'decode.embedding' op tokens must be rank 1 [M], got 'tensor<?x2xi32>'}}
  %0 = decode.embedding %t[%i] : tensor<512x256xf32>, tensor<?x2xi32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%t: tensor<512xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'decode.embedding' op table must be rank 2 [vocab, hidden], got 'tensor<512xf32>'}}
  %0 = decode.embedding %t[%i] : tensor<512xf32>, tensor<?xi32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%t: tensor<512x256xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{'decode.embedding' op result batch dimension M = 3 does not match tokens dimension M = 4}}
  %0 = decode.embedding %t[%i] : tensor<512x256xf32>, tensor<4xi32> -> tensor<3x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<128xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op weight dimension = 128 does not match input hidden dimension = 256}}
  %0 = decode.rms_norm %x, %w {eps = 1.0e-5 : f32} : tensor<?x256xf32>, tensor<128xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op eps must be positive and finite, got 0}}
  %0 = decode.rms_norm %x, %w {eps = 0.0 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op result type 'tensor<?x256xbf16>' must equal input type 'tensor<?x256xf32>'}}
  %0 = decode.rms_norm %x, %w {eps = 1.0e-5 : f32} : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x256x2xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op input must be rank 2 [M, hidden], got 'tensor<?x256x2xf32>'}}
  %0 = decode.rms_norm %x, %w {eps = 1.0e-5 : f32} : tensor<?x256x2xf32>, tensor<256xf32> -> tensor<?x256x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x128xf32>) {
  // expected-error @+1 {{'decode.linear' op input dimension K = 256 does not match weight dimension K = 128}}
  %0 = decode.linear %x, %w : tensor<?x256xf32>, tensor<512x128xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op result dimension N = 256 does not match the weight's output dimension N = 512}}
  %0 = decode.linear %x, %w : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op result dimension N = 512 does not match the weight's output dimension N = 256}}
  %0 = decode.linear %x, %w {activation = #decode<activation silu_gate_up>} : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<511x256xf32>) {
  // expected-error @+1 {{'decode.linear' op silu_gate_up needs an even weight dimension N (gate rows then up rows), got N = 511}}
  %0 = decode.linear %x, %w {activation = #decode<activation silu_gate_up>} : tensor<?x256xf32>, tensor<511x256xf32> -> tensor<?x255xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xbf16>, %w: tensor<512x256xbf16>) {
  // expected-error @+1 {{'decode.linear' op result element type 'f16' must be the input's ('bf16') or f32}}
  %0 = decode.linear %x, %w : tensor<?x256xbf16>, tensor<512x256xbf16> -> tensor<?x512xf16>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>, %b: tensor<256xf32>) {
  // expected-error @+1 {{'decode.linear' op bias dimension = 256 does not match weight dimension N = 512}}
  %0 = decode.linear %x, %w bias %b : tensor<?x256xf32>, tensor<512x256xf32>, tensor<256xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>, %r: tensor<?x512xbf16>) {
  // expected-error @+1 {{'decode.linear' op residual type 'tensor<?x512xbf16>' must equal result type 'tensor<?x512xf32>'}}
  %0 = decode.linear %x, %w residual %r : tensor<?x256xf32>, tensor<512x256xf32>, tensor<?x512xbf16> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op has residual_rank 0 but no residual to add on that rank}}
  %0 = decode.linear %x, %w {residual_rank = 0 : i64} : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>, %b: tensor<512xf32>, %r: tensor<?x512xf32>) {
  // expected-error @+1 {{'decode.linear' op has residual_rank 0 and a bias ('tensor<512xf32>'): the other ranks' results would add the bias too}}
  %0 = decode.linear %x, %w bias %b residual %r {residual_rank = 0 : i64} : tensor<?x256xf32>, tensor<512x256xf32>, tensor<512xf32>, tensor<?x512xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>, %r: tensor<?x512xf32>) {
  // expected-error @+1 {{'decode.linear' op residual_rank must be a rank (>= 0), got -1}}
  %0 = decode.linear %x, %w residual %r {residual_rank = -1 : i64} : tensor<?x256xf32>, tensor<512x256xf32>, tensor<?x512xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: !decode.qtensor<512x128xi4, group_size = 128, scale = f16>) {
  // expected-error @+1 {{'decode.linear' op input dimension K = 256 does not match weight dimension K = 128}}
  %0 = decode.linear %x, %w : tensor<?x256xf32>, !decode.qtensor<512x128xi4, group_size = 128, scale = f16> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf16>, %w: !decode.tiled_csl<512x128xf16, tile = 128x64>) {
  // expected-error @+1 {{'decode.sparse_linear' op input dimension K = 256 does not match weight dimension K = 128}}
  %0 = decode.sparse_linear %x, %w : tensor<?x256xf16>, !decode.tiled_csl<512x128xf16, tile = 128x64> -> tensor<?x512xf16>
  return
}

// -----

func.func @f(%x: tensor<?x128xbf16>, %w: !decode.tiled_csl<512x128xf16, tile = 128x64>) {
  // expected-error @+1 {{'decode.sparse_linear' op input element type 'bf16' does not match sparse weight element type 'f16'}}
  %0 = decode.sparse_linear %x, %w : tensor<?x128xbf16>, !decode.tiled_csl<512x128xf16, tile = 128x64> -> tensor<?x512xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op rotary_dim 64 exceeds head dimension 32}}
  %0 = decode.rope %x, %p {rotary_dim = 64 : i64, theta = 1.0e4 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op rotary_dim must be positive and even, got 7}}
  %0 = decode.rope %x, %p {rotary_dim = 7 : i64, theta = 1.0e4 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op theta must be finite and greater than 1, got 1}}
  %0 = decode.rope %x, %p {rotary_dim = 32 : i64, theta = 1.0 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.rope' op input must be rank 3 [M, heads, head_dim], got 'tensor<?x256xf32>'}}
  %0 = decode.rope %x, %p {rotary_dim = 32 : i64, theta = 1.0e4 : f32} : tensor<?x256xf32> -> tensor<?x256xf32>
  return
}

// -----

// expected-note @+1 {{prior use here}}
func.func @f(%x: tensor<?x8x32xf32>, %p: tensor<?xi64>) {
  // expected-error @+1 {{use of value '%p' expects different type than prior uses: 'tensor<?xi32>' vs 'tensor<?xi64>'}}
  %0 = decode.rope %x, %p {rotary_dim = 32 : i64, theta = 1.0e4 : f32} : tensor<?x8x32xf32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%k: tensor<?x4x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key heads 4 does not match cache kv_heads 2}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 0 : i64} : tensor<?x4x32xf32>, tensor<?x4x32xf32> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

func.func @f(%k: tensor<?x2x64xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key head_dim 64 does not match cache head_dim 32}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 0 : i64} : tensor<?x2x64xf32>, tensor<?x2x64xf32> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

func.func @f(%k: tensor<?x2x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op layer 2 is out of range for a cache of 2 layers}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 2 : i64} : tensor<?x2x32xf32>, tensor<?x2x32xf32> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

func.func @f(%k: tensor<?x2x32xbf16>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key element type 'bf16' does not match cache element type 'f32'}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 0 : i64} : tensor<?x2x32xbf16>, tensor<?x2x32xbf16> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

func.func @f(%k: tensor<4x2x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key batch dimension must be dynamic ('?'), got 'tensor<4x2x32xf32>'}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 0 : i64} : tensor<4x2x32xf32>, tensor<4x2x32xf32> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

func.func @f(%k: tensor<?x2x32xf32>, %v: tensor<?x2x32xf16>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, !decode.int4<groups = 2>>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key type 'tensor<?x2x32xf32>' does not match value type 'tensor<?x2x32xf16>'}}
  %0 = decode.kv_append %k, %v into %c[%s, %p] {layer = 0 : i64} : tensor<?x2x32xf32>, tensor<?x2x32xf16> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, !decode.int4<groups = 2>>
  return
}

// -----

func.func @f(%q: tensor<?x3x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op query heads (3) not divisible by cache kv heads (2)}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>} : tensor<?x3x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x3x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x64xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op query head_dim 64 does not match cache head_dim 32}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>} : tensor<?x8x64xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x64xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op layer -1 is out of range for a cache of 2 layers}}
  %0 = decode.attention %q, %c[%s, %p] {layer = -1 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op scale must be positive and finite, got -1}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = -1.0 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op splits must be 0 (auto) or positive, got -2}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>, splits = -2 : i64} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf32>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op result type 'tensor<?x8x32xbf16>' must equal query type 'tensor<?x8x32xf32>'}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf32>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xbf16>
  return
}

// -----

func.func @f(%q: tensor<?x8x32xf16>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.attention' op query element type 'f16' does not match cache element type 'f32'}}
  %0 = decode.attention %q, %c[%s, %p] {layer = 0 : i64, scale = 0.125 : f32, softmax = #decode.softmax<online>} : tensor<?x8x32xf16>, !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32> -> tensor<?x8x32xf16>
  return
}

// -----

func.func @f(%l: tensor<4x512xf32>) {
  // expected-error @+1 {{'decode.argmax' op logits batch dimension must be dynamic ('?'), got 'tensor<4x512xf32>'}}
  %0 = decode.argmax %l : tensor<4x512xf32> -> tensor<?xi32>
  return
}

// -----

func.func @f(%l: tensor<?x?xf32>) {
  // expected-error @+1 {{'decode.argmax' op logits vocabulary dimension must be static}}
  %0 = decode.argmax %l : tensor<?x?xf32> -> tensor<?xi32>
  return
}

// -----

func.func @f(%l: tensor<?xf32>, %u: tensor<?xf32>, %k: tensor<?xi32>) {
  // expected-error @+1 {{'decode.sample' op logits must be rank 2 [M, vocab], got 'tensor<?xf32>'}}
  %0 = decode.sample %l, %u, %u, %k, %u : tensor<?xf32> -> tensor<?xi32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'decode.all_reduce' op group_size must be at least 1, got 0}}
  %0 = decode.all_reduce sum %x {group_size = 0 : i64} : tensor<?x8xf32>
  return
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'func.func' op step function must have a body}}
  func.func private @step(tensor<?xi32>)
}

// -----

func.func @f(%t: tensor<512x256xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'decode.embedding' op result must be rank 2 [M, hidden], got 'tensor<?xf32>'}}
  %0 = decode.embedding %t[%i] : tensor<512x256xf32>, tensor<?xi32> -> tensor<?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256x2xf32>) {
  // expected-error @+1 {{'decode.rms_norm' op weight must be rank 1 [hidden], got 'tensor<256x2xf32>'}}
  %0 = decode.rms_norm %x, %w {eps = 1.0e-5 : f32} : tensor<?x256xf32>, tensor<256x2xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<256xf32>) {
  // expected-error @+1 {{'decode.linear' op weight must be rank 2 [N, K], got 'tensor<256xf32>'}}
  %0 = decode.linear %x, %w : tensor<?x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return
}

// -----

func.func @f(%x: tensor<256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op input must be rank 2 [M, K], got 'tensor<256xf32>'}}
  %0 = decode.linear %x, %w : tensor<256xf32>, tensor<512x256xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op result must be rank 2 [M, N], got 'tensor<512xf32>'}}
  %0 = decode.linear %x, %w : tensor<?x256xf32>, tensor<512x256xf32> -> tensor<512xf32>
  return
}

// -----

func.func @f(%x: tensor<4x256xf32>, %w: tensor<512x256xf32>) {
  // expected-error @+1 {{'decode.linear' op result batch dimension M = 8 does not match input batch dimension M = 4}}
  %0 = decode.linear %x, %w : tensor<4x256xf32>, tensor<512x256xf32> -> tensor<8x512xf32>
  return
}

// -----

func.func @f(%x: tensor<?x256xf32>, %w: tensor<512x256xf32>, %b: tensor<512x1xf32>) {
  // expected-error @+1 {{'decode.linear' op bias must be rank 1 [N], got 'tensor<512x1xf32>'}}
  %0 = decode.linear %x, %w bias %b : tensor<?x256xf32>, tensor<512x256xf32>, tensor<512x1xf32> -> tensor<?x512xf32>
  return
}

// -----

func.func @f(%k: tensor<?x64xf32>, %c: !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>, %s: tensor<?xi32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'decode.kv_append' op key must be rank 3 [M, heads, head_dim], got 'tensor<?x64xf32>'}}
  %0 = decode.kv_append %k, %k into %c[%s, %p] {layer = 0 : i64} : tensor<?x64xf32>, tensor<?x64xf32> into !decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, f32>
  return
}

// -----

// expected-error @+1 {{!decode.qtensor dimensions must be positive}}
func.func private @f(!decode.qtensor<0x128xi4, group_size = 128, scale = f16>)

// -----

func.func @f(%x: tensor<?x128xf16>, %w: !decode.tiled_csl<512x128xf16, tile = 128x64>, %r: tensor<?x512xf16>) {
  // expected-error @+1 {{'decode.sparse_linear' op result dimension N = 512 does not match the weight's output dimension N = 256}}
  %0 = decode.sparse_linear %x, %w residual %r {activation = #decode<activation silu_gate_up>} : tensor<?x128xf16>, !decode.tiled_csl<512x128xf16, tile = 128x64>, tensor<?x512xf16> -> tensor<?x512xf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>, %r: tensor<?x8xbf16>) {
  // expected-error @+1 {{'decode.all_reduce' op residual type 'tensor<?x8xbf16>' must be the input's 'tensor<?x8xf32>'}}
  %0 = decode.all_reduce sum %x residual %r {group_size = 2 : i64} : tensor<?x8xf32>, tensor<?x8xbf16>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'decode.all_gather' op result 'tensor<?x8xf32>' must be [M, 8 * 2] for input 'tensor<?x8xf32>'}}
  %0 = decode.all_gather %x {group_size = 2 : i64} : tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'decode.all_gather' op result element type 'bf16' must be the input's 'f32'}}
  %0 = decode.all_gather %x {group_size = 2 : i64} : tensor<?x8xf32> -> tensor<?x16xbf16>
  return
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{#decode.shard: a source of 7 rows does not split into 2 equal parts}}
  decode.weight @w shard <dim = 0, ranks = 2, source_rows = [7]> : tensor<3x4xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{#decode.shard ranks must be in [2, 64], got 1}}
  decode.weight @w shard <dim = 1, ranks = 1, source_rows = [4]> : tensor<4x4xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w has 2 source(s) but its shard lists 1 source row counts}}
  decode.weight @w = concat ["a", "b"] shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4x4xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w has 3 rows, its shard of the sources gives 4}}
  decode.weight @w = concat ["a", "b"] shard <dim = 0, ranks = 2, source_rows = [4, 4]> : tensor<3x4xf32>
}

// -----

decode.model @m attributes {config = {}} {
  // expected-error @+1 {{'decode.weight' op weight @w: only a 2-D tensor weight can be sharded, got 'tensor<4xf32>'}}
  decode.weight @w shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4xf32>
}

// -----

decode.model @m attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 4 : i64} {
  // expected-error @+1 {{'decode.weight' op weight @w is sharded over 2 ranks, the model's tensor_parallel is 4}}
  decode.weight @w shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %l = arith.constant dense<0.0> : tensor<1x8xf32>
    %c = tensor.cast %l : tensor<1x8xf32> to tensor<?x8xf32>
    return %c, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 2 : i64} {
  decode.weight @w : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %w = decode.weight_ref @w : tensor<8x8xf32>
    %x = decode.embedding %w[%tokens] : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'decode.all_reduce' op group_size 4 must be the model's tensor_parallel 2}}
    %r = decode.all_reduce sum %x {group_size = 4 : i64} : tensor<?x8xf32>
    return %r, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

decode.model @m attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 2 : i64} {
  decode.weight @w : tensor<8x8xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %w = decode.weight_ref @w : tensor<8x8xf32>
    %x = decode.embedding %w[%tokens] : tensor<8x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    // expected-error @+1 {{'decode.linear' op residual_rank 2 is not a rank of the model's tensor-parallel group of 2}}
    %y = decode.linear %x, %w residual %x {residual_rank = 2 : i64} : tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
    %r = decode.all_reduce sum %y {group_size = 2 : i64} : tensor<?x8xf32>
    return %r, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}

// -----

// expected-error @+1 {{'decode.model' op tensor_parallel must be in [1, 64], got 0}}
decode.model @m attributes {config = {vocab_size = 8 : i64}, tensor_parallel = 0 : i64} {
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %l = arith.constant dense<0.0> : tensor<1x8xf32>
    %c = tensor.cast %l : tensor<1x8xf32> to tensor<?x8xf32>
    return %c, %tokens, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
