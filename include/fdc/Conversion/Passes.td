//===- Passes.td - decode conversions ----------------------*- tablegen -*-===//

#ifndef FDC_CONVERSION_PASSES_TD
#define FDC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertDecodeToHost : Pass<"convert-decode-to-host", "mlir::ModuleOp"> {
  let summary = "Lower a decode.model to a host (CPU) step function";
  let description = [{
    Replaces the `decode.model` in the module by
    `func.func @fdc_model_step(%args: !llvm.ptr)`, the model library's ABI
    entry point (docs/model-library.md): it reads the FdcStepArgs fields,
    views the weight arena (offsets from `decode-assign-weight-layout`), the
    KV cache and the per-sequence arrays as memrefs, and runs every op of
    `@step` as scf loops over memrefs with f32 accumulation. The KV cache is
    updated in place, so a cache value may not be read after it was appended
    to. Output: scf, memref, arith, math and llvm ops.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::LLVM::LLVMDialect", "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
  ];
}

def ConvertDecodeToGPU : Pass<"convert-decode-to-gpu", "mlir::ModuleOp"> {
  let summary = "Lower a decode.model to GPU kernels and a launching step";
  let description = [{
    Replaces the `decode.model` by a `gpu.module @fdc_kernels` holding the
    kernels of every op (one generator per op, each built from a config
    struct: thread-per-vector elementwise kernels; block-per-row norms and
    token selection; a warp-per-row GEMV with 16-byte loads; split-KV
    attention with online or unified-max softmax and a reduction kernel that
    recomputes flagged rows) and the host entry `fdc_model_step(!llvm.ptr)`
    that places intermediates in the scratch buffer and launches the kernels
    with `gpu.launch_func`. Sets `fdc.kernels`, `fdc.linear_tables` (every
    distinct decode.linear signature's kernels and their source),
    `fdc.scratch_bytes_per_sequence` and `fdc.scratch_fixed_bytes` on the
    module for the manifest. With `tuning-candidates`, also builds
    `fdc_tune_launch(const FdcTuneArgs *)`, which launches any candidate
    kernel (getLinearCandidates) of any distinct linear signature, listed
    in `fdc.tune_signatures` (a tuning library for fdc tune).

    The kernels are generated for the module's `decode.gpu_target`
    attribute (a `#decode.gpu_target`, set by `fdc compile` or written by
    hand); without one, for the archs of the `target` option, looked up in
    the known-targets table (`target=sm_90`, `target=gfx90a,gfx942`).
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "GPU arch(s) to generate kernels for when the module has no "
           "decode.gpu_target attribute, comma-separated (e.g. sm_90, "
           "gfx942,gfx90a)">,
    Option<"tuningCandidates", "tuning-candidates", "bool",
           /*default=*/"false",
           "Also build fdc_tune_launch(const FdcTuneArgs *): every candidate "
           "kernel of every distinct decode.linear signature, for fdc tune">,
  ];
  let dependentDialects = [
    "mlir::amdgpu::AMDGPUDialect", "mlir::arith::ArithDialect",
    "mlir::cf::ControlFlowDialect", "mlir::func::FuncDialect",
    "mlir::gpu::GPUDialect",
    "mlir::LLVM::LLVMDialect", "mlir::NVVM::NVVMDialect",
    "mlir::nvgpu::NVGPUDialect",
    "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect", "mlir::vector::VectorDialect",
  ];
}

def SelectKernels : Pass<"decode-select-kernels", "mlir::ModuleOp"> {
  let summary = "Choose each op's GPU kernel family and config";
  let description = [{
    Writes on every op of the `decode.model`'s step that becomes a GPU kernel
    a `decode.kernel` attribute, `#decode.kernel<"family", {config}>`: the
    kernel family of fdc's registry that lowers it (the preferred family that
    can) and the family's config, every entry spelled out with its default
    for the module's `#decode.gpu_target`. A `decode.kernel` already on an op
    (written by hand, e.g. to pin a config in a test) is kept: it is checked
    (known family, one that lowers the op, known config entries with values
    the target allows) and its missing entries are filled in.
    `convert-decode-to-gpu` builds what the attributes name.

    The target is the module's `decode.gpu_target`, else the `target`
    option's archs (as for `convert-decode-to-gpu`), which it then records.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "GPU arch(s) to select for when the module has no "
           "decode.gpu_target attribute, comma-separated">,
  ];
}

def ApplyTuning : Pass<"decode-apply-tuning", "mlir::ModuleOp"> {
  let summary = "Set the measured dispatch tables of a tuning file (fdc tune)";
  let description = [{
    Reads the tuning file `file` that `fdc tune` wrote (JSON,
    docs/cli.md) and writes its measured `#decode.dispatch` on every
    `decode.linear` of the step whose signature (N, K, weight dtype,
    activation, bias, residual) it lists, marking the op
    `decode.kernel_source = "tuned"` for the manifest. Every kernel is
    completed and checked by its family (an invalid config fails with the
    family's message, prefixed by the file and the entry). A linear the
    file does not list, or that already has a `decode.kernel`, is left for
    `decode-select-kernels` (the heuristic table, or the kernel written by
    hand). A file measured on another arch than the module's GPU target is
    refused. Run before `decode-select-kernels` / `convert-decode-to-gpu`.
  }];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "The tuning file (JSON) of fdc tune">,
    Option<"target", "target", "std::string", /*default=*/"\"\"",
           "GPU arch(s) when the module has no decode.gpu_target attribute">,
  ];
}

def LowerKernelLaunches : Pass<"fdc-lower-kernel-launches", "mlir::ModuleOp"> {
  let summary = "Lower gpu.launch_func to the runtime's launch callback";
  let description = [{
    Inside `fdc_model_step(const FdcStepArgs *args)`, replaces every
    `gpu.launch_func` by a call of `args->device->launch(context, name, grid,
    block, shared bytes, params)` (docs/model-library.md), `params` pointing
    at each 8-byte kernel argument as cuLaunchKernel expects. When the
    callback returns non-zero, the step returns before the next launch.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect"];
}

#endif // FDC_CONVERSION_PASSES_TD
