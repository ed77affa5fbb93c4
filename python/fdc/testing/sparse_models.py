"""Models around one decode.sparse_linear each, for the GPU test of the sparse
kernels (test/gpu, stage ``sparse_checks``): every epilogue (none, bias,
residual, bias + residual, SiLU-gate-up with and without a residual), f16
and bf16, N and K that are not multiples of the 128x64 tile (and one that
is), the default dispatch table (sm_90: flash_spmm; sm_90a: flash_spmm up
to 8 batch rows, then group_spmm), flash_spmm configs pinned by hand
(sm_90), and group_spmm configs pinned by hand (sm_90a, the group MMA). Each
model embeds token rows of `table` (and of `rtable` for the residual, so
that N need not equal K), runs the sparse linear under test, and a 128-row
f32 `head` linear gives the logits.

    python -m fdc.testing.sparse_models OUT_DIR   # writes OUT_DIR/<name>.mlir
    python -m fdc.testing.sparse_models OUT_DIR --archs   # and prints NAME ARCH

The weights are made on the GPU machine from a seed (``make_weight``: random
pruning at each of ``PATTERNS``' sparsities, and a pattern with empty rows,
empty tiles and a dense tile) and packed into the arena there
(fdc.bench.tiled_csl); ``reference`` computes the logits in float64.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

TABLE_ROWS = 256
HEAD_ROWS = 128
TILE = (128, 64)
BATCHES = (1, 3, 8, 9, 16, 17, 32, 64)
# Random pruning at these sparsities, then "holes": 80 % pruned, with every
# fifth weight row above the last tile row and the row just above it empty,
# the tile right of the first and the bottom-right (partial) tile empty, and
# the bottom-left tile dense.
PATTERNS = ("s50", "s70", "s80", "s90", "s95", "holes")


@dataclass(frozen=True)
class SparseVariant:
    name: str
    dtype: str  # "f16" | "bf16"
    n: int  # output features (the weight has 2N rows with silu_gate_up)
    k: int
    bias: bool = False
    residual: bool = False
    activation: str = "none"  # "none" | "silu_gate_up"
    kernel: str = ""  # a #decode.kernel / #decode.dispatch pinned, or ""
    tile: tuple[int, int] = TILE
    arch: str = "sm_90"  # the cuda arch the GPU test compiles it for

    @property
    def families(self) -> frozenset[str]:
        """The families expected to run it over BATCHES: a pinned kernel's,
        else the default dispatch's (flash_spmm, and group_spmm past 8 rows
        on sm_90a; sparse_row_scan where they do not fit)."""
        if self.kernel:
            return frozenset({self.kernel.split('"')[1]})
        if not self.flash:
            return frozenset({"sparse_row_scan"})
        if self.arch == "sm_90a":
            return frozenset({"flash_spmm", "group_spmm"})
        return frozenset({"flash_spmm"})

    @property
    def flash(self) -> bool:
        """Whether a Flash-LLM kernel (flash_spmm or group_spmm) runs it
        (pinned, or the default dispatch's): K a multiple of 8 and, with
        silu_gate_up, N of the tile's rows."""
        return (self.k % 8 == 0 and (self.activation != "silu_gate_up"
                                     or self.n % self.tile[0] == 0))

    @property
    def rows(self) -> int:
        return 2 * self.n if self.activation == "silu_gate_up" else self.n

    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the dense weights (w: the matrix packed as Tiled-CSL)."""
        shapes = {"table": (TABLE_ROWS, self.k), "w": (self.rows, self.k),
                  "head": (HEAD_ROWS, self.n)}
        if self.bias:
            shapes["b"] = (self.rows,)
        if self.residual:
            shapes["rtable"] = (TABLE_ROWS, self.n)
        return shapes


def flash_spmm(warps_n: int, row_tiles: int, batch_tiles: int, split_k: int,
               vectors: int, prefetch: int = 1) -> str:
    return (f'#decode.kernel<"flash_spmm", {{warps_n = {warps_n}, '
            f"row_tiles = {row_tiles}, batch_tiles = {batch_tiles}, "
            f"split_k = {split_k}, vectors = {vectors}, prefetch = {prefetch}}}>")


def group_spmm(groups: int, row_tiles: int, batch: int, split_k: int,
               vectors: int) -> str:
    return (f'#decode.kernel<"group_spmm", {{groups = {groups}, '
            f"row_tiles = {row_tiles}, batch = {batch}, "
            f"split_k = {split_k}, vectors = {vectors}}}>")


# N and K: 1000 x 520 (tile grid 8 x 9, the last row of tiles 104 rows tall,
# the last column 8 wide), 200 x 100 and 200 x 120 (2 x 2, both partial),
# 512 x 256 (whole tiles); silu_gate_up's weight has 2N rows. flash_spmm
# and group_spmm need K a multiple of the 16-byte vector (8) and, with
# silu_gate_up, N a multiple of the tile's 128 rows; the default dispatch
# leaves the others (K = 100, gate-up N = 100) to sparse_row_scan.
VARIANTS = [
    SparseVariant("sparse-none-f16", "f16", 1000, 520),
    SparseVariant("sparse-none-bf16", "bf16", 200, 100),
    SparseVariant("sparse-bias-f16", "f16", 200, 120, bias=True),
    SparseVariant("sparse-bias-bf16", "bf16", 1000, 520, bias=True),
    SparseVariant("sparse-residual-f16", "f16", 200, 100, residual=True),
    SparseVariant("sparse-residual-bf16", "bf16", 512, 256, residual=True),
    SparseVariant("sparse-bias-residual-bf16", "bf16", 1000, 520, bias=True,
                  residual=True),
    SparseVariant("sparse-gateup-f16", "f16", 256, 520,
                  activation="silu_gate_up"),
    SparseVariant("sparse-gateup-bf16", "bf16", 100, 100,
                  activation="silu_gate_up"),
    SparseVariant("sparse-gateup-residual-f16", "f16", 384, 520,
                  residual=True, activation="silu_gate_up"),
    SparseVariant("sparse-gateup-residual-bf16", "bf16", 100, 104,
                  residual=True, activation="silu_gate_up"),
    # Pinned: 1024 prefetched words per 8192-element tile (4 warps x 32
    # lanes x 2 vectors of 4): most tiles overflow the registers.
    SparseVariant("sparse-pinned-overflow-f16", "f16", 1000, 520,
                  kernel=flash_spmm(4, 2, 1, 1, 2)),
    # 9 k tiles in 3 splits, a 32-row batch tile, the gate-up halves and a
    # residual in the epilogue after the splits.
    SparseVariant("sparse-pinned-split3-gateup-residual-bf16", "bf16", 384,
                  520, residual=True, activation="silu_gate_up",
                  kernel=flash_spmm(8, 1, 4, 3, 6)),
    # Both partial tiles (K = 64 + 56) in 2 splits, bias and residual.
    SparseVariant("sparse-pinned-split2-bias-residual-f16", "f16", 200, 120,
                  bias=True, residual=True, kernel=flash_spmm(2, 4, 2, 2, 4)),
    # 9 k tiles in 5 uneven splits (the last has one), a 64-row batch tile,
    # no prefetched words at all (every word through the overflow path).
    SparseVariant("sparse-pinned-split5-bias-bf16", "bf16", 1000, 520,
                  bias=True, kernel=flash_spmm(4, 2, 8, 5, 0)),
    # Words three tiles ahead (offsets four), the gate-up halves, K split in
    # 2 uneven runs (5 and 4 tiles).
    SparseVariant("sparse-pinned-prefetch3-gateup-f16", "f16", 256, 520,
                  activation="silu_gate_up", kernel=flash_spmm(4, 2, 2, 2, 3, 3)),
    # The default dispatch on sm_90a (flash_spmm to M = 8, group_spmm from
    # 9): partial tiles, the epilogues, the gate-up halves.
    SparseVariant("sparse-a-none-f16", "f16", 1000, 520, arch="sm_90a"),
    SparseVariant("sparse-a-bias-residual-bf16", "bf16", 200, 120, bias=True,
                  residual=True, arch="sm_90a"),
    SparseVariant("sparse-a-gateup-residual-f16", "f16", 384, 520,
                  residual=True, activation="silu_gate_up", arch="sm_90a"),
    # group_spmm (sm_90a's wgmma, pinned): most words past the registers
    # (2 vectors), one split;
    SparseVariant("sparse-group-pinned-overflow-f16", "f16", 1000, 520,
                  kernel=group_spmm(1, 2, 8, 1, 2), arch="sm_90a"),
    # 3 splits through the workspace, a 32-column batch, the gate-up
    # halves and a residual;
    SparseVariant("sparse-group-pinned-split3-gateup-residual-bf16", "bf16",
                  384, 520, residual=True, activation="silu_gate_up",
                  kernel=group_spmm(1, 2, 32, 3, 6), arch="sm_90a"),
    # 2 splits added in their cluster, both partial tiles, bias and
    # residual;
    SparseVariant("sparse-group-pinned-split2-bias-residual-f16", "f16", 200,
                  120, bias=True, residual=True,
                  kernel=group_spmm(1, 2, 16, 2, 4), arch="sm_90a"),
    # two groups of one row tile, a 64-column batch, 5 uneven splits, no
    # words in registers (all through the overflow path).
    SparseVariant("sparse-group-pinned-split5-bias-bf16", "bf16", 1000, 520,
                  bias=True, kernel=group_spmm(2, 1, 64, 5, 0), arch="sm_90a"),
]


def model_ir(v: SparseVariant) -> str:
    t, n, k = v.dtype, v.n, v.k
    shapes = v.weight_shapes()

    def tensor(name):
        return "tensor<" + "x".join(map(str, shapes[name])) + f"x{t}>"

    w = f"!decode.tiled_csl<{v.rows}x{k}x{t}, tile = {v.tile[0]}x{v.tile[1]}>"
    cache = f"!decode.kv_cache<layers = 1, kv_heads = 1, head_dim = 8, {t}>"
    logits = f"tensor<?x{HEAD_ROWS}xf32>"
    decls = [f'  decode.weight @"{name}" : {w if name == "w" else tensor(name)}'
             for name in shapes]
    operands, types = "%x, %w", f"tensor<?x{k}x{t}>, {w}"
    if v.bias:
        operands += " bias %b"
        types += f", {tensor('b')}"
    if v.residual:
        operands += " residual %r"
        types += f", tensor<?x{n}x{t}>"
    attrs = []
    if v.activation != "none":
        attrs.append(f"activation = #decode<activation {v.activation}>")
    if v.kernel:
        attrs.append(f"decode.kernel = {v.kernel}")
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    body = [
        f'%table = decode.weight_ref @"table" : {tensor("table")}',
        f"%x = decode.embedding %table[%tokens] : {tensor('table')}, "
        f"tensor<?xi32> -> tensor<?x{k}x{t}>",
        *([f'%rtable = decode.weight_ref @"rtable" : {tensor("rtable")}',
           f"%r = decode.embedding %rtable[%tokens] : {tensor('rtable')}, "
           f"tensor<?xi32> -> tensor<?x{n}x{t}>"] if v.residual else []),
        f'%w = decode.weight_ref @"w" : {w}',
        *([f'%b = decode.weight_ref @"b" : {tensor("b")}'] if v.bias else []),
        f"%y = decode.sparse_linear {operands}{attr} : {types} -> "
        f"tensor<?x{n}x{t}>",
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
        *decls,
        f"  func.func @step({signature}) -> ({logits}, tensor<?xi32>, "
        f"{cache}) {{",
        *("    " + line for line in body),
        "  }",
        "}",
    ]) + "\n"


def make_weight(v: SparseVariant, pattern: str, gen, device="cuda"):
    """The dense [rows, K] weight of a pattern, in the storage dtype (torch):
    N(0, 1/K) values, pruned elements +0."""
    import torch

    storage = torch.bfloat16 if v.dtype == "bf16" else torch.float16
    rows, k = v.rows, v.k
    w = torch.randn((rows, k), generator=gen, device=device) * k ** -0.5
    # Kept values stay non-zero once rounded to the storage type.
    w = torch.where(w.abs() < 1e-3, torch.full_like(w, 1e-3), w)
    sparsity = 0.8 if pattern == "holes" else int(pattern[1:]) / 100
    pruned = torch.rand((rows, k), generator=gen, device=device) < sparsity
    w = w.masked_fill(pruned, 0.0)
    if pattern == "holes":
        tn, tk = v.tile
        last_row = (rows - 1) // tn * tn
        # Empty rows above the last tile row (which holds the dense tile).
        w[:last_row:5] = 0.0
        if last_row > 0:
            w[last_row - 1] = 0.0
        if k > tk:
            w[:tn, tk:2 * tk] = 0.0  # the tile right of the first
        last_col = (k - 1) // tk * tk
        w[last_row:, last_col:] = 0.0  # the bottom-right tile
        if last_col > 0:  # the bottom-left tile, dense
            dense = torch.randn((rows - last_row, tk), generator=gen,
                                device=device) * k ** -0.5
            w[last_row:, :tk] = torch.where(dense.abs() < 1e-3,
                                            torch.full_like(dense, 1e-3), dense)
    return w.to(storage)


def reference(v: SparseVariant, weights: dict, w, tokens):
    """The logits in float64 (torch tensors in: `weights` the dense ones by
    name, `w` the dense sparse matrix; y rounded to the storage dtype as the
    kernel stores it)."""
    import torch

    storage = torch.bfloat16 if v.dtype == "bf16" else torch.float16
    rows = tokens.long()
    x = weights["table"][rows].double()
    acc = x @ w.double().T
    if v.bias:
        acc = acc + weights["b"].double()
    if v.activation == "silu_gate_up":
        gate, up = acc[:, :v.n], acc[:, v.n:]
        acc = gate / (1 + torch.exp(-gate)) * up
    if v.residual:
        acc = acc + weights["rtable"][rows].double()
    y = acc.to(storage).double()
    return y @ weights["head"].double().T


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out_dir")
    ap.add_argument("--archs", action="store_true",
                    help="also print 'NAME ARCH' per model, the cuda arch "
                         "the GPU test compiles it for")
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
