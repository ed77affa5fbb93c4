// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90})' | FileCheck %s
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90},fdc-lower-kernel-launches)' \
// RUN:   | FileCheck %s --check-prefix=LAUNCH --implicit-check-not=gpu.launch_func

// A two-layer bf16 model with the 7B-wide head layout (hidden 512, 4 query
// heads and 2 kv heads of 128), lowered to GPU kernels and a launching step.

// The module records its distinct kernels (kernel-dedup.mlir checks them)
// and the scratch they need.
// CHECK: module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132{{.*}}>, fdc.kernels = ["embedding_0",
// CHECK-SAME: "sample_0"], fdc.linear_tables = [{{.*}}], fdc.scratch_bytes_per_sequence = {{[0-9]+}} : i64, fdc.scratch_fixed_bytes = {{[0-9]+}} : i64, gpu.container_module}

// CHECK-LABEL: gpu.module @fdc_kernels
// Every parameter is 8 bytes: device pointers, then batch, slots, context.
// CHECK: gpu.func @embedding_{{[0-9]+}}(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// The token id is clamped into the table's 1000 rows before it addresses one.
// CHECK:   %[[TOKEN_LO:.*]] = arith.maxsi
// CHECK:   %[[LAST_ROW:.*]] = arith.constant 999 : index
// CHECK:   %[[TOKEN:.*]] = arith.minsi %[[TOKEN_LO]], %[[LAST_ROW]] : index
// CHECK:   vector.load %{{.*}}[%[[TOKEN]], %{{.*}}] {alignment = 16 : i64} : memref<1000x512xbf16>, vector<8xbf16>
// CHECK:   vector.store %{{.*}} {alignment = 16 : i64} : memref<?x512xbf16>, vector<8xbf16>

// One block per row; each thread loads its 16-byte vectors of the row and
// of the weight before the mean square, a block reduction through shared
// memory, then scales them from registers and stores 16 bytes at a time.
// CHECK: gpu.func @rms_norm_{{[0-9]+}}({{.*}}) workgroup(%[[SHARED:.*]] : memref<8xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK:   vector.load %{{.*}} {alignment = 16 : i64} : memref<?x512xbf16>, vector<8xbf16>
// CHECK:   vector.load %{{.*}} {alignment = 16 : i64} : memref<512xbf16>, vector<8xbf16>
// CHECK:   gpu.shuffle  xor
// CHECK:   memref.store %{{.*}}, %[[SHARED]]
// CHECK:   gpu.barrier
// CHECK:   math.rsqrt
// CHECK:   vector.store %{{.*}} {alignment = 16 : i64} : memref<?x512xbf16>, vector<8xbf16>
// CHECK: gpu.return

// GEMV (pinned: the 512-wide model's rows leave the H100's units idle, so
// its default is the flat GEMM): a warp per weight row, 16-byte loads of
// the weight and activations, f32 accumulation, a shuffle reduction.
// SiLU-gate-up's gate and up rows stream in one loop (two accumulators), so
// neither waits for the other's reduction, 8 outputs a block (256 threads).
// RUN: sed -e 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"gemv", {}>} :/' \
// RUN:     -e 's/{activation = #decode<activation silu_gate_up>}/{activation = #decode<activation silu_gate_up>, decode.kernel = #decode.kernel<"gemv", {}>}/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90})' | FileCheck %s --check-prefix=GEMV
// GEMV: gpu.func @linear_{{[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// GEMV-NOT: gpu.func
// GEMV:   scf.for %{{.*}} -> (vector<8xf32>)
// GEMV:     vector.load %{{.*}} {alignment = 16 : i64} : memref<?x512xbf16>, vector<8xbf16>
// GEMV:     vector.load %{{.*}} {alignment = 16 : i64} : memref<512x512xbf16>, vector<8xbf16>
// GEMV:     arith.extf %{{.*}} : vector<8xbf16> to vector<8xf32>
// GEMV:   vector.reduction <add>
// GEMV:   gpu.shuffle  xor %{{.*}}, %{{.*}}, %{{.*}} : f32
// GEMV: gpu.func @linear_{{[0-9]+}}({{.*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// GEMV-NOT: gpu.func
// GEMV:   scf.for %{{.*}} -> (vector<8xf32>, vector<8xf32>)
// GEMV-COUNT-2: vector.load %{{.*}} {alignment = 16 : i64} : memref<2048x512xbf16>, vector<8xbf16>
// GEMV:   scf.yield %{{.*}}, %{{.*}} : vector<8xf32>, vector<8xf32>
// GEMV-COUNT-2: vector.reduction <add>

// Where K is a whole number of 4 of a lane's 16-byte steps (the down
// projection, pinned: 1024 = 4 x 256 elements a subgroup), each iteration
// takes 4 steps: every load first, so that 4 weight vectors a lane are in
// flight, then the products in k order. (K = 512 above, 2 steps, takes
// one step an iteration.)
// RUN: sed -e 's/%h2 = decode.linear %g_0, %wd_0 residual %h1 :/%h2 = decode.linear %g_0, %wd_0 residual %h1 {decode.kernel = #decode.kernel<"gemv", {}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --pass-pipeline='builtin.module(decode.model(decode-assign-weight-layout),convert-decode-to-gpu{target=sm_90})' | FileCheck %s --check-prefix=UNROLL
// UNROLL: scf.for {{.*}} step %c1024{{.*}} -> (vector<8xf32>)
// UNROLL-COUNT-4: vector.load %{{.*}} : memref<512x1024xbf16>, vector<8xbf16>
// UNROLL-NOT: vector.load
// UNROLL-COUNT-4: arith.mulf %{{.*}} : vector<8xf32>
// UNROLL-NEXT: arith.addf
// UNROLL-NEXT: scf.yield

