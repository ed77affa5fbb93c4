"""The serving benchmark (the suite's ``serving`` family, issue 14): fdc's
fused engine against one request at a time, static batching and
transformers, on a seeded workload of requests arriving at random.

Workload: ``Plan.requests`` requests, each with a seeded random prompt
(length uniform in ``prompt_range``, ids uniform in the vocabulary) and a
seeded output length (uniform in ``output_range``), greedy, no EOS. Arrival
times are Poisson: exponential gaps of mean 1 / rate (one seeded draw of
unit gaps, scaled by 1 / rate, so every rate sees the same pattern; the
first request arrives at 0), or all at 0 ("saturation").

Modes, each giving every request's arrival, token times and ids:

- ``fdc fused``: one ``Model.engine(step_tokens)``; the main thread submits
  each request at its arrival time; ``on_token`` stamps each token.
  Measured live at saturation and at fractions of the fused capacity (the
  requests per second it served at saturation).
- ``fdc one at a time``: ``generate_batch`` of one request, FIFO.
- ``fdc static B=8`` / ``B=32``: groups of B in arrival order; a group starts
  when its last member has arrived and the previous group has finished (its
  slowest member), through ``generate_batch``.
- ``transformers one at a time``: ``generate`` (bf16, greedy, eager) with a
  streamer stamping each token, on the first ``hf_requests`` requests.

The batch modes serve FIFO and what they do with a batch does not depend on
when it arrived, so each is measured live once back to back (all arrived at
0) and its timelines at the other rates are computed from the measured
service times: a batch starts at max(its last arrival, the previous batch's
end) and its tokens keep their measured offsets from its start (``replay``).

Metrics (``metrics``): throughput = generated tokens / (last token - first
arrival); time to first token = first token - arrival (scheduled arrival:
what a client sees, including any lateness of the submitting thread);
inter-token latency = gaps between consecutive tokens of a request, pooled;
p50 / p99 with linear interpolation.

Also: the fused decode step at a full batch (``decode_step_s``), the time to
first token of one long prompt read in chunks, one token per step, and by
transformers (``ttft_comparison``), and a soak (``soak``): many short
requests, some cancelled, through one engine, with device memory and RSS
sampled after a warm-up and at the end.

Everything but ``family`` (which builds the 7B-wide model on the GPU) runs
on any fdc model: the tests run it on a tiny host-target library.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import gc
import math
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

# Modes (the names the results and the report use).
FUSED = "fdc fused"
ONE_AT_A_TIME = "fdc one at a time"
TRANSFORMERS = "transformers one at a time"


def static_mode(batch: int) -> str:
    return f"fdc static B={batch}"


# How close (in RMS of the logits row) the token a batched run chose must be
# to the single run's best for the two to part there: a near-tie that the
# other kernels' rounding of a batched step may flip. 4 x 3e-2, the noise of
# bf16 logits that the step family allows (docs/perf.md, Method).
NEAR_TIE_RMS = 0.12
# How often the main thread looks whether an engine's requests are done.
POLL_S = 0.005


@contextlib.contextmanager
def collector_paused():
    """Pauses Python's cyclic garbage collector (collecting first) while a
    timed run goes on, as timeit does. In the suite's process, which holds
    torch and transformers, one collection takes milliseconds on whichever
    thread triggers it; on the engine's thread (the on_token stamps) those
    pauses were most of every mode's inter-token tail."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass(frozen=True)
class Plan:
    """Sizes, seeds and time caps of one serving benchmark."""

    requests: int = 256
    seed: int = 14
    prompt_range: tuple[int, int] = (32, 1024)
    output_range: tuple[int, int] = (32, 512)
    # KV-cache slots of the model (the fused engine's largest batch).
    num_slots: int = 64
    # The fused engine's rows per step: a decode row per running request,
    # the rest prompt chunks.
    step_tokens: int = 128
    # Poisson rates, as fractions of the fused capacity at saturation.
    rate_fractions: tuple[float, ...] = (1.0, 0.75, 0.5, 0.25)
    static_batches: tuple[int, ...] = (32, 8)
    hf_requests: int = 16
    # Fused ids against one at a time, before anything is timed.
    check_requests: int = 4
    check_tokens: int = 48
    # Time to first token of one prompt of this length.
    ttft_prompt: int = 1024
    ttft_repeats: int = 3
    # The decode step at a full batch, timed at contexts decode_context to
    # decode_context + decode_tokens.
    decode_context: int = 600
    decode_tokens: int = 32
    # Step graphs are captured per batch size on first use: run each size
    # up to this once before timing (the CUDA backend's largest graph).
    graph_rows: int = 256
    soak_requests: int = 10_000
    soak_prompt_range: tuple[int, int] = (4, 32)
    soak_output_range: tuple[int, int] = (1, 16)
    soak_cancel_fraction: float = 0.1
    soak_in_flight: int = 128
    soak_checked: int = 16  # requests whose ids are checked against single runs
    # Growth allowed between the soak's warm-up and its end.
    soak_device_mib: float = 16.0
    soak_rss_mib: float = 32.0
    # Seconds: the whole family, and the caps of its parts.
    budget_s: float = 240.0
    fused_cap_s: float = 30.0
    rates_cap_s: float = 50.0
    one_at_a_time_cap_s: float = 40.0
    static_cap_s: float = 20.0
    hf_cap_s: float = 25.0
    soak_cap_s: float = 30.0

    @property
    def max_context(self) -> int:
        """What every request needs (prompt + output): the workload's, the
        long prompt's, the decode step's and the soak's."""
        return max(self.prompt_range[1] + self.output_range[1], self.ttft_prompt + 1,
                   1 + self.decode_context + self.decode_tokens,
                   self.soak_prompt_range[1] + self.soak_output_range[1])

    @property
    def max_step_rows(self) -> int:
        """The model's rows per step: the long prompt in one chunk (and
        generate / generate_batch read prompts in chunks this large)."""
        return max(self.ttft_prompt, self.step_tokens, self.num_slots)

    @classmethod
    def quick(cls) -> "Plan":
        return cls(requests=32, rate_fractions=(0.5,), hf_requests=4,
                   check_requests=2, ttft_repeats=2, soak_requests=1000,
                   soak_checked=8, budget_s=90.0, fused_cap_s=15.0,
                   rates_cap_s=15.0, one_at_a_time_cap_s=10.0,
                   static_cap_s=8.0, hf_cap_s=8.0, soak_cap_s=10.0)


