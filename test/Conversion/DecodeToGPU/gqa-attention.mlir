// gqa_attention, the default attention on targets with an MMA for the
// cache's type: one block per (split, KV head, sequence) for the whole group
// of query heads (here 16 on one KV head). On gfx942 (wave64 MFMA 16x16x16)
// the subgroup barrier between the steps through shared memory is a
// wavefront-scope fence; every subgroup's rows of the group and the
// partial rows' combine share one workgroup buffer.
// RUN: sed 's/256/128/g; s/4096/2048/g' %s | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=GFX942
// GFX942-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// GFX942-SAME:    workgroup(%{{.*}} : memref<8320xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// GFX942:         scf.for
// GFX942-COUNT-8:   amdgpu.mfma 16x16x16
// GFX942:           llvm.fence syncscope("wavefront") acq_rel
// GFX942:           math.exp2
// GFX942:           llvm.fence syncscope("wavefront") acq_rel
// GFX942-COUNT-16:  amdgpu.mfma 16x16x16
// GFX942:           llvm.fence syncscope("wavefront") acq_rel
// GFX942:         gpu.barrier
// GFX942-LABEL: gpu.func @{{attention_reduce_[0-9]+}}(

// On sm_90, whose blocks form clusters, a launch of 2 to cluster_splits
// splits adds them in a cluster instead of attention_reduce (pinned here
// to 8; the default, 2, builds the kernel of 2 alone): the splits rounded
// down to 8, 4 or 2, a kernel for each (cluster_dim), the split's blocks of
// a (KV head, sequence) one cluster. A block keeps its combined partial
// rows in its own shared memory (16 x 130 f32s past the 8320 the others
// take), then, after a cluster barrier, each of its threads loads one
// output element's (max, sum, acc) from every block of the cluster (mapa:
// 3 x 8 loads, all before the arithmetic), rescales them to the largest
// max, divides and writes the output; no partial row leaves the block. A
// relaxed cluster barrier keeps the blocks until every load is done.
// gfx942 has no clusters: its kernels are the partial and the reduce.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 8, prefetch = 1, stages = 0}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=CLUSTER
// RUN: sed 's/256/128/g; s/4096/2048/g' %s | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=CLUSTER2
// RUN: sed 's/256/128/g; s/4096/2048/g' %s | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=NOCLUSTER
// CLUSTER2:       fdc.kernels = [{{.*}}"gqa_attention_cluster_0", "gqa_attention_partial_0", "attention_reduce_0",
// CLUSTER2-LABEL: gpu.func @{{gqa_attention_cluster_[0-9]+}}(
// CLUSTER2-SAME:    nvvm.cluster_dim = array<i32: 2, 1, 1>
// CLUSTER2-COUNT-6:  nvvm.mapa
// CLUSTER2-NOT:      nvvm.mapa
// CLUSTER2-LABEL: func.func @fdc_model_step(
// CLUSTER2:         %[[SPLITS:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i64
// CLUSTER2:         %[[SEVERAL:.*]] = arith.cmpi sgt, %[[SPLITS]], %c1{{.*}} : i64
// CLUSTER2:         %[[FEW:.*]] = arith.cmpi sle, %[[SPLITS]], %c2{{.*}} : i64
// CLUSTER2-NEXT:    %[[CLUSTERED:.*]] = arith.andi %[[SEVERAL]], %[[FEW]] : i1
// CLUSTER2-NEXT:    cf.cond_br %[[CLUSTERED]], ^[[TWO:bb[0-9]+]], ^[[REDUCED:bb[0-9]+]]
// CLUSTER2:       ^[[TWO]]:
// CLUSTER2:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_cluster_[0-9]+}}
// CLUSTER2:       ^[[REDUCED]]:
// CLUSTER2:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_partial_[0-9]+}}
// CLUSTER-LABEL: gpu.func @{{gqa_attention_cluster_[0-9]+}}(
// CLUSTER-SAME:    workgroup(%{{.*}} : memref<10400xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel attributes {{{.*}}nvvm.cluster_dim = array<i32: 8, 1, 1>}
// CLUSTER-NOT:     memref.store %{{.*}} : memref<?xf32>
// CLUSTER:         %[[ROWS:.*]] = arith.constant 8320 : index
// CLUSTER:         %[[AT:.*]] = arith.addi %[[ROWS]], %{{.*}} : index
// CLUSTER-NEXT:    memref.store %{{.*}}, %{{.*}}[%[[AT]]] : memref<10400xf32, #gpu.address_space<workgroup>>
// CLUSTER:         nvvm.cluster.arrive {aligned}
// CLUSTER-NEXT:    nvvm.cluster.wait {aligned}
// CLUSTER:         scf.for
// CLUSTER-COUNT-24:  nvvm.mapa
// CLUSTER-NOT:       nvvm.mapa
// CLUSTER:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CLUSTER:           arith.divf
// CLUSTER-NEXT:      arith.truncf
// CLUSTER-NEXT:      memref.store %{{.*}} : memref<?x16x128xbf16>
// CLUSTER:         nvvm.cluster.arrive.relaxed {aligned}
// CLUSTER-NEXT:    nvvm.cluster.wait {aligned}
// CLUSTER-LABEL: gpu.func @{{gqa_attention_cluster_[0-9]+}}(
// CLUSTER-SAME:    nvvm.cluster_dim = array<i32: 4, 1, 1>
// CLUSTER-COUNT-12:  nvvm.mapa
// CLUSTER-NOT:       nvvm.mapa
// CLUSTER-LABEL: gpu.func @{{gqa_attention_cluster_[0-9]+}}(
// CLUSTER-SAME:    nvvm.cluster_dim = array<i32: 2, 1, 1>
// CLUSTER-COUNT-6:   nvvm.mapa
// CLUSTER-NOT:       nvvm.mapa
// CLUSTER-LABEL: func.func @fdc_model_step(
// CLUSTER:         %[[SPLITS:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i64
// CLUSTER:         %[[SEVERAL:.*]] = arith.cmpi sgt, %[[SPLITS]], %c1{{.*}} : i64
// CLUSTER:         %[[FEW:.*]] = arith.cmpi sle, %[[SPLITS]], %c8{{.*}} : i64
// CLUSTER-NEXT:    %[[CLUSTERED:.*]] = arith.andi %[[SEVERAL]], %[[FEW]] : i1
// CLUSTER-NEXT:    cf.cond_br %[[CLUSTERED]], ^[[SIZES:bb[0-9]+]], ^[[REDUCED:bb[0-9]+]]
// CLUSTER:       ^[[SIZES]]:
// CLUSTER:         %[[EIGHT:.*]] = arith.cmpi sge, %[[SPLITS]], %c8{{.*}} : i64
// CLUSTER-NEXT:    cf.cond_br %[[EIGHT]], ^[[OF8:bb[0-9]+]], ^[[BELOW8:bb[0-9]+]]
// CLUSTER:       ^[[OF8]]:
// CLUSTER:         %[[C8:.*]] = arith.constant 8 : i64
// CLUSTER:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_cluster_[0-9]+}} blocks in {{.*}} args({{.*}}, %[[C8]] : i64,
// CLUSTER:       ^[[BELOW8]]:
// CLUSTER:         arith.cmpi sge, %[[SPLITS]], %c4{{.*}} : i64
// CLUSTER:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_cluster_[0-9]+}}
// CLUSTER:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_cluster_[0-9]+}}
// CLUSTER:       ^[[REDUCED]]:
// CLUSTER:         gpu.launch_func  @fdc_kernels::@{{gqa_attention_partial_[0-9]+}} {{.*}} args({{.*}}, %[[SPLITS]] : i64,
// CLUSTER:         gpu.launch_func  @fdc_kernels::@{{attention_reduce_[0-9]+}}
// NOCLUSTER-NOT: gqa_attention_cluster
// NOCLUSTER-NOT: cluster_dim

