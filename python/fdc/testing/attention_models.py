"""Models around one decode.attention each, for the GPU test of the
attention kernels (test/gpu): MHA, GQA 4 and 8, MQA and a group of 16, head
dims 64 and 128, bf16, f16, f32 and INT4 caches, each softmax scheme and a unified max
whose window every score leaves (so that every row takes the recompute
fallback), with the default kernel and kernels pinned by hand. Each model
embeds token rows of `table` (one row per vocabulary entry) as the query, runs the attention, and an
identity `head` linear makes the attention's output the logits.

    python -m fdc.testing.attention_models OUT_DIR   # writes OUT_DIR/<name>.mlir

`reference` computes the attention in float64 from the query and the cache
(an INT4 cache dequantised by `int4_rows_to_float`).
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path


SOFTMAX = {
    "online": "#decode.softmax<online>",
    "unified": "#decode.softmax<unified_max, phi = 0.0, lo = -60.0, hi = 60.0>",
    # Scores of the test's data leave [-0.01, 0.01]: every row is flagged.
    "fallback": "#decode.softmax<unified_max, phi = 0.0, lo = -0.01, hi = 0.01>",
}


@dataclass(frozen=True)
class AttentionVariant:
    name: str
    hq: int
    hkv: int
    head_dim: int
    dtype: str  # the query's and the output's (and the cache's): f32, bf16, f16
    softmax: str  # a key of SOFTMAX
    kernel: str = ""  # a #decode.kernel pinned, or ""
    # The kernels it must run, comma-separated, each a family's name
    # (gqa_attention_partial) or a kernel's (gqa_attention_cluster_1):
    # gqa_attention_partial on a bf16 cache unless pinned, else
    # attention_partial.
    expect: str = "gqa_attention_partial"
    splits: int = 0  # the op's splits (0: chosen by the kernel)
    # Largest relative error of a sequence's output against float64 (both
    # rounded to the output type).
    tolerance: float = 5e-3
    # (batch, max context) cases; each sequence gets its own length.
    cases: tuple[tuple[int, int], ...] = ((1, 1), (3, 100), (37, 1000),
                                          (256, 200), (2, 32768))
    # "int4": a !decode.int4 cache of `int4_groups` groups, else dtype's.
    cache: str = ""
    int4_groups: int = 4
    # The table (the query) is scaled by this and the op's scale divided by
    # it: scores as with 1, queries beyond f16's range with 2^15.
    query_scale: float = 1.0

    @property
    def cache_element(self) -> str:
        if self.cache == "int4":
            return f"!decode.int4<groups = {self.int4_groups}>"
        return self.dtype

    @property
    def scale(self) -> float:
        return 1.0 / (math.sqrt(self.head_dim) * self.query_scale)

    @property
    def width(self) -> int:
        return self.hq * self.head_dim

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"table": (self.width, self.width),
                "head": (self.width, self.width)}


def _kernel(family: str, config: str) -> str:
    return f'#decode.kernel<"{family}", {{{config}}}>'


# gqa_attention with the softmax in registers: the heads as A rows (the
# scores' accumulators P's A operand), or as B columns (every lane's
# score accumulators, the weights through shared memory).
REGISTERS_HEADS_AS_A = _kernel("gqa_attention",
                               "heads_as_b = 0, register_softmax = 1")
REGISTERS_HEADS_AS_B = _kernel("gqa_attention",
                               "heads_as_b = 1, register_softmax = 1")
# The forced fallback's cases (see attention-gqa8-fallback-bf16).
FALLBACK_CASES = ((1, 1), (5, 300), (2, 2000), (150, 300))
# gqa_attention with up to 8 splits added in a cluster (pinned; the
# default is 2), and its kernels of clusters of 8, 4 and 2 blocks (sm_90:
# built in that order).
CLUSTERS_OF_8 = _kernel("gqa_attention", "cluster_splits = 8")
CLUSTERS = ("gqa_attention_cluster_0,gqa_attention_cluster_1,"
            "gqa_attention_cluster_2")


VARIANTS = [
    # Defaults: gqa_attention on bf16 caches (MHA too; on sm_90 the rows
    # through two shared-memory stages, swizzled), split_kv_attention on
    # f32.
    AttentionVariant("attention-gqa8-online-bf16", 32, 4, 128, "bf16", "online"),
    AttentionVariant("attention-gqa8-unified-bf16", 32, 4, 128, "bf16",
                     "unified"),
    # The fallback on several splits (attention_reduce recomputes) and on
    # one (B = 150: 300 blocks fill the waves; gqa_attention_single_split
    # recomputes).
    AttentionVariant("attention-gqa8-fallback-bf16", 16, 2, 128, "bf16",
                     "fallback", cases=FALLBACK_CASES),
    # A bf16 cache's rows through three shared-memory stages, and loaded a
    # step ahead in registers (the default before 2026-12-07; AMD's), both
    # pinned.
    AttentionVariant("attention-pinned-staged-gqa8-bf16", 32, 4, 128, "bf16",
                     "online", _kernel("gqa_attention",
                                       "prefetch = 0, stages = 3")),
    AttentionVariant("attention-pinned-registers-gqa8-bf16", 32, 4, 128,
                     "bf16", "online",
                     _kernel("gqa_attention", "prefetch = 1, stages = 0")),
    # The stages read by each lane's own 16-byte runs instead of ldmatrix
    # (the default on sm_90 before 2026-12-08; targets without fragment
    # loads), pinned.
    AttentionVariant("attention-pinned-runs-gqa8-bf16", 32, 4, 128, "bf16",
                     "unified", _kernel("gqa_attention", "fragment_loads = 0")),
    AttentionVariant("attention-gqa4-online-bf16-d64", 16, 4, 64, "bf16",
                     "online"),
    AttentionVariant("attention-gqa8-online-f16", 32, 4, 128, "f16", "online"),
    AttentionVariant("attention-mqa-online-bf16", 8, 1, 128, "bf16", "online",
                     cases=((1, 5000), (19, 700))),
    AttentionVariant("attention-mqa-unified-bf16", 8, 1, 128, "bf16", "unified"),
    AttentionVariant("attention-mha-online-bf16", 8, 8, 128, "bf16", "online"),
    # INT4 caches: gqa_attention on f16 MMAs, keys and values dequantised in
    # registers, with a bf16 or f16 query (a group of 8, MQA, MHA; head_dim
    # 64 with groups of 16 dims, 2 groups of 64 whose runs are only 8-byte
    # aligned); the heads as A rows pinned where they would be B columns;
    # an f32 query keeps split_kv_attention by default, and pinned, a query
    # beyond f16's range is scaled into it.
    AttentionVariant("attention-mqa-online-int4", 8, 1, 128, "bf16", "online",
                     cache="int4", cases=((1, 1), (3, 8192), (64, 300),
                                          (2, 32768))),
    AttentionVariant("attention-gqa4-online-int4-d64", 16, 4, 64, "bf16",
                     "online", cache="int4"),
    # INT4 caches under unified max: f16 MMAs for the scores and bf16 for
    # P V, by default on sm_90 with the softmax in every lane and the rows
    # through two shared-memory stages (MQA; head_dim 64, rows of 48 bytes;
    # an f16 query; the forced fallback, recomputed from the INT4 rows);
    # pinned, the loads a step ahead in registers instead. The values (and
    # so the weights) are rounded to bf16: worst 8.0e-3 on the H100
    # (2026-12-06); the bound is 2e-2.
    AttentionVariant("attention-mqa-unified-int4", 8, 1, 128, "bf16",
                     "unified", cache="int4", tolerance=2e-2,
                     cases=((1, 1), (3, 8192), (64, 300), (2, 32768),
                            (256, 200))),
    AttentionVariant("attention-gqa4-unified-int4-d64", 16, 4, 64, "bf16",
                     "unified", cache="int4", tolerance=2e-2),
    AttentionVariant("attention-gqa8-unified-int4-f16", 32, 4, 128, "f16",
                     "unified", cache="int4", tolerance=2e-2),
    AttentionVariant("attention-mqa-fallback-int4", 8, 1, 128, "bf16",
                     "fallback", cache="int4", tolerance=2e-2,
                     cases=FALLBACK_CASES),
    AttentionVariant("attention-pinned-unified-int4-prefetch", 8, 1, 128,
                     "bf16", "unified",
                     _kernel("gqa_attention", "stages = 0, prefetch = 1, "
                                              "register_softmax = 0"),
                     cache="int4", tolerance=2e-2,
                     cases=((1, 1), (3, 1000), (37, 300))),
    AttentionVariant("attention-gqa8-online-int4-f16", 32, 4, 128, "f16",
                     "online", cache="int4"),
    AttentionVariant("attention-mha-online-int4-g2", 8, 8, 128, "bf16",
                     "online", cache="int4", int4_groups=2,
                     cases=((1, 1), (3, 100), (37, 1000))),
    AttentionVariant("attention-gqa4-online-int4-f32", 16, 4, 128, "f32",
                     "online", cache="int4", expect="attention_partial",
                     tolerance=1e-4, cases=((1, 1), (3, 100), (37, 1000))),
    AttentionVariant("attention-pinned-int4-heads-as-a-shared", 8, 1, 128,
                     "bf16", "online",
                     _kernel("gqa_attention",
                             "heads_as_b = 0, register_softmax = 0"),
                     cache="int4", cases=((1, 1), (3, 1000), (37, 300))),
    AttentionVariant("attention-pinned-int4-registers", 8, 1, 128, "bf16",
                     "online", REGISTERS_HEADS_AS_A,
                     cache="int4", cases=((1, 1), (3, 1000), (37, 300))),
    AttentionVariant("attention-pinned-gqa-int4-f32-huge", 16, 4, 128, "f32",
                     "online", _kernel("gqa_attention", ""), cache="int4",
                     query_scale=2.0 ** 15,
                     cases=((1, 1), (3, 100), (37, 1000))),
    # An f32 cache (no MMA): split_kv_attention.
    AttentionVariant("attention-gqa4-online-f32", 16, 4, 128, "f32", "online",
                     expect="attention_partial", tolerance=1e-4),
    # Pinned: gqa_attention with 2 subgroups and 3 splits fixed by the op, a
    # group of 16 with P rounded to the cache's type, 8 subgroups and at
    # most 4 splits, and the per-query-head kernel on MHA and GQA.
    AttentionVariant("attention-pinned-gqa-splits-bf16", 4, 2, 128, "bf16",
                     "online", _kernel("gqa_attention", "subgroups = 2"),
                     splits=3),
    AttentionVariant("attention-pinned-splitkv-mha-bf16", 8, 8, 128, "bf16",
                     "online", _kernel("split_kv_attention", ""),
                     expect="attention_partial"),
    AttentionVariant("attention-pinned-gqa16-unified-bf16", 16, 1, 128, "bf16",
                     "unified",
                     _kernel("gqa_attention", "subgroups = 8, f32_operands = 0, "
                                              "max_splits = 4"),
                     tolerance=1e-2),  # P rounded to bf16
    AttentionVariant("attention-pinned-splitkv-gqa-bf16", 16, 4, 64, "bf16",
                     "unified", _kernel("split_kv_attention", ""),
                     expect="attention_partial"),
    # The softmax in registers (the heads as A rows, the scores'
    # accumulators P's A operand) on bf16 caches: online, unified max with
    # its fallback, MHA, and P rounded to bf16.
    AttentionVariant("attention-pinned-registers-gqa8-online-bf16", 32, 4, 128,
                     "bf16", "online", REGISTERS_HEADS_AS_A),
    AttentionVariant("attention-pinned-registers-fallback-bf16", 16, 2, 128,
                     "bf16", "fallback", REGISTERS_HEADS_AS_A,
                     cases=FALLBACK_CASES),
    AttentionVariant("attention-pinned-registers-mha-unified-bf16", 8, 8, 64,
                     "bf16", "unified",
                     _kernel("gqa_attention",
                             "heads_as_b = 0, register_softmax = 1, "
                             "f32_operands = 0"),
                     tolerance=1e-2),  # P rounded to bf16
    # The softmax in every lane with the heads as B columns (each lane's
    # score accumulators, the lanes of a head agreeing on its max, the
    # weights through shared memory to P's slots): INT4 (MQA, and a group
    # of 8 with an f16 query), bf16 GQA online, unified max with its
    # fallback, and MHA.
    AttentionVariant("attention-pinned-lanes-mqa-int4", 8, 1, 128, "bf16",
                     "online", REGISTERS_HEADS_AS_B,
                     cache="int4", cases=((1, 1), (3, 8192), (64, 300),
                                          (2, 32768))),
    AttentionVariant("attention-pinned-lanes-gqa8-int4-f16", 32, 4, 128, "f16",
                     "online", REGISTERS_HEADS_AS_B, cache="int4"),
    AttentionVariant("attention-pinned-lanes-gqa8-online-bf16", 32, 4, 128,
                     "bf16", "online", REGISTERS_HEADS_AS_B),
    AttentionVariant("attention-pinned-lanes-gqa8-unified-bf16", 32, 4, 128,
                     "bf16", "unified", REGISTERS_HEADS_AS_B),
    AttentionVariant("attention-pinned-lanes-fallback-bf16", 16, 2, 128,
                     "bf16", "fallback", REGISTERS_HEADS_AS_B,
                     cases=FALLBACK_CASES),
    AttentionVariant("attention-pinned-lanes-mha-online-bf16", 8, 8, 128,
                     "bf16", "online", REGISTERS_HEADS_AS_B),
    # Splits added in a cluster on sm_90: by default two (MQA, B = 128, S =
    # 1024; beside 4 splits through attention_reduce and one); pinned to
    # at most 8 (rounded down to a power of two), batches whose blocks
    # leave two waves for 8, 4 and 2 splits (the H100's 132 units), beside
    # more splits (attention_reduce) and one; online, unified max and its
    # forced fallback, MHA, head_dim 64, INT4 caches, and 4 splits fixed
    # by the op. Sequences of 1, 16 and 17 positions leave most splits
    # empty.
    AttentionVariant("attention-clusters-default-mqa-unified-bf16", 8, 1, 128,
                     "bf16", "unified",
                     expect="gqa_attention_cluster,gqa_attention_partial,"
                            "attention_reduce,gqa_attention_single_split",
                     cases=((128, 1024), (64, 1000), (256, 100))),
    AttentionVariant("attention-clusters-gqa8-online-bf16", 32, 4, 128,
                     "bf16", "online", CLUSTERS_OF_8,
                     expect=CLUSTERS + ",attention_reduce",
                     cases=((8, 2000), (16, 1000), (24, 700), (5, 3000),
                            (1, 1))),
    AttentionVariant("attention-clusters-gqa8-unified-bf16", 32, 4, 128,
                     "bf16", "unified", CLUSTERS_OF_8,
                     expect=CLUSTERS + ",attention_reduce",
                     cases=((8, 2000), (16, 1000), (24, 700), (5, 3000),
                            (1, 1))),
    AttentionVariant("attention-clusters-fallback-bf16", 16, 2, 128, "bf16",
                     "fallback", CLUSTERS_OF_8, expect=CLUSTERS,
                     cases=((16, 1000), (32, 1000), (64, 600), (1, 1))),
    AttentionVariant("attention-clusters-mha-unified-bf16", 8, 8, 128, "bf16",
                     "unified", CLUSTERS_OF_8, expect=CLUSTERS,
                     cases=((4, 1500), (8, 1000), (16, 700), (1, 1))),
    AttentionVariant("attention-clusters-gqa4-online-bf16-d64", 16, 4, 64,
                     "bf16", "online", CLUSTERS_OF_8, expect=CLUSTERS,
                     cases=((8, 2000), (16, 1000), (24, 700))),
    AttentionVariant("attention-clusters-mqa-online-int4", 8, 1, 128, "bf16",
                     "online", CLUSTERS_OF_8, cache="int4", expect=CLUSTERS,
                     cases=((32, 3000), (64, 2000), (128, 500))),
    AttentionVariant("attention-clusters-mqa-unified-int4", 8, 1, 128, "bf16",
                     "unified", CLUSTERS_OF_8, cache="int4", tolerance=2e-2,
                     expect=CLUSTERS,
                     cases=((32, 3000), (64, 2000), (40, 128))),
    AttentionVariant("attention-pinned-clusters-splits-bf16", 4, 2, 128,
                     "bf16", "unified",
                     _kernel("gqa_attention", "cluster_splits = 4"),
                     splits=4, expect="gqa_attention_cluster"),
]


def model_ir(v: AttentionVariant) -> str:
    t = v.dtype
    width = v.width
    table = f"tensor<{width}x{width}x{t}>"
    head = f"tensor<{width}x{width}x{t}>"
    heads = f"tensor<?x{v.hq}x{v.head_dim}x{t}>"
    cache = (f"!decode.kv_cache<layers = 1, kv_heads = {v.hkv}, "
             f"head_dim = {v.head_dim}, {v.cache_element}>")
    logits = f"tensor<?x{width}xf32>"
    kernel = f", decode.kernel = {v.kernel}" if v.kernel else ""
    kernel += f", splits = {v.splits} : i64" if v.splits else ""
    scale = v.scale
    lines = [
        f"decode.model @{v.name.replace('-', '_')} attributes "
        f"{{config = {{vocab_size = {width} : i64}}}} {{",
        f'  decode.weight @"table" : {table}',
        f'  decode.weight @"head" : {head}',
        "  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, "
        "%slots: tensor<?xi32>, %temperature: tensor<?xf32>, "
        "%top_k: tensor<?xi32>, %top_p: tensor<?xf32>, %uniform: tensor<?xf32>, "
        f"%cache: {cache}) -> ({logits}, tensor<?xi32>, {cache}) {{",
        "    %c0 = arith.constant 0 : index",
        "    %m = tensor.dim %tokens, %c0 : tensor<?xi32>",
        f'    %table = decode.weight_ref @"table" : {table}',
        f"    %q = decode.embedding %table[%tokens] : {table}, tensor<?xi32> -> "
        f"tensor<?x{width}x{t}>",
        f"    %qh = tensor.expand_shape %q [[0], [1, 2]] output_shape "
        f"[%m, {v.hq}, {v.head_dim}] : tensor<?x{width}x{t}> into {heads}",
        f"    %a = decode.attention %qh, %cache[%slots, %positions] "
        f"{{layer = 0 : i64, scale = {scale!r} : f32, "
        f"softmax = {SOFTMAX[v.softmax]}{kernel}}} : {heads}, {cache} -> {heads}",
        f"    %af = tensor.collapse_shape %a [[0], [1, 2]] : {heads} into "
        f"tensor<?x{width}x{t}>",
        f'    %head = decode.weight_ref @"head" : {head}',
        f"    %logits = decode.linear %af, %head : tensor<?x{width}x{t}>, "
        f"{head} -> {logits}",
        f"    %next = decode.argmax %logits : {logits} -> tensor<?xi32>",
        f"    return %logits, %next, %cache : {logits}, tensor<?xi32>, {cache}",
        "  }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def reference(v: AttentionVariant, query, keys, values):
    """query [Hq, D], keys / values [Hkv, S, D] (float64) -> [Hq * D], the
    output rounded to the model's type as the kernel stores it."""
    import torch

    group = v.hq // v.hkv
    keys = keys.repeat_interleave(group, 0)
    values = values.repeat_interleave(group, 0)
    scores = torch.einsum("hd,hsd->hs", query, keys) * v.scale
    out = torch.einsum("hs,hsd->hd", torch.softmax(scores, -1), values)
    storage = {"bf16": torch.bfloat16, "f16": torch.float16}.get(v.dtype)
    if storage is not None:
        out = out.to(storage).double()
    return out.reshape(-1)


