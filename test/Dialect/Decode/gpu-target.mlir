// RUN: fdc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A hand-written #decode.gpu_target round-trips.
// CHECK: module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 16, k = 16, a = bf16, acc = f32>]>}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 16, k = 16, a = bf16, acc = f32>]>} {
}

// -----

// CHECK: #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target subgroup must be 32 or 64, got 16}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 16, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target units must be in [1, 2^20], got 0}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 0, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target shared_memory must be in [1024, 2^30], got 100}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 100, vector_bytes = 16, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target vector_bytes must be a power of two in [4, 64], got 12}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 12, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target max_workgroup_size must be a multiple of the subgroup size in [64, 4096], got 96}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx90a", subgroup = 64, units = 110, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 96, mma = []>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target mma lists #decode.mma shapes, got 1 : i64}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx90a", subgroup = 64, units = 110, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [1]>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target subgroup of an nvidia target must be 32 (a warp), got 64}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 64, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>} {
}

// -----

// expected-error @+2 {{#decode.mma sizes must be in [1, 256], got 16x0x16}}
// expected-error @+1 {{failed to parse Decode_GpuTargetAttr parameter 'mma'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx90a", subgroup = 64, units = 110, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [#decode.mma<m = 16, n = 0, k = 16, a = bf16, acc = f32>]>} {
}
