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

def DecodeShardTensorParallel : Pass<"decode-shard-tensor-parallel",
                                     "fdc::decode::ModelOp"> {
  let summary = "Make the model one rank of a Megatron-style tensor-parallel "
                "group";
  let description = [{
    Rewrites the model into the step every rank of a group of `ranks` runs
    on its own slices (`tensor_parallel = ranks` on the model):

    - column-parallel linears (their replicated input times the rank's rows
      of the weight): those whose result is split into heads (Q, K, V) and
      SiLU-gate-up linears (gate and up split alike); rope, the KV cache
      (`kv_heads / ranks`) and attention then run on the rank's heads;
    - row-parallel linears (a split input times the rank's columns of the
      weight, o_proj and down_proj): the linear computes the rank's partial
      sum, rank 0's with the residual in its epilogue (`residual_rank = 0`),
      and `decode.all_reduce sum` adds the ranks' partials, so the residual
      is added once and needs no kernel after the reduction;
    - the LM head is split over the vocabulary, and `decode.all_gather`
      assembles the logits before sampling, so every rank samples the same
      ids;
    - the embedding and the norms are replicated (a lookup reads one row per
      sequence: splitting it would cost an all-reduce and save no reads).

    Each sharded `decode.weight` gets its rank's type and a
    `#decode.shard` saying how the ranks split its sources; a weight that
    is also used whole (the embedding of a tied LM head) is declared again
    for the shard. It refuses, naming the op and the value, what it cannot
    split: heads, KV heads, features or vocabulary not divisible by
    `ranks`, INT4 or Tiled-CSL weights, biases on split linears, and a model
    already sharded. It runs before `decode-assign-weight-layout`.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"1",
           "Ranks of the tensor-parallel group (1 leaves the model as it is)">,
  ];
}

#endif // FDC_DIALECT_DECODE_TRANSFORMS_PASSES_TD