# ---------------------------------------------------------------------------
# The workload.
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Request:
    index: int
    prompt: np.ndarray  # int32 token ids
    max_new_tokens: int


def make_workload(count: int, vocab: int, seed: int,
                  prompt_range: tuple[int, int] = (32, 1024),
                  output_range: tuple[int, int] = (32, 512)) -> list[Request]:
    """`count` requests: prompt lengths and output lengths uniform in their
    (inclusive) ranges, prompt ids uniform in [0, vocab); one seed, one
    workload."""
    rng = np.random.default_rng([seed, 0])
    prompts = rng.integers(prompt_range[0], prompt_range[1] + 1, count)
    outputs = rng.integers(output_range[0], output_range[1] + 1, count)
    return [Request(i, rng.integers(0, vocab, int(n)).astype(np.int32),
                    int(out)) for i, (n, out) in enumerate(zip(prompts, outputs))]


def arrival_times(count: int, rate: float | None, seed: int) -> np.ndarray:
    """Seconds from the first arrival: Poisson at `rate` requests per second
    (the same seeded unit gaps scaled by 1 / rate), or all 0 for rate None
    (saturation)."""
    if rate is None:
        return np.zeros(count)
    if not rate > 0:
        raise ValueError(f"rate must be > 0, got {rate}")
    gaps = np.random.default_rng([seed, 1]).exponential(1.0, count)
    return np.concatenate(([0.0], np.cumsum(gaps[:count - 1]))) / rate


# ---------------------------------------------------------------------------
# Timelines and their metrics.
# ---------------------------------------------------------------------------

@dataclass
class Timeline:
    """One request as served: seconds from the run's start."""

    index: int
    arrival: float
    tokens: list[float] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)
    finish_reason: str = ""


@dataclass(frozen=True)
class Batch:
    """One batch a batch mode ran: its members (positions in the run's
    timelines) and when it started and ended (seconds from the run's
    start)."""

    members: tuple[int, ...]
    start: float
    end: float


def percentile(values, q: float) -> float | None:
    """The q-th percentile (linear interpolation), None for no values."""
    return float(np.percentile(values, q)) if len(values) else None


def _ms(value):
    return None if value is None else value * 1e3


def metrics(timelines: list[Timeline]) -> dict:
    """Throughput (generated tokens / (last token - first arrival)), time
    to first token and inter-token latency (p50, p99, ms)."""
    served = [t for t in timelines if t.tokens]
    tokens = sum(len(t.tokens) for t in timelines)
    span = None
    if served:
        span = max(t.tokens[-1] for t in served) - min(t.arrival for t in timelines)
    ttft = [t.tokens[0] - t.arrival for t in served]
    itl = [b - a for t in served for a, b in zip(t.tokens, t.tokens[1:])]
    return {"requests": len(timelines),
            "complete": sum(t.finish_reason == "length" for t in timelines),
            "tokens": tokens, "duration_s": span,
            "throughput": tokens / span if span else None,
            "ttft_ms": {"p50": _ms(percentile(ttft, 50)),
                        "p99": _ms(percentile(ttft, 99))},
            "itl_ms": {"p50": _ms(percentile(itl, 50)),
                       "p99": _ms(percentile(itl, 99))}}


