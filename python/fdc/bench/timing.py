"""Timing on the GPU, the same way for fdc and for its peers (the method of
shared/design/ANCHORS.md): the calls are captured in a CUDA graph, CALLS per
graph, each call on the next of a rotation of input sets (so that inputs
come from HBM, not L2); the graph is replayed after a warm-up, each replay
between two CUDA events, and the median replay time divided by CALLS is the
time of one call."""

from __future__ import annotations

import math
import statistics
import time
from typing import Callable

CALLS = 20
# The most input sets a rotation takes: 300 sets of the smallest attention
# cache (bf16 MQA, B = 1, S = 1024: 0.5 MB) span 3x a 50 MiB L2.
MAX_SETS = 512


def rotation(bytes_per_set: int, l2_bytes: int, cap: int = MAX_SETS) -> int:
    """How many input sets to rotate over so that they span 3x L2 (one set
    that large already streams from HBM on every call)."""
    return max(1, min(cap, math.ceil(3 * l2_bytes / max(bytes_per_set, 1))))


def calls_for(sets: int) -> int:
    """Calls per graph for a rotation of `sets` input sets: CALLS, or one
    per set where there are more, so that a replay reads every set (a
    replay of CALLS calls over sets spanning less than 3x L2 would find
    them in L2). Until 2026-12-07 the rotation stopped at CALLS sets, so
    inputs under 3x L2 / CALLS (7.5 MiB on the H100) were partly read from
    L2."""
    return max(CALLS, sets)


def graph_time_us(enqueue: Callable[[int], None], calls: int = CALLS,
                  budget_s: float = 0.25, min_replays: int = 5,
                  max_replays: int = 50) -> dict:
    """Median µs of one enqueue(i) (i = 0..calls-1) under graph replay.

    Returns {"us", "spread"}: spread is (max - min) / median over the timed
    replays."""
    return graph_times_us([enqueue], calls, budget_s, min_replays,
                          max_replays)[0]


def graph_times_us(enqueues: list[Callable[[int], None]], calls: int = CALLS,
                   budget_s: float = 0.25, min_replays: int = 5,
                   max_replays: int = 50) -> list[dict]:
    """graph_time_us of several contenders (fdc, its tuned table, the peer),
    their replays interleaved (A B C A B C ...), so that a change of clocks
    or temperature during the measurement weighs on each alike instead of
    on whichever is timed last."""
    import torch

    graphs = []
    for enqueue in enqueues:
        for i in range(min(calls, 3)):  # loads modules, sets up handles
            enqueue(i)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for i in range(calls):
                enqueue(i)
        graph.replay()
        graphs.append(graph)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for graph in graphs:
        graph.replay()
    torch.cuda.synchronize()
    once = time.perf_counter() - start
    replays = int(min(max_replays, max(min_replays, budget_s / max(once, 1e-6))))
    events = [[(torch.cuda.Event(enable_timing=True),
                torch.cuda.Event(enable_timing=True)) for _ in graphs]
              for _ in range(replays)]
    for round_events in events:
        for graph, (begin, end) in zip(graphs, round_events):
            begin.record()
            graph.replay()
            end.record()
    torch.cuda.synchronize()
    results = []
    for g in range(len(graphs)):
        times = [round_events[g][0].elapsed_time(round_events[g][1]) * 1000.0
                 / calls for round_events in events]
        median = statistics.median(times)
        results.append({"us": median,
                        "spread": (max(times) - min(times)) / median})
    del graphs
    return results


def event_time_us(run: Callable[[], None], repeats: int = 10) -> dict:
    """Median µs of run() timed eagerly between events (large operations
    whose launch cost is negligible)."""
    import torch

    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        begin, end = (torch.cuda.Event(enable_timing=True),
                      torch.cuda.Event(enable_timing=True))
        begin.record()
        run()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) * 1000.0)
    median = statistics.median(times)
    return {"us": median, "spread": (max(times) - min(times)) / median}


def wall_time_s(run: Callable[[], None], repeats: int = 3) -> float:
    """Median host wall time of run() (whole generate calls)."""
    import torch

    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