// With online softmax a single split (a launch whose blocks, sequences x KV
// heads, fill the units' waves) is the result: the partial kernel divides
// the combined accumulators by the combined sum and writes the output, and
// the step launches attention_reduce only for more splits (a block of the
// step, as the dispatch by batch size: every launch stays directly in
// fdc_model_step).
// RUN: sed 's/256/128/g; s/4096/2048/g' %s | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=SINGLE
// RUN: sed 's/256/128/g; s/4096/2048/g' %s | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=SINGLE
// SINGLE-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// SINGLE:         %[[ONE_SPLIT:.*]] = arith.cmpi eq, %{{.*}}, %c1{{.*}} : index
// SINGLE:         scf.if %[[ONE_SPLIT]] {
// SINGLE:           arith.divf
// SINGLE:           memref.store %{{.*}} : memref<?x16x128xbf16>
// SINGLE:         } else {
// SINGLE:           memref.store %{{.*}} : memref<?xf32>
// SINGLE-LABEL: func.func @fdc_model_step(
// SINGLE:         gpu.launch_func @fdc_kernels::@{{gqa_attention_partial_[0-9]+}} {{.*}} args(%{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %[[SPLITS:[0-9]+]] : i64,
// SINGLE:         %[[SEVERAL:.*]] = arith.cmpi ne, %[[SPLITS]], %{{.*}} : i64
// SINGLE-NEXT:    cf.cond_br %[[SEVERAL]], ^[[REDUCE:bb[0-9]+]], ^[[REST:bb[0-9]+]]
// SINGLE:       ^[[REDUCE]]:
// SINGLE:         gpu.launch_func @fdc_kernels::@{{attention_reduce_[0-9]+}}
// SINGLE-NEXT:    cf.br ^[[REST]]

