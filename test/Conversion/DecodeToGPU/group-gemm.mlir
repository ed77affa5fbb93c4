// The group GEMM (kernel family "group_gemm"): the target's group MMA
// (sm_90a's wgmma) reads both operands from shared memory. The block's
// threads copy each stage (weight rows, then batch rows, 128-byte rows in the
// MMA's swizzled layout) with cp.async; before a stage's MMAs every thread
// waits for its copies, fences them for the MMA unit (fence.proxy.async)
// and synchronises; the MMAs of a stage are one batch (fence, k steps of
// wgmma.mma_async on the carried accumulators, commit). With three stages
// or more (kSplitOverlapStages with split-K) a stage's batch runs on into
// the next iteration (wait 1), so
// stages - 2 tiles are copied ahead; the first tile is outside the loop,
// its first k step (scale-d 0) starting the sums, so that no other
// instruction defines the accumulators (ptxas would serialise the MMAs).
// RUN: sed 's/%q_0 = decode.linear %x_0, %wq_0 :/%q_0 = decode.linear %x_0, %wq_0 {decode.kernel = #decode.kernel<"group_gemm", {groups = 2, row_tiles = 1, batch = 32, stages = 3}>} :/' %S/Inputs/head128-bf16.mlir > %t.group.mlir
// RUN: fdc-opt %t.group.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=SM90A
// 2 warpgroups (256 threads); 3 stages of (128 weight rows + 32 batch rows)
// x 128 bytes, plus 1 KiB to align the first stage: 62464 bytes of dynamic
// shared memory.
// SM90A: gpu.func @[[K:linear_[0-9]+]]({{[^)]*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// SM90A: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// SM90A: memref.extract_aligned_pointer_as_index %{{.*}} : memref<31232xbf16, #gpu.address_space<workgroup>> -> index
// The first stage starts at the allocation rounded up to 1 KiB.
// SM90A: %[[ALIGN:.*]] = arith.constant 1024 : i64
// SM90A: arith.remui %{{.*}}, %[[ALIGN]] : i64
// A chunk's place: row * 128 + (chunk ^ (row % 8)) * 16 bytes (wgmma's
// 128-byte swizzle), in elements. N = 512 is a whole number of 128-row
// blocks: the weight's rows are not clamped to N - 1, and all real.
// SM90A: arith.constant true
// SM90A-NOT: arith.minui %{{.*}}, %c511{{.*}} : index
// SM90A: arith.muli %{{.*}}, %c512{{.*}} : index
// SM90A: %[[PHASE:.*]] = arith.remui %[[ROW:.*]], %c8{{.*}} : index
// SM90A-NEXT: %[[SWIZZLED:.*]] = arith.xori %{{.*}}, %[[PHASE]] : index
// SM90A-NEXT: %c16{{.*}} = arith.constant 16 : index
// SM90A-NEXT: arith.muli %[[SWIZZLED]], %c16{{.*}} : index
// SM90A-NEXT: %c128{{.*}} = arith.constant 128 : index
// SM90A-NEXT: arith.muli %[[ROW]], %c128{{.*}} : index
// SM90A: nvgpu.device_async_copy {{.*}} : memref<512x512xbf16> to memref<31232xbf16, #gpu.address_space<workgroup>>
// SM90A: nvgpu.device_async_copy {{.*}} : memref<?x512xbf16> to memref<31232xbf16, #gpu.address_space<workgroup>>
// SM90A: nvvm.cp.async.commit.group
// SM90A:      nvvm.cp.async.wait.group 0
// SM90A-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// SM90A-NEXT: gpu.barrier
// SM90A: nvvm.cp.async.commit.group
// A matrix descriptor, made once per tile before its batch of MMAs: the
// 18-bit shared address >> 4, then LBO 1 (bit 16), SBO 1024 bytes = 64
// (bits 32-45) and the 128-byte swizzle (bit 62): 1 << 16 | 64 << 32 |
// 1 << 62 = 4611686293305360384. Its k steps add 32 bytes (2) each.
// SM90A: %[[MASKED:.*]] = arith.andi %{{.*}}, %c262143_i64{{.*}} : i64
// SM90A-NEXT: %c4_i64{{.*}} = arith.constant 4 : i64
// SM90A-NEXT: %[[START:.*]] = arith.shrui %[[MASKED]], %c4_i64{{.*}} : i64
// SM90A-NEXT: %c4611686293305360384_i64{{.*}} = arith.constant 4611686293305360384 : i64
// SM90A-NEXT: %[[DESC:.*]] = arith.ori %[[START]], %c4611686293305360384_i64{{.*}} : i64
// SM90A: nvvm.wgmma.fence.aligned
// SM90A: %[[NONE:.*]] = llvm.mlir.poison : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>
// SM90A-NEXT: nvvm.wgmma.mma_async %[[DESC]], {{.*}}, %[[NONE]], <m = 64, n = 32, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// SM90A-NEXT: %[[STEP:.*]] = arith.constant 2 : i64
// SM90A-NEXT: arith.addi %[[DESC]], %[[STEP]] : i64
// SM90A-COUNT-3: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// SM90A-NEXT: nvvm.wgmma.commit.group.sync.aligned
// SM90A-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// SM90A: scf.for {{.*}} -> (!llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)>)
// SM90A-NEXT: nvvm.cp.async.wait.group 0
// SM90A-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// SM90A-NEXT: gpu.barrier
// SM90A: nvvm.cp.async.commit.group
// SM90A: nvvm.wgmma.fence.aligned
// SM90A-NOT: <zero>
// SM90A-COUNT-4: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 32, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// SM90A-NEXT: nvvm.wgmma.commit.group.sync.aligned
// SM90A-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// SM90A: scf.yield
// SM90A-NEXT: }
// SM90A-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SM90A: gpu.return
// Grid x covers the batch in blocks of 32 rows, grid y N in blocks of 128
// (4 of 512); 62464 bytes of dynamic shared memory.
// SM90A: func.func @fdc_model_step
// SM90A: %[[ROWS:.*]] = arith.constant 32 : i64
// SM90A: arith.ceildivsi %{{.*}}, %[[ROWS]] : i64
// SM90A: %[[BYTES:.*]] = arith.constant 62464 : i32
// SM90A: gpu.launch_func @fdc_kernels::@[[K]] {{.*}} dynamic_shared_memory_size %[[BYTES]]

