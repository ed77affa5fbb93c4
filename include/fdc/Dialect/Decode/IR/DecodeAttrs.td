//===- DecodeAttrs.td - decode dialect attributes ----------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_IR_DECODEATTRS_TD
#define FDC_DIALECT_DECODE_IR_DECODEATTRS_TD

include "fdc/Dialect/Decode/IR/DecodeBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Decode_ActivationNone : I32EnumAttrCase<"none", 0>;
def Decode_ActivationSiluGateUp : I32EnumAttrCase<"silu_gate_up", 1>;
def Decode_Activation : I32EnumAttr<"Activation",
    "epilogue activation of decode.linear",
    [Decode_ActivationNone, Decode_ActivationSiluGateUp]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}
def Decode_ActivationAttr
    : EnumAttr<Decode_Dialect, Decode_Activation, "activation">;

def Decode_ReductionSum : I32EnumAttrCase<"sum", 0>;
def Decode_ReductionMax : I32EnumAttrCase<"max", 1>;
def Decode_Reduction : I32EnumAttr<"Reduction", "all-reduce combiner",
    [Decode_ReductionSum, Decode_ReductionMax]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}
def Decode_ReductionAttr
    : EnumAttr<Decode_Dialect, Decode_Reduction, "reduction"> {
  let assemblyFormat = "$value";
}

def Decode_SoftmaxOnline : I32EnumAttrCase<"online", 0>;
def Decode_SoftmaxUnifiedMax : I32EnumAttrCase<"unified_max", 1>;
def Decode_SoftmaxScheme : I32EnumAttr<"SoftmaxScheme",
    "how attention splits agree on the softmax maximum",
    [Decode_SoftmaxOnline, Decode_SoftmaxUnifiedMax]> {
  let cppNamespace = "::fdc::decode";
  let genSpecializedAttr = 0;
}

def Decode_SoftmaxAttr : AttrDef<Decode_Dialect, "Softmax"> {
  let mnemonic = "softmax";
  let summary = "softmax scheme of decode.attention";
  let description = [{
    `#decode.softmax<online>`: the synchronized scheme. Every KV split keeps a
    running maximum and rescales its partial sums; the final reduction
    rescales the splits to the global maximum.

    `#decode.softmax<unified_max, phi = P, lo = L, hi = H>`: FlashDecoding++'s
    asynchronized scheme. Every split computes sum(exp(x - P) * v) and
    sum(exp(x - P)) with the one shared `phi`, so splits never rescale each
    other and the final reduction only adds and divides. If any score `x`
    has `x - phi` outside [`lo`, `hi`] the row is flagged and recomputed with
    the online scheme, so the result is always right; `phi` is chosen per
    model from observed score statistics. `hi` must keep exp() finite in f32
    (hi <= 88).
  }];
  let parameters = (ins
    EnumParameter<Decode_SoftmaxScheme>:$scheme,
    OptionalParameter<"::mlir::FloatAttr">:$phi,
    OptionalParameter<"::mlir::FloatAttr">:$lo,
    OptionalParameter<"::mlir::FloatAttr">:$hi);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

#endif // FDC_DIALECT_DECODE_IR_DECODEATTRS_TD
