//===- DecodeBase.td - decode dialect definition -----------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_IR_DECODEBASE_TD
#define FDC_DIALECT_DECODE_IR_DECODEBASE_TD

include "mlir/IR/OpBase.td"

def Decode_Dialect : Dialect {
  let name = "decode";
  let cppNamespace = "::fdc::decode";
  let summary = "The ops of one LLM decode step";
  let description = [{
    The `decode` dialect models one iteration of the decode phase of LLM
    inference for a batch of M sequences (M dynamic): embedding lookup,
    RMSNorm, rotary embedding, linear layers (GEMV / flat GEMM) with fused
    epilogues, sparse linear layers on Tiled-CSL weights, KV-cache append and
    attention (MHA / GQA / MQA, bf16 / f16 / f32 or INT4 cache), and token
    selection (argmax, sampling). A `decode.model` holds the weight
    declarations and the step function.

    Values are tensors with value semantics; the KV cache is threaded through
    the step as a value (`decode.kv_append` returns the updated cache).
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

class Decode_Op<string mnemonic, list<Trait> traits = []>
    : Op<Decode_Dialect, mnemonic, traits>;

#endif // FDC_DIALECT_DECODE_IR_DECODEBASE_TD
