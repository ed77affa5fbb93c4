//===- Passes.h - decode conversions ----------------------------*- C++ -*-===//

#ifndef FDC_CONVERSION_PASSES_H
#define FDC_CONVERSION_PASSES_H

#include "mlir/Dialect/AMDGPU/IR/AMDGPUDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace fdc {

#define GEN_PASS_DECL
#include "fdc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "fdc/Conversion/Passes.h.inc"

/// Adds the passes that take the output of convert-decode-to-host to the LLVM
/// dialect, ready for translation to LLVM IR.
void buildHostToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers `fdc-host-to-llvm` (the pipeline above) for fdc-opt.
void registerHostToLLVMPipeline();

} // namespace fdc

#endif // FDC_CONVERSION_PASSES_H