// The NVVM pipeline turns the MMAs into inline PTX.
// RUN: fdc-opt %t.group.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a --fdc-lower-kernel-launches --fdc-nvvm-kernels | FileCheck %s --check-prefix=NVVM
// NVVM: nvvm.fence.proxy
// NVVM: nvvm.wgmma.fence.aligned
// NVVM: llvm.inline_asm has_side_effects {{.*}}wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// NVVM: nvvm.wgmma.commit.group.sync.aligned

// The gate-up halves: each group holds both halves' accumulators.
// RUN: sed 's/%g_0 = decode.linear %x2_0, %wgu_0 {activation = #decode<activation silu_gate_up>}/%g_0 = decode.linear %x2_0, %wgu_0 {activation = #decode<activation silu_gate_up>, decode.kernel = #decode.kernel<"group_gemm", {groups = 1, row_tiles = 2, batch = 16, stages = 2}>}/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=GATEUP
// 2 stages of (2 x 128 weight rows + 16 batch rows) x 128 bytes + 1 KiB.
// GATEUP: memref.extract_aligned_pointer_as_index %{{.*}} : memref<35328xbf16, #gpu.address_space<workgroup>>
// GATEUP: nvvm.wgmma.fence.aligned
// GATEUP-COUNT-16: nvvm.wgmma.mma_async {{.*}}, <m = 64, n = 16, k = 16>
// GATEUP-NOT: nvvm.wgmma.mma_async
// GATEUP: nvvm.wgmma.commit.group.sync.aligned