def replay(timelines: list[Timeline], batches: list[Batch],
           arrivals) -> list[Timeline]:
    """The timelines of a FIFO batch server whose batches were measured
    back to back (`timelines`, `batches`) when the requests arrive at
    `arrivals` (by position): each batch starts at max(its last member's
    arrival, the previous batch's end) and lasts as measured; its tokens
    keep their offsets from its start."""
    out: list[Timeline | None] = [None] * len(timelines)
    free = -math.inf
    for batch in batches:
        start = max(max(float(arrivals[m]) for m in batch.members), free)
        shift = start - batch.start
        for m in batch.members:
            t = timelines[m]
            out[m] = Timeline(t.index, float(arrivals[m]),
                              [x + shift for x in t.tokens], t.ids,
                              t.finish_reason)
        free = start + (batch.end - batch.start)
    return [t for t in out if t is not None]


# ---------------------------------------------------------------------------
# Runners.
# ---------------------------------------------------------------------------

def _stamper(times: list[float]):
    """An on_token callback appending the host clock to `times`."""
    append, clock = times.append, time.perf_counter

    def on_token(_step, _token):
        append(clock())
    return on_token


def _sleep_until(moment: float) -> None:
    delay = moment - time.perf_counter()
    if delay > 0:
        time.sleep(delay)


def _relative(times: list[float], start: float) -> list[float]:
    return [t - start for t in times]


@collector_paused()
def run_fused(model, requests: list[Request], arrivals, step_tokens: int,
              cap_s: float = math.inf) -> list[Timeline]:
    """Every request through one engine (`step_tokens` rows a step),
    submitted at its arrival time. Requests not submitted within `cap_s`
    are left out; ones still running then are cancelled."""
    stamps: list[list[float]] = []
    submitted = []
    with model.engine(step_tokens) as engine:
        start = time.perf_counter()
        deadline = start + cap_s
        for request, arrival in zip(requests, arrivals):
            _sleep_until(start + float(arrival))
            if time.perf_counter() > deadline:
                break
            stamps.append([])
            submitted.append(engine.submit(request.prompt, request.max_new_tokens,
                                           on_token=_stamper(stamps[-1])))
        while engine.pending and time.perf_counter() < deadline:
            time.sleep(POLL_S)
        if engine.pending:
            for request_id in submitted:
                engine.cancel(request_id)
        results = [engine.wait(request_id) for request_id in submitted]
    return [Timeline(r.index, float(a), _relative(s, start), res["ids"],
                     res["finish_reason"])
            for r, a, s, res in zip(requests, arrivals, stamps, results)]


@collector_paused()
def run_batched(model, requests: list[Request], arrivals, batch: int,
                cap_s: float = math.inf) -> tuple[list[Timeline], list[Batch]]:
    """FIFO batches of `batch` requests through generate_batch: a batch
    starts when its last member has arrived and the previous batch has
    finished. No batch starts after `cap_s`."""
    timelines: list[Timeline] = []
    batches: list[Batch] = []
    start = time.perf_counter()
    for first in range(0, len(requests), batch):
        if time.perf_counter() - start > cap_s:
            break
        group = requests[first:first + batch]
        times = [float(a) for a in arrivals[first:first + len(group)]]
        _sleep_until(start + max(times))
        stamps = [[] for _ in group]
        began = time.perf_counter()
        results = model.generate_batch(
            [{"prompt_ids": r.prompt, "max_new_tokens": r.max_new_tokens,
              "on_token": _stamper(s)} for r, s in zip(group, stamps)])
        ended = time.perf_counter()
        members = tuple(range(len(timelines), len(timelines) + len(group)))
        timelines += [Timeline(r.index, a, _relative(s, start), res["ids"],
                               res["finish_reason"])
                      for r, a, s, res in zip(group, times, stamps, results)]
        batches.append(Batch(members, began - start, ended - start))
    return timelines, batches


class _StampStreamer:
    """A transformers streamer stamping every generated token (generate
    puts the prompt first, then each new token)."""

    def __init__(self, times: list[float]):
        self.times, self.prompt_seen = times, False

    def put(self, _value):
        if self.prompt_seen:
            self.times.append(time.perf_counter())
        self.prompt_seen = True

    def end(self):
        pass


def _hf_generate(hf, prompt: np.ndarray, new_tokens: int, times: list[float]):
    """transformers' greedy generate of exactly `new_tokens` tokens after
    `prompt`, each stamped in `times`; returns the new ids."""
    import torch

    ids = torch.from_numpy(prompt.astype(np.int64))[None].to(hf.device)
    with torch.no_grad():
        out = hf.generate(ids, attention_mask=torch.ones_like(ids),
                          max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                          do_sample=False, pad_token_id=0,
                          streamer=_StampStreamer(times))
    return out[0, ids.shape[1]:].tolist()


