// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout))' | FileCheck %s
// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=64}))' | FileCheck %s --check-prefix=A64
// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=1}))' | FileCheck %s --check-prefix=A1
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=48}))' 2>&1 | FileCheck %s --check-prefix=BAD48
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=0}))' 2>&1 | FileCheck %s --check-prefix=BAD0
// RUN: not fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout{alignment=-256}))' 2>&1 | FileCheck %s --check-prefix=BADNEG

// Weights are placed in declaration order, the first at 0, each at the next
// multiple of the alignment (256 bytes by default) after the previous one
// ends. An offset already present is replaced.

// CHECK-LABEL: decode.model @layout
// CHECK-NEXT:    decode.weight @a : tensor<3xf32> {offset = 0 : i64}
// 12 bytes -> 256.
// CHECK-NEXT:    decode.weight @b : tensor<64xf32> {offset = 256 : i64}
// Exactly 256 bytes: the next weight starts right after it.
// CHECK-NEXT:    decode.weight @c : tensor<10x7xbf16> {offset = 512 : i64}
// 140 bytes of bf16.
// CHECK-NEXT:    decode.weight @d : tensor<1xf16> {offset = 768 : i64}
// CHECK-NEXT:    decode.weight @e = concat ["e0", "e1"] : tensor<128x2xf32> {offset = 1024 : i64}
// INT4: 8*64/2 = 256 bytes of nibbles + 8*(64/32) (scale, min) f16 pairs = 320.
// CHECK-NEXT:    decode.weight @q : !decode.qtensor<8x64xi4, group_size = 32, scale = f16> {offset = 2048 : i64}
// Tiled-CSL reserves its header, 4 tiles + 1 offsets padded to 8 words, and
// a word per element of every tile: 8 * 4 + 4 * 8*8 * 4 = 1056 bytes.
// CHECK-NEXT:    decode.weight @s : !decode.tiled_csl<16x16xf16, tile = 8x8> {offset = 2560 : i64}
// CHECK-NEXT:    decode.weight @z : tensor<4xf32> {offset = 3840 : i64}
// CHECK-NEXT:    func.func @step

// A64-LABEL: decode.model @layout
// A64-NEXT:    decode.weight @a : tensor<3xf32> {offset = 0 : i64}
// A64-NEXT:    decode.weight @b : tensor<64xf32> {offset = 64 : i64}
// A64-NEXT:    decode.weight @c : tensor<10x7xbf16> {offset = 320 : i64}
// A64-NEXT:    decode.weight @d : tensor<1xf16> {offset = 512 : i64}
// A64-NEXT:    decode.weight @e = concat ["e0", "e1"] : tensor<128x2xf32> {offset = 576 : i64}
// A64-NEXT:    decode.weight @q : !decode.qtensor<8x64xi4, group_size = 32, scale = f16> {offset = 1600 : i64}
// A64-NEXT:    decode.weight @s : !decode.tiled_csl<16x16xf16, tile = 8x8> {offset = 1920 : i64}
// A64-NEXT:    decode.weight @z : tensor<4xf32> {offset = 3008 : i64}

// Alignment 1 packs the weights back to back.
// A1-LABEL: decode.model @layout
// A1-NEXT:    decode.weight @a : tensor<3xf32> {offset = 0 : i64}
// A1-NEXT:    decode.weight @b : tensor<64xf32> {offset = 12 : i64}
// A1-NEXT:    decode.weight @c : tensor<10x7xbf16> {offset = 268 : i64}
// A1-NEXT:    decode.weight @d : tensor<1xf16> {offset = 408 : i64}
// A1-NEXT:    decode.weight @e = concat ["e0", "e1"] : tensor<128x2xf32> {offset = 410 : i64}
// A1-NEXT:    decode.weight @q : !decode.qtensor<8x64xi4, group_size = 32, scale = f16> {offset = 1434 : i64}
// A1-NEXT:    decode.weight @s : !decode.tiled_csl<16x16xf16, tile = 8x8> {offset = 1754 : i64}
// A1-NEXT:    decode.weight @z : tensor<4xf32> {offset = 2810 : i64}

// An alignment that is not a positive power of two is refused.
// BAD48: error: decode-assign-weight-layout: alignment must be a power of two between 1 and 1073741824, got 48
// BAD0: error: decode-assign-weight-layout: alignment must be a power of two between 1 and 1073741824, got 0
// BADNEG: error: decode-assign-weight-layout: alignment must be a power of two between 1 and 1073741824, got -256

decode.model @layout attributes {config = {vocab_size = 4 : i64}} {
  decode.weight @a : tensor<3xf32> {offset = 12345 : i64}
  decode.weight @b : tensor<64xf32>
  decode.weight @c : tensor<10x7xbf16>
  decode.weight @d : tensor<1xf16>
  decode.weight @e = concat ["e0", "e1"] : tensor<128x2xf32>
  decode.weight @q : !decode.qtensor<8x64xi4, group_size = 32, scale = f16>
  decode.weight @s : !decode.tiled_csl<16x16xf16, tile = 8x8>
  decode.weight @z : tensor<4xf32>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) {
    %w = decode.weight_ref @z : tensor<4xf32>
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %t = decode.weight_ref @b : tensor<64xf32>
    %table = tensor.expand_shape %t [[0, 1]] output_shape [16, 4] : tensor<64xf32> into tensor<16x4xf32>
    %x = decode.embedding %table[%tokens] : tensor<16x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
    return %x, %tokens, %cache : tensor<?x4xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
  }
}