// Split-K: grid z splits K's tiles. sm_90a groups up to 8 workgroups into a
// cluster: the two splits of a tile form one (cluster 1 x 1 x 2), store
// their f32 sums in their own shared memory ([column][row]), and after a
// cluster barrier each adds its half of the tile's outputs, four rows at a
// time, from split 0's then split 1's shared memory (mapa, 16-byte loads:
// here all four of a thread's, two chunks, before the first add) and
// applies the epilogue, with no bounds checks where the tile lies in the
// output whole; a second barrier, which orders no memory, keeps each until
// the other has read. No workspace, no linear_epilogue.
// RUN: sed 's/batch = 32, stages = 3/batch = 32, stages = 3, split_k = 2/' %t.group.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=SPLIT
// A split's few k tiles keep the deeper prefetch where the pipeline is
// short (fewer than kSplitOverlapStages): two tiles copied ahead (stages -
// 1), each batch of wgmmas waited for.
// SPLIT: gpu.func @[[K:linear_[0-9]+]]({{[^)]*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 2>}
// SPLIT: gpu.block_id  z
// SPLIT: nvvm.cp.async.commit.group
// SPLIT: nvvm.cp.async.commit.group
// SPLIT: nvvm.cp.async.wait.group 1
// SPLIT: nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>]
// SPLIT: nvvm.wgmma.commit.group.sync.aligned
// SPLIT-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SPLIT: scf.for
// SPLIT: nvvm.cp.async.wait.group 1
// SPLIT: nvvm.wgmma.commit.group.sync.aligned
// SPLIT-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// SPLIT: gpu.barrier
// SPLIT-COUNT-16: llvm.store {{.*}} : f32, !llvm.ptr<3>
// SPLIT-NOT: llvm.store
// SPLIT: nvvm.cluster.arrive {aligned}
// SPLIT-NEXT: nvvm.cluster.wait {aligned}
// SPLIT: scf.for
// SPLIT: nvvm.mapa %{{[0-9]+}}, %c0_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// SPLIT-NEXT: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// SPLIT: nvvm.mapa %{{[0-9]+}}, %c1_i32 : !llvm.ptr<3> -> !llvm.ptr<7>
// SPLIT-NEXT: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// SPLIT-COUNT-2: llvm.load {{.*}} : !llvm.ptr<7> -> vector<4xf32>
// SPLIT-NOT: llvm.load
// SPLIT: arith.addf {{.*}} : vector<4xf32>
// SPLIT-NOT: llvm.load
// SPLIT: arith.addf {{.*}} : vector<4xf32>
// SPLIT-NOT: llvm.load
// SPLIT: arith.cmpi ule
// SPLIT-NEXT: scf.if
// SPLIT-NOT: llvm.load
// SPLIT: nvvm.cluster.arrive.relaxed {aligned}
// SPLIT-NEXT: nvvm.cluster.wait {aligned}
// SPLIT-NEXT: gpu.return
// SPLIT: func.func @fdc_model_step
// SPLIT: gpu.launch_func @fdc_kernels::@[[K]] blocks in (%{{.*}}, %{{.*}}, %c2)
// SPLIT-NOT: gpu.launch_func
// SPLIT: gpu.launch_func @fdc_kernels::@{{linear_[0-9]+}}

// More splits than a cluster holds (down_proj's 16 k tiles in 16 splits):
// the sums go to the workspace and linear_epilogue adds them.
// RUN: sed 's/%h2 = decode.linear %g_0, %wd_0 residual %h1 :/%h2 = decode.linear %g_0, %wd_0 residual %h1 {decode.kernel = #decode.kernel<"group_gemm", {groups = 1, row_tiles = 1, batch = 16, stages = 2, split_k = 16}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=WORKSPACE
// Its kernel: the residual and the workspace after the output, two stages
// of (64 weight rows + 16 batch rows) x 64 elements and the 1 KiB
// alignment, no cluster.
// WORKSPACE: gpu.func @{{linear_[0-9]+}}({{[^)]*}}: !llvm.ptr, %arg4: !llvm.ptr, %arg5: i64{{[^)]*}}) workgroup(%{{.*}} : memref<10752xbf16, {{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
// WORKSPACE-NOT: nvvm.cluster
// WORKSPACE: memref.store {{.*}} : memref<?x8192xf32>
// WORKSPACE: gpu.return
// WORKSPACE: func.func @fdc_model_step
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_[0-9]+}} blocks in (%{{.*}}, %{{.*}}, %c16{{[_0-9]*}})
// WORKSPACE-NOT: gpu.launch_func
// WORKSPACE: gpu.launch_func @fdc_kernels::@{{linear_epilogue_[0-9]+}}