@collector_paused()
def run_hf(hf, requests: list[Request], arrivals,
           cap_s: float = math.inf) -> tuple[list[Timeline], list[Batch]]:
    """transformers one request at a time, FIFO (as run_batched of 1)."""
    timelines: list[Timeline] = []
    batches: list[Batch] = []
    start = time.perf_counter()
    for request, arrival in zip(requests, arrivals):
        if time.perf_counter() - start > cap_s:
            break
        _sleep_until(start + float(arrival))
        times: list[float] = []
        began = time.perf_counter()
        ids = _hf_generate(hf, request.prompt, request.max_new_tokens, times)
        ended = time.perf_counter()
        reason = "length" if len(ids) == request.max_new_tokens else "short"
        batches.append(Batch((len(timelines),), began - start, ended - start))
        timelines.append(Timeline(request.index, float(arrival),
                                  _relative(times, start), ids, reason))
    return timelines, batches


# ---------------------------------------------------------------------------
# Correctness: batched ids against single runs.
# ---------------------------------------------------------------------------

def compare_ids(got: list[int], want: list[int], want_logits,
                near_tie: float = NEAR_TIE_RMS) -> tuple[bool, str]:
    """Whether a batched run's ids `got` agree with a single run's `want`:
    equal, or equal up to a step where the single run's logits put `got`'s
    token within `near_tie` x their RMS of their best (a near-tie; after it
    the sequences differ, so nothing later is compared). Returns (ok, how)."""
    if len(got) != len(want):
        return False, f"{len(got)} tokens, one at a time {len(want)}"
    step = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
    if step is None:
        return True, "identical"
    row = np.asarray(want_logits[step], dtype=np.float64)
    rms = float(np.sqrt(np.mean(row ** 2)))
    margin = float(row.max() - row[got[step]]) / rms if rms else math.inf
    ok = margin <= near_tie
    return ok, (f"part at step {step} ({'near-tie' if ok else 'NOT a near-tie'}: "
                f"{margin:.3f} RMS below the best, tolerance {near_tie})")


def _check_row(what: str, ok: bool, detail: str) -> dict:
    return {"kind": "check", "case": {"what": what},
            "check": {"ok": bool(ok), "what": f"{what}: {detail}"}}


def check_fused_ids(model, requests: list[Request], step_tokens: int) -> dict:
    """Fused (all at once through an engine) against one at a time
    (generate with logits), greedy."""
    fused = run_fused(model, requests, np.zeros(len(requests)), step_tokens)
    outcomes = []
    for request, timeline in zip(requests, fused):
        ids, logits = model.generate(request.prompt, request.max_new_tokens,
                                     return_logits=True)
        outcomes.append(compare_ids(timeline.ids, ids, logits))
    identical = sum(how == "identical" for _, how in outcomes)
    parted = [f"request {r.index}: {how}" for r, (_, how) in zip(requests, outcomes)
              if how != "identical"]
    detail = f"{identical} of {len(requests)} identical" + \
        ("; " + "; ".join(parted) if parted else "")
    return _check_row("fused ids vs one at a time", all(ok for ok, _ in outcomes),
                      detail)


# ---------------------------------------------------------------------------
# Step time, time to first token, soak.
# ---------------------------------------------------------------------------

def warm_step_graphs(model, rows: int) -> None:
    """One step of each batch size 1..rows (a prompt of that many tokens,
    one token out): the CUDA backend captures a step graph for each batch
    size on its first use, which must not land in a timed run."""
    for k in range(1, min(rows, model.max_step_rows) + 1):
        model.generate(np.ones(k, dtype=np.int32), 1)


@collector_paused()
def decode_step_s(model, vocab: int, context: int, tokens: int,
                  seed: int) -> float:
    """The fused step at a full batch, at contexts from `context` on:
    num_slots requests of one prompt token, each generating context +
    tokens tokens, through an engine of num_slots rows a step (one row per
    running request, no prompt chunks). The median gap between consecutive
    tokens of any request past its `context`-th token while every request
    runs (from the last submit to the first finish): a step of num_slots
    rows, each token streamed to Python as in the serving runs."""
    rng = np.random.default_rng([seed, 2])
    batch = model.num_slots
    stamps: list[list[float]] = [[] for _ in range(batch)]
    with model.engine(batch) as engine:
        ids = [engine.submit(rng.integers(0, vocab, 1).astype(np.int32),
                             context + tokens, on_token=_stamper(s))
               for s in stamps]
        all_running = time.perf_counter()
        for request_id in ids:
            engine.wait(request_id)
    first_finish = min(s[-1] for s in stamps)
    gaps = [b - a for s in stamps for a, b in zip(s[context:], s[context + 1:])
            if a >= all_running and b <= first_finish]
    if not gaps:
        raise RuntimeError("decode step: no step ran with every request running")
    return float(np.median(gaps))


def engine_ttft_s(model, prompt: np.ndarray, step_tokens: int) -> float:
    """Seconds from submitting `prompt` alone to an engine of `step_tokens`
    rows a step to its first token."""
    stamps: list[float] = []
    with model.engine(step_tokens) as engine:
        began = time.perf_counter()
        engine.wait(engine.submit(prompt, 1, on_token=_stamper(stamps)))
    return stamps[0] - began


