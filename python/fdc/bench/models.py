"""The benchmark models: small decode.model programs built around the op
being measured, written as decode IR text and compiled with ``fdc compile``
like any model.

Every model reads its operand rows with an embedding (the suite skips that
kernel and fills its output with random data instead) and ends in a small
``head`` projection to f32 logits and an argmax, so that one full step is a
numerics check of the measured kernel against a float64 reference.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Rows of the embedding tables that feed the measured op, and of the head.
TABLE_ROWS = 256
HEAD_ROWS = 128

# Llama-2-7B and Llama-3-8B projection shapes [N, K] (issue 5).
LINEAR_SHAPES = {
    "llama2-7b qkv": (12288, 4096),
    "llama2-7b o": (4096, 4096),
    "llama2-7b ffn1": (11008, 4096),
    "llama2-7b ffn2": (4096, 11008),
    "llama3-8b gate_up": (28672, 4096),
    "llama3-8b down": (4096, 14336),
}

# Unstructured-sparse weights [N, K] (issue 13): OPT-66B's (hidden 9216,
# FFN 36864) and Llama-2-7B's MLP. fp16 Tiled-CSL with the default tile.
SPARSE_SHAPES = {
    "opt-66b fc1": (36864, 9216),
    "opt-66b fc2": (9216, 36864),
    "opt-66b attn": (9216, 9216),
    "llama2-7b gate/up": (11008, 4096),
    "llama2-7b down": (4096, 11008),
}
SPARSE_TILE = (128, 64)

# (query heads, kv heads): MHA, GQA, and the INT4 seed's 8/1.
ATTENTION_HEADS = ((32, 32), (32, 8), (8, 1))
HEAD_DIM = 128

# FlashDecoding++'s unified max for scores of unit scale: phi = 0 and a
# window [phi + lo, phi + hi] that no score of the benchmark's random data
# leaves (the suite reports the share of rows that do: the fallback rate).
UNIFIED_PHI, UNIFIED_LO, UNIFIED_HI = 0.0, -60.0, 60.0
UNIFIED = (f"#decode.softmax<unified_max, phi = {UNIFIED_PHI}, "
           f"lo = {UNIFIED_LO}, hi = {UNIFIED_HI}>")
SOFTMAX = {"online": "#decode.softmax<online>", "unified_max": UNIFIED}

_SIGNATURE = (
    "%tokens: tensor<?xi32>, %positions: tensor<?xi32>, %slots: tensor<?xi32>, "
    "%temperature: tensor<?xf32>, %top_k: tensor<?xi32>, %top_p: tensor<?xf32>, "
    "%uniform: tensor<?xf32>, %cache: {cache}")


@dataclass(frozen=True)
class BenchModel:
    """One benchmark model: its library name and IR."""
    name: str
    ir: str


def _model(name: str, weights: list[tuple[str, str]], cache: str,
           body: list[str]) -> str:
    decls = "\n".join(f'  decode.weight @"{w}" : {t}' for w, t in weights)
    logits = f"tensor<?x{HEAD_ROWS}xf32>"
    lines = [
        f"decode.model @{name} attributes "
        f"{{config = {{vocab_size = {HEAD_ROWS} : i64}}}} {{",
        decls,
        f"  func.func @step({_SIGNATURE.format(cache=cache)}) -> "
        f"({logits}, tensor<?xi32>, {cache}) {{",
        *("    " + line for line in body),
        f"    %next = decode.argmax %logits : {logits} -> tensor<?xi32>",
        f"    return %logits, %next, %cache : {logits}, tensor<?xi32>, {cache}",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def _head(x: str, width: int, dtype: str) -> list[str]:
    head = f"tensor<{HEAD_ROWS}x{width}x{dtype}>"
    return [
        f'%head = decode.weight_ref @"head" : {head}',
        f"%logits = decode.linear {x}, %head : tensor<?x{width}x{dtype}>, "
        f"{head} -> tensor<?x{HEAD_ROWS}xf32>",
    ]


def linear_name(n: int, k: int, dtype: str = "bf16") -> str:
    return f"linear_{n}x{k}_{dtype}"


def linear_model(n: int, k: int, dtype: str = "bf16") -> BenchModel:
    """y[M, N] = x[M, K] · w[N, K]ᵀ, the measured kernel (x from `table`)."""
    table, w = (f"tensor<{TABLE_ROWS}x{k}x{dtype}>", f"tensor<{n}x{k}x{dtype}>")
    cache = f"!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, {dtype}>"
    body = [
        f'%table = decode.weight_ref @"table" : {table}',
        f"%x = decode.embedding %table[%tokens] : {table}, tensor<?xi32> -> "
        f"tensor<?x{k}x{dtype}>",
        f'%w = decode.weight_ref @"w" : {w}',
        f"%y = decode.linear %x, %w : tensor<?x{k}x{dtype}>, {w} -> "
        f"tensor<?x{n}x{dtype}>",
        *_head("%y", n, dtype),
    ]
    name = linear_name(n, k, dtype)
    return BenchModel(name, _model(name, [("table", table), ("w", w),
                                          ("head", f"tensor<{HEAD_ROWS}x{n}x{dtype}>")],
                                   cache, body))


def step_floor_bytes(weights_read: int, embed_bytes: int, cfg: dict,
                     batch: int, context: int) -> int:
    """What one decode step of a Llama with HF config `cfg` must read at
    least, at `batch` sequences of `context` positions: the weight bytes it
    reads (`weights_read`) but the embedding table's (`embed_bytes`: a step
    reads `batch` rows of it, counted as such), and the bf16 KV cache of
    every layer."""
    kv_bytes = (batch * context * cfg["num_hidden_layers"] * 2 *
                cfg["num_key_value_heads"] * cfg["head_dim"] * 2)
    return (weights_read - embed_bytes + batch * cfg["hidden_size"] * 2 +
            kv_bytes)


def attention_name(hq: int, hkv: int, softmax: str, kv: str = "bf16") -> str:
    return f"attention_{hq}x{hkv}_{kv}_{softmax}"


def attention_model(hq: int, hkv: int, softmax: str, kv: str = "bf16",
                    head_dim: int = HEAD_DIM, int4_groups: int = 4) -> BenchModel:
    """attention(q, cache) for one layer; q from `table`, bf16 activations.
    ``kv`` is "bf16" or "int4" (the cache's element type)."""
    width = hq * head_dim
    table = f"tensor<{TABLE_ROWS}x{width}xbf16>"
    element = "bf16" if kv == "bf16" else f"!decode.int4<groups = {int4_groups}>"
    cache = (f"!decode.kv_cache<layers = 1, kv_heads = {hkv}, "
             f"head_dim = {head_dim}, {element}>")
    heads = f"tensor<?x{hq}x{head_dim}xbf16>"
    scale = 1.0 / math.sqrt(head_dim)
    body = [
        "%c0 = arith.constant 0 : index",
        "%m = tensor.dim %tokens, %c0 : tensor<?xi32>",
        f'%table = decode.weight_ref @"table" : {table}',
        f"%q = decode.embedding %table[%tokens] : {table}, tensor<?xi32> -> "
        f"tensor<?x{width}xbf16>",
        f"%qh = tensor.expand_shape %q [[0], [1, 2]] output_shape "
        f"[%m, {hq}, {head_dim}] : tensor<?x{width}xbf16> into {heads}",
        f"%a = decode.attention %qh, %cache[%slots, %positions] "
        f"{{layer = 0 : i64, scale = {scale!r} : f32, "
        f"softmax = {SOFTMAX[softmax]}}} : {heads}, {cache} -> {heads}",
        f"%af = tensor.collapse_shape %a [[0], [1, 2]] : {heads} into "
        f"tensor<?x{width}xbf16>",
        *_head("%af", width, "bf16"),
    ]
    name = attention_name(hq, hkv, softmax, kv)
    return BenchModel(name, _model(name, [("table", table),
                                          ("head", f"tensor<{HEAD_ROWS}x{width}xbf16>")],
                                   cache, body))


def sparse_name(n: int, k: int, dtype: str = "f16") -> str:
    return f"sparse_{n}x{k}_{dtype}"


def sparse_model(n: int, k: int, dtype: str = "f16", tile=SPARSE_TILE,
                 kernel: str = "") -> BenchModel:
    """y[M, N] = x[M, K] · w[N, K]ᵀ with w a !decode.tiled_csl (the measured
    decode.sparse_linear; x from `table`). One library serves every
    sparsity: the type fixes only the shape and tile, and the arena reserves
    a dense matrix's words. ``kernel``: a #decode.kernel pinned, or ""."""
    table = f"tensor<{TABLE_ROWS}x{k}x{dtype}>"
    w = f"!decode.tiled_csl<{n}x{k}x{dtype}, tile = {tile[0]}x{tile[1]}>"
    cache = f"!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, {dtype}>"
    attr = f" {{decode.kernel = {kernel}}}" if kernel else ""
    body = [
        f'%table = decode.weight_ref @"table" : {table}',
        f"%x = decode.embedding %table[%tokens] : {table}, tensor<?xi32> -> "
        f"tensor<?x{k}x{dtype}>",
        f'%w = decode.weight_ref @"w" : {w}',
        f"%y = decode.sparse_linear %x, %w{attr} : tensor<?x{k}x{dtype}>, {w} "
        f"-> tensor<?x{n}x{dtype}>",
        *_head("%y", n, dtype),
    ]
    name = sparse_name(n, k, dtype)
    return BenchModel(name, _model(name, [("table", table), ("w", w),
                                          ("head", f"tensor<{HEAD_ROWS}x{n}x{dtype}>")],
                                   cache, body))


def sparse_op_kernels(launched: list[str]) -> set[str]:
    """The sparse_linear's kernels among those a sparse model's step
    launched: after the embedding and before the head, a dense decode.linear
    whose kernels are linear_<i> (then linear_epilogue_<j>). A split-K
    kernel's reduction (linear_epilogue) counts with the sparse op."""
    head = next((i for i, k in enumerate(launched)
                 if re.fullmatch(r"linear_\d+", k)), len(launched))
    kernels = {k for k in launched[:head] if not k.startswith("embedding_")}
    if not kernels:
        raise ValueError(f"no sparse_linear kernel among {launched}")
    return kernels


def linear_op_kernels(launched: list[str]) -> set[str]:
    """The measured decode.linear's kernels among those a linear benchmark
    model's step launched: its linear_<i> (the first after the embedding)
    and, for a split-K kernel, the linear_epilogue_<j> that adds its partial
    sums, up to the head's linear_<i>. The head's kernels must be others
    (the timed launches pick kernels by name)."""
    ops = [i for i, k in enumerate(launched) if re.fullmatch(r"linear_\d+", k)]
    if len(ops) < 2:
        raise ValueError(f"no measured linear and head among {launched}")
    kernels = set(launched[ops[0]:ops[1]])
    shared = kernels & set(launched[ops[1]:])
    if shared:
        raise ValueError(f"the measured linear and the head share kernels "
                         f"{sorted(shared)}: they cannot be timed apart")
    return kernels


def sparse_models() -> list[BenchModel]:
    """The sparse family's libraries, one per shape (fp16)."""
    return [sparse_model(n, k) for n, k in dict.fromkeys(SPARSE_SHAPES.values())]


def all_models() -> list[BenchModel]:
    """Every benchmark model the suite uses (the whole-step model, the GPU
    test's 7B-wide Llama, comes from its checkpoint through the frontend)."""
    models = [linear_model(n, k) for n, k in LINEAR_SHAPES.values()]
    for hq, hkv in ATTENTION_HEADS:
        for softmax in SOFTMAX:
            models.append(attention_model(hq, hkv, softmax))
    for softmax in SOFTMAX:
        models.append(attention_model(8, 1, softmax, kv="int4"))
    return models
