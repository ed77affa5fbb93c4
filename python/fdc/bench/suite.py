"""The benchmark suite, run on a GPU machine (torch + transformers, no MLIR):

    python -m fdc.bench.suite --artifacts .bench-artifacts --out DIR

Families (``--families``, default all, in this order): ceilings, linear,
attention, int4, sparse, pruned_step, serving, step. Every fdc kernel is
first run as a full step and
checked against a float64 reference on fresh random data; then it and its
peer are timed the same way (fdc.bench.timing). The serving family
(fdc.bench.serving) runs the C runtime's engine on a seeded workload of
Poisson arrivals, and a soak. Writes DIR/results.json, DIR/perf.md
and DIR/<family>.png, and prints the tables last.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch

from . import models, report, tiled_csl
from . import serving as serving_bench
from .reads import plain_read
from ..testing import attention_models
from .launcher import CudaLauncher, LibraryError, ModelLibrary, step_args
from .timing import (CALLS, calls_for, event_time_us, graph_time_us,
                     graph_times_us, rotation, wall_time_s)

# serving runs before step, whose torch.compile leaves compiled state in
# the process (serving's own transformers runs are eager).
FAMILIES = ("ceilings", "linear", "attention", "int4", "sparse",
            "pruned_step", "serving", "step")
M_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
ATTENTION_BATCHES = (1, 8, 32, 64, 128)
ATTENTION_CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
INT4_BATCHES = (1, 8, 32, 64, 128, 256)
# Sizes of the ceilings family's graph-replayed reads: the attention
# table's 16 and 32 MiB caches (B = 1) and its 64 and 128 MiB ones.
SIZED_READ_MIB = (16, 32, 64, 128)
SPARSITIES = (0.7, 0.8, 0.9)
SPARSE_BATCHES = (8, 16, 32)
SPARSE_SEED = 13  # the pruned weights are the same in every run
# fdc calls longer than this (µs) are timed with fewer calls per graph.
SLOW_CALL_US = 1000.0
STEP_BATCHES = (1, 8, 32)
STEP_CONTEXT = 1024
PRUNED_STEP_BATCHES = (1, 8, 32)
PRUNED_STEP_SPARSITY = 0.8
LINEAR_TOLERANCE = 1e-2
ATTENTION_TOLERANCE = 1e-2
STEP_TOLERANCE = 6e-2  # fdc bf16 vs transformers bf16 (each ~3e-2 from f64)


def rel_err(got: torch.Tensor, ref: torch.Tensor) -> float:
    got, ref = got.double(), ref.double()
    if not torch.isfinite(got).all():
        return math.inf
    return float((got - ref).norm() / ref.norm())


def check(err: float, tol: float) -> dict:
    return {"rel_err": err, "tol": tol, "ok": bool(err <= tol)}


class Bench:
    def __init__(self, artifacts: Path, out: Path, quick: bool,
                 budget_s: float = math.inf):
        self.artifacts, self.out, self.quick = artifacts, out, quick
        self.start, self.budget_s = time.perf_counter(), budget_s
        props = torch.cuda.get_device_properties(0)
        self.gpu = props.name
        self.l2 = int(getattr(props, "L2_cache_size", 50 << 20))
        self.sms = props.multi_processor_count
        self.results: dict = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="seconds"),
            "gpu": self.gpu, "sms": self.sms, "l2_bytes": self.l2,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "quick": quick, "command": "python -m fdc.bench.suite "
            + " ".join(sys.argv[1:]), "families": {}}
        self.read_gbps = None
        # Batch sizes of the linear family (empty: M_VALUES).
        self.linear_m: tuple[int, ...] = ()
        self.gen = torch.Generator(device="cuda")
        self.gen.manual_seed(int.from_bytes(os.urandom(4), "little"))

    def save(self) -> None:
        """Writes results.json and perf.md as they stand."""
        (self.out / "results.json").write_text(json.dumps(self.results, indent=1))
        (self.out / "perf.md").write_text(report.markdown(self.results))

    def remaining_s(self) -> float:
        """Seconds left of the run's time budget (--budget-s)."""
        return self.budget_s - (time.perf_counter() - self.start)

    def library(self, name: str) -> ModelLibrary:
        return ModelLibrary(self.artifacts / "models" / f"{name}.so")

    def tuned_library(self, name: str, heuristic: ModelLibrary):
        """NAME-tuned.so (compiled with a measured dispatch table), if
        prepare built one; its weights must be laid out as NAME's."""
        path = self.artifacts / "models" / f"{name}-tuned.so"
        if not path.exists():
            return None
        tuned = ModelLibrary(path)
        if tuned.manifest["weights"] != heuristic.manifest["weights"]:
            raise RuntimeError(f"{path}: weights laid out unlike {name}.so")
        return tuned

    def randn(self, shape, dtype=torch.bfloat16, std=1.0):
        return (torch.randn(shape, device="cuda", generator=self.gen) * std).to(dtype)

    def hbm(self, nbytes: int, us: float) -> dict:
        gbps = nbytes / us / 1e3
        pct = 100.0 * gbps / self.read_gbps if self.read_gbps else None
        return {"us": us, "bytes": nbytes, "gbps": gbps, "hbm_pct": pct}


# ---------------------------------------------------------------------------
# Helpers shared by the kernel families.
# ---------------------------------------------------------------------------

class Arena:
    """A model library's weight arena on the GPU, with views of its weights."""

    def __init__(self, library: ModelLibrary):
        self.library = library
        self.data = torch.empty(library.weights_bytes, dtype=torch.uint8,
                                device="cuda")

    def view(self, name: str, dtype=torch.bfloat16) -> torch.Tensor:
        entry = self.library.weight(name)
        raw = self.data[entry["offset"]:entry["offset"] + entry["bytes"]]
        return raw.view(dtype).view(entry["shape"])

    def clone(self) -> "Arena":
        copy = Arena.__new__(Arena)
        copy.library, copy.data = self.library, self.data.clone()
        return copy


