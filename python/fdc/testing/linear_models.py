"""Models around one decode.linear each, for the GPU test of the linear
kernels (test/gpu): every epilogue (none, bias, residual, SiLU-gate-up with
bias), f16 and bf16, N and K that are not multiples of any tile (K still a
multiple of the 16-byte vector), and kernels pinned by hand beside the
default dispatch table. Each model embeds token rows of `table`, runs the
linear under test, and a 128-row f32 `head` linear gives the logits.

    python -m fdc.testing.linear_models OUT_DIR   # writes OUT_DIR/<name>.mlir
    python -m fdc.testing.linear_models OUT_DIR --archs   # and prints NAME ARCH

`reference` computes the logits in float64 from the weights, for any batch.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

TABLE_ROWS = 256
HEAD_ROWS = 128


@dataclass(frozen=True)
class LinearVariant:
    name: str
    dtype: str  # "bf16" | "f16"
    n: int
    k: int
    epilogue: str  # "none" | "bias" | "residual" | "silu_gate_up"
    kernel: str = ""  # a #decode.kernel / #decode.dispatch pinned, or ""
    arch: str = "sm_90"  # the cuda arch the GPU test compiles it for

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        rows = 2 * self.n if self.epilogue == "silu_gate_up" else self.n
        shapes = {"table": (TABLE_ROWS, self.k), "w": (rows, self.k),
                  "head": (HEAD_ROWS, self.n)}
        if self.epilogue in ("bias", "silu_gate_up"):
            shapes["b"] = (rows,)
        return shapes


def _flat(config: str) -> str:
    return f'#decode.kernel<"flat_gemm", {{{config}}}>'


VARIANTS = [
    *(LinearVariant(f"linear-{e}-{t}", t, 520 if e == "residual" else 1000,
                    520, e)
      for t in ("bf16", "f16")
      for e in ("none", "bias", "residual", "silu_gate_up")),
    # Pinned: one subgroup per block (each lane stores its accumulators),
    # the largest tiles, and both with the gate-up halves.
    LinearVariant("linear-pinned-lanes-bf16", "bf16", 1000, 520, "none",
                  _flat("subgroups = 1, row_tiles = 1, batch_tiles = 1, "
                        "k_unroll = 1")),
    LinearVariant("linear-pinned-wide-bf16", "bf16", 1000, 520, "none",
                  _flat("subgroups = 2, row_tiles = 4, batch_tiles = 8, "
                        "k_unroll = 3")),
    LinearVariant("linear-pinned-lanes-gateup-f16", "f16", 1000, 520,
                  "silu_gate_up",
                  _flat("subgroups = 1, row_tiles = 2, batch_tiles = 2, "
                        "k_unroll = 2")),
    LinearVariant("linear-pinned-wide-gateup-bf16", "bf16", 1000, 520,
                  "silu_gate_up",
                  _flat("subgroups = 16, row_tiles = 2, batch_tiles = 4, "
                        "k_unroll = 1")),
    # GEMV at every batch (these rows leave the units idle, so the default
    # table runs the flat GEMM from M = 1): the gate and up rows in one
    # loop, and a bias on f16.
    LinearVariant("linear-pinned-gemv-gateup-bf16", "bf16", 1000, 520,
                  "silu_gate_up", '#decode.kernel<"gemv", {}>'),
    LinearVariant("linear-pinned-gemv-bias-f16", "f16", 1000, 520, "bias",
                  '#decode.kernel<"gemv", {rows_per_block = 2}>'),
    # GEMV where K is a whole number of a lane's 16-byte steps (256
    # elements a subgroup), so that the steps are unrolled 4 at a time: 5
    # steps (one unrolled iteration, then one step) with a residual, and 8
    # (two iterations) with the gate-up halves.
    LinearVariant("linear-pinned-gemv-unrolled-residual-bf16", "bf16", 1280,
                  1280, "residual", '#decode.kernel<"gemv", {}>'),
    LinearVariant("linear-pinned-gemv-unrolled-gateup-f16", "f16", 1000,
                  2048, "silu_gate_up", '#decode.kernel<"gemv", {}>'),
]


def _tiled(config: str) -> str:
    return f'#decode.kernel<"tiled_gemm", {{{config}}}>'


VARIANTS += [
    # The shared-memory pipeline: the default tile (k tail of 8 zero-filled),
    # 64-wide k tiles (swizzled rows) over two stages with the gate-up
    # halves, one subgroup column with 96-wide k tiles and a residual, and a bias over
    # 3 stages.
    LinearVariant("linear-tiled-none-bf16", "bf16", 1000, 520, "none",
                  _tiled("warps_n = 2, warps_m = 2, row_tiles = 2, "
                         "batch_tiles = 4, k_tile = 32, stages = 4")),
    LinearVariant("linear-tiled-gateup-bf16", "bf16", 1000, 520,
                  "silu_gate_up",
                  _tiled("warps_n = 2, warps_m = 2, row_tiles = 1, "
                         "batch_tiles = 4, k_tile = 64, stages = 2")),
    LinearVariant("linear-tiled-residual-f16", "f16", 520, 520, "residual",
                  _tiled("warps_n = 1, warps_m = 4, row_tiles = 4, "
                         "batch_tiles = 2, k_tile = 96, stages = 2")),
    LinearVariant("linear-tiled-bias-bf16", "bf16", 1000, 520, "bias",
                  _tiled("warps_n = 4, warps_m = 1, row_tiles = 1, "
                         "batch_tiles = 8, k_tile = 32, stages = 3")),
    # Split-K: the gate-up halves with a bias in dynamic shared memory (160
    # KiB on NVIDIA), 9 k tiles in 2 splits, added in their cluster on
    # sm_90; then partial sums in the workspace and linear_epilogue: a
    # residual with 17 k tiles in 4 splits (the last has 2); 17 k tiles in 5
    # splits, the last with one tile, fewer than the stages in flight.
    LinearVariant("linear-split-gateup-bf16", "bf16", 1000, 520,
                  "silu_gate_up",
                  _tiled("warps_n = 2, warps_m = 2, row_tiles = 4, "
                         "batch_tiles = 4, k_tile = 64, stages = 4, "
                         "split_k = 2")),
    LinearVariant("linear-split-residual-f16", "f16", 520, 520, "residual",
                  _tiled("warps_n = 2, warps_m = 2, row_tiles = 2, "
                         "batch_tiles = 4, k_tile = 32, stages = 4, "
                         "split_k = 4")),
    LinearVariant("linear-split-none-bf16", "bf16", 1000, 520, "none",
                  _tiled("warps_n = 2, warps_m = 2, row_tiles = 1, "
                         "batch_tiles = 2, k_tile = 32, stages = 4, "
                         "split_k = 5")),
]


def _group(config: str) -> str:
    return f'#decode.kernel<"group_gemm", {{{config}}}>'


VARIANTS += [
    # The group MMA (sm_90a's wgmma) on shared-memory tiles: the gate-up
    # halves with a bias and a k tail of 8 zero-filled (K = 520, tiles of 64),
    # a residual in f16 with two row tiles per group on 16 batch columns, the
    # widest accumulators (two row tiles by 128 columns) with a bias over two
    # stages, and split-K: 9 k tiles in 2 splits on 8 columns, added in
    # their cluster; in 5 splits (the last with one tile, fewer than the
    # stages in flight) with the gate-up halves, and 17 k tiles in 9 splits
    # with a bias, both added by linear_epilogue.
    LinearVariant("linear-group-gateup-bf16", "bf16", 1000, 520,
                  "silu_gate_up",
                  _group("groups = 2, row_tiles = 1, batch = 64, stages = 4"),
                  arch="sm_90a"),
    LinearVariant("linear-group-residual-f16", "f16", 520, 520, "residual",
                  _group("groups = 1, row_tiles = 2, batch = 16, stages = 3"),
                  arch="sm_90a"),
    LinearVariant("linear-group-bias-bf16", "bf16", 1000, 520, "bias",
                  _group("groups = 2, row_tiles = 2, batch = 128, stages = 2"),
                  arch="sm_90a"),
    LinearVariant("linear-group-split-none-bf16", "bf16", 1000, 520, "none",
                  _group("groups = 1, row_tiles = 1, batch = 8, stages = 4, "
                         "split_k = 2"),
                  arch="sm_90a"),
    LinearVariant("linear-group-split-gateup-f16", "f16", 1000, 520,
                  "silu_gate_up",
                  _group("groups = 2, row_tiles = 1, batch = 32, stages = 4, "
                         "split_k = 5"),
                  arch="sm_90a"),
    LinearVariant("linear-group-split9-bias-bf16", "bf16", 1000, 1048, "bias",
                  _group("groups = 1, row_tiles = 1, batch = 16, stages = 3, "
                         "split_k = 9"),
                  arch="sm_90a"),
    # The deepest pipelines: 16 stages over 17 k tiles (a k tail of 24)
    # with a residual, and 10 stages for 2 splits of 9 and 8 tiles (more
    # stages than a split's tiles) with the gate-up halves, added in their
    # cluster.
    LinearVariant("linear-group-deep-residual-bf16", "bf16", 1048, 1048,
                  "residual",
                  _group("groups = 1, row_tiles = 1, batch = 16, stages = 16"),
                  arch="sm_90a"),
    LinearVariant("linear-group-deep-split-gateup-f16", "f16", 1000, 1048,
                  "silu_gate_up",
                  _group("groups = 1, row_tiles = 1, batch = 32, stages = 10, "
                         "split_k = 2"),
                  arch="sm_90a"),
    # N = 1024 in whole blocks of 64 rows (the weight rows unclamped): the
    # gate-up halves by 128 batch columns, K split 2 added in their cluster.
    LinearVariant("linear-group-whole-split-gateup-bf16", "bf16", 1024, 1048,
                  "silu_gate_up",
                  _group("groups = 1, row_tiles = 1, batch = 128, stages = 6, "
                         "split_k = 2"),
                  arch="sm_90a"),
]


VARIANTS += [
    # sm_90a's default tables, with group GEMMs from 17 rows (K split to fill
    # the units), on every epilogue and both types; and one whose rows are
    # long (K >= 2N), which group GEMMs take from 2 rows.
    *(LinearVariant(f"linear-{e}-{t}-sm90a", t, 520 if e == "residual" else 1000,
                    520, e, arch="sm_90a")
      for t in ("bf16", "f16")
      for e in ("none", "bias", "residual", "silu_gate_up")),
    LinearVariant("linear-longk-bias-bf16-sm90a", "bf16", 520, 1048, "bias",
                  arch="sm_90a"),
    # Row tiles that fill a quarter of the units or more but not all (33 of
    # 132 on the H100): group GEMMs in the deepest pipeline, K split 4 ways
    # up to 16 rows (M = 1 too), K whole from 17.
    LinearVariant("linear-deep-bias-bf16-sm90a", "bf16", 2100, 1048, "bias",
                  arch="sm_90a"),
]


def model_ir(v: LinearVariant) -> str:
    t, n, k = v.dtype, v.n, v.k
    shapes = v.weight_shapes()

    def tensor(name):
        return "tensor<" + "x".join(map(str, shapes[name])) + f"x{t}>"

    cache = f"!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, {t}>"
    logits = f"tensor<?x{HEAD_ROWS}xf32>"
    decls = "\n".join(f'  decode.weight @"{w}" : {tensor(w)}' for w in shapes)
    operands, types = "%x, %w", f"tensor<?x{k}x{t}>, {tensor('w')}"
    if "b" in shapes:
        operands += " bias %b"
        types += f", {tensor('b')}"
    if v.epilogue == "residual":
        operands += " residual %x"
        types += f", tensor<?x{k}x{t}>"
    attrs = []
    if v.epilogue == "silu_gate_up":
        attrs.append("activation = #decode<activation silu_gate_up>")
    if v.kernel:
        attrs.append(f"decode.kernel = {v.kernel}")
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    body = [
        f'%table = decode.weight_ref @"table" : {tensor("table")}',
        f"%x = decode.embedding %table[%tokens] : {tensor('table')}, "
        f"tensor<?xi32> -> tensor<?x{k}x{t}>",
        f'%w = decode.weight_ref @"w" : {tensor("w")}',
        *([f'%b = decode.weight_ref @"b" : {tensor("b")}'] if "b" in shapes
          else []),
        f"%y = decode.linear {operands}{attr} : {types} -> tensor<?x{n}x{t}>",
        f'%head = decode.weight_ref @"head" : {tensor("head")}',
        f"%logits = decode.linear %y, %head : tensor<?x{n}x{t}>, "
        f"{tensor('head')} -> {logits}",
        f"%next = decode.argmax %logits : {logits} -> tensor<?xi32>",
        f"return %logits, %next, %cache : {logits}, tensor<?xi32>, {cache}",
    ]
    signature = (
        "%tokens: tensor<?xi32>, %positions: tensor<?xi32>, "
        "%slots: tensor<?xi32>, %temperature: tensor<?xf32>, "
        "%top_k: tensor<?xi32>, %top_p: tensor<?xf32>, "
        f"%uniform: tensor<?xf32>, %cache: {cache}")
    name = v.name.replace("-", "_")
    return "\n".join([
        f"decode.model @{name} attributes "
        f"{{config = {{vocab_size = {HEAD_ROWS} : i64}}}} {{",
        decls,
        f"  func.func @step({signature}) -> ({logits}, tensor<?xi32>, "
        f"{cache}) {{",
        *("    " + line for line in body),
        "  }",
        "}",
    ]) + "\n"


def reference(v: LinearVariant, weights: dict, tokens):
    """The logits in float64 (torch tensors in, the storage dtype's rounding
    of y applied as the kernel stores it)."""
    import torch

    storage = torch.bfloat16 if v.dtype == "bf16" else torch.float16
    x = weights["table"][tokens.long()].double()
    acc = x @ weights["w"].double().T
    if "b" in weights:
        acc = acc + weights["b"].double()
    if v.epilogue == "silu_gate_up":
        gate, up = acc[:, :v.n], acc[:, v.n:]
        acc = gate / (1 + torch.exp(-gate)) * up
    if v.epilogue == "residual":
        acc = acc + x
    y = acc.to(storage).double()
    return y @ weights["head"].double().T


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out_dir")
    ap.add_argument("--archs", action="store_true",
                    help="also print 'NAME ARCH' per model, the cuda arch "
                         "to compile it for")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for v in VARIANTS:
        (out / f"{v.name}.mlir").write_text(model_ir(v))
        if args.archs:
            print(v.name, v.arch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