def hf_ttft_s(hf, prompt: np.ndarray) -> float:
    """Seconds from calling transformers' generate on `prompt` to its first
    token (the prefill and one sampling)."""
    times: list[float] = []
    began = time.perf_counter()
    _hf_generate(hf, prompt, 1, times)
    return times[0] - began


def _median_of(measure: Callable[[], float], repeats: int) -> float:
    measure()  # warm-up
    return float(np.median([measure() for _ in range(repeats)]))


@collector_paused()
def ttft_comparison(model, open_model, hf, plan: Plan, vocab: int) -> dict:
    """The time to first token of one prompt of plan.ttft_prompt tokens:
    read in chunks of up to max_step_rows (the model's largest), one token
    per step (a model of one slot and one row a step), and by transformers."""
    prompt = np.random.default_rng([plan.seed, 3]).integers(
        0, vocab, plan.ttft_prompt).astype(np.int32)
    chunk = model.max_step_rows
    chunked = _median_of(lambda: engine_ttft_s(model, prompt, chunk),
                         plan.ttft_repeats)
    single = open_model(num_slots=1, max_step_rows=1,
                        max_context=plan.ttft_prompt + 1)
    try:
        per_step = _median_of(lambda: engine_ttft_s(single, prompt, 1),
                              max(1, plan.ttft_repeats - 1))
    finally:
        single.close()
    row = {"kind": "ttft", "case": {"prompt": plan.ttft_prompt},
           "chunk_rows": chunk, "fdc_chunked_ms": chunked * 1e3,
           "fdc_one_per_step_ms": per_step * 1e3,
           "one_per_step_over_chunked": per_step / chunked,
           "hf_prefill_ms": None, "hf_over_fdc_chunked": None}
    if hf is not None:
        prefill = _median_of(lambda: hf_ttft_s(hf, prompt), plan.ttft_repeats)
        row.update(hf_prefill_ms=prefill * 1e3, hf_over_fdc_chunked=prefill / chunked)
    return row


def rss_bytes() -> int | None:
    """This process's resident set (VmRSS of /proc/self/status)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _memory_sample(done: int, device_free_bytes) -> dict:
    gc.collect()
    return {"requests_done": done, "rss_bytes": rss_bytes(),
            "device_free_bytes": device_free_bytes() if device_free_bytes else None}


def _growth_mib(before: dict, after: dict, key: str, sign: int) -> float | None:
    if before[key] is None or after[key] is None:
        return None
    return sign * (after[key] - before[key]) / 2**20


@dataclass
class _Soaking:
    """One soak request in flight."""

    request_id: int
    index: int
    max_new_tokens: int
    prompt: np.ndarray | None  # kept for the requests whose ids are checked
    cancel_asked: bool = False


def soak(model, plan: Plan, vocab: int, device_free_bytes=None,
         cap_s: float = math.inf) -> dict:
    """plan.soak_requests short requests through one engine, at most
    plan.soak_in_flight at a time, a seeded share of them cancelled at a
    random moment; device memory (free bytes, from device_free_bytes) and
    RSS sampled after the first tenth and at the end; the first
    plan.soak_checked uncancelled requests' ids checked against single runs."""
    rng = np.random.default_rng([plan.seed, 4])
    count = plan.soak_requests
    warm_at = max(1, count // 10)
    reasons: collections.Counter = collections.Counter()
    problems: list[str] = []
    checked: list[tuple[np.ndarray, list[int]]] = []
    samples: list[dict] = []
    in_flight: collections.deque[_Soaking] = collections.deque()
    done = cancel_asked = 0
    start = time.perf_counter()

    def take_oldest():
        nonlocal done
        entry = in_flight.popleft()
        result = engine.wait(entry.request_id)
        reason, ids = result["finish_reason"], result["ids"]
        reasons[reason] += 1
        full = len(ids) == entry.max_new_tokens
        expected = (reason == "length" and full) or \
            (entry.cancel_asked and reason == "cancelled" and
             len(ids) <= entry.max_new_tokens)
        if not expected and len(problems) < 5:
            problems.append(f"request {entry.index}: {reason} with {len(ids)} of "
                            f"{entry.max_new_tokens} tokens ({result['error']})")
        if entry.prompt is not None and not entry.cancel_asked:
            checked.append((entry.prompt, ids))
        done += 1
        if done % warm_at == 0:
            samples.append(_memory_sample(done, device_free_bytes))

    with model.engine(plan.step_tokens) as engine:
        for index in range(count):
            if time.perf_counter() - start > cap_s:
                break
            prompt = rng.integers(0, vocab, int(rng.integers(
                plan.soak_prompt_range[0], plan.soak_prompt_range[1] + 1)))
            prompt = prompt.astype(np.int32)
            new = int(rng.integers(plan.soak_output_range[0],
                                   plan.soak_output_range[1] + 1))
            keep = prompt if index < plan.soak_checked else None
            in_flight.append(_Soaking(engine.submit(prompt, new), index, new, keep))
            if index >= plan.soak_checked and rng.random() < plan.soak_cancel_fraction:
                victim = in_flight[int(rng.integers(len(in_flight)))]
                # Checked requests run to their end.
                if victim.prompt is None and not victim.cancel_asked:
                    victim.cancel_asked = True
                    cancel_asked += 1
                    engine.cancel(victim.request_id)
            while len(in_flight) >= plan.soak_in_flight:
                take_oldest()
        while in_flight:
            take_oldest()
        if not samples or samples[-1]["requests_done"] != done:
            samples.append(_memory_sample(done, device_free_bytes))
    seconds = time.perf_counter() - start
    agree = [compare_ids(ids, *model.generate(prompt, len(ids), return_logits=True))
             for prompt, ids in checked]
    warm = next((s for s in samples if s["requests_done"] >= warm_at), samples[0])
    end = samples[-1]
    device = _growth_mib(warm, end, "device_free_bytes", -1)
    rss = _growth_mib(warm, end, "rss_bytes", +1)
    ids_ok = sum(ok for ok, _ in agree)
    flat = (device is None or device <= plan.soak_device_mib) and \
        (rss is None or rss <= plan.soak_rss_mib)
    ok = not problems and ids_ok == len(agree) and flat
    stopped = "" if done == count else " (stopped at the time cap)"
    detail = (f"{done} of {count} requests{stopped}, reasons {dict(reasons)}, "
              f"{ids_ok}/{len(agree)} checked ids agree, device growth "
              f"{_fmt(device)} MiB (≤ {plan.soak_device_mib}), RSS growth "
              f"{_fmt(rss)} MiB (≤ {plan.soak_rss_mib})"
              + ("; " + "; ".join(problems) if problems else ""))
    return {"kind": "soak", "case": {"requests": count}, "done": done,
            "seconds": seconds, "finish_reasons": dict(reasons),
            "cancel_asked": cancel_asked,
            "ids_checked": len(agree), "ids_agree": ids_ok,
            "device_growth_mib": device, "rss_growth_mib": rss,
            "samples": samples, "warm_at": warm_at,
            "check": {"ok": bool(ok), "what": f"soak: {detail}"}}


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.1f}"