class StepBuffers:
    """The per-step inputs and outputs of a step of batch M (device)."""

    def __init__(self, bench: Bench, library: ModelLibrary, batch: int,
                 num_slots: int, max_context: int, positions, slots, tokens):
        vocab = library.manifest["config"]["vocab_size"]
        cuda = dict(device="cuda")
        self.batch, self.num_slots, self.max_context = batch, num_slots, max_context
        self.tokens = tokens.to(torch.int32)
        self.positions = positions.to(torch.int32)
        self.slots = slots.to(torch.int32)
        self.temperature = torch.zeros(batch, dtype=torch.float32, **cuda)
        self.top_k = torch.zeros(batch, dtype=torch.int32, **cuda)
        self.top_p = torch.ones(batch, dtype=torch.float32, **cuda)
        self.uniform = torch.full((batch,), 0.5, dtype=torch.float32, **cuda)
        self.logits = torch.full((batch, vocab), math.nan, dtype=torch.float32,
                                 **cuda)
        self.next_tokens = torch.full((batch,), -1, dtype=torch.int32, **cuda)
        # Scratch holds the skipped kernels' outputs: random, never zeros.
        scratch = library.scratch_bytes(batch)
        self.scratch = bench.randn(scratch // 2).view(torch.uint8)

    def args(self, arena: Arena, cache: torch.Tensor):
        return step_args(
            batch=self.batch, num_slots=self.num_slots,
            max_context=self.max_context, weights=arena.data.data_ptr(),
            kv_cache=cache.data_ptr(), tokens=self.tokens.data_ptr(),
            positions=self.positions.data_ptr(), slots=self.slots.data_ptr(),
            temperature=self.temperature.data_ptr(),
            top_k=self.top_k.data_ptr(), top_p=self.top_p.data_ptr(),
            uniform=self.uniform.data_ptr(), logits=self.logits.data_ptr(),
            next_tokens=self.next_tokens.data_ptr(),
            scratch=self.scratch.data_ptr())


# The attention families' kernels (split_kv_attention's and gqa_attention's
# partial kernels, and the reduce they share).
ATTENTION_KERNELS = ("attention_", "gqa_attention_")


def kernels_named(library: ModelLibrary, *prefixes: str) -> set[str]:
    return {k for k in library.kernels if k.startswith(prefixes)}


def step_enqueue(launcher: CudaLauncher, args_list, only: set[str] | None):
    """enqueue(i) for the graph timers: the step (its kernels in `only`) on
    the i-th of a rotation of argument sets."""
    def enqueue(i):
        launcher.step(args_list[i % len(args_list)], only=only)
    return enqueue


def time_fdc(launcher: CudaLauncher, args_list, only: set[str],
             calls: int = CALLS) -> dict:
    return graph_time_us(step_enqueue(launcher, args_list, only), calls=calls)


def linear_step(bench: Bench, library: ModelLibrary, launcher: CudaLauncher,
                tokens, arenas, cache):
    """A linear benchmark library's step for len(tokens) rows, run once: its
    buffers, its arguments on each arena, and the measured op's kernels for
    this M (its dispatch table picks one): the first linear the step
    launched, with its split-K reduction if it has one; the head follows."""
    m = len(tokens)
    buffers = StepBuffers(bench, library, m, m, 1,
                          torch.zeros(m, device="cuda"),
                          torch.arange(m, device="cuda"), tokens)
    args = [buffers.args(a, cache) for a in arenas]
    launcher.step(args[0])
    torch.cuda.synchronize()
    return buffers, args, models.linear_op_kernels(launcher.launched)


# ---------------------------------------------------------------------------
# Families.
# ---------------------------------------------------------------------------

def ceilings(bench: Bench) -> list[dict]:
    n = (1 << 30) if not bench.quick else (1 << 28)  # f32 elements: 4 GiB
    x = bench.randn(n, torch.float32)
    rows = []
    # The suite's first kernels: an idle GPU's clocks ramp up over the first
    # few hundred ms (one run measured 2,675 GB/s with a 33 % spread, where
    # a warm read gives ~3,050), so the reads run for a second first.
    warm_until = time.perf_counter() + 1.0
    while time.perf_counter() < warm_until:
        torch.sum(x)
        torch.cuda.synchronize()
    read = event_time_us(lambda: torch.sum(x))
    bench.read_gbps = x.numel() * 4 / read["us"] / 1e3
    rows.append({"case": {"what": "streaming read (torch.sum)",
                          "bytes": x.numel() * 4},
                 "us": read["us"], "gbps": bench.read_gbps,
                 "spread": read["spread"]})
    half = x[: n // 2]
    dst = torch.empty_like(half)
    copy = event_time_us(lambda: dst.copy_(half))
    rows.append({"case": {"what": "device-to-device copy (read + write)",
                          "bytes": 2 * half.numel() * 4},
                 "us": copy["us"], "gbps": 2 * half.numel() * 4 / copy["us"] / 1e3,
                 "spread": copy["spread"]})
    del x, half, dst
    # The same read at the sizes of the attention table's B = 1 and
    # mid-size caches, timed as the kernels are (graph replay, inputs
    # rotated over > 3x L2): what a read of that size reaches, launch and
    # tail included; the fastest of torch.sum and Triton's (fdc.bench.reads).
    for mib in SIZED_READ_MIB:
        sized = sized_read(bench, mib << 20)
        rows.append({"case": {"what": f"streaming read of {mib} MiB, graph "
                                      f"replay ({sized['by']})",
                              "bytes": mib << 20},
                     **sized})
    return rows


def sized_read(bench: Bench, nbytes: int) -> dict:
    """The fastest plain read of `nbytes` timed as the kernels are
    (fdc.bench.reads.plain_read): {us, gbps, spread, by, torch_sum_us}."""
    return plain_read(lambda n: bench.randn(n, torch.float32), nbytes,
                      bench.l2)


def linear(bench: Bench) -> list[dict]:
    rows = []
    shapes = list(models.LINEAR_SHAPES.items())
    ms = M_VALUES if not bench.quick else (1, 16, 128)
    if bench.linear_m:
        ms = bench.linear_m
    if bench.quick:
        shapes = shapes[:2]
    for label, (n, k) in shapes:
        library = bench.library(models.linear_name(n, k))
        launcher = CudaLauncher(library)
        tuned = bench.tuned_library(models.linear_name(n, k), library)
        tuned_launcher = CudaLauncher(tuned) if tuned else None
        base = Arena(library)
        base.view("table").copy_(bench.randn((models.TABLE_ROWS, k)))
        base.view("w").copy_(bench.randn((n, k), std=k ** -0.5))
        base.view("head").copy_(bench.randn((models.HEAD_ROWS, n), std=n ** -0.5))
        arenas = [base] + [base.clone() for _ in
                           range(rotation(n * k * 2, bench.l2) - 1)]
        cache = torch.empty(max(library.kv_cache_bytes(max(ms), 1), 256),
                            dtype=torch.uint8, device="cuda")
        for m in ms:
            tokens = torch.randint(0, models.TABLE_ROWS, (m,), device="cuda",
                                   generator=bench.gen)
            buffers, args, measured = linear_step(bench, library, launcher,
                                                  tokens, arenas, cache)
            x = base.view("table")[tokens.long()].double()
            y = (x @ base.view("w").double().T).to(torch.bfloat16).double()
            ref = y @ base.view("head").double().T
            result = check(rel_err(buffers.logits, ref), LINEAR_TOLERANCE)
            nbytes = n * k * 2 + m * k * 2 + m * n * 2
            contenders = [step_enqueue(launcher, args, measured)]
            tuned_check = tuned_measured = None
            if tuned_launcher:
                tuned_buffers, tuned_args, tuned_measured = linear_step(
                    bench, tuned, tuned_launcher, tokens, arenas, cache)
                tuned_check = check(rel_err(tuned_buffers.logits, ref),
                                    LINEAR_TOLERANCE)
                contenders.append(
                    step_enqueue(tuned_launcher, tuned_args, tuned_measured))
            xin = bench.randn((m, k))
            out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
            weights = [a.view("w") for a in arenas]
            contenders.append(lambda i: torch.matmul(
                xin, weights[i % len(weights)].T, out=out))
            # fdc, its tuned table and cuBLAS, replays interleaved.
            timed = graph_times_us(contenders)
            fdc, peer = timed[0], timed[-1]
            tuned_row = None
            if tuned_launcher:
                tuned_row = {"kernel": sorted(tuned_measured),
                             **bench.hbm(nbytes, timed[1]["us"]),
                             "spread": timed[1]["spread"]}
            rows.append({
                "case": {"shape": label, "N": n, "K": k, "M": m},
                "fdc": {"kernel": sorted(measured), **bench.hbm(nbytes, fdc["us"]),
                        "spread": fdc["spread"]},
                "peer": {"name": "cuBLAS (torch.matmul)",
                         **bench.hbm(nbytes, peer["us"]), "spread": peer["spread"]},
                "ratio": peer["us"] / fdc["us"], "check": result})
            if tuned_row:
                rows[-1].update({
                    "fdc_tuned": tuned_row,
                    "ratio_tuned": peer["us"] / tuned_row["us"],
                    "tuned_vs_heuristic": fdc["us"] / tuned_row["us"],
                    "check_tuned": tuned_check})
            tuned_text = (f", tuned {tuned_row['us']:.1f} us" if tuned_row
                          else "")
            print(f"linear {label} M={m}: fdc {fdc['us']:.1f} us{tuned_text}, "
                  f"cuBLAS {peer['us']:.1f} us, err {result['rel_err']:.1e}",
                  flush=True)
        del arenas, base, launcher, tuned_launcher
        torch.cuda.empty_cache()
    return rows


def attention_reference(q, keys, values, scale):
    """q [Hq, D], keys/values [Hkv, S, D] (float64) -> ([Hq, D], the number
    of heads whose scores leave unified max's window: rows that the
    unified-max kernels recompute with online softmax)."""
    group = q.shape[0] // keys.shape[0]
    keys = keys.repeat_interleave(group, 0)
    values = values.repeat_interleave(group, 0)
    scores = torch.einsum("hd,hsd->hs", q, keys) * scale
    shifted = scores - models.UNIFIED_PHI
    outside = (shifted < models.UNIFIED_LO) | (shifted > models.UNIFIED_HI)
    flagged = int(outside.any(dim=1).sum())
    return torch.einsum("hs,hsd->hd", torch.softmax(scores, -1), values), flagged


def sdpa_backends(small: bool):
    from torch.nn.attention import SDPBackend
    backends = [("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                ("cudnn", SDPBackend.CUDNN_ATTENTION)]
    if small:  # the math backend materialises expanded K/V; small cases only
        backends.append(("math", SDPBackend.MATH))
    return backends


def time_sdpa(q, caches, backend, gqa: bool):
    from torch.nn.attention import sdpa_kernel
    import torch.nn.functional as F

    def enqueue(i):
        cache = caches[i % len(caches)]
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, cache[:, 0, 0], cache[:, 0, 1],
                                           enable_gqa=gqa)
    return graph_time_us(enqueue, calls=calls_for(len(caches)))


def attention_cases(bench: Bench, heads, batches, contexts, cap_bytes, kv_row):
    for hq, hkv in heads:
        for b in batches:
            for s in contexts:
                nbytes = b * s * hkv * 2 * kv_row
                yield hq, hkv, b, s, nbytes, nbytes <= cap_bytes


def run_attention_case(bench: Bench, libraries: dict, hq: int, hkv: int,
                       b: int, s: int, kv: str, groups: int = 4) -> dict:
    d = models.HEAD_DIM
    first = next(iter(libraries.values()))
    cache_bytes = first.kv_cache_bytes(b, s)
    caches = []
    for _ in range(rotation(cache_bytes, bench.l2)):
        if kv == "bf16":
            caches.append(bench.randn((b, 1, 2, hkv, s, d)))
        else:
            raw = torch.empty(cache_bytes, dtype=torch.uint8, device="cuda")
            attention_models.fill_int4_rows(raw, groups, d, bench.gen)
            caches.append(raw.view(b, 1, 2, hkv, s, -1))
    tokens = torch.randint(0, models.TABLE_ROWS, (b,), device="cuda",
                           generator=bench.gen)
    slots = torch.randperm(b, device="cuda", generator=bench.gen)
    positions = torch.full((b,), s - 1, device="cuda")
    width = hq * d
    nbytes = cache_bytes + 2 * b * width * 2
    entry = {"case": {"Hq": hq, "Hkv": hkv, "B": b, "S": s, "kv": kv},
             "fdc": {}, "check": {}}
    # Each scheme checked, then all timed with their replays interleaved
    # (graph_times_us, as the linear family's contenders), so that a drift
    # of clocks or temperature over the case weighs on each alike instead
    # of on whichever is timed last.
    kept, enqueues = [], []
    for scheme, library in libraries.items():
        launcher = CudaLauncher(library)
        arena = Arena(library)
        arena.view("table").copy_(bench.randn((models.TABLE_ROWS, width)))
        arena.view("head").copy_(bench.randn((models.HEAD_ROWS, width),
                                             std=width ** -0.5))
        buffers = StepBuffers(bench, library, b, b, s, positions, slots, tokens)
        args = [buffers.args(arena, c) for c in caches]
        launcher.step(args[0])
        torch.cuda.synchronize()
        table, head = arena.view("table").double(), arena.view("head").double()
        ref_rows, flagged = [], 0
        for i in range(b):
            slot = int(slots[i])
            rows = caches[0][slot, 0]
            if kv == "bf16":
                keys, values = rows[0].double(), rows[1].double()
            else:
                keys = attention_models.int4_rows_to_float(rows[0], groups, d)
                values = attention_models.int4_rows_to_float(rows[1], groups, d)
            q = table[int(tokens[i])].view(hq, d)
            out, row_flags = attention_reference(q, keys, values, d ** -0.5)
            flagged += row_flags
            ref_rows.append(out.to(torch.bfloat16).double().reshape(-1) @ head.T)
        result = check(rel_err(buffers.logits, torch.stack(ref_rows)),
                       ATTENTION_TOLERANCE)
        entry["check"][scheme] = result
        if scheme == "unified_max":
            entry["fallback_rate"] = flagged / (b * hq)
        kept.append((launcher, arena, buffers))
        enqueues.append(step_enqueue(
            launcher, args, kernels_named(library, *ATTENTION_KERNELS)))
    timed = graph_times_us(enqueues, calls=calls_for(len(caches)))
    for scheme, times in zip(libraries, timed):
        entry["fdc"][scheme] = {**bench.hbm(nbytes, times["us"]),
                                "spread": times["spread"]}
    del kept, enqueues
    return entry, caches, nbytes


def attention(bench: Bench) -> list[dict]:
    rows = []
    d = models.HEAD_DIM
    contexts = ATTENTION_CONTEXTS if not bench.quick else (1024, 8192)
    batches = ATTENTION_BATCHES if not bench.quick else (1, 32)
    cap = 8 << 30
    for hq, hkv, b, s, nbytes, fits in attention_cases(
            bench, models.ATTENTION_HEADS, batches, contexts, cap, d * 2):
        if not fits:
            rows.append({"case": {"Hq": hq, "Hkv": hkv, "B": b, "S": s, "kv": "bf16"},
                         "skipped": f"KV cache {nbytes / 2**30:.0f} GiB > "
                                    f"{cap >> 30} GiB cap"})
            continue
        libraries = {scheme: bench.library(models.attention_name(hq, hkv, scheme))
                     for scheme in models.SOFTMAX}
        entry, caches, nbytes = run_attention_case(bench, libraries, hq, hkv, b, s,
                                                   "bf16")
        q = bench.randn((b, hq, 1, d))
        peers = {}
        for name, backend in sdpa_backends(nbytes <= (1 << 30)):
            try:
                us = time_sdpa(q, caches, backend, hq != hkv)["us"]
                peers[name] = bench.hbm(nbytes, us)
            except RuntimeError as err:
                peers[name] = {"error": str(err).splitlines()[0][:120]}
            torch.cuda.synchronize()
        timed = {k: v for k, v in peers.items() if "us" in v}
        best = min(timed, key=lambda k: timed[k]["us"]) if timed else None
        entry["peers"] = peers
        if best:
            entry["peer"] = {"name": f"torch SDPA {best}", **timed[best]}
            fastest = min(v["us"] for v in entry["fdc"].values())
            entry["ratio"] = timed[best]["us"] / fastest
        rows.append(entry)
        print(f"attention {hq}/{hkv} B={b} S={s}: " + ", ".join(
            f"fdc {k} {v['us']:.1f} us" for k, v in entry["fdc"].items())
            + (f", SDPA {best} {timed[best]['us']:.1f} us" if best else ""),
            flush=True)
        del caches
        torch.cuda.empty_cache()
    return rows


def int4(bench: Bench) -> list[dict]:
    """INT4 KV-cache GQA (the INT4 seed's Hq=8, Hkv=1, D=128, S=8192) vs
    bf16 SDPA flash on a bf16 cache of the same shape."""
    rows = []
    d, groups, s = models.HEAD_DIM, 4, 8192
    batches = INT4_BATCHES if not bench.quick else (1, 64)
    # Each softmax scheme (online on f16 MMAs, unified max with P V on
    # bf16), timed with their replays interleaved; the speedup is the
    # fastest's.
    libraries = {scheme: bench.library(models.attention_name(8, 1, scheme, "int4"))
                 for scheme in models.SOFTMAX}
    for b in batches:
        entry, caches, nbytes = run_attention_case(bench, libraries, 8, 1,
                                                   b, s, "int4", groups)
        del caches
        dense = [bench.randn((b, 1, 2, 1, s, d))
                 for _ in range(rotation(b * s * 2 * d * 2, bench.l2))]
        dense_bytes = b * s * 2 * d * 2 + 2 * b * 8 * d * 2
        q = bench.randn((b, 8, 1, d))
        from torch.nn.attention import SDPBackend
        peer = time_sdpa(q, dense, SDPBackend.FLASH_ATTENTION, True)
        entry["peer"] = {"name": "torch SDPA flash, bf16 cache",
                         **bench.hbm(dense_bytes, peer["us"])}
        fastest = min(v["us"] for v in entry["fdc"].values())
        entry["ratio"] = peer["us"] / fastest
        # What a plain read of the INT4 bytes reaches at this size: the
        # ceiling a small batch's fixed costs (launch, first loads, tail)
        # leave any kernel.
        entry["read"] = sized_read(bench, nbytes)
        rows.append(entry)
        print(f"int4 attention B={b}: " + ", ".join(
            f"fdc {k} {v['us']:.1f} us" for k, v in entry["fdc"].items())
            + f", SDPA bf16 {peer['us']:.1f} us", flush=True)
        del dense
        torch.cuda.empty_cache()
    return rows


def sparse_seed(n: int, k: int, sparsity: float) -> int:
    return SPARSE_SEED * 1_000_003 + n * 131 + k * 7 + round(sparsity * 1000)


def sparse_weight(n: int, k: int, sparsity: float) -> torch.Tensor:
    """The pruned fp16 weight of a sparse case: N(0, 1/K) values, each one
    dropped with probability `sparsity` independently of its magnitude
    (unstructured random pruning), from a seed fixed per case, so that every
    run, and fdc, cuSPARSE, cuBLAS and the reference within one, use the same
    tensor. Pruned elements are +0."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(sparse_seed(n, k, sparsity))
    w = (torch.randn((n, k), device="cuda", generator=gen) * k ** -0.5).to(torch.float16)
    pruned = torch.rand((n, k), device="cuda", generator=gen) < sparsity
    return w.masked_fill_(pruned, 0.0)


def sparse_step(bench: Bench, library: ModelLibrary, launcher: CudaLauncher,
                tokens, arenas, cache):
    """linear_step for a sparse library: the step run once, its buffers and
    arguments on each arena, and the sparse op's kernels for this M."""
    m = len(tokens)
    buffers = StepBuffers(bench, library, m, m, 1,
                          torch.zeros(m, device="cuda"),
                          torch.arange(m, device="cuda"), tokens)
    args = [buffers.args(a, cache) for a in arenas]
    launcher.step(args[0])
    torch.cuda.synchronize()
    return buffers, args, models.sparse_op_kernels(launcher.launched)


def write_tiled_csl(arena: Arena, entry: dict, w: torch.Tensor) -> int:
    """Packs ``w`` as the Tiled-CSL weight ``entry`` of the arena's library
    (as the runtime packs it; the reserved capacity past the words zeroed)
    and returns the bytes a kernel reads of it: the header and the runs."""
    tiled_csl.layout_version(entry)
    packed = tiled_csl.pack_torch(w, tuple(entry["tile"]))
    nbytes = tiled_csl.words_read(packed.numel())
    if nbytes > entry["bytes"]:
        raise RuntimeError(f"{arena.library.path}: weight {entry['name']!r}: "
                           f"{nbytes} packed bytes exceed the "
                           f"{entry['bytes']} reserved")
    raw = arena.data[entry["offset"]:entry["offset"] + entry["bytes"]]
    raw[:nbytes].copy_(packed.view(torch.uint8))
    raw[nbytes:].zero_()
    return nbytes


class SparseLibrary:
    """A sparse benchmark library with one pruned weight packed into its
    arena (and copies of the arena, to rotate over > 3x L2 of packed
    bytes); the table and head are random per run."""

    def __init__(self, bench: Bench, library: ModelLibrary, w: torch.Tensor):
        n, k = w.shape
        self.library = library
        self.entry = entry = library.weight("w")
        self.version = tiled_csl.layout_version(entry)
        self.tile = tuple(entry["tile"])
        base = Arena(library)
        base.view("table", torch.float16).copy_(
            bench.randn((models.TABLE_ROWS, k), torch.float16))
        base.view("head", torch.float16).copy_(
            bench.randn((models.HEAD_ROWS, n), torch.float16, std=n ** -0.5))
        # What the kernel reads of the weight: the header and the runs.
        self.packed_bytes = write_tiled_csl(base, entry, w)
        self.base = base
        self.arenas = [base] + [base.clone() for _ in range(
            rotation(self.packed_bytes, bench.l2) - 1)]
        self.cache = torch.empty(max(library.kv_cache_bytes(1, 1), 256),
                                 dtype=torch.uint8, device="cuda")


def sparse_case(bench: Bench, label: str, w: torch.Tensor, sparsity: float,
                library: ModelLibrary | None, launcher: CudaLauncher | None,
                status: str, batches) -> list[dict]:
    """One pruned weight: fdc's sparse_linear (checked against float64, then
    timed), cuSPARSE and dense cuBLAS, at each batch."""
    n, k = w.shape
    rows = []
    csr = w.to_sparse_csr()
    nnz = csr.values().numel()
    csr_bytes = nnz * (2 + csr.col_indices().element_size()) + \
        (n + 1) * csr.crow_indices().element_size()
    csrs = [csr] + [csr.clone() for _ in range(rotation(csr_bytes, bench.l2) - 1)]
    denses = [w] + [w.clone() for _ in range(rotation(n * k * 2, bench.l2) - 1)]
    fdc = SparseLibrary(bench, library, w) if library else None
    w64 = w.double() if fdc else None
    weight = {"nnz": nnz, "density": nnz / (n * k),
              "seed": sparse_seed(n, k, sparsity)}
    if fdc:
        weight.update(packed_bytes=fdc.packed_bytes, csl_version=fdc.version,
                      tile=list(fdc.tile))
    for batch in batches:
        x = bench.randn((k, batch), torch.float16)
        out = torch.empty((n, batch), dtype=torch.float16, device="cuda")
        dense_enqueue = (lambda i: torch.mm(denses[i % len(denses)], x, out=out))
        row = {"case": {"shape": label, "N": n, "K": k, "sparsity": sparsity,
                        "batch": batch}, "weight": weight}
        if fdc:
            tokens = torch.randint(0, models.TABLE_ROWS, (batch,), device="cuda",
                                   generator=bench.gen)
            buffers, args, measured = sparse_step(bench, library, launcher,
                                                  tokens, fdc.arenas, fdc.cache)
            table = fdc.base.view("table", torch.float16)
            head = fdc.base.view("head", torch.float16)
            y = (table[tokens.long()].double() @ w64.T).to(torch.float16)
            ref = y.double() @ head.double().T
            result = check(rel_err(buffers.logits, ref), LINEAR_TOLERANCE)
            fdc_enqueue = step_enqueue(launcher, args, measured)
            # A slow kernel (the first-version row scan takes milliseconds)
            # gets fewer calls per graph, timed apart from the peer.
            once = event_time_us(lambda: fdc_enqueue(0), repeats=3)["us"]
            calls = CALLS if once <= SLOW_CALL_US else \
                max(1, int(CALLS * SLOW_CALL_US / once))
            if calls == CALLS:  # fdc and cuBLAS, replays interleaved
                fdc_t, dense_t = graph_times_us([fdc_enqueue, dense_enqueue])
            else:
                fdc_t = graph_time_us(fdc_enqueue, calls=calls)
                dense_t = graph_time_us(dense_enqueue)
            fdc_bytes = fdc.packed_bytes + batch * k * 2 + batch * n * 2
            row["fdc"] = {"kernel": sorted(measured),
                          **bench.hbm(fdc_bytes, fdc_t["us"]),
                          "spread": fdc_t["spread"], "calls": calls}
            row["check"] = result
            del buffers, args
        else:
            dense_t = graph_time_us(dense_enqueue)
            row["fdc"] = {"status": status}
        # cuSPARSE allocates its workspace per call, which graph capture
        # forbids; its calls take milliseconds, so eager timing between
        # events adds no launch gap worth counting.
        turn = itertools.count()
        sparse_t = event_time_us(lambda: torch.mm(csrs[next(turn) % len(csrs)], x))
        row["peers"] = {
            "cuSPARSE (torch CSR)": bench.hbm(
                csr_bytes + k * batch * 2 + n * batch * 2, sparse_t["us"]),
            "cuBLAS dense": bench.hbm(n * k * 2 + k * batch * 2 + n * batch * 2,
                                      dense_t["us"])}
        if fdc:
            row["ratio_dense"] = dense_t["us"] / row["fdc"]["us"]
            row["ratio_cusparse"] = sparse_t["us"] / row["fdc"]["us"]
        rows.append(row)
        fdc_text = (f"fdc {row['fdc']['us']:.1f} us "
                    f"({row['fdc']['hbm_pct']:.0f}% HBM, err "
                    f"{row['check']['rel_err']:.1e}), " if fdc else "")
        print(f"sparse {label} {n}x{k} {sparsity:.0%} M={batch}: {fdc_text}"
              f"cuSPARSE {sparse_t['us']:.0f} us, dense {dense_t['us']:.1f} us",
              flush=True)
    del csrs, denses, fdc, w64
    return rows


def sparse(bench: Bench) -> list[dict]:
    """Unstructured-sparse fp16 weights (random pruning, fixed seeds): fdc's
    decode.sparse_linear (its default kernel for each M), cuSPARSE (torch
    CSR) and dense cuBLAS on the same pruned tensor."""
    rows = []
    shapes = list(models.SPARSE_SHAPES.items())
    batches = SPARSE_BATCHES
    if bench.quick:
        shapes, batches = shapes[3:], (8, 32)
    for label, (n, k) in shapes:
        library = launcher = None
        status = ""
        try:
            library = bench.library(models.sparse_name(n, k))
            launcher = CudaLauncher(library)
        except LibraryError as err:
            status = f"not built ({err}): run fdc.bench.prepare"
        for sparsity in SPARSITIES:
            w = sparse_weight(n, k, sparsity)
            rows += sparse_case(bench, label, w, sparsity, library, launcher,
                                status, batches)
            del w
            torch.cuda.empty_cache()
        del launcher
    summary = report.sparse_summary(rows)
    if summary:
        print(report.sparse_summary_md(summary), flush=True)
    return rows


def fill_arena(arena: Arena, state: dict) -> int:
    """Copies a checkpoint's tensors into a library's arena, each weight from
    its manifest sources (concatenated on dim 0); a Tiled-CSL weight is
    packed there as the runtime packs it. Returns the bytes the step's
    kernels read of the weights (a packed weight's header and runs, not its
    reserved capacity)."""
    read = 0
    for entry in arena.library.manifest["weights"]:
        w = torch.cat([state[source] for source in entry["sources"]], 0)
        if entry.get("layout") != "tiled_csl":
            arena.view(entry["name"]).copy_(w.view(entry["shape"]))
            read += entry["bytes"]
            continue
        read += write_tiled_csl(arena, entry, w)
    return read


def pruned_step(bench: Bench) -> list[dict]:
    """The 7B-wide Llama's whole step at context 1024 with its MLP weights
    (gate, up, down) pruned at random to PRUNED_STEP_SPARSITY: the dense
    library (decode.linear) against the --sparse-mlp one (decode.sparse_linear
    on Tiled-CSL), on the same pruned weights, graph replays interleaved."""
    import tempfile
    from fdc.testing import wide_model

    dense_lib = bench.library("wide-bf16-online")
    sparse_lib = bench.library("wide-bf16-sparse")
    config_path = bench.artifacts / "models" / "wide-config.json"
    cfg = json.loads(config_path.read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        hf = wide_model.build(tmp, str(config_path),
                              seed=int.from_bytes(os.urandom(2), "little"))
        hf.eval()
        gen = torch.Generator(device="cuda")
        gen.manual_seed(SPARSE_SEED)
        with torch.no_grad():
            for name, p in hf.named_parameters():
                if ".mlp." in name and name.endswith("_proj.weight"):
                    pruned = torch.rand(p.shape, device=p.device,
                                        generator=gen) < PRUNED_STEP_SPARSITY
                    p.masked_fill_(pruned, 0.0)
        state = hf.state_dict()
        arenas = {"dense": Arena(dense_lib), "sparse": Arena(sparse_lib)}
        read = {k: fill_arena(a, state) for k, a in arenas.items()}
        del state
        embed = dense_lib.weight("model.embed_tokens.weight")["bytes"]
        libraries = {"dense": dense_lib, "sparse": sparse_lib}
        launchers = {k: CudaLauncher(lib) for k, lib in libraries.items()}
        for b in PRUNED_STEP_BATCHES if not bench.quick else (1, 8):
            tokens = torch.randint(0, cfg["vocab_size"], (b,), device="cuda",
                                   generator=bench.gen)
            slots = torch.randperm(b, device="cuda", generator=bench.gen)
            with torch.no_grad():
                ref = hf(tokens.long()[:, None]).logits[:, 0].float()
            checks, contenders, keep = {}, [], []
            cache = torch.zeros(dense_lib.kv_cache_bytes(b, STEP_CONTEXT),
                                dtype=torch.uint8, device="cuda")
            for kind in ("dense", "sparse"):
                # Check: position 0 (the cache holds only the token itself).
                cache.zero_()
                buffers = StepBuffers(bench, libraries[kind], b, b, STEP_CONTEXT,
                                      torch.zeros(b, device="cuda"), slots,
                                      tokens)
                launchers[kind].step(buffers.args(arenas[kind], cache))
                torch.cuda.synchronize()
                checks[kind] = check(rel_err(buffers.logits, ref), STEP_TOLERANCE)
                buffers.positions.fill_(STEP_CONTEXT - 1)
                keep.append(buffers)
            # Timing: every sequence at position 1023 of a random cache.
            cache.view(torch.bfloat16).copy_(bench.randn(cache.numel() // 2))
            for kind, buffers in zip(("dense", "sparse"), keep):
                contenders.append(step_enqueue(
                    launchers[kind], [buffers.args(arenas[kind], cache)], None))
            timed = graph_times_us(contenders, calls=5)
            entry = {"case": {"B": b, "context": STEP_CONTEXT,
                              "sparsity": PRUNED_STEP_SPARSITY},
                     "check": checks}
            for kind, t in zip(("dense", "sparse"), timed):
                floor = models.step_floor_bytes(read[kind], embed, cfg, b,
                                                STEP_CONTEXT)
                entry[kind] = {**bench.hbm(floor, t["us"]),
                               "floor_us": floor / (bench.read_gbps * 1e3),
                               "spread": t["spread"]}
            entry["speedup"] = entry["dense"]["us"] / entry["sparse"]["us"]
            rows.append(entry)
            print(f"pruned step B={b}: dense {entry['dense']['us']:.0f} us, "
                  f"sparse MLP {entry['sparse']['us']:.0f} us "
                  f"({entry['speedup']:.2f}x), err dense "
                  f"{checks['dense']['rel_err']:.1e} sparse "
                  f"{checks['sparse']['rel_err']:.1e}", flush=True)
            del cache, keep, contenders
        del hf, arenas
    torch.cuda.empty_cache()
    return rows


def step(bench: Bench) -> list[dict]:
    """The whole decode step of the 7B-wide Llama at context 1024."""
    import tempfile
    from fdc.testing import wide_model
    from fdc.runtime import Model

    rows = []
    library = bench.library("wide-bf16-online")
    config_path = bench.artifacts / "models" / "wide-config.json"
    cfg = json.loads(config_path.read_text())
    batches = STEP_BATCHES if not bench.quick else (1, 8)
    with tempfile.TemporaryDirectory() as tmp:
        hf = wide_model.build(tmp, str(config_path),
                              seed=int.from_bytes(os.urandom(2), "little"))
        hf.eval()
        state = hf.state_dict()
        arena = Arena(library)
        fill_arena(arena, state)
        embed_bytes = arena.library.weight("model.embed_tokens.weight")["bytes"]
        runtime = Model(bench.artifacts / "models" / "wide-bf16-online.so", tmp,
                        max_context=STEP_CONTEXT + 64, num_slots=max(batches),
                        max_step_rows=STEP_CONTEXT)
        launcher = CudaLauncher(library)
        tuned = bench.tuned_library("wide-bf16-online", library)
        tuned_launcher = CudaLauncher(tuned) if tuned else None
        for b in batches:
            tokens = torch.randint(0, cfg["vocab_size"], (b,), device="cuda",
                                   generator=bench.gen)
            slots = torch.randperm(b, device="cuda", generator=bench.gen)
            # Check: position 0 (the cache holds only the token itself).
            cache = torch.zeros(library.kv_cache_bytes(b, STEP_CONTEXT),
                                dtype=torch.uint8, device="cuda")
            buffers = StepBuffers(bench, library, b, b, STEP_CONTEXT,
                                  torch.zeros(b, device="cuda"), slots, tokens)
            launcher.step(buffers.args(arena, cache))
            torch.cuda.synchronize()
            with torch.no_grad():
                ref = hf(tokens.long()[:, None]).logits[:, 0].float()
            result = check(rel_err(buffers.logits, ref), STEP_TOLERANCE)
            # Timing: every sequence at position 1023 of a random cache.
            cache.view(torch.bfloat16).copy_(bench.randn(cache.numel() // 2))
            buffers.positions.fill_(STEP_CONTEXT - 1)
            args = [buffers.args(arena, cache)]
            contenders = [step_enqueue(launcher, args, None)]
            tuned_graph = tuned_check = None
            if tuned_launcher:
                # The tuned table's step: checked at position 0 like the
                # heuristic one, then timed on the same cache.
                tuned_buffers = StepBuffers(bench, tuned, b, b, STEP_CONTEXT,
                                            torch.zeros(b, device="cuda"),
                                            slots, tokens)
                check_cache = torch.zeros_like(cache)
                tuned_launcher.step(tuned_buffers.args(arena, check_cache))
                torch.cuda.synchronize()
                tuned_check = check(rel_err(tuned_buffers.logits, ref),
                                    STEP_TOLERANCE)
                del check_cache
                tuned_buffers.positions.fill_(STEP_CONTEXT - 1)
                contenders.append(step_enqueue(
                    tuned_launcher, [tuned_buffers.args(arena, cache)], None))
            # The step and its tuned table's, replays interleaved.
            timed = graph_times_us(contenders, calls=5)
            graph = timed[0]
            if tuned_launcher:
                tuned_graph = timed[1]
                del tuned_buffers
            # Where the step's time goes: each kernel the step launches at
            # this batch (its dispatch tables pick among the library's)
            # alone, 20 calls per replay (weights under ~50 MB then stay in
            # L2: a lower bound).
            launcher.step(args[0])
            torch.cuda.synchronize()
            kernels = {k: time_fdc(launcher, args, {k})["us"]
                       for k in dict.fromkeys(launcher.launched)}
            floor_bytes = models.step_floor_bytes(
                library.weights_bytes, embed_bytes, cfg, b, STEP_CONTEXT)
            entry = {"case": {"B": b, "context": STEP_CONTEXT},
                     "floor": bench.hbm(floor_bytes, floor_bytes /
                                        (bench.read_gbps * 1e3)),
                     "fdc_graph": bench.hbm(floor_bytes, graph["us"]),
                     "kernels_us": kernels, "check": result}
            if tuned_graph:
                entry["fdc_graph_tuned"] = bench.hbm(floor_bytes, tuned_graph["us"])
                entry["check_tuned"] = tuned_check
            entry["fdc_runtime"] = bench.hbm(
                floor_bytes, runtime_token_us(runtime, cfg, b))
            entry["hf_eager"] = bench.hbm(floor_bytes, hf_token_us(hf, cfg, b))
            rows.append(entry)
            if tuned_graph:
                print(f"step B={b}: fdc graph with the tuned table "
                      f"{tuned_graph['us']:.0f} us", flush=True)
            print(f"step B={b}: fdc graph {graph['us']:.0f} us, fdc runtime "
                  f"{entry['fdc_runtime']['us']:.0f} us, HF eager "
                  f"{entry['hf_eager']['us']:.0f} us, floor "
                  f"{entry['floor']['us']:.0f} us, err {result['rel_err']:.1e}",
                  flush=True)
            del cache, buffers
        runtime.close()
        # Compiling may take minutes: keep what is measured so far on disk.
        bench.results["families"]["step"] = {"rows": rows, "partial": True}
        bench.save()
        compiled = hf_compiled(hf, cfg, batches, bench,
                               budget_s=min(240.0, bench.remaining_s() - 90))
        for entry in rows:
            entry["hf_compiled"] = compiled.get(entry["case"]["B"])
            if isinstance(entry["hf_compiled"], dict) and "us" in entry["hf_compiled"]:
                entry["hf_compiled"] = bench.hbm(entry["floor"]["bytes"],
                                                 entry["hf_compiled"]["us"])
        del hf, state, arena
    torch.cuda.empty_cache()
    return rows


def serving(bench: Bench) -> list[dict]:
    """Serving the 7B-wide Llama: fdc's fused engine against one request at
    a time, static batches and transformers under Poisson arrivals; the
    time to first token of a long prompt; a soak (fdc.bench.serving)."""
    return serving_bench.family(bench)


def _prompts(cfg, b: int, length: int) -> torch.Tensor:
    return torch.randint(0, cfg["vocab_size"], (b, length))


def runtime_token_us(runtime, cfg, b: int, new: int = 129) -> float:
    """Per-token latency of the fdc C runtime (its step graphs, no Python
    callback): (T(new tokens) - T(1 token)) / (new - 1) of generate_batch
    for b requests whose prompts end at context 1024, as for transformers;
    the prompts are read in chunks in both, so the difference is new - 1
    decode steps of b rows."""
    prompts = _prompts(cfg, b, STEP_CONTEXT - new).tolist()

    def run(tokens):
        def go():
            runtime.generate_batch([{"prompt_ids": p, "max_new_tokens": tokens}
                                    for p in prompts])
        return go
    run(new)()  # warm-up: every batch size's step graph is captured
    return (wall_time_s(run(new), 5) - wall_time_s(run(1), 5)) / (new - 1) * 1e6


def hf_token_us(hf, cfg, b: int, new: int = 33) -> float:
    """Per-token latency of transformers' generate after a prompt of 1024:
    (time of `new` tokens - time of 1) / (new - 1), after a warm-up."""
    prompt = _prompts(cfg, b, STEP_CONTEXT).cuda()

    def run(tokens):
        def go():
            with torch.no_grad():
                hf.generate(prompt, max_new_tokens=tokens, min_new_tokens=tokens,
                            do_sample=False, pad_token_id=0)
        return go
    run(new)()  # warm-up (and, with torch.compile, the compilation)
    return (wall_time_s(run(new), 2) - wall_time_s(run(1), 2)) / (new - 1) * 1e6


def hf_compiled(hf, cfg, batches, bench: Bench, budget_s: float = 240.0) -> dict:
    """transformers with its static cache, whose decode steps generate()
    runs through torch.compile, if that runs within the budget;
    {batch: {"us"} or {"error"}}."""
    out = {}
    start = time.perf_counter()
    if budget_s < 60:
        return {b: {"error": "skipped: the run's time budget is spent"}
                for b in batches}
    try:
        # generate() compiles the decode forward itself for a static cache
        # (and marks its CUDA-graph steps, which wrapping forward in
        # torch.compile by hand does not: that fails on replay).
        from transformers import CompileConfig
        hf.generation_config.cache_implementation = "static"
        hf.generation_config.compile_config = CompileConfig(
            fullgraph=True, mode="reduce-overhead")
    except Exception as err:
        return {b: {"error": f"{type(err).__name__}: {err}"[:160]} for b in batches}
    for b in batches:
        if time.perf_counter() - start > budget_s:
            out[b] = {"error": f"skipped: compile budget of {budget_s:.0f} s spent"}
            continue
        try:
            out[b] = {"us": hf_token_us(hf, cfg, b)}
        except Exception as err:
            out[b] = {"error": f"{type(err).__name__}: {str(err).splitlines()[0]}"[:160]}
        print(f"step B={b}: HF static+compile {out[b]}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifacts", type=Path, default=Path(".bench-artifacts"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--quick", action="store_true",
                    help="a few sizes per family (a smoke run)")
    ap.add_argument("--linear-m", default="",
                    help="comma-separated batch sizes for the linear family "
                         "(default: %s)" % ",".join(map(str, M_VALUES)))
    ap.add_argument("--budget-s", type=float, default=780.0,
                    help="wall-time budget; the optional transformers "
                         "torch.compile measurement gets what is left of it "
                         "less 90 s, the serving family (last) up to 240 s "
                         "of what is left then (its quick plan below 150 s)")
    args = ap.parse_args(argv)
    families = [f for f in args.families.split(",") if f]
    unknown = set(families) - set(FAMILIES)
    if unknown:
        ap.error(f"unknown families {sorted(unknown)}; choose from {FAMILIES}")
    if not torch.cuda.is_available():
        print("SKIP: no CUDA GPU (the benchmark suite needs one)")
        return 0
    if not (args.artifacts / "models").is_dir():
        print(f"error: {args.artifacts}/models is missing: run "
              "`python -m fdc.bench.prepare` where fdc is built", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("FDC_RUNTIME_LIB",
                          str(args.artifacts / "lib" / "libfdc_runtime.so"))
    # torch's SDPA and sparse warnings would bury the tables.
    warnings.filterwarnings("ignore", category=UserWarning)
    bench = Bench(args.artifacts, args.out, args.quick, args.budget_s)
    bench.linear_m = tuple(int(m) for m in args.linear_m.split(",") if m)
    if "ceilings" not in families:
        families.insert(0, "ceilings")  # every row needs the read ceiling
    failed = []
    for family in families:
        start = time.perf_counter()
        try:
            rows = globals()[family](bench)
            bench.results["families"][family] = {
                "rows": rows, "seconds": time.perf_counter() - start}
            print(f"{family}: {time.perf_counter() - start:.0f} s", flush=True)
        except Exception:
            failed.append(family)
            bench.results["families"][family] = {"error": traceback.format_exc()}
            traceback.print_exc()
        torch.cuda.empty_cache()
        bench.save()
    markdown = report.markdown(bench.results)
    plots = report.plots(bench.results, args.out)
    print(f"\nwrote {args.out / 'results.json'}, {args.out / 'perf.md'}"
          + (f", {len(plots)} plots" if plots else " (no plots: matplotlib missing)"))
    print(markdown)
    bad = report.failed_checks(bench.results)
    if bad:
        print("FAILED CHECKS: " + "; ".join(bad))
    if failed:
        print("FAILED FAMILIES: " + ", ".join(failed))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