// Unified max: a launch of one split runs a kernel of its own, which writes
// the output, unless its row is flagged (or the sum out of range), when the
// thread recomputes its element from the cache (one online softmax over the
// row, as attention_reduce does for several splits); more splits run the
// partial kernel, which writes partial rows only, and attention_reduce.
// On sm_90 splits are added in a cluster first (as above; pinned to 8):
// the flags' max, the sums and accumulators added (no exponential), and a
// thread whose row is flagged recomputes its element from the cache.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>, decode.kernel = #decode.kernel<"gqa_attention", {cluster_splits = 8, prefetch = 1, stages = 0}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=UNIFIEDCLUSTER
// UNIFIEDCLUSTER-LABEL: gpu.func @{{gqa_attention_cluster_[0-9]+}}(
// UNIFIEDCLUSTER-SAME:    nvvm.cluster_dim = array<i32: 8, 1, 1>
// UNIFIEDCLUSTER:         nvvm.cluster.arrive {aligned}
// UNIFIEDCLUSTER-COUNT-24:  nvvm.mapa
// UNIFIEDCLUSTER-COUNT-7:   arith.maximumf
// UNIFIEDCLUSTER-NOT:       llvm.nvvm.ex2.approx
// UNIFIEDCLUSTER:           %[[FLAG:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// UNIFIEDCLUSTER:           %[[FLAGGED:.*]] = arith.ori %[[FLAG]], %{{.*}} : i1
// UNIFIEDCLUSTER:           scf.if %[[FLAGGED]] {
// UNIFIEDCLUSTER:             scf.for {{.*}} iter_args
// UNIFIEDCLUSTER:           memref.store %{{.*}} : memref<?x16x128xbf16>
// UNIFIEDCLUSTER:         nvvm.cluster.arrive.relaxed {aligned}
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=UNIFIED
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=UNIFIED
// UNIFIED-LABEL: gpu.func @{{gqa_attention_single_split_[0-9]+}}(
// UNIFIED-NOT:     memref.store %{{.*}} : memref<?xf32>
// UNIFIED:         arith.constant 3.40282347E+38 : f32
// UNIFIED:         %[[FLAG:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// UNIFIED:         %[[FLAGGED:.*]] = arith.ori %[[FLAG]], %{{.*}} : i1
// UNIFIED:         scf.if %[[FLAGGED]] {
// UNIFIED:           scf.for {{.*}} iter_args
// UNIFIED:             scf.for {{.*}} iter_args
// UNIFIED:           memref.store %{{.*}} : memref<?x16x128xbf16>
// UNIFIED:         } else {
// UNIFIED:           arith.divf
// UNIFIED:           memref.store %{{.*}} : memref<?x16x128xbf16>
// UNIFIED:       gpu.return
// UNIFIED-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// UNIFIED-NOT:     memref.store %{{.*}} : memref<?x16x128xbf16>
// UNIFIED:         memref.store %{{.*}} : memref<?xf32>
// UNIFIED:       gpu.return
// UNIFIED-LABEL: func.func @fdc_model_step(
// UNIFIED:         %[[IS_ONE:.*]] = arith.cmpi eq, %[[SPLITS:.*]], %{{.*}} : i64
// UNIFIED-NEXT:    cf.cond_br %[[IS_ONE]], ^[[ONE:bb[0-9]+]], ^[[SEVERAL:bb[0-9]+]]
// UNIFIED:       ^[[ONE]]:
// UNIFIED:         gpu.launch_func @fdc_kernels::@{{gqa_attention_single_split_[0-9]+}} {{.*}} args(%{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %[[SPLITS]] : i64,
// UNIFIED-NEXT:    cf.br ^[[REST:bb[0-9]+]]
// UNIFIED:       ^[[SEVERAL]]:
// UNIFIED:         gpu.launch_func @fdc_kernels::@{{gqa_attention_partial_[0-9]+}} {{.*}} args(%{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %{{[0-9]+}} : !llvm.ptr, %[[SPLITS]] : i64,
// UNIFIED:         gpu.launch_func @fdc_kernels::@{{attention_reduce_[0-9]+}}
// UNIFIED-NEXT:    cf.br ^[[REST]]

