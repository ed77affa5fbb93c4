//===- DecodeOps.td - decode dialect operations ------------*- tablegen -*-===//

#ifndef FDC_DIALECT_DECODE_IR_DECODEOPS_TD
#define FDC_DIALECT_DECODE_IR_DECODEOPS_TD

include "fdc/Dialect/Decode/IR/DecodeAttrs.td"
include "fdc/Dialect/Decode/IR/DecodeBase.td"
include "fdc/Dialect/Decode/IR/DecodeTypes.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// Per-sequence vectors of the step: one element per sequence of the batch.
def Decode_I32Vector : Type<
    CPred<"$_self == ::mlir::RankedTensorType::get("
          "{::mlir::ShapedType::kDynamic}, "
          "::mlir::IntegerType::get($_self.getContext(), 32))">,
    "tensor<?xi32>", "::mlir::RankedTensorType">,
  BuildableType<"::mlir::RankedTensorType::get("
                "{::mlir::ShapedType::kDynamic}, $_builder.getI32Type())">;

def Decode_F32Vector : Type<
    CPred<"$_self == ::mlir::RankedTensorType::get("
          "{::mlir::ShapedType::kDynamic}, "
          "::mlir::Float32Type::get($_self.getContext()))">,
    "tensor<?xf32>", "::mlir::RankedTensorType">,
  BuildableType<"::mlir::RankedTensorType::get("
                "{::mlir::ShapedType::kDynamic}, $_builder.getF32Type())">;

def Decode_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
def Decode_LinearWeight : AnyTypeOf<[Decode_FloatTensor, Decode_QuantTensorType]>;

//===----------------------------------------------------------------------===//
// Model structure
//===----------------------------------------------------------------------===//

