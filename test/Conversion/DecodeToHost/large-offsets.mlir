// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-host)' | FileCheck %s
// RUN: fdc-opt %s --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90})' | FileCheck %s --check-prefix=GPU

// A weight placed past 256 MiB in the arena: a constant GEP index holds 29
// bits (LLVM::kGEPConstantBitWidth), so its offset must be an i64 value (a
// 7B-wide model faulted on the GPU when offsets were truncated).

// CHECK-LABEL: func.func @fdc_model_step
// The embedding (512 MiB of f16) is at offset 0 of the weights (field 3).
// CHECK: %[[FIELD:.*]] = llvm.getelementptr %arg0[3] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK: %[[BASE0:.*]] = llvm.load %[[FIELD]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.getelementptr %[[BASE0]][0] : (!llvm.ptr) -> !llvm.ptr, i8
// The lm_head starts at 2^29 bytes: past 29 bits, within 32.
// CHECK: %[[FAR:.*]] = llvm.mlir.constant(536870912 : i64) : i64
// CHECK: llvm.getelementptr %{{.*}}[%[[FAR]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// GPU: %[[FAR:.*]] = llvm.mlir.constant(536870912 : i64) : i64
// GPU: llvm.getelementptr %{{.*}}[%[[FAR]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
decode.model @far attributes {config = {vocab_size = 8 : i64}} {
  decode.weight @embed : tensor<16384x16384xf16>
  decode.weight @lm : tensor<8x16384xf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 128, f16>) -> (tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 128, f16>) {
    %e = decode.weight_ref @embed : tensor<16384x16384xf16>
    %x = decode.embedding %e[%tokens] : tensor<16384x16384xf16>, tensor<?xi32> -> tensor<?x16384xf16>
    %w = decode.weight_ref @lm : tensor<8x16384xf16>
    %logits = decode.linear %x, %w : tensor<?x16384xf16>, tensor<8x16384xf16> -> tensor<?x8xf32>
    %next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : tensor<?x8xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x8xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 128, f16>
  }
}
