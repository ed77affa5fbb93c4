// RUN: fdc-opt %s --fdc-lower-kernel-launches -split-input-file -verify-diagnostics

// A launch nested in control flow cannot end the step when it fails.
module attributes {gpu.container_module} {
  gpu.module @fdc_kernels {
    gpu.func @k() kernel { gpu.return }
  }
  func.func @fdc_model_step(%args: !llvm.ptr) {
    %c1 = arith.constant 1 : index
    %true = arith.constant true
    scf.if %true {
      // expected-error @below {{must be directly inside fdc_model_step(!llvm.ptr)}}
      gpu.launch_func @fdc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    }
    return
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @fdc_kernels {
    gpu.func @k() kernel { gpu.return }
  }
  func.func @not_a_step(%args: !llvm.ptr, %n: i64) {
    %c1 = arith.constant 1 : index
    // expected-error @below {{must be directly inside fdc_model_step(!llvm.ptr)}}
    gpu.launch_func @fdc_kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