// A config the family cannot build is refused, naming the op and the value.
// RUN: not fdc-opt %t.group.mlir --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=NOGROUP
// NOGROUP: error: 'decode.linear' op cannot use kernel 'group_gemm' with batch 32: it needs f16 or bf16 input and weight, K a multiple of the target's vector width, and a group MMA of the target (#decode.gpu_target's group_mma) of that width
// RUN: sed 's/batch = 32/batch = 36/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=WIDTH
// WIDTH: error: 'decode.linear' op cannot use kernel 'group_gemm' with batch 36
// RUN: sed 's/batch = 32, stages = 3/batch = 256, stages = 6/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: error: 'decode.linear' op kernel 'group_gemm': 6 stages of 49152 bytes take 295936 bytes of shared memory with the alignment, more than the 232448 a workgroup may use on the target
// RUN: sed 's/batch = 32, stages = 3/batch = 32, stages = 3, split_k = 7/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=SPLITK
// SPLITK: error: 'decode.linear' op kernel 'group_gemm': split_k 7 leaves a split without k tiles (K = 512 has 8 tiles of 64)
// RUN: sed 's/groups = 2, row_tiles = 1, batch = 32/groups = 1, row_tiles = 4, batch = 128/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=ACC
// ACC: error: 'decode.linear' op kernel 'group_gemm': a thread would hold 256 f32 accumulators (at most 128)
// RUN: sed 's/groups = 2, row_tiles = 1, batch = 32, stages = 3/groups = 8, row_tiles = 1, batch = 128, stages = 2/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=REGS
// REGS: error: 'decode.linear' op kernel 'group_gemm': 1024 threads of 64 accumulators and 32 other registers exceed the target's 65536 registers per workgroup
// RUN: sed 's/groups = 2/groups = 9/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=GROUPS
// GROUPS: error: 'decode.linear' op kernel config groups = 9 is outside [1, 8]
// RUN: sed 's/stages = 3/stages = 17/' %t.group.mlir \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90a 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: error: 'decode.linear' op kernel config stages = 17 is outside [2, 16]

// The deepest pipeline (kMaxGroupGemmStages): 9 stages of one group of 64
// rows and 32 batch columns hold K = 512's 8 tiles, all copied ahead before
// the first MMA; K whole, so a tile's MMAs run on into the next iteration
// (stages - 2 = 7 tiles ahead, at most 6 groups of copies pending at its
// wait). The weight part of the first 4 (32 KiB) is one more group before
// them (EARLY below).
// RUN: sed 's/groups = 2, row_tiles = 1, batch = 32, stages = 3/groups = 1, row_tiles = 1, batch = 32, stages = 9/' %t.group.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=DEEP
// DEEP: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// DEEP-COUNT-8: nvvm.cp.async.commit.group
// DEEP-NOT: nvvm.wgmma.mma_async
// DEEP: nvvm.cp.async.wait.group 6
// DEEP: nvvm.wgmma.mma_async {{.*}} D[<f32>, <zero>]
// DEEP: nvvm.wgmma.commit.group.sync.aligned
// DEEP-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// DEEP: scf.for
// DEEP: nvvm.cp.async.wait.group 6
// A thread's copies of a region (here the weight's 64 rows: 4 of 16 rows
// each) lie a constant apart in the stage: one base a tile, kept whole
// (llvm.freeze) so that the constants fold into the copies' addressing.
// DEEP: %[[STAGE:.*]] = llvm.freeze %{{.*}} : i64
// DEEP-NEXT: %[[AT:.*]] = arith.index_cast %[[STAGE]] : i64 to index
// DEEP: nvgpu.device_async_copy %{{.*}}, %{{.*}}[%[[AT]]]
// DEEP: %[[NEXT:.*]] = arith.addi %[[AT]], %c1024{{.*}} : index
// DEEP: nvgpu.device_async_copy %{{.*}}, %{{.*}}[%[[NEXT]]]
// DEEP: nvvm.wgmma.commit.group.sync.aligned
// DEEP-NEXT: nvvm.wgmma.wait.group.sync.aligned 1

// Split in K with 8 stages or more (kSplitOverlapStages), a tile's MMAs
// run on into the next iteration too. (K = 512 gives a split 4 tiles, all
// copied ahead: the loop's copies are not reached here; the GPU check's
// linear-group-deep-split-gateup-f16 reuses buffers with 10 stages.)
// RUN: sed 's/groups = 2, row_tiles = 1, batch = 32, stages = 3/groups = 1, row_tiles = 1, batch = 32, stages = 8, split_k = 2/' %t.group.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=SPLITDEEP
// SPLITDEEP: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>, nvvm.cluster_dim = array<i32: 1, 1, 2>}
// SPLITDEEP: scf.for
// SPLITDEEP: nvvm.wgmma.commit.group.sync.aligned
// SPLITDEEP-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// SPLITDEEP: nvvm.wgmma.wait.group.sync.aligned 0
// SPLITDEEP: nvvm.cluster.arrive {aligned}

