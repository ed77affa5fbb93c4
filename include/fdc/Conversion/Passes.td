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

#endif // FDC_CONVERSION_PASSES_TD