def int4_row_bytes(groups: int, head_dim: int) -> int:
    """Bytes of an INT4 cache row: `groups` (scale, min) f16 pairs, then
    head_dim / 2 bytes of nibbles (docs/model-library.md)."""
    return groups * 4 + head_dim // 2


def fill_int4_rows(rows, groups: int, head_dim: int, generator) -> None:
    """Random INT4 rows in `rows` (uint8 [..., row bytes], on the GPU):
    values of about unit scale, every nibble and byte pattern possible."""
    import torch

    flat = rows.view(-1, int4_row_bytes(groups, head_dim))
    count, device = flat.shape[0], flat.device
    scale = torch.rand((count, groups), device=device,
                       generator=generator) * 0.1 + 0.1
    minimum = -7.5 * scale + 0.1 * torch.randn((count, groups), device=device,
                                               generator=generator)
    pairs = torch.stack([scale, minimum], dim=-1).to(torch.float16)
    flat[:, :groups * 4] = pairs.view(count, groups * 2).view(torch.uint8)
    flat[:, groups * 4:] = torch.randint(0, 256, (count, head_dim // 2),
                                         device=device, generator=generator,
                                         dtype=torch.uint8)


def int4_rows_to_float(rows, groups: int, head_dim: int):
    """INT4 cache rows (uint8 [..., row bytes]) dequantised to float64
    [..., head_dim]: min + scale * q per group."""
    import torch

    shape = rows.shape[:-1]
    flat = rows.reshape(-1, rows.shape[-1])
    pairs = flat[:, :groups * 4].contiguous().view(torch.float16).double()
    scale, minimum = pairs[:, 0::2], pairs[:, 1::2]
    nibbles = flat[:, groups * 4:].long()
    q = torch.stack([nibbles & 15, nibbles >> 4], dim=-1).reshape(-1, head_dim)
    group = head_dim // groups
    values = (minimum.repeat_interleave(group, 1)
              + scale.repeat_interleave(group, 1) * q.double())
    return values.view(*shape, head_dim)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for v in VARIANTS:
        (args.out / f"{v.name}.mlir").write_text(model_ir(v))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