# ---------------------------------------------------------------------------
# The whole benchmark.
# ---------------------------------------------------------------------------

@dataclass
class Setup:
    """What the benchmark runs on. open_model(num_slots=, max_step_rows=,
    max_context=) opens an fdc Model of the library and checkpoint; hf is
    the same checkpoint in transformers (or None: not compared);
    device_free_bytes() reads free device memory (or None: not sampled)."""

    open_model: Callable
    vocab: int
    hf: object = None
    device_free_bytes: Callable[[], int] | None = None


class Deadline:
    """The end of the family's time budget, and what each part may take."""

    def __init__(self, seconds: float):
        self.end = time.perf_counter() + seconds

    def left(self) -> float:
        return self.end - time.perf_counter()

    def cap(self, part_s: float) -> float:
        return max(0.0, min(part_s, self.left()))


def _run_row(mode: str, rate: float | None, fraction: float | None,
             measured: str, timelines: list[Timeline]) -> dict:
    return {"kind": "run",
            "case": {"mode": mode, "rate": rate, "fraction": fraction},
            "measured": measured, **metrics(timelines)}


def _identical_share(a: list[Timeline], b: list[Timeline]) -> str:
    """How many requests two runs served with the same ids (of those both
    served)."""
    ids = {t.index: t.ids for t in b}
    both = [t for t in a if t.index in ids]
    return f"{sum(t.ids == ids[t.index] for t in both)}/{len(both)}"


