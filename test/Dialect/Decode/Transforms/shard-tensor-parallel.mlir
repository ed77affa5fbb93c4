// RUN: fdc-opt %S/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2}))' | FileCheck %s
// RUN: fdc-opt %S/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=1}))' | FileCheck %s --check-prefix=ONE
// RUN: fdc-opt %S/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=2}))' | fdc-opt --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=1}))' | FileCheck %s
// RUN: not fdc-opt %S/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=4}))' 2>&1 | FileCheck %s --check-prefix=KV4
// RUN: not fdc-opt %S/Inputs/tp-model.mlir --pass-pipeline='builtin.module(decode.model(decode-shard-tensor-parallel{ranks=65}))' 2>&1 | FileCheck %s --check-prefix=RANKS

// Megatron-style: Q, K, V and gate-up column-parallel (the rank's rows),
// o_proj and down_proj row-parallel (the rank's columns, rank 0 adding the
// residual in the linear's epilogue, then an all-reduce that sums the ranks'
// partials), the LM head split over the vocabulary and
// gathered; the embedding and norms replicated. The tied LM head gets a
// declaration of its own for its shard.

// CHECK-LABEL: decode.model @tp
// CHECK-SAME: tensor_parallel = 2
// CHECK: decode.weight @embed : tensor<8x16xf32>
// CHECK: decode.weight @embed.tp_shard = concat ["embed"] shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4x16xf32>
// CHECK: decode.weight @ln : tensor<16xf32>
// CHECK: decode.weight @q shard <dim = 0, ranks = 2, source_rows = [16]> : tensor<8x16xf32>
// CHECK: decode.weight @k shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4x16xf32>
// CHECK: decode.weight @v shard <dim = 0, ranks = 2, source_rows = [8]> : tensor<4x16xf32>
// CHECK: decode.weight @o shard <dim = 1, ranks = 2, source_rows = [16]> : tensor<16x8xf32>
// CHECK: decode.weight @gate_up = concat ["gate", "up"] shard <dim = 0, ranks = 2, source_rows = [32, 32]> : tensor<32x16xf32>
// CHECK: decode.weight @down shard <dim = 1, ranks = 2, source_rows = [16]> : tensor<16x16xf32>
// CHECK: func.func @step({{.*}}%{{.*}}: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>)
// CHECK: %[[H0:.*]] = decode.embedding {{.*}} -> tensor<?x16xf32>
// CHECK: %[[Q:.*]] = decode.linear %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<8x16xf32> -> tensor<?x8xf32>
// CHECK: tensor.expand_shape %[[Q]] {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
// CHECK: output_shape [%{{.*}}, 1, 4] : tensor<?x4xf32> into tensor<?x1x4xf32>
// CHECK: decode.rope {{.*}} : tensor<?x2x4xf32> -> tensor<?x2x4xf32>
// CHECK: decode.kv_append {{.*}} : tensor<?x1x4xf32>, tensor<?x1x4xf32> into !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32>
// CHECK: decode.attention {{.*}} : tensor<?x2x4xf32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 4, f32> -> tensor<?x2x4xf32>
// CHECK: tensor.collapse_shape {{.*}} : tensor<?x2x4xf32> into tensor<?x8xf32>
// CHECK: %[[PO:.*]] = decode.linear %{{.*}}, %{{.*}} residual %[[H0]] {residual_rank = 0 : i64} : tensor<?x8xf32>, tensor<16x8xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
// CHECK: %[[H1:.*]] = decode.all_reduce sum %[[PO]] {group_size = 2 : i64} : tensor<?x16xf32>
// CHECK: decode.rms_norm %[[H1]]
// CHECK: decode.linear {{.*}} {activation = #decode<activation silu_gate_up>} : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x16xf32>
// CHECK: %[[PD:.*]] = decode.linear %{{.*}}, %{{.*}} residual %[[H1]] {residual_rank = 0 : i64} : tensor<?x16xf32>, tensor<16x16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>
// CHECK: %[[H2:.*]] = decode.all_reduce sum %[[PD]] {group_size = 2 : i64} : tensor<?x16xf32>
// CHECK-NOT: residual_rank
// CHECK: %[[LM:.*]] = decode.weight_ref @embed.tp_shard : tensor<4x16xf32>
// CHECK: %[[PART:.*]] = decode.linear %[[H2]], %[[LM]] : tensor<?x16xf32>, tensor<4x16xf32> -> tensor<?x4xf32>
// CHECK: %[[LOGITS:.*]] = decode.all_gather %[[PART]] {group_size = 2 : i64} : tensor<?x4xf32> -> tensor<?x8xf32>
// CHECK: %[[NEXT:.*]] = decode.sample %[[LOGITS]]
// CHECK: return %[[LOGITS]], %[[NEXT]]

// ONE-LABEL: decode.model @tp
// ONE-NOT: tensor_parallel
// ONE-NOT: shard
// ONE-NOT: all_reduce

// KV4: error: 'func.func' op cannot be split over 4 tensor-parallel ranks: the KV cache has 2 KV heads, not a multiple of 4
// RANKS: decode-shard-tensor-parallel: ranks must be in [1, 64], got 65