def Decode_ModelOp : Decode_Op<"model", [
    IsolatedFromAbove, SymbolTable, Symbol, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "a model: weight declarations and the decode step";
  let description = [{
    Holds the weights of one model (`decode.weight`) and its step function,
    `func.func @step`, which runs one decode iteration for a batch of M
    sequences, M dynamic. The step's signature is fixed:

    ```
    (tokens: tensor<?xi32>, positions: tensor<?xi32>, slots: tensor<?xi32>,
     temperature: tensor<?xf32>, top_k: tensor<?xi32>, top_p: tensor<?xf32>,
     uniform: tensor<?xf32>, cache: !decode.kv_cache<...>)
        -> (logits: tensor<?xVxf32>, next_tokens: tensor<?xi32>,
            cache: !decode.kv_cache<...>)
    ```

    Every sequence is at its own position and owns its own KV-cache slot.
    `config` carries the model hyper-parameters (a Hugging Face config's
    keys); if it holds `vocab_size` the logits' width must equal it. Its
    floats must be finite; `vocab_size` and `max_position_embeddings`, when
    present, must be integers in [1, 2^31 - 1].

    The runtime checks token ids, slots and positions before every step; for
    those checks to bound every access, the index operands in the step must
    be the step's arguments in their role: `decode.embedding`'s tokens are
    `tokens` (#0), `decode.kv_append`'s and `decode.attention`'s slots and
    positions are `slots` (#2) and `positions` (#1), `decode.rope`'s
    positions are `positions` (#1). Every `decode.embedding` table has at
    least as many rows as the vocabulary (`vocab_size`, or the logits width).

    `tensor_parallel = N` (1 to 64, default 1) makes the model one rank of a
    tensor-parallel group of N (`decode-shard-tensor-parallel` writes it):
    every rank runs this step on its own slices of the weights (`shard` on
    `decode.weight`) and KV heads, and its `decode.all_reduce` and
    `decode.all_gather` ops, whose `group_size` must be N, combine the ranks'
    values.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DictionaryAttr:$config,
                       DefaultValuedAttr<I64Attr, "1">:$tensor_parallel);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The step function, or null if there is none.
    ::mlir::func::FuncOp getStepFunction();
  }];
}

def Decode_WeightOp : Decode_Op<"weight", [Symbol, HasParent<"ModelOp">]> {
  let summary = "declares a weight tensor of the model";
  let description = [{
    Declares a weight, named by its symbol. By default its contents are the
    checkpoint tensor of the same name. With `concat [...]` the weight is the
    listed checkpoint tensors stacked along dimension 0 (e.g. gate and up
    projections fused for the `silu_gate_up` epilogue). The type is a static
    tensor of f32 / f16 / bf16, a `!decode.qtensor` or a `!decode.tiled_csl`.

    ```mlir
    decode.weight @"model.norm.weight" : tensor<4096xbf16>
    decode.weight @"w.gate_up" = concat ["w.gate", "w.up"] : tensor<22016x4096xbf16>
    ```

    `offset`, set by `decode-assign-weight-layout`, is the weight's byte
    offset in the model library's weight arena. `shard` (a
    `#decode.shard`) makes the type one rank's slice of the sources, in a
    tensor-parallel model.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$type,
                       OptionalAttr<StrArrayAttr>:$sources,
                       OptionalAttr<Decode_ShardAttr>:$shard,
                       OptionalAttr<I64Attr>:$offset);
  let assemblyFormat = [{
    $sym_name (`=` `concat` $sources^)? (`shard` $shard^)? `:` $type attr-dict
  }];
  let hasVerifier = 1;
}

def Decode_WeightRefOp : Decode_Op<"weight_ref", [
    Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the value of a declared weight";
  let description = [{
    Yields the weight declared by `decode.weight @name`; the result type must
    equal the declared type.
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Compute ops
//===----------------------------------------------------------------------===//

def Decode_EmbeddingOp : Decode_Op<"embedding", [Pure]> {
  let summary = "embedding-table lookup";
  let description = [{
    `result[i, :] = table[tokens[i], :]` for every sequence i. The table is
    [V, H]; the result is [M, H] of the table's element type. Token ids are
    validated by the runtime before the step runs, except the ids a step
    launched ahead reads from the step before it on the device; the
    lowerings clamp every id into [0, V), so none reads outside the table.
    Inside a model, `tokens` must be the step's `tokens` argument and V at
    least the vocabulary size (checked by `decode.model`).
  }];
  let arguments = (ins Decode_FloatTensor:$table, TensorOf<[I32]>:$tokens);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $tokens `]` attr-dict `:` type($table) `,` type($tokens)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_RMSNormOp : Decode_Op<"rms_norm", [Pure]> {
  let summary = "root-mean-square layer normalisation";
  let description = [{
    For every row x of the [M, H] input:
    `result = weight * (x * rsqrt(mean(x^2) + eps))`, accumulated in f32 and
    stored in the input's element type. `weight` is [H].
  }];
  let arguments = (ins Decode_FloatTensor:$input, Decode_FloatTensor:$weight,
                       F32Attr:$eps);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_LinearOp : Decode_Op<"linear", [Pure, AttrSizedOperandSegments]> {
  let summary = "y = x · Wᵀ with fused epilogues (GEMV / flat GEMM)";
  let description = [{
    `input` is [M, K], `weight` is [N, K] (dense, or `!decode.qtensor`).
    Computes `acc = input · weightᵀ` in f32, then in order:
    - `bias` ([N]) is added if present;
    - `activation = silu_gate_up`: the first N/2 columns are the gate g, the
      last N/2 the up projection u, and the result is `silu(g) * u`
      ([M, N/2]); otherwise the result is acc ([M, N]);
    - `residual` (same type as the result) is added if present; with
      `residual_rank = r`, in a tensor-parallel model, only on rank r (the
      other ranks' results are the product alone; such a linear has no
      bias). A row-parallel linear's
      partial product takes the residual that way, so that the
      `decode.all_reduce` sum that follows adds it once and no kernel of its
      own adds it after the reduction.
    The result is stored in its own element type (the input's, or f32 for
    logits). With M = 1 this is a GEMV; with small M a flat GEMM.
  }];
  let arguments = (ins Decode_FloatTensor:$input, Decode_LinearWeight:$weight,
                       Optional<Decode_FloatTensor>:$bias,
                       Optional<Decode_FloatTensor>:$residual,
                       DefaultValuedAttr<Decode_ActivationAttr,
                                         "Activation::none">:$activation,
                       OptionalAttr<I64Attr>:$residual_rank);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`residual` $residual^)? attr-dict
    `:` type($input) `,` custom<WeightAndOptionalTypes>(type($weight),
        ref($bias), ref($residual), type($bias), type($residual))
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_SparseLinearOp : Decode_Op<"sparse_linear", [
    Pure, AttrSizedOperandSegments]> {
  let summary = "y = x · Wᵀ with an unstructured-sparse Tiled-CSL weight";
  let description = [{
    `decode.linear` with a `!decode.tiled_csl` weight [N, K]:
    `acc[i, n] = sum_k input[i, k] * W[n, k]`, accumulated in f32, then the
    same epilogues (bias, `silu_gate_up`, residual) in the same order.
    Generated kernels load the sparse tiles and compute densely (Flash-LLM's
    load-as-sparse, compute-as-dense).
  }];
  let arguments = (ins Decode_FloatTensor:$input, Decode_TiledCSLType:$weight,
                       Optional<Decode_FloatTensor>:$bias,
                       Optional<Decode_FloatTensor>:$residual,
                       DefaultValuedAttr<Decode_ActivationAttr,
                                         "Activation::none">:$activation);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`residual` $residual^)? attr-dict
    `:` type($input) `,` custom<WeightAndOptionalTypes>(type($weight),
        ref($bias), ref($residual), type($bias), type($residual))
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_RopeOp : Decode_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Llama-style rotary position embedding";
  let description = [{
    `input` is [M, heads, D]. For sequence i at position p = positions[i] and
    j < rotary_dim / 2, with `f = theta^(-2j / rotary_dim)` and `a = p * f`:
    ```
    result[.., j]                = x[j] * cos(a) - x[j + rotary_dim/2] * sin(a)
    result[.., j + rotary_dim/2] = x[j + rotary_dim/2] * cos(a) + x[j] * sin(a)
    ```
    (Hugging Face's rotate_half convention); dimensions from `rotary_dim` on
    pass through unchanged. Angles are computed in f32.
  }];
  let arguments = (ins Decode_FloatTensor:$input, Decode_I32Vector:$positions,
                       I64Attr:$rotary_dim, F32Attr:$theta);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_KVAppendOp : Decode_Op<"kv_append", [
    Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "writes this step's keys and values into the cache";
  let description = [{
    For every sequence i, writes `key[i]` and `value[i]` ([kv_heads, D]) to
    layer `layer` of slot `slots[i]` at position `positions[i]`, and returns
    the updated cache. With an INT4 cache each head vector is quantised
    group-wise: per group, `min` and `scale = (max - min) / 15` (fp16) and
    `q = round((x - min) / scale)` clamped to [0, 15].
  }];
  let arguments = (ins Decode_FloatTensor:$key, Decode_FloatTensor:$value,
                       Decode_KVCacheType:$cache, Decode_I32Vector:$slots,
                       Decode_I32Vector:$positions, I64Attr:$layer);
  let results = (outs Decode_KVCacheType:$result);
  let assemblyFormat = [{
    $key `,` $value `into` $cache `[` $slots `,` $positions `]` attr-dict
    `:` type($key) `,` type($value) `into` qualified(type($cache))
  }];
  let hasVerifier = 1;
}

def Decode_AttentionOp : Decode_Op<"attention", [Pure]> {
  let summary = "decode attention over the KV cache (MHA / GQA / MQA)";
  let description = [{
    One query token per sequence. `query` is [M, Hq, D]; the cache has Hkv
    heads with Hq a multiple of Hkv (Hq = Hkv: MHA, Hkv = 1: MQA, else GQA);
    query head h reads kv head `h / (Hq / Hkv)`. Sequence i attends to
    positions `0 .. positions[i]` of layer `layer` in slot `slots[i]`:
    ```
    s_t = scale * <q_h, k_t>,   result_h = sum_t softmax(s)_t * v_t
    ```
    accumulated in f32. `softmax` selects the scheme (see
    `#decode.softmax`); `splits` is the number of KV splits a GPU kernel
    uses (0 = chosen by the compiler). An INT4 cache is dequantised on the
    fly.
  }];
  let arguments = (ins Decode_FloatTensor:$query, Decode_KVCacheType:$cache,
                       Decode_I32Vector:$slots, Decode_I32Vector:$positions,
                       I64Attr:$layer, F32Attr:$scale,
                       Decode_SoftmaxAttr:$softmax,
                       DefaultValuedAttr<I64Attr, "0">:$splits);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $cache `[` $slots `,` $positions `]` attr-dict
    `:` type($query) `,` qualified(type($cache)) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_ArgmaxOp : Decode_Op<"argmax", [Pure]> {
  let summary = "greedy token selection";
  let description = [{
    `result[i]` is the index of the largest of `logits[i, :]`, the first one
    on ties.
  }];
  let arguments = (ins Decode_FloatTensor:$logits);
  let results = (outs Decode_I32Vector:$result);
  let assemblyFormat = "$logits attr-dict `:` type($logits) `->` type($result)";
  let hasVerifier = 1;
}

def Decode_SampleOp : Decode_Op<"sample", [Pure]> {
  let summary = "temperature / top-k / top-p sampling";
  let description = [{
    Per sequence i, with its own parameters: if `temperature[i] <= 0` the
    result is the argmax. Otherwise `z = logits[i] / temperature[i]`; if
    `0 < top_k[i] < V` only tokens with z not below the k-th largest z are
    kept (ties kept); `p = softmax(z)` over the kept tokens; if
    `top_p[i] < 1` only tokens with `p >= t` are kept, t the largest kept
    probability for which the kept mass at or above t is at least top_p.
    With Z the kept mass, the result is the smallest kept index j whose
    cumulative kept mass (in vocabulary order) exceeds `uniform[i] * Z`
    (the last kept index if rounding leaves none). The random draw comes
    from the caller, so a step is deterministic.
  }];
  let arguments = (ins Decode_FloatTensor:$logits, Decode_F32Vector:$uniform,
                       Decode_F32Vector:$temperature, Decode_I32Vector:$top_k,
                       Decode_F32Vector:$top_p);
  let results = (outs Decode_I32Vector:$result);
  let assemblyFormat = [{
    $logits `,` $uniform `,` $temperature `,` $top_k `,` $top_p attr-dict
    `:` type($logits) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Decode_AllReduceOp : Decode_Op<"all_reduce", [
    AllTypesMatch<["input", "result"]>]> {
  let summary = "tensor-parallel all-reduce";
  let description = [{
    Combines `input` element-wise across the `group_size` ranks of the
    tensor-parallel group (NCCL on GPUs) and returns the result on every
    rank, the same bytes on each. With `residual`, the result is that
    combination plus `residual` (a row-parallel linear's residual, added
    once rather than on every rank). With `group_size = 1` it is the
    identity (plus `residual`). The lowerings run `sum` only.
  }];
  let arguments = (ins Decode_ReductionAttr:$reduction,
                       Decode_FloatTensor:$input,
                       Optional<Decode_FloatTensor>:$residual,
                       DefaultValuedAttr<I64Attr, "1">:$group_size);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $reduction $input (`residual` $residual^)? attr-dict `:` type($input)
    (`,` type($residual)^)?
  }];
  let hasVerifier = 1;
}

def Decode_AllGatherOp : Decode_Op<"all_gather", [Pure]> {
  let summary = "tensor-parallel gather of column blocks";
  let description = [{
    `input` is this rank's [M, n] block of an [M, n * group_size] value split
    by columns over the ranks (the vocabulary-parallel LM head's logits);
    the result is the whole value on every rank: result[i][r * n + j] is
    rank r's input[i][j].

    ```mlir
    %logits = decode.all_gather %part {group_size = 2 : i64}
        : tensor<?x16000xf32> -> tensor<?x32000xf32>
    ```
  }];
  let arguments = (ins Decode_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "1">:$group_size);
  let results = (outs Decode_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // FDC_DIALECT_DECODE_IR_DECODEOPS_TD