// An INT4 cache (groups of 32 dims) on sm_90: a lane loads a key's 32
// nibbles with one 16-byte load and its group's (scale, min) with one
// 4-byte load, and a value's 16 nibbles with one 8-byte load, a step ahead
// (the first step's before the loop, the next one's in it). A step
// dequantises the carried loads as f16 words: mask and bias to 1024 + q,
// subtract 1024, a contracted multiply-add with the scale and min; the
// MMAs take f16.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/head_dim = 128, bf16>/head_dim = 128, !decode.int4<groups = 4>>/g' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=INT4
// INT4-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// INT4:         vector.load {{.*}} : memref<?x1x2x1x?x80xi8>, vector<16xi8>
// INT4:         vector.load {{.*}} : memref<?x1x2x1x?x80xi8>, vector<8xi8>
// INT4:         scf.for
// INT4:           vector.load {{.*}} : memref<?x1x2x1x?x80xi8>, vector<16xi8>
// INT4:           vector.bitcast {{.*}} : vector<16xi8> to vector<4xi32>
// INT4:           vector.load {{.*}} : memref<?x1x2x1x?x80xi8>, vector<4xi8>
// INT4:           vector.bitcast {{.*}} : vector<4xi8> to vector<2xf16>
// INT4:           vector.load {{.*}} : memref<?x1x2x1x?x80xi8>, vector<8xi8>
// INT4:           vector.bitcast {{.*}} : vector<4xi32> to vector<8xf16>
// INT4-NEXT:      arith.subf {{.*}} : vector<8xf16>
// INT4-NEXT:      arith.mulf {{.*}} fastmath<contract> : vector<8xf16>
// INT4-NEXT:      arith.addf {{.*}} fastmath<contract> : vector<8xf16>
// INT4:           scf.yield
// INT4:         gpu.barrier

// The steps, with the loads a step ahead in registers (pinned: on sm_90 a
// bf16 cache's default streams them through shared-memory stages,
// decode-to-gpu.mlir): a first loop over those whose loads lie inside
// the split reads their rows unclamped, then a second takes the rest, each
// position clamped to the last readable one. The softmax's head rows (16:
// the group as A rows of mma.sync) are shared by two lanes each, which
// agree on a step's max with one butterfly shuffle; its exponentials are
// ex2.approx.ftz. Pinned, blocks_per_unit asks the target's compiler to
// fit that many blocks on a unit: nvvm.minctasm on sm_90, and on gfx942
// rocdl.waves_per_eu (3 blocks of 4 wave64s over a CU's 4 SIMDs: 3).
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 3, prefetch = 1, stages = 0}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=STEPS
// STEPS-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// STEPS-SAME:    nvvm.minctasm = 3 : i32
// STEPS:         scf.for
// STEPS-NOT:       arith.minui
// STEPS:           gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}} : f32
// STEPS:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// STEPS:         scf.for
// STEPS:           arith.minui
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {blocks_per_unit = 3}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=WAVES
// WAVES: gpu.func @{{gqa_attention_partial_[0-9]+}}({{.*}}rocdl.waves_per_eu = 3 : i32

