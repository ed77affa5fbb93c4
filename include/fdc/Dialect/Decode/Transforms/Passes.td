//===- Passes.td - decode-level transforms -----------------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_TRANSFORMS_PASSES_TD
#define FDC_DIALECT_DECODE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecodeAssignWeightLayout : Pass<"decode-assign-weight-layout",
                                    "fdc::decode::ModelOp"> {
  let summary = "Place every weight in the model library's weight arena";
  let description = [{
    Sets `offset` on every `decode.weight`: weights are laid out in
    declaration order, each at a multiple of `alignment` bytes. The model
    library's manifest and the generated step read the same offsets.
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "Byte alignment of each weight in the arena">,
  ];
}

#endif // FDC_DIALECT_DECODE_TRANSFORMS_PASSES_TD
