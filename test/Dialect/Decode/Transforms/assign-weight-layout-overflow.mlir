// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout))' 2>&1 | FileCheck %s
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=4611686018427387904}))' 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=2147483648}))' 2>&1 | FileCheck %s --check-prefix=BIG

// Offsets that would not fit in int64 are refused, naming the weight; they
// never wrap around to share an offset with another weight.

// CHECK: error: 'decode.weight' op weight @b of 4611686018427387904 bytes at offset 4611686018427387904 ends past the largest weight arena (2^63 - 1 bytes)
// CHECK-NOT: error:

// An alignment must be a power of two no larger than 1 GiB.
// HUGE: error: decode-assign-weight-layout: alignment must be a power of two between 1 and 1073741824, got 4611686018427387904
// BIG: error: decode-assign-weight-layout: alignment must be a power of two between 1 and 1073741824, got 2147483648

decode.model @layout attributes {config = {vocab_size = 4 : i64}} {
  // 2^60 f32 elements: 2^62 bytes each.
  decode.weight @a : tensor<1152921504606846976xf32>
  decode.weight @b : tensor<1152921504606846976xf32>
  decode.weight @c : tensor<4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %c0 = arith.constant 0 : index
    %l = tensor.empty(%c0) : tensor<?x4xf32>
    return %l, %tokens, %cache : tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