// head_dim 256 with a group of 16 needs 66048 bytes of shared memory on
// gfx942, which has 65536: the default is the per-query-head kernel, and
// the probe of gqa_attention reports nothing. On sm_90 its accumulators
// exceed the register budget: the per-query-head kernel too.
// RUN: fdc-opt %s --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=LARGE --implicit-check-not=error
// RUN: fdc-opt %s --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=LARGE --implicit-check-not=error
// LARGE: decode.attention {{.*}}decode.kernel = #decode.kernel<"split_kv_attention"
// Pinned, it is refused by name.
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {}>/' %s \
// RUN:   | not fdc-opt --decode-select-kernels=target=gfx942 2>&1 | FileCheck %s --check-prefix=PINNED
// PINNED: error: 'decode.attention' op kernel config subgroups = 4 needs 66048 bytes of shared memory, more than the 65536 of gfx942
// A group of 16 with D = 128 on sm_90: the heads as B columns pinned
// where mma.sync's n is 8 are refused by name.
// The softmax in every lane with the heads as B columns (pinned:
// heads_as_b = 1, register_softmax = 1; a group of 8 on 2 KV heads): each
// lane turns its score accumulators into weights, for each of its two head
// columns; the 8 lanes of a column (lane % 4 on sm_90) agree on the step's
// max with butterflies over lanes 4, 8 and 16 apart; the 4 weights go to
// the subgroup's rows of shared memory, and after a warp barrier each lane
// loads its P slots (positions 2c, 2c + 1, 2c + 8 and 2c + 9 of its head,
// in two pairs: the order in which ldmatrix deals V's positions to the
// slots of lane 4g + c, the default's fragment loads). On gfx942
// (MFMA 16x16x16, one column a lane) the lanes 16 and 32 apart share a
// column; on gfx1100 (wave32 WMMA) the lanes 16 apart.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {heads_as_b = 1, register_softmax = 1}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=LANES
// LANES-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// LANES:         scf.for
// LANES-COUNT-8:   nvvm.mma.sync
// LANES:           gpu.shuffle  xor %{{.*}}, %c4_i32
// LANES:           gpu.shuffle  xor %{{.*}}, %c8_i32
// LANES:           gpu.shuffle  xor %{{.*}}, %c16_i32
// LANES:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// LANES:           gpu.shuffle  xor %{{.*}}, %c4_i32
// LANES:           gpu.shuffle  xor %{{.*}}, %c8_i32
// LANES:           gpu.shuffle  xor %{{.*}}, %c16_i32
// LANES-COUNT-4:   memref.store {{.*}} : memref<4160xf32, #gpu.address_space<workgroup>>
// LANES:           nvvm.bar.warp.sync
// LANES-COUNT-2:   vector.load {{.*}} : memref<4160xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// LANES:           nvvm.mma.sync
// LANES:           nvvm.bar.warp.sync
// LANES-NEXT:      scf.yield
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {heads_as_b = 1, register_softmax = 1}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=LANES942
// LANES942-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// LANES942:         scf.for
// LANES942-COUNT-8:   amdgpu.mfma 16x16x16
// LANES942:           gpu.shuffle  xor %{{.*}}, %c16_i32
// LANES942-NEXT:      arith.maximumf
// LANES942:           gpu.shuffle  xor %{{.*}}, %c32_i32
// LANES942-NEXT:      arith.maximumf
// LANES942:           math.exp2
// LANES942:           llvm.fence syncscope("wavefront") acq_rel
// LANES942-COUNT-16:  amdgpu.mfma 16x16x16
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {heads_as_b = 1, register_softmax = 1}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx1100 | FileCheck %s --check-prefix=LANES1100
// LANES1100-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// LANES1100:         scf.for
// LANES1100-COUNT-8:   amdgpu.wmma
// LANES1100:           gpu.shuffle  xor %{{.*}}, %c16_i32
// LANES1100-NEXT:      arith.maximumf
// LANES1100-NOT:       gpu.shuffle  xor %{{.*}}, %c32_i32
// LANES1100:           math.exp2
// LANES1100-COUNT-8:   amdgpu.wmma