// Dependent launch (sm_90a): the model's weight is read before the kernel
// waits for the one before it: the weight part of the first tiles copied
// ahead (32 KiB at most, one tile at least; one here: 3 stages, K whole) is
// a group of its own, then the wait, then each tile's batch part (the
// whole tile past those) a group each, so the loop's waits count as
// before. q_proj is followed by k_proj, a linear: once a block has issued
// its last copies, it lets the next kernel launch; so does the rms_norm
// before q_proj, from its start. o_proj, followed by an rms_norm, lets
// nothing launch early.
// RUN: fdc-opt %t.group.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=EARLY
// EARLY: gpu.func @{{rms_norm_[0-9]+}}
// EARLY-NEXT: nvvm.griddepcontrol wait
// EARLY: nvvm.griddepcontrol launch_dependents
// EARLY: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// EARLY-NOT: nvvm.griddepcontrol
// EARLY-NOT: memref<?x512xbf16> to
// EARLY: nvgpu.device_async_copy {{.*}} : memref<512x512xbf16> to
// EARLY-NOT: memref<?x512xbf16> to
// EARLY: nvvm.cp.async.commit.group
// EARLY-NEXT: nvvm.griddepcontrol wait
// EARLY-NOT: memref<512x512xbf16> to
// EARLY: nvgpu.device_async_copy {{.*}} : memref<?x512xbf16> to
// EARLY-NEXT: nvvm.cp.async.commit.group
// EARLY: nvvm.cp.async.wait.group 0
// EARLY: } else {
// EARLY-NEXT: nvvm.griddepcontrol launch_dependents
// RUN: sed 's/%h1 = decode.linear %af_0, %wo_0 residual %h0 :/%h1 = decode.linear %af_0, %wo_0 residual %h0 {decode.kernel = #decode.kernel<"group_gemm", {groups = 2, row_tiles = 1, batch = 16, stages = 3}>} :/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=LATE
// LATE: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// LATE: nvvm.griddepcontrol wait
// LATE-NOT: nvvm.griddepcontrol launch_dependents
// LATE: gpu.return

// A batch tile of 64 columns or more (kWideBatchTile) copies early and lets
// the next kernel launch early only where the batch is that one tile;
// otherwise its first group is empty and its tiles' copies whole.
// RUN: sed 's/batch = 32, stages = 3/batch = 64, stages = 3/' %t.group.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90a | FileCheck %s --check-prefix=WIDE
// WIDE: gpu.func @{{linear_[0-9]+}}({{[^)]*}}) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
// WIDE-NOT: nvvm.griddepcontrol
// WIDE: %[[ONE:.*]] = arith.cmpi ule, %{{.*}}, %c64{{.*}} : index
// WIDE-NOT: nvvm.griddepcontrol
// WIDE: scf.if %[[ONE]] {
// WIDE-NOT: memref<?x512xbf16> to
// WIDE: nvgpu.device_async_copy {{.*}} : memref<512x512xbf16> to
// WIDE-NOT: memref<?x512xbf16> to
// WIDE: nvvm.cp.async.commit.group
// WIDE-NEXT: nvvm.griddepcontrol wait
// WIDE-NEXT: scf.if %[[ONE]] {
// WIDE-NOT: memref<512x512xbf16> to
// WIDE: nvgpu.device_async_copy {{.*}} : memref<?x512xbf16> to
// WIDE: } else {
// WIDE: nvgpu.device_async_copy {{.*}} : memref<512x512xbf16> to
// WIDE: nvgpu.device_async_copy {{.*}} : memref<?x512xbf16> to
// WIDE: nvvm.cp.async.commit.group
// WIDE: nvvm.cp.async.wait.group 0
// WIDE: } else {
// WIDE-NEXT: scf.if %[[ONE]] {
// WIDE-NEXT: nvvm.griddepcontrol launch_dependents