class _Serving:
    """The benchmark's state across its parts (see serve)."""

    def __init__(self, setup: Setup, plan: Plan, deadline: Deadline, log,
                 progress):
        self.setup, self.plan, self.deadline = setup, plan, deadline
        self.log, self.progress = log, progress
        self.rows: list[dict] = []
        self.requests = make_workload(plan.requests, setup.vocab, plan.seed,
                                      plan.prompt_range, plan.output_range)
        self.saturated = np.zeros(plan.requests)
        self.model = None
        # mode -> (timelines, batches) measured back to back.
        self.services: dict[str, tuple[list[Timeline], list[Batch]]] = {}
        self.fused_saturation: list[Timeline] = []
        self.capacity_rps = None
        self.decode_step = None

    def part(self, name: str, run: Callable[[], None]) -> None:
        """Runs one part; an exception becomes a failed check row."""
        start = time.perf_counter()
        try:
            run()
        except Exception as err:  # noqa: BLE001 - recorded, the rest goes on
            self.log(traceback.format_exc())
            self.rows.append({"kind": "error", "case": {"part": name},
                              "error": traceback.format_exc(),
                              "check": {"ok": False, "what": f"serving part "
                                        f"{name!r} failed: {type(err).__name__}: "
                                        f"{err}"[:300]}})
        self.log(f"serving {name}: {time.perf_counter() - start:.1f} s "
                 f"({self.deadline.left():.0f} s left)")
        self.progress(self.rows)

    def skipped(self, name: str, why: str) -> None:
        self.rows.append({"kind": "skipped", "case": {"part": name}, "why": why})

    # The parts, in the order serve runs them.

    def warm(self) -> None:
        warm_step_graphs(self.model, self.plan.graph_rows)

    def check(self) -> None:
        plan = self.plan
        requests = [dataclasses.replace(r, max_new_tokens=min(r.max_new_tokens,
                                                              plan.check_tokens))
                    for r in self.requests[:plan.check_requests]]
        self.rows.append(check_fused_ids(self.model, requests, plan.step_tokens))

    def fused_at_saturation(self) -> None:
        timelines = run_fused(self.model, self.requests, self.saturated,
                              self.plan.step_tokens, self.deadline.cap(self.plan.fused_cap_s))
        self.fused_saturation = timelines
        row = _run_row(FUSED, None, None, "live", timelines)
        self.rows.append(row)
        if row["complete"] == len(self.requests) and row["duration_s"]:
            self.capacity_rps = len(self.requests) / row["duration_s"]
        self.log(f"serving {FUSED} at saturation: {_fmt(row['throughput'])} "
                 f"tok/s, capacity {_fmt(self.capacity_rps)} req/s")

    def decode_step_time(self) -> None:
        plan = self.plan
        self.decode_step = decode_step_s(self.model, self.setup.vocab,
                                         plan.decode_context, plan.decode_tokens,
                                         plan.seed)

    def batched(self, mode: str, batch: int, cap_s: float) -> None:
        cap = self.deadline.cap(cap_s)
        if cap <= 0:
            return self.skipped(mode, "the family's time budget is spent")
        timelines, batches = run_batched(self.model, self.requests, self.saturated,
                                         batch, cap)
        self.services[mode] = (timelines, batches)
        self.rows.append(_run_row(mode, None, None, "live", timelines))

    def ttft(self) -> None:
        self.rows.append(ttft_comparison(self.model, self.setup.open_model,
                                         self.setup.hf, self.plan, self.setup.vocab))

    def soak(self) -> None:
        cap = self.deadline.cap(self.plan.soak_cap_s)
        if cap <= 0:
            return self.skipped("soak", "the family's time budget is spent")
        self.rows.append(soak(self.model, self.plan, self.setup.vocab,
                              self.setup.device_free_bytes, cap))

    def rates(self) -> list[float]:
        """The Poisson rates (req/s): fractions of the fused capacity."""
        if not self.capacity_rps:
            return []
        return [f * self.capacity_rps for f in self.plan.rate_fractions]

    def fused_at_rates(self) -> None:
        plan = self.plan
        if not self.capacity_rps:
            return self.skipped(f"{FUSED} at Poisson rates", "no fused capacity: "
                                "the run at saturation did not complete")
        cap = self.deadline.cap(plan.rates_cap_s)
        end = time.perf_counter() + cap
        saturated_s = len(self.requests) / self.capacity_rps if self.capacity_rps else 0
        for fraction, rate in zip(plan.rate_fractions, self.rates()):
            arrivals = arrival_times(len(self.requests), rate, plan.seed)
            # Arrivals span arrivals[-1]; the tail about the saturated run.
            needed = float(arrivals[-1]) + saturated_s
            if needed > end - time.perf_counter():
                self.skipped(f"{FUSED} at {rate:.1f} req/s",
                             f"needs about {needed:.0f} s, more than is left")
                continue
            timelines = run_fused(self.model, self.requests, arrivals,
                                  plan.step_tokens,
                                  min(2 * needed + 5, self.deadline.left()))
            self.rows.append(_run_row(FUSED, rate, fraction, "live", timelines))

    def hf_at_saturation(self) -> None:
        cap = self.deadline.cap(self.plan.hf_cap_s)
        if cap <= 0:
            return self.skipped(TRANSFORMERS, "the family's time budget is spent")
        subset = self.requests[:self.plan.hf_requests]
        # transformers' first generate in a process initialises its
        # kernels (tens of ms a token): not part of serving.
        _hf_generate(self.setup.hf, subset[0].prompt[:32], 8, [])
        timelines, batches = run_hf(self.setup.hf, subset, self.saturated, cap)
        self.services[TRANSFORMERS] = (timelines, batches)
        self.rows.append(_run_row(TRANSFORMERS, None, None, "live", timelines))

    def replays(self) -> None:
        """Each batch mode's measured service at every Poisson rate."""
        for mode, (timelines, batches) in self.services.items():
            for fraction, rate in zip(self.plan.rate_fractions, self.rates()):
                arrivals = arrival_times(len(self.requests), rate, self.plan.seed)
                self.rows.append(_run_row(mode, rate, fraction, "replayed",
                                          replay(timelines, batches, arrivals)))

    def summary(self) -> None:
        """The saturation ratios and the step time they are judged by."""
        saturated = {r["case"]["mode"]: r for r in self.rows
                     if r["kind"] == "run" and r["case"]["rate"] is None}
        fused = saturated.get(FUSED, {}).get("throughput")
        one = saturated.get(ONE_AT_A_TIME, {}).get("throughput")
        statics = {mode: r["throughput"] for mode, r in saturated.items()
                   if mode.startswith("fdc static") and r.get("throughput")}
        best = max(statics, key=statics.get) if statics else None
        itl = saturated.get(FUSED, {}).get("itl_ms", {})
        step_ms = self.decode_step * 1e3 if self.decode_step else None
        one_at_a_time = self.services.get(ONE_AT_A_TIME, ([], []))[0]
        self.rows.append({
            "kind": "saturation", "case": {"what": "saturation"},
            "capacity_rps": self.capacity_rps,
            "fused_tok_s": fused, "one_at_a_time_tok_s": one,
            "fused_over_one_at_a_time": fused / one if fused and one else None,
            "best_static": best,
            "fused_over_best_static": fused / statics[best] if fused and best else None,
            "itl_p50_ms": itl.get("p50"), "itl_p99_ms": itl.get("p99"),
            "decode_step_ms": step_ms, "decode_batch": self.plan.num_slots,
            "itl_p99_over_step": (itl["p99"] / step_ms
                                  if step_ms and itl.get("p99") else None),
            "ids_identical_to_one_at_a_time": _identical_share(
                self.fused_saturation, one_at_a_time) if one_at_a_time else None})

    def run(self) -> list[dict]:
        plan, setup = self.plan, self.setup
        self.rows.append({"kind": "plan", "case": {"what": "plan"},
                          **dataclasses.asdict(plan)})
        self.model = setup.open_model(num_slots=plan.num_slots,
                                      max_step_rows=plan.max_step_rows,
                                      max_context=plan.max_context)
        try:
            self.part("warm-up", self.warm)
            self.part("check", self.check)
            self.part("fused at saturation", self.fused_at_saturation)
            self.part("decode step", self.decode_step_time)
            self.part(ONE_AT_A_TIME, lambda: self.batched(
                ONE_AT_A_TIME, 1, plan.one_at_a_time_cap_s))
            for batch in plan.static_batches:
                self.part(static_mode(batch), lambda b=batch: self.batched(
                    static_mode(b), b, plan.static_cap_s))
            self.part("time to first token", self.ttft)
            self.part("soak", self.soak)
            self.part("fused at rates", self.fused_at_rates)
        finally:
            self.model.close()
        if setup.hf is not None:
            self.part(TRANSFORMERS, self.hf_at_saturation)
        self.part("replays", self.replays)
        self.part("summary", self.summary)
        return self.rows


