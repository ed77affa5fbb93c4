"""What a plain read of N bytes reaches when timed as the kernels are (CUDA
graph replay, inputs rotated over > 3x L2, a call per set and at least 20
a replay: fdc.bench.timing): the reference the suite gives a mid-size kernel's
bandwidth, launch, first loads and tail included.

torch.sum alone understates it: on the H100 (2026-12-07) its read of 64 MiB
took 29.6 µs, 74 % of the 4 GiB ceiling, where a Triton kernel of programs
of 2,048 f32s (8 warps, one load each) read it in 23.1 µs (94 %). So the
read is the fastest of torch.sum and a few Triton read kernels (many small
programs, each summing its f32s into one), where triton imports. Each Triton
read is first checked to read every element, so a read that skips bytes
cannot pass for the fastest."""

from __future__ import annotations

from typing import Callable

# (elements per program, warps) of the Triton read kernels: those that won
# a wider search on the H100 at 16 MiB - 272 MB (docs/perf.md, "Measured on
# 2026-12-07, 07:44-08:16 UTC": one load per program; runs of 4 - 16 loads
# a program and persistent programs lost at every size).
TRITON_CONFIGS = ((1024, 4), (2048, 8), (4096, 8))

_kernel = None


def _triton_kernel():
    """The Triton read kernel, or None where triton does not import."""
    global _kernel
    if _kernel is not None:
        return _kernel or None
    try:
        import triton
        import triton.language as tl
    except ImportError:
        _kernel = False
        return None

    @triton.jit
    def read_sum(x, out, n, BLOCK: tl.constexpr):
        program = tl.program_id(0)
        offsets = program.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        values = tl.load(x + offsets, mask=offsets < n, other=0.0)
        tl.store(out + program, tl.sum(values, axis=0))

    _kernel = (triton, read_sum)
    return _kernel


def contenders(sets: list) -> dict[str, Callable[[int], None]]:
    """The plain reads of one f32 CUDA tensor of `sets` per call i (i mod
    len(sets)), by name: torch.sum, and each Triton config where triton
    imports, each first checked to read every element (on ones, its
    programs' sums must add up to the element count exactly)."""
    import torch

    n = sets[0].numel()
    total = torch.empty((), dtype=torch.float32, device=sets[0].device)
    reads = {"torch.sum": lambda i: torch.sum(sets[i % len(sets)], dim=0,
                                              out=total)}
    kernel = _triton_kernel()
    if kernel is None:
        return reads
    triton, read_sum = kernel
    ones = torch.ones(n, dtype=torch.float32, device=sets[0].device)
    for block, warps in TRITON_CONFIGS:
        name = f"Triton, {block} elements / {warps} warps a program"
        programs = triton.cdiv(n, block)
        partial = torch.empty(programs, dtype=torch.float32,
                              device=sets[0].device)
        read_sum[(programs,)](ones, partial, n, BLOCK=block, num_warps=warps)
        counted = int(partial.double().sum().item())
        if counted != n:
            raise RuntimeError(f"plain read '{name}' read {counted} of {n} "
                               "elements")

        def enqueue(i, programs=programs, partial=partial, block=block,
                    warps=warps):
            read_sum[(programs,)](sets[i % len(sets)], partial, n,
                                  BLOCK=block, num_warps=warps)
        reads[name] = enqueue
    del ones
    return reads


def fastest(times: dict[str, dict], nbytes: int) -> dict:
    """The fastest of the contenders' graph times (name -> {us, spread})
    for a read of `nbytes`: {us, gbps, spread, by (its name),
    torch_sum_us}."""
    by = min(times, key=lambda name: times[name]["us"])
    best = times[by]
    return {"us": best["us"], "gbps": nbytes / best["us"] / 1e3,
            "spread": best["spread"], "by": by,
            "torch_sum_us": times["torch.sum"]["us"]}


def plain_read(randn: Callable[[int], object], nbytes: int,
               l2_bytes: int) -> dict:
    """The fastest plain read of `nbytes` (f32 CUDA tensors from
    randn(numel), as many as timing.rotation gives), timed as the kernels
    are, the contenders' replays interleaved (fastest's result)."""
    from .timing import calls_for, graph_times_us, rotation

    numel = max(nbytes // 4, 1)
    nbytes = numel * 4
    sets = [randn(numel) for _ in range(rotation(nbytes, l2_bytes))]
    reads = contenders(sets)
    times = dict(zip(reads, graph_times_us(list(reads.values()),
                                           calls=calls_for(len(sets)))))
    del sets
    return fastest(times, nbytes)