// An INT4 cache under unified max (a group of 8 on 2 KV heads), its
// default on sm_90: shared memory is bytes, viewed as the f32s of the
// softmax and the subgroups' two stages of cache rows (4 subgroups x 2 x
// [K, V] x 16 positions of 80 bytes). Before the loop each lane copies its
// 5 pieces of 16 bytes of the first step's rows (if it starts inside the
// split); each step copies the next one's to the other stage, waits for its
// own, and reads its rows from shared memory. The copies address the cache
// and the stages as flat memrefs: where all 16 positions of a step are
// readable, lane l's piece j is piece l + 32 j of the step's K rows, then
// V rows (j = 2: K in lanes 0-15, V in 16-31, a select in the step), a
// constant from the step's first row; else the pieces of positions past
// the last readable one are zeros (cp.async of 0 source bytes; their
// weights are 0). The keys are dequantised to
// f16 (0x64006400, as under the online scheme) for f16 score MMAs, the
// values to bf16 (mask and bias to 128 + q, 0x43004300) for bf16 MMAs with
// P (the V words of k slots 2p and 2p + 1 mixed first, a 16-bit half of
// each per word, so that a dim's two values come out in one register, as
// the MMA takes them); every lane turns its own scores into weights (no
// max to agree on, no shuffle). No copy is left in flight after the loop.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/head_dim = 128, bf16>/head_dim = 128, !decode.int4<groups = 4>>/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=STAGED
// STAGED-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// STAGED:         memref.view {{.*}} : memref<37120xi8, #gpu.address_space<workgroup>> to memref<4160xf32, #gpu.address_space<workgroup>>
// STAGED:         memref.view {{.*}} : memref<37120xi8, #gpu.address_space<workgroup>> to memref<256x80xi8, #gpu.address_space<workgroup>>
// STAGED:         memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [%{{.*}}], strides: [1] : memref<?x1x2x2x?x80xi8> to memref<?xi8>
// STAGED:         memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [20480], strides: [1] : memref<256x80xi8, #gpu.address_space<workgroup>> to memref<20480xi8, #gpu.address_space<workgroup>>
// STAGED:         scf.if
// STAGED:           scf.if
// STAGED-COUNT-5:     nvgpu.device_async_copy {{.*}}, 16, {{.*}} : memref<?xi8> to memref<20480xi8, #gpu.address_space<workgroup>>
// STAGED:           } else {
// STAGED:             %[[VALID:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : index
// STAGED:             %[[BYTES:.*]] = arith.select %[[VALID]], %c16{{.*}}, %c0{{.*}} : index
// STAGED-NEXT:        nvgpu.device_async_copy {{.*}}, 16, %[[BYTES]] {bypassL1} : memref<?xi8> to memref<20480xi8, #gpu.address_space<workgroup>>
// STAGED-COUNT-4:     nvgpu.device_async_copy
// STAGED-NOT:       nvgpu.device_async_copy
// STAGED:         nvvm.cp.async.commit.group
// STAGED:         scf.for
// STAGED:           scf.if
// STAGED-COUNT-10:    nvgpu.device_async_copy
// STAGED:           nvvm.cp.async.commit.group
// STAGED-NEXT:      nvvm.cp.async.wait.group 1
// STAGED:           nvvm.bar.warp.sync
// STAGED:           vector.load {{.*}} : memref<256x80xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// STAGED:           llvm.inline_asm "lop3.b32 $0, $1, 983055, 1677747200, 0xEA;"
// STAGED:           arith.subf {{.*}} : vector<8xf16>
// STAGED:           vector.shuffle %{{.*}}, %{{.*}} [0, 2, 1, 3] : vector<2xi16>, vector<2xi16>
// STAGED:           llvm.inline_asm "lop3.b32 $0, $1, 983055, 1124090624, 0xEA;"
// STAGED:           arith.subf {{.*}} : vector<4xbf16>
// STAGED:           nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
// STAGED-NOT:       gpu.shuffle
// STAGED:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// STAGED:           nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>
// STAGED:           scf.yield
// STAGED-NEXT:    }
// STAGED-NEXT:    nvvm.cp.async.wait.group 0
// STAGED-NEXT:    gpu.barrier
// The host's splits: whole waves of two blocks a unit (264 on sm_90's 132
// units) over the blocks of a split, at least four, at most 64 and no
// split shorter than 64 positions.
// STAGED-LABEL: func.func @fdc_model_step(
// STAGED:         %[[WHOLE:.*]] = arith.divsi %c264_i64, %{{.*}} : i64
// STAGED:         %[[FEWEST:.*]] = arith.maxsi %[[WHOLE]], %c4_i64 : i64
// STAGED:         %[[CAP:.*]] = arith.minsi %c64_i64, %{{.*}} : i64
// STAGED:         arith.minsi %[[FEWEST]], %[[CAP]] : i64

