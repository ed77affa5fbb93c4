// One kernel per distinct (family, config, shapes): the two layers of the
// model launch the same kernels, the layer being a kernel argument, and the
// k and v projections (same shape, same epilogue) share their kernels. Six
// distinct linear ops (q, k = v, o, gate-up, down, head) with a dispatch
// table of five kernels each on sm_90 (three flat GEMMs, two tiled GEMMs:
// the model's rows leave the units idle, so a flat GEMM from M = 1, not
// GEMV) and four on gfx942 (whose MMA is 16 wide: two flat GEMMs). Their
// widest tiled GEMM is split in K, so each also launches a linear_epilogue,
// which depends only on N, the epilogue and the output type (o and down
// share theirs): five on sm_90, four on gfx942 (whose gate-up keeps the
// unsplit tile: the wide one's two stages exceed its 64 KiB). Plus eight
// other kernels, and on sm_90 gqa_attention's kernel of two splits added
// in a cluster: 44 and 36 in all.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s --check-prefixes=SM90,CHECK
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s --check-prefixes=GFX942,CHECK

// SM90: fdc.kernels = [{{("[a-z_]+_[0-9]+", ){43}"[a-z_]+_[0-9]+"}}]
// SM90-COUNT-44: gpu.func @
// SM90-NOT: gpu.func @
// GFX942: fdc.kernels = [{{("[a-z_]+_[0-9]+", ){35}"[a-z_]+_[0-9]+"}}]
// GFX942-COUNT-36: gpu.func @
// GFX942-NOT: gpu.func @

// The layer is the cache kernels' last argument before the implicit sizes
// (constants print as %c<value>_i64...): layer 0, then layer 1, launching the
// same kv_append and attention kernels.
// CHECK-LABEL: func.func @fdc_model_step
// CHECK: gpu.launch_func  @fdc_kernels::@[[KV:kv_append_[0-9]+]] {{.*}} args({{.*}}, %c0_i64{{[_0-9]*}} : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@[[ATTN:gqa_attention_partial_[0-9]+]] {{.*}} args({{.*}}, %c0_i64{{[_0-9]*}} : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@[[KV]] {{.*}} args({{.*}}, %c1_i64{{[_0-9]*}} : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@[[ATTN]] {{.*}} args({{.*}}, %c1_i64{{[_0-9]*}} : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@{{sample_[0-9]+}}