// RoPE, the cache append, then split-KV attention on MMA units (2 query
// heads per KV head): the partial kernel takes the split count and split
// length; each subgroup copies the K and V rows of the step ahead into
// one of its two shared-memory stages (cp.async, 16 bytes per lane, each
// row's 16-byte pieces XOR-swizzled with the row; the lanes' places in the
// flat stages planned before the loop), waits for its own
// stage's, reads its 16 x 16 tiles of K and V there with ldmatrix (V's
// transposed), computes K Qᵀ with mma.sync (the group's
// heads as B columns: 8 MMAs for 16 positions of 128 dims), applies the
// softmax to its scores in shared memory between subgroup barriers, and
// accumulates Vᵀ Pᵀ with mma.sync (8 tiles of 16 dims, P as hi + lo). The
// reduction combines the splits.
// CHECK: gpu.func @rope_{{[0-9]+}}(
// CHECK:   math.cos
// CHECK:   math.sin
// CHECK: gpu.func @kv_append_{{[0-9]+}}(
// CHECK: gpu.func @[[PARTIAL:gqa_attention_partial_[0-9]+]]({{.*}}, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64) kernel
// CHECK:   gpu.dynamic_shared_memory
// CHECK:   %[[STAGES:.*]] = memref.view {{.*}} to memref<256x128xbf16, #gpu.address_space<workgroup>>
// CHECK:   %[[FLAT:.*]] = memref.reinterpret_cast %[[STAGES]] to offset: [0], sizes: [32768], strides: [1]
// CHECK:   scf.for
// CHECK:     nvgpu.device_async_copy {{.*}}, %[[FLAT]][{{.*}}], 8, {{.*}} {bypassL1}
// CHECK:     nvvm.cp.async.wait.group 1
// CHECK:     nvvm.bar.warp.sync
// CHECK-COUNT-8: nvgpu.ldmatrix %[[STAGES]][{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<256x128xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-8: nvgpu.ldmatrix %[[STAGES]][{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<256x128xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-8: nvvm.mma.sync
// CHECK:     nvvm.bar.warp.sync
// CHECK:     arith.maximumf
// CHECK:     llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:     nvvm.bar.warp.sync
// CHECK-COUNT-16: nvvm.mma.sync
// CHECK:     nvvm.bar.warp.sync
// CHECK:   gpu.barrier
// CHECK: gpu.func @attention_reduce_{{[0-9]+}}(
// CHECK: gpu.func @linear_{{[0-9]+}}({{.*}}) kernel
// The silu_gate_up epilogue: two dot products per output.
// CHECK:   arith.addi %{{.*}}, %c1024
// Greedy rows: 1024 threads, each with eight 16-byte loads of the row in
// flight before it compares any.
// CHECK: gpu.func @[[SAMPLE:sample_[0-9]+]](
// CHECK-SAME: known_block_size = array<i32: 1024, 1, 1>
// CHECK-COUNT-8: vector.load %{{.*}} {alignment = 16 : i64} : memref<?x1000xf32>, vector<4xf32>
// CHECK-NOT: gpu.func
// CHECK: arith.cmpf ogt

// The host step: one launch per kernel, grid sizes from the batch size.
// CHECK-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// CHECK:   gpu.launch_func  @fdc_kernels::@embedding_{{[0-9]+}} blocks in
// CHECK:   gpu.launch_func  @fdc_kernels::@[[PARTIAL]] blocks in
// CHECK:   gpu.launch_func  @fdc_kernels::@[[SAMPLE]] blocks in

// After fdc-lower-kernel-launches: calls through FdcDeviceApi (field 15).
// LAUNCH: llvm.mlir.global private constant @fdc_kernel_name.embedding_0("embedding_0\00")
// LAUNCH-LABEL: func.func @fdc_model_step(%arg0: !llvm.ptr)
// LAUNCH:   %[[DEVICE_FIELD:.*]] = llvm.getelementptr %arg0[15] : (!llvm.ptr) -> !llvm.ptr, i64
// LAUNCH:   %[[DEVICE:.*]] = llvm.load %[[DEVICE_FIELD]] : !llvm.ptr -> !llvm.ptr
// LAUNCH:   %[[CONTEXT:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// LAUNCH:   %[[LAUNCH:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// LAUNCH:   %[[PARAMS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// LAUNCH:   %[[RESULT:.*]] = llvm.call %[[LAUNCH]](%[[CONTEXT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[PARAMS]]) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
// A failed launch returns from the step before the next one.
// LAUNCH:   %[[FAILED:.*]] = arith.cmpi ne, %[[RESULT]], %{{.*}} : i32
// LAUNCH:   cf.cond_br %[[FAILED]], ^[[EXIT:.*]], ^[[NEXT:.*]]
// LAUNCH: ^[[EXIT]]:
// LAUNCH-NEXT:   return
// LAUNCH: ^[[NEXT]]:
// LAUNCH:   llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, !llvm.ptr) -> i32