// A bf16 cache's rows through two stages on sm_90 (pinned): rows of 256
// bytes would put the 16-byte pieces that a warp's lanes read of eight
// rows on the same banks, so each row's pieces are XOR-ed with the row mod
// 8, in the copies and in the steps' reads alike (a readable step's copies:
// each lane's place in the stage from one of 4 offsets planned before the
// loop, its 16 pieces 2 rows apart repeating the swizzle every 4, plus a
// constant). The steps read each
// 16 x 16 tile of K (8 per step: 128 dims) and of V (8 output tiles,
// transposed) with one ldmatrix (fragment_loads, the default where stages
// are), each lane naming one 16-byte piece; the query was loaded in the
// slot order ldmatrix deals k in (dims 2c, 2c + 1, 2c + 8, 2c + 9 of each
// 16 for lane 4g + c: pairs of bf16).
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {prefetch = 0, stages = 2}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=SWIZZLE
// SWIZZLE-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// SWIZZLE:         %[[STAGES:.*]] = memref.view {{.*}} to memref<256x128xbf16, #gpu.address_space<workgroup>>
// SWIZZLE:         %[[FLAT:.*]] = memref.reinterpret_cast %[[STAGES]] to offset: [0], sizes: [32768], strides: [1]
// SWIZZLE:         %[[SWIZZLED:.*]] = arith.xori %[[PIECE:.*]], %[[ROWBITS:.*]] : index
// SWIZZLE-NEXT:    %c8{{.*}} = arith.constant 8 : index
// SWIZZLE-NEXT:    %[[START:.*]] = arith.muli %[[SWIZZLED]], %c8{{.*}} : index
// SWIZZLE-NEXT:    %[[COLUMN:.*]] = arith.addi %[[START]], %{{.*}} : index
// SWIZZLE-NEXT:    %[[PLACE:.*]] = arith.addi %{{.*}}, %[[COLUMN]] : index
// SWIZZLE:         %[[PLACED:.*]] = arith.addi %{{.*}}, %[[PLACE]] : index
// SWIZZLE:         %[[TO:.*]] = arith.addi %[[PLACED]], %c{{[0-9]+}}{{.*}} : index
// SWIZZLE:         nvgpu.device_async_copy {{.*}}, %[[FLAT]][%[[TO]]], 8
// SWIZZLE-COUNT-8:   vector.load %{{.*}} {alignment = 4 : i64} : memref<?x16x128xbf16>, vector<2xbf16>
// SWIZZLE:         scf.for
// SWIZZLE:           arith.xori
// SWIZZLE-COUNT-8:   nvgpu.ldmatrix %[[STAGES]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false}
// SWIZZLE-COUNT-8:   nvgpu.ldmatrix %[[STAGES]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true}
// SWIZZLE-NOT:       vector.load %[[STAGES]]
// SWIZZLE:           nvvm.mma.sync
// Without fragment loads (pinned fragment_loads = 0) each lane reads its
// own 16-byte runs of the rows, as on targets without ldmatrix.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {fragment_loads = 0}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefix=RUNS
// RUNS-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// RUNS:         %[[STAGES:.*]] = memref.view {{.*}} to memref<256x128xbf16, #gpu.address_space<workgroup>>
// RUNS:         vector.load %{{.*}} {alignment = 16 : i64} : memref<?x16x128xbf16>, vector<8xbf16>
// RUNS:         scf.for
// RUNS:           arith.xori
// RUNS:           vector.load %[[STAGES]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<256x128xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// RUNS-NOT:       nvgpu.ldmatrix
// RUNS:           nvvm.mma.sync

// Stages on gfx942 (a bf16 cache, pinned; 2 subgroups, whose two stages of
// 16 rows of 256 bytes fit its 64 KiB of LDS): the target has no
// asynchronous copy, so GpuPrimitives::copyToShared loads and stores, 8
// pieces of 16 bytes a lane of 64 before the loop and in each step (a
// step's 512 pieces), and the steps read their rows from LDS.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {prefetch = 0, stages = 2, subgroups = 2}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=STAGED942
// STAGED942-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// STAGED942:         memref.view {{.*}} : memref<41088xi8, #gpu.address_space<workgroup>> to memref<2080xf32, #gpu.address_space<workgroup>>
// STAGED942:         memref.view {{.*}} : memref<41088xi8, #gpu.address_space<workgroup>> to memref<128x128xbf16, #gpu.address_space<workgroup>>
// STAGED942:         scf.if
// STAGED942:           scf.if
// STAGED942-COUNT-8:     vector.store {{.*}} {alignment = 16 : i64} : memref<16384xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// STAGED942-NOT:       nvgpu.device_async_copy
// STAGED942:         scf.for
// STAGED942:           scf.if
// STAGED942-COUNT-8:     vector.store {{.*}} : memref<16384xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// STAGED942:           vector.load {{.*}} : memref<128x128xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// STAGED942:           amdgpu.mfma 16x16x16

