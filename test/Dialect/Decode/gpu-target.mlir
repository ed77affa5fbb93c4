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

// -----

// A group MMA (sm_90a's wgmma) round-trips.
// CHECK: group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>]
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>]>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target group_mma lists #decode.group_mma shapes, got #decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.mma<m = 16, n = 8, k = 16, a = bf16, acc = f32>]>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target group_mma of 4 subgroups exceeds max_workgroup_size 64}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 64, mma = [], group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>]>} {
}

// -----

// expected-error @+2 {{#decode.group_mma max_n (100) must be a multiple of n_step (8)}}
// expected-error @+1 {{failed to parse Decode_GpuTargetAttr parameter 'group_mma'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 100, k = 16, a = bf16, acc = f32, row_bytes = 128>]>} {
}

// -----

// expected-error @+2 {{#decode.group_mma row_bytes must be a power of two of at least one k step (32 bytes) and at most 1024, got 16}}
// expected-error @+1 {{failed to parse Decode_GpuTargetAttr parameter 'group_mma'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 16>]>} {
}

// -----

// expected-error @+2 {{#decode.group_mma subgroups must be in [1, 32], got 0}}
// expected-error @+1 {{failed to parse Decode_GpuTargetAttr parameter 'group_mma'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.group_mma<subgroups = 0, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>]>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target group_mma needs an arch-specific NVIDIA arch (sm_XXa), got 'sm_90'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], group_mma = [#decode.group_mma<subgroups = 4, m = 64, n_step = 8, max_n = 256, k = 16, a = bf16, acc = f32, row_bytes = 128>]>} {
}

// -----

// dependent_launch round-trips (absent is false).
// CHECK: #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = true>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90a", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = true>} {
}

// -----

// CHECK: #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = false>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = false>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target dependent_launch needs an NVIDIA arch of sm_90 or later, got 'sm_80'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_80", subgroup = 32, units = 108, shared_memory = 166912, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = true>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target dependent_launch needs an NVIDIA arch of sm_90 or later, got 'gfx942'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [], dependent_launch = true>} {
}

// -----

// cluster_workgroups round-trips (absent is 0: no clusters).
// CHECK: #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], cluster_workgroups = 8>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], cluster_workgroups = 8>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target cluster_workgroups needs an NVIDIA arch of sm_90 or later and a size in [2, 16], got 8 on 'sm_80'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_80", subgroup = 32, units = 108, shared_memory = 166912, vector_bytes = 16, max_workgroup_size = 1024, mma = [], cluster_workgroups = 8>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target cluster_workgroups needs an NVIDIA arch of sm_90 or later and a size in [2, 16], got 32 on 'sm_90'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], cluster_workgroups = 32>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target cluster_workgroups needs an NVIDIA arch of sm_90 or later and a size in [2, 16], got 4 on 'gfx942'}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [], cluster_workgroups = 4>} {
}

// -----

// shared_memory_banks and shared_memory_bank_bytes round-trip (absent: 32
// banks of 4 bytes, every known target's; written so, they are not printed).
// CHECK: #decode.gpu_target<vendor = amd, arch = "gfx1100", subgroup = 32, units = 96, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_banks = 64, shared_memory_bank_bytes = 8>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx1100", subgroup = 32, units = 96, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_banks = 64, shared_memory_bank_bytes = 8>} {
}

// -----

// CHECK: #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = []>
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_banks = 32, shared_memory_bank_bytes = 4>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target shared_memory_banks must be a power of two in [4, 256], got 48}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = nvidia, arch = "sm_90", subgroup = 32, units = 132, shared_memory = 232448, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_banks = 48>} {
}

// -----

// expected-error @+1 {{#decode.gpu_target shared_memory_bank_bytes must be a power of two in [4, 16], got 2}}
module attributes {decode.gpu_target = #decode.gpu_target<vendor = amd, arch = "gfx942", subgroup = 64, units = 304, shared_memory = 65536, vector_bytes = 16, max_workgroup_size = 1024, mma = [], shared_memory_bank_bytes = 2>} {
}
