// attention_reduce combines the splits' partial rows of unified-max
// attention (launched for more than one split; it also runs the recompute
// fallback, as gqa_attention_single_split does for one split). A
// unit is a subgroup's worth of head dims of one (sequence, query head)
// row; the host gives each unit a power of two of split groups (at most
// the block's 16), enough to load its splits in one round of four; the
// block takes as many units as its groups leave. The kernel gets log2 of
// the groups per unit and shifts and masks with it.
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefixes=CHECK,NV
// RUN: sed 's/softmax = #decode.softmax<online>/softmax = #decode.softmax<unified_max, phi = 0.0, lo = -20.0, hi = 20.0>/' %S/Inputs/head128-bf16.mlir \
// RUN:   | fdc-opt --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefixes=CHECK,AMD

// Sixteen subgroups a block: 512 threads of 32 lanes, 1024 of 64 (gfx942).
// CHECK-LABEL: gpu.func @{{attention_reduce_[0-9]+}}(
// CHECK-SAME:    %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[SPLITS:[^:]*]]: i64, %[[LOG2_GROUPS:[^:]*]]: i64, %[[UNITS:[^:]*]]: i64,
// NV-SAME:       workgroup(%[[SHARED:.*]] : memref<1536xf32, #gpu.address_space<workgroup>>
// NV-SAME:       known_block_size = array<i32: 512, 1, 1>
// AMD-SAME:      workgroup(%[[SHARED:.*]] : memref<3072xf32, #gpu.address_space<workgroup>>
// AMD-SAME:      known_block_size = array<i32: 1024, 1, 1>
// CHECK-DAG:     %[[SPLITS_INDEX:.*]] = arith.index_cast %[[SPLITS]] : i64 to index
// CHECK-DAG:     %[[LOG2_INDEX:.*]] = arith.index_cast %[[LOG2_GROUPS]] : i64 to index
// CHECK-DAG:     %[[GROUPS_INDEX:.*]] = arith.shli %c1, %[[LOG2_INDEX]] : index
// CHECK-DAG:     %[[UNITS_INDEX:.*]] = arith.index_cast %[[UNITS]] : i64 to index
// NV:            %[[SUBGROUP:.*]] = arith.divui %{{.*}}, %c32 : index
// AMD:           %[[SUBGROUP:.*]] = arith.divui %{{.*}}, %c64 : index
// CHECK:         %[[MASK:.*]] = arith.subi %[[GROUPS_INDEX]], %c1 : index
// CHECK:         %[[GROUP:.*]] = arith.andi %[[SUBGROUP]], %[[MASK]] : index
// CHECK:         arith.shrui %[[SUBGROUP]], %[[LOG2_INDEX]] : index
// CHECK:         %[[ACTIVE:.*]] = arith.cmpi ult, %{{.*}}, %[[UNITS_INDEX]] : index
// A unit past the last runs no split but reaches the barrier.
// CHECK:         %[[END:.*]] = arith.select %[[ACTIVE]], %[[SPLITS_INDEX]], %c0 : index
// CHECK:         %[[ROUND:.*]] = arith.muli %[[GROUPS_INDEX]], %c4{{.*}} : index
// Four partial rows' (flag, sum, acc) loaded at once, added in one go.
// CHECK:         scf.for %{{.*}} = %[[GROUP]] to %[[END]] step %[[ROUND]] iter_args(
// CHECK-COUNT-12:  memref.load %{{.*}} : memref<?xf32>
// CHECK-NOT:       memref.load
// CHECK:           scf.yield
// The unit's groups merge in a tree through shared memory: level l (while
// 2^l < the groups per unit) after a barrier, group g with g mod 2^(l+1) =
// 0 merging group g + 2^l's state, the thread 2^l subgroups on; four levels
// for 16 groups. The first group then holds the row's result and writes.
// CHECK-COUNT-3: memref.store %{{.*}}, %[[SHARED]]
// CHECK:         %[[LEVEL0:.*]] = arith.cmpi ult, %c1{{.*}}, %[[GROUPS_INDEX]] : index
// CHECK:         scf.if %[[LEVEL0]] -> (f32, f32, f32) {
// CHECK-NEXT:      gpu.barrier
// CHECK:           arith.addi %[[GROUP]], %c1{{.*}} : index
// CHECK:           scf.if %{{.*}} -> (f32, f32, f32) {
// NV:                arith.addi %{{.*}}, %c32{{.*}} : index
// AMD:               arith.addi %{{.*}}, %c64{{.*}} : index
// CHECK-COUNT-3:     memref.load %[[SHARED]]
// CHECK-COUNT-3:     memref.store %{{.*}}, %[[SHARED]]
// CHECK:         arith.cmpi ult, %c2{{.*}}, %[[GROUPS_INDEX]] : index
// CHECK:         gpu.barrier
// CHECK:         arith.cmpi ult, %c4{{.*}}, %[[GROUPS_INDEX]] : index
// CHECK:         gpu.barrier
// CHECK:         arith.cmpi ult, %c8{{.*}}, %[[GROUPS_INDEX]] : index
// CHECK:         gpu.barrier
// CHECK-NOT:     gpu.barrier
// CHECK:         scf.if
// CHECK:           arith.divf
// CHECK:           memref.store %{{.*}} : memref<?x4x128xbf16>
// CHECK:         gpu.return

// The host: units = batch x 4 heads x the chunks of 128 dims; log2 of the
// groups per unit from the rounds of four splits (k where the rounds exceed
// 2^(k-1), at most 4 for the block's 16 groups); the block takes 16 >> log2
// units.
// CHECK-LABEL: func.func @fdc_model_step(
// CHECK:         gpu.launch_func @fdc_kernels::@{{gqa_attention_partial_[0-9]+}}
// CHECK:         %[[ROWS:.*]] = arith.muli %{{.*}}, %c4{{.*}} : i64
// NV:            %[[ALL_UNITS:.*]] = arith.muli %[[ROWS]], %c4{{.*}} : i64
// AMD:           %[[ALL_UNITS:.*]] = arith.muli %[[ROWS]], %c2{{.*}} : i64
// CHECK:         %[[ROUNDS:.*]] = arith.ceildivsi %[[NUM_SPLITS:.*]], %c4{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[ROUNDS]], %c1{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[ROUNDS]], %c2{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[ROUNDS]], %c4{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[ROUNDS]], %c8{{.*}} : i64
// CHECK-NEXT:    %c4{{.*}} = arith.constant 4 : i64
// CHECK-NEXT:    %[[LOG2:.*]] = arith.select %{{.*}}, %c4{{.*}}, %{{.*}} : i64
// CHECK:         %[[UNITS_PER_BLOCK:.*]] = arith.shrui %c16{{.*}}, %[[LOG2]] : i64
// CHECK-NEXT:    %[[BLOCKS:.*]] = arith.ceildivsi %[[ALL_UNITS]], %[[UNITS_PER_BLOCK]] : i64
// CHECK:         %[[GRID:.*]] = arith.index_cast %[[BLOCKS]] : i64 to index
// CHECK:         gpu.launch_func @fdc_kernels::@{{attention_reduce_[0-9]+}} blocks in (%[[GRID]], %{{.*}}, %{{.*}}) threads in ({{.*}}) args({{.*}}, %[[NUM_SPLITS]] : i64, %[[LOG2]] : i64, %[[ALL_UNITS]] : i64,