// The same swizzle on gfx942 (its LDS has 32 banks of 4 bytes too), in
// the stores of copyToShared's fallback.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/kv_heads = 1/kv_heads = 2/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {prefetch = 0, stages = 2, subgroups = 2}>/' %s \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefix=SWIZZLE942
// SWIZZLE942-LABEL: gpu.func @{{gqa_attention_partial_[0-9]+}}(
// SWIZZLE942:         %[[STAGES:.*]] = memref.view {{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// SWIZZLE942:         %[[FLAT:.*]] = memref.reinterpret_cast %[[STAGES]] to offset: [0], sizes: [16384], strides: [1]
// SWIZZLE942:         %[[SWIZZLED:.*]] = arith.xori %{{.*}}, %{{.*}} : index
// SWIZZLE942-NEXT:    %c8{{.*}} = arith.constant 8 : index
// SWIZZLE942-NEXT:    %[[START:.*]] = arith.muli %[[SWIZZLED]], %c8{{.*}} : index
// SWIZZLE942-NEXT:    %[[COLUMN:.*]] = arith.addi %[[START]], %{{.*}} : index
// SWIZZLE942-NEXT:    %[[PLACE:.*]] = arith.addi %{{.*}}, %[[COLUMN]] : index
// SWIZZLE942:         %[[PLACED:.*]] = arith.addi %{{.*}}, %[[PLACE]] : index
// SWIZZLE942:         %[[TO:.*]] = arith.addi %[[PLACED]], %c{{[0-9]+}}{{.*}} : index
// SWIZZLE942:         vector.store %{{.*}}, %[[FLAT]][%[[TO]]]
// SWIZZLE942:         scf.for
// SWIZZLE942:           arith.xori
// SWIZZLE942:           vector.load %[[STAGES]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<128x128xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>

// Stages refused: one stage, or with prefetch.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {stages = 1, prefetch = 0}>/' %s \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=ONESTAGE
// ONESTAGE: error: 'decode.attention' op kernel config stages = 1 needs at least 2 stages, prefetch = 0, and cache rows of 256 bytes that a step's 16 positions copy in 16-byte pieces, as many per lane

// A pinned split floor of none is refused.
// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {min_splits = 0}>/' %s \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=MINSPLITS
// MINSPLITS: error: 'decode.attention' op kernel config min_splits = 0 is outside [1, 1024]

// RUN: sed 's/256/128/g; s/4096/2048/g; s/softmax = #decode.softmax<online>/softmax = #decode.softmax<online>, decode.kernel = #decode.kernel<"gqa_attention", {heads_as_b = 1}>/' %s \
// RUN:   | not fdc-opt --decode-select-kernels=target=sm_90 2>&1 | FileCheck %s --check-prefix=WIDEGROUP
// WIDEGROUP: error: 'decode.attention' op kernel family 'gqa_attention' needs an MMA of sm_90 on the cache's 'bf16' (f16: online softmax only) with at least the group's 16 query heads as columns (heads_as_b = 1), and head_dim 128 a multiple of its k runs and columns

decode.model @gqa16_d256 attributes {config = {vocab_size = 4096 : i64}} {
  decode.weight @"table" : tensor<4096x4096xbf16>
  decode.weight @"head" : tensor<4096x4096xbf16>
  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 256, bf16>) -> (tensor<?x4096xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 256, bf16>) {
    %c0 = arith.constant 0 : index
    %m = tensor.dim %tokens, %c0 : tensor<?xi32>
    %table = decode.weight_ref @"table" : tensor<4096x4096xbf16>
    %q = decode.embedding %table[%tokens] : tensor<4096x4096xbf16>, tensor<?xi32> -> tensor<?x4096xbf16>
    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape [%m, 16, 256] : tensor<?x4096xbf16> into tensor<?x16x256xbf16>
    %a = decode.attention %qh, %cache[%slots, %positions] {layer = 0 : i64, scale = 0.0625 : f32, softmax = #decode.softmax<online>} : tensor<?x16x256xbf16>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 256, bf16> -> tensor<?x16x256xbf16>
    %af = tensor.collapse_shape %a [[0], [1, 2]] : tensor<?x16x256xbf16> into tensor<?x4096xbf16>
    %head = decode.weight_ref @"head" : tensor<4096x4096xbf16>
    %logits = decode.linear %af, %head : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xf32>
    %next = decode.argmax %logits : tensor<?x4096xf32> -> tensor<?xi32>
    return %logits, %next, %cache : tensor<?x4096xf32>, tensor<?xi32>, !decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 256, bf16>
  }
}