def serve(setup: Setup, plan: Plan, budget_s: float | None = None,
          log: Callable[[str], None] = print,
          progress: Callable[[list[dict]], None] = lambda rows: None) -> list[dict]:
    """Runs the whole benchmark on `setup` within budget_s (default
    plan.budget_s) and returns its result rows; `progress(rows)` sees them
    after each part."""
    deadline = Deadline(plan.budget_s if budget_s is None else budget_s)
    return _Serving(setup, plan, deadline, log, progress).run()


# Below this many seconds of the suite's budget, the full plan would not
# fit: the quick one runs (in at least QUICK_MIN_S).
FULL_MIN_S = 150.0
QUICK_MIN_S = 60.0


def family(bench) -> list[dict]:
    """The suite's serving family: the 7B-wide model of the step family
    (transformers builds it from a fixed seed into a temporary checkpoint;
    fdc loads wide-bf16-online.so on it)."""
    import json
    import tempfile

    import torch

    from ..runtime import Model
    from ..testing import wide_model

    plan = Plan.quick() if bench.quick else Plan()
    budget = min(plan.budget_s, bench.remaining_s())
    if budget < FULL_MIN_S and not bench.quick:
        print(f"serving: {budget:.0f} s of the suite's budget left: the quick plan",
              flush=True)
        plan = Plan.quick()
    budget = max(min(plan.budget_s, budget), QUICK_MIN_S)
    deadline_start = time.perf_counter()
    models_dir = bench.artifacts / "models"
    config_path = models_dir / "wide-config.json"
    vocab = json.loads(config_path.read_text())["vocab_size"]

    def progress(rows):
        bench.results["families"]["serving"] = {"rows": rows, "partial": True}
        bench.save()

    with tempfile.TemporaryDirectory() as tmp:
        hf = wide_model.build(tmp, str(config_path), seed=plan.seed)
        hf.eval()

        def open_model(**options):
            return Model(models_dir / "wide-bf16-online.so", tmp, **options)

        setup = Setup(open_model, vocab, hf,
                      lambda: torch.cuda.mem_get_info()[0])
        spent = time.perf_counter() - deadline_start
        rows = serve(setup, plan, budget - spent,
                     log=lambda text: print(text, flush=True), progress=progress)
        del hf, setup
    torch.cuda.empty_cache()
    return rows
