// One kernel per distinct (family, config, shapes): the two layers of the
// model launch the same kernels, the layer being a kernel argument, and the
// k and v projections (same shape, same epilogue) share one GEMV.
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=sm_90 | FileCheck %s
// RUN: fdc-opt %S/Inputs/head128-bf16.mlir --decode-assign-weight-layout --convert-decode-to-gpu=target=gfx942 | FileCheck %s

// CHECK: fdc.kernels = ["embedding_0", "rms_norm_0", "linear_0", "linear_1", "rope_0", "rope_1", "kv_append_0", "attention_partial_0", "attention_reduce_0", "linear_2", "linear_3", "linear_4", "linear_5", "sample_0"]
// CHECK-COUNT-14: gpu.func @
// CHECK-NOT: gpu.func @

// The layer is the cache kernels' last argument.
// CHECK-LABEL: func.func @fdc_model_step
// CHECK: gpu.launch_func  @fdc_kernels::@linear_1 {{.*}} args(
// CHECK: gpu.launch_func  @fdc_kernels::@linear_1 {{.*}} args(
// CHECK: gpu.launch_func  @fdc_kernels::@kv_append_0 {{.*}} args({{.*}}, %[[LAYER0:.*]] : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@attention_partial_0
// CHECK: gpu.launch_func  @fdc_kernels::@kv_append_0 {{.*}} args({{.*}}, %[[LAYER1:.*]] : i64, %{{.*}} : i64, %{{.*}} : i64, %{{.*}} : i64)
// CHECK: gpu.launch_func  @fdc_kernels::@attention_partial_0
// CHECK: gpu.launch_func  @fdc_kernels::@sample_0
