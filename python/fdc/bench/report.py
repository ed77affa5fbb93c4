"""Tables and plots from the suite's results.json (no torch needed):

    python -m fdc.bench.report results.json [--plots DIR]

prints the markdown tables (what docs/perf.md holds) and, with matplotlib,
writes one plot per family. "speedup" is always peer time / fdc time: above
1, fdc is faster. "% HBM" is GB/s over the measured streaming-read ceiling.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

NOT_MEASURED = {
    "sparse": "not implemented (Flash-LLM SpMM is a later issue; the "
              "first-version Tiled-CSL kernel is not benchmarked)",
}


def _num(value, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and value != value:
        return "nan"
    return f"{value:,.{digits}f}"


def _pct(fraction) -> str:
    """A share as a percentage ("–" where not measured)."""
    return "–" if fraction is None else f"{100 * fraction:.1f} %"


def _err(check) -> str:
    if not check:
        return "–"
    mark = "" if check["ok"] else " **FAIL**"
    return f"{check['rel_err']:.1e}{mark}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _timed(m: dict | None) -> list[str]:
    """µs, GB/s, % HBM of a measurement (or its error)."""
    if not m or "us" not in m:
        reason = (m or {}).get("error") or (m or {}).get("status") or "–"
        if len(reason) > 70:  # the whole message is in results.json
            reason = reason[:67] + "…"
        return [reason, "", ""]
    return [_num(m["us"]), _num(m["gbps"], 0), _num(m.get("hbm_pct"), 0)]


def _rows(results: dict, family: str):
    data = results["families"].get(family)
    if data is None:
        return None, None
    if "error" in data:
        return None, data["error"].strip().splitlines()[-1]
    return data["rows"], None


def ceilings_md(rows) -> str:
    """The ceilings; where a sized read had contenders (fdc.bench.reads),
    torch.sum's own time too."""
    sums = any("torch_sum_us" in r for r in rows)
    body = []
    for r in rows:
        line = [r["case"]["what"], _num(r["gbps"], 0), _num(r["us"])]
        if sums:
            line.append(_num(r["torch_sum_us"]) if "torch_sum_us" in r else "–")
        body.append(line)
    header = ["measurement", "GB/s", "µs"]
    if sums:
        header.append("torch.sum alone µs")
    return _table(header, body)


def linear_md(rows) -> str:
    """The heuristic table's kernel against cuBLAS; with a tuned library
    (NAME-tuned.so), its time, speedup and gain over the heuristic too."""
    tuned = any("fdc_tuned" in r for r in rows)
    body = []
    for r in rows:
        line = [f"{r['case']['shape']} [{r['case']['N']},{r['case']['K']}]",
                str(r["case"]["M"]), *_timed(r["fdc"]), r["peer"]["name"],
                *_timed(r["peer"]), _num(r["ratio"], 2)]
        line.append(_err(r["check"]))
        if tuned:
            t = r.get("fdc_tuned")
            line += [_num(t["us"]) if t else "–", _num(t["hbm_pct"], 0) if t else "–",
                     _num(r.get("ratio_tuned"), 2),
                     _num(r.get("tuned_vs_heuristic"), 2),
                     _err(r["check_tuned"]) if r.get("check_tuned") else "–"]
        body.append(line)
    header = ["shape", "M", "fdc µs", "fdc GB/s", "fdc % HBM", "peer",
              "peer µs", "peer GB/s", "peer % HBM", "speedup", "fdc rel err"]
    if tuned:
        header += ["fdc tuned µs", "tuned % HBM", "tuned speedup",
                   "tuned speedup over heuristic", "tuned rel err"]
    return _table(header, body)


def attention_md(rows) -> str:
    body, skipped = [], []
    for r in rows:
        c = r["case"]
        if "skipped" in r:
            skipped.append(f"{c['Hq']}/{c['Hkv']} B={c['B']} S={c['S']}")
            continue
        fdc = r["fdc"]
        best = min(fdc, key=lambda k: fdc[k]["us"])
        errs = "/".join(_err(r["check"][k]) for k in fdc)
        peer = r.get("peer")
        body.append([f"{c['Hq']}/{c['Hkv']}", str(c["B"]), str(c["S"]),
                     *(_num(fdc[k]["us"]) for k in fdc),
                     _num(fdc[best]["gbps"], 0), _num(fdc[best]["hbm_pct"], 0),
                     peer["name"] if peer else "–", *_timed(peer),
                     _num(r.get("ratio"), 2), errs, _pct(r.get("fallback_rate"))])
    schemes = list(next((r["fdc"] for r in rows if "fdc" in r), {}).keys())
    header = ["Hq/Hkv", "B", "S", *(f"fdc {s} µs" for s in schemes),
              "fdc best GB/s", "fdc % HBM", "peer (fastest SDPA)", "peer µs",
              "peer GB/s", "peer % HBM", "speedup", "fdc rel err " + "/".join(schemes),
              "unified fallback rows"]
    text = _table(header, body)
    if skipped:
        text += "\n\nNot run (KV cache over the memory cap): " + ", ".join(skipped) + "."
    return text


def int4_md(rows) -> str:
    """One row per batch: each softmax scheme's time (online: f16 MMAs;
    unified max: f16 for the scores, bf16 for P V), the fastest's GB/s and
    % HBM, and the peer."""
    schemes = list(next((r["fdc"] for r in rows if "fdc" in r), {}).keys())
    # Runs since 2026-12-06 also time a plain read of each row's bytes.
    reads = any("read" in r for r in rows)
    body = []
    for r in rows:
        fdc = r["fdc"]
        best = min(fdc, key=lambda k: fdc[k]["us"])
        line = [str(r["case"]["B"]), str(r["case"]["S"]),
                *(_num(fdc[k]["us"]) for k in schemes),
                _num(fdc[best]["gbps"], 0), _num(fdc[best]["hbm_pct"], 0)]
        if reads:
            read = r.get("read")
            line += [_num(read["us"]) if read else "–",
                     _num(100 * fdc[best]["gbps"] / read["gbps"], 0) if read else "–"]
        line += [r["peer"]["name"], *_timed(r["peer"]), _num(r["ratio"], 2),
                 "/".join(_err(r["check"][k]) for k in schemes)]
        body.append(line)
    header = ["B", "S", *(f"fdc INT4 {s} µs" for s in schemes), "fdc best GB/s",
              "fdc % HBM"]
    if reads:
        header += ["same-size read µs", "fdc % of that read"]
    header += ["peer", "peer µs", "peer GB/s", "peer % HBM", "speedup",
               "fdc rel err " + "/".join(schemes)]
    return _table(header, body)


def _sparse_measured(rows) -> bool:
    """Whether the rows time fdc (runs before fdc's sparse kernel was
    benchmarked hold only a status)."""
    return any("us" in r.get("fdc", {}) for r in rows)


def _sparse_legacy_md(rows) -> str:
    body = []
    for r in rows:
        c, peers = r["case"], r["peers"]
        sp, dense = peers["cuSPARSE (torch CSR)"], peers["cuBLAS dense"]
        body.append([f"{c['N']}×{c['K']}", f"{c['sparsity']:.0%}", str(c["batch"]),
                     r["fdc"].get("status", "–"), *_timed(sp), *_timed(dense),
                     _num(sp["us"] / dense["us"], 1)])
    return _table(["W [N×K] fp16", "sparsity", "batch", "fdc", "cuSPARSE µs",
                   "cuSPARSE GB/s", "cuSPARSE % HBM", "cuBLAS dense µs",
                   "dense GB/s", "dense % HBM", "cuSPARSE / dense time"], body)


def sparse_md(rows) -> str:
    if not _sparse_measured(rows):
        return _sparse_legacy_md(rows)
    body = []
    for r in rows:
        c, peers = r["case"], r["peers"]
        sp, dense = peers["cuSPARSE (torch CSR)"], peers["cuBLAS dense"]
        shape = f"{c['N']}×{c['K']}"
        if c.get("shape"):
            shape = f"{c['shape']} [{c['N']},{c['K']}]"
        body.append([shape, f"{c['sparsity']:.0%}", str(c["batch"]),
                     *_timed(r["fdc"]), _num(sp.get("us")),
                     _num(dense.get("us")), _num(r.get("ratio_dense"), 2),
                     _num(r.get("ratio_cusparse"), 1), _err(r.get("check"))])
    text = _table(["W [N,K] fp16", "sparsity", "M", "fdc µs", "fdc GB/s",
                   "fdc % HBM", "cuSPARSE µs", "cuBLAS dense µs",
                   "speedup vs dense", "speedup vs cuSPARSE", "fdc rel err"],
                  body)
    summary = sparse_summary(rows)
    if summary:
        text += "\n\n" + sparse_summary_md(summary)
    return text


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _case_short(case: dict) -> str:
    return f"[{case['N']},{case['K']}] M={case['batch']}"


def sparse_summary(rows) -> dict | None:
    """fdc's speedup over dense cuBLAS per sparsity (geomean over the shapes
    and batches, and the least), and its least speedup over cuSPARSE; None
    where fdc was not timed."""
    timed = [r for r in rows if "ratio_dense" in r]
    if not timed:
        return None
    per = {}
    for sparsity in sorted({r["case"]["sparsity"] for r in timed}):
        sel = [r for r in timed if r["case"]["sparsity"] == sparsity]
        low = min(sel, key=lambda r: r["ratio_dense"])
        low_sp = min(sel, key=lambda r: r["ratio_cusparse"])
        per[f"{sparsity:g}"] = {
            "cases": len(sel),
            "geomean_vs_dense": _geomean([r["ratio_dense"] for r in sel]),
            "min_vs_dense": low["ratio_dense"], "min_vs_dense_case": low["case"],
            "geomean_vs_cusparse": _geomean([r["ratio_cusparse"] for r in sel]),
            "min_vs_cusparse": low_sp["ratio_cusparse"],
            "min_vs_cusparse_case": low_sp["case"]}
    low_sp = min(timed, key=lambda r: r["ratio_cusparse"])
    return {"per_sparsity": per, "min_vs_cusparse": low_sp["ratio_cusparse"],
            "min_vs_cusparse_case": low_sp["case"],
            "failed_checks": sum(not r["check"]["ok"] for r in timed
                                 if r.get("check"))}


def sparse_summary_md(summary: dict) -> str:
    body = [[f"{float(s):.0%}", str(v["cases"]), _num(v["geomean_vs_dense"], 2),
             f"{_num(v['min_vs_dense'], 2)} ({_case_short(v['min_vs_dense_case'])})",
             _num(v["geomean_vs_cusparse"], 1),
             f"{_num(v['min_vs_cusparse'], 1)} "
             f"({_case_short(v['min_vs_cusparse_case'])})"]
            for s, v in summary["per_sparsity"].items()]
    text = _table(["sparsity", "cases (shapes × M)", "fdc / dense speedup, geomean",
                   "fdc / dense speedup, least", "fdc / cuSPARSE speedup, geomean",
                   "fdc / cuSPARSE speedup, least"], body)
    return (text + f"\n\nLeast speedup over cuSPARSE in all: "
            f"{_num(summary['min_vs_cusparse'], 1)} "
            f"({_case_short(summary['min_vs_cusparse_case'])}).")


def step_md(rows) -> str:
    tuned_run = any("fdc_graph_tuned" in r for r in rows)
    body = []
    for r in rows:
        fdc = r["fdc_graph"]["us"]

        def versus(m):
            return _num(m["us"] / fdc, 2) if m and "us" in m else "–"
        tuned = r.get("fdc_graph_tuned")
        line = [str(r["case"]["B"]), str(r["case"]["context"]),
                _num(r["floor"]["us"], 0), *_timed(r["fdc_graph"])[0::2],
                _num(r["fdc_graph"]["us"] / r["floor"]["us"], 2)]
        if tuned_run:
            line += [*(_timed(tuned)[0::2] if tuned else ["–", "–"]),
                     _num(tuned["us"] / r["floor"]["us"], 2) if tuned else "–",
                     _err(r["check_tuned"]) if r.get("check_tuned") else "–"]
        line += [_num(r["fdc_runtime"]["us"], 0),
                 _num(r["fdc_runtime"]["us"] / fdc, 2), _timed(r["hf_eager"])[0],
                 _timed(r.get("hf_compiled"))[0], versus(r["hf_eager"]),
                 versus(r.get("hf_compiled")), _err(r["check"])]
        body.append(line)
    header = ["B", "context", "floor µs", "fdc step µs (graph)", "fdc % HBM",
              "× floor"]
    if tuned_run:
        header += ["tuned table: step µs (graph)", "tuned % HBM",
                   "tuned × floor", "tuned vs HF rel err"]
    header += ["fdc runtime µs/token", "runtime / step (graph)",
               "HF eager µs/token",
               "HF static+compile µs/token", "speedup vs HF eager",
               "speedup vs HF compiled", "fdc vs HF rel err"]
    return _table(header, body)


def pruned_step_md(rows) -> str:
    body = []
    for r in rows:
        dense, sparse = r["dense"], r["sparse"]
        body.append([str(r["case"]["B"]), str(r["case"]["context"]),
                     _pct(r["case"]["sparsity"]), _num(dense["us"]),
                     _num(sparse["us"]), _num(r["speedup"], 2),
                     _num(sparse["floor_us"], 0),
                     _num(sparse["us"] / sparse["floor_us"], 2),
                     _err(r["check"]["dense"]), _err(r["check"]["sparse"])])
    return _table(["B", "context", "MLP sparsity", "dense step µs (graph)",
                   "sparse-MLP step µs (graph)", "speedup",
                   "sparse-MLP floor µs", "sparse-MLP × floor",
                   "dense vs HF rel err", "sparse-MLP vs HF rel err"], body)


def step_kernels_md(rows) -> str:
    """The step's kernel times summed by op (kernel name without its index)."""
    ops: dict[str, list[float]] = {}
    for i, r in enumerate(rows):
        for name, us in r.get("kernels_us", {}).items():
            ops.setdefault(name.rsplit("_", 1)[0], [0.0] * len(rows))[i] += us
    if not ops:
        return ""
    body = [[op, *(_num(t) for t in times)] for op, times in
            sorted(ops.items(), key=lambda item: -item[1][-1])]
    body.append(["sum of kernels", *(_num(sum(t[i] for t in ops.values()))
                                     for i in range(len(rows)))])
    body.append(["whole step (graph)", *(_num(r["fdc_graph"]["us"]) for r in rows)])
    return _table(["op (µs per step, each kernel timed alone)",
                   *(f"B={r['case']['B']}" for r in rows)], body)



def _serving_mode_order(mode: str) -> tuple[int, int]:
    """fdc fused, one at a time, static batches by size, transformers."""
    if mode.startswith("fdc static B="):
        return 2, int(mode.rsplit("=", 1)[1])
    fixed = {"fdc fused": 0, "fdc one at a time": 1,
             "transformers one at a time": 3}
    return fixed.get(mode, 4), 0


def _serving_kind(rows, kind: str) -> list[dict]:
    return [r for r in rows if r.get("kind") == kind]


def _rate_text(case: dict) -> str:
    return "all at t = 0" if case["rate"] is None else _num(case["rate"], 1)


def _serving_run_key(row: dict):
    mode, rate = row["case"]["mode"], row["case"]["rate"]
    return (_serving_mode_order(mode), mode, math.inf if rate is None else rate)


def serving_runs_md(rows) -> str:
    """Every mode at every rate: throughput, time to first token and
    inter-token latency."""
    body = []
    for r in sorted(_serving_kind(rows, "run"), key=_serving_run_key):
        c = r["case"]
        requests = str(r["requests"])
        if r.get("complete", r["requests"]) != r["requests"]:
            requests += f" ({r['complete']} complete)"
        body.append([c["mode"], _rate_text(c),
                     "–" if c["fraction"] is None else f"{c['fraction']:g}",
                     requests, r["measured"], _num(r["throughput"], 0),
                     _num(r["ttft_ms"]["p50"]), _num(r["ttft_ms"]["p99"]),
                     _num(r["itl_ms"]["p50"], 2), _num(r["itl_ms"]["p99"], 2)])
    return _table(["mode", "rate (req/s)", "× fused capacity", "requests",
                   "measured", "tokens/s", "TTFT p50 ms", "TTFT p99 ms",
                   "ITL p50 ms", "ITL p99 ms"], body)


def _times(value, digits: int = 1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}×"


def serving_saturation_md(s: dict) -> str:
    step = s.get("decode_step_ms")
    p50, p99 = s.get("itl_p50_ms"), s.get("itl_p99_ms")
    body = [
        ["fused capacity (requests served per second, all at t = 0)",
         _num(s.get("capacity_rps"), 1), "–"],
        ["fused / one at a time, tokens/s", _times(s.get("fused_over_one_at_a_time")),
         "≥ 10×"],
        [f"fused / best static ({s.get('best_static') or '–'}), tokens/s",
         _times(s.get("fused_over_best_static"), 2), "≥ 1.3×"],
        [f"ITL p99 / fused decode step at B = {s.get('decode_batch')} "
         f"({_num(p99, 2)} / {_num(step, 2)} ms)",
         _num(s.get("itl_p99_over_step"), 2), "≤ 2"],
        [f"ITL p99 / ITL p50 ({_num(p99, 2)} / {_num(p50, 2)} ms)",
         _num(p99 / p50 if p99 and p50 else None, 2), "–"],
        ["fused ids identical to one at a time (requests both served)",
         s.get("ids_identical_to_one_at_a_time") or "–", "–"]]
    return _table(["at saturation", "measured", "goal"], body)


def serving_ttft_md(t: dict) -> str:
    body = [[str(t["case"]["prompt"]),
             f"{_num(t['fdc_chunked_ms'])} ({t['chunk_rows']} rows a step)",
             _num(t["fdc_one_per_step_ms"]),
             _times(t["one_per_step_over_chunked"]), "≥ 20×",
             _num(t.get("hf_prefill_ms")), _times(t.get("hf_over_fdc_chunked"), 2)]]
    return _table(["prompt tokens", "fdc chunked: TTFT ms", "fdc one token per "
                   "step: TTFT ms", "speedup of chunks", "goal",
                   "transformers prefill: TTFT ms", "transformers / fdc chunked"],
                  body)


def serving_soak_md(k: dict) -> str:
    reasons = ", ".join(f"{n} {reason}" for reason, n in
                        sorted(k["finish_reasons"].items()))
    body = [[str(k["case"]["requests"]), str(k["done"]), _num(k["seconds"]),
             str(k["cancel_asked"]), reasons,
             _num(k.get("device_growth_mib"), 1), _num(k.get("rss_growth_mib"), 1),
             f"{k['ids_agree']}/{k['ids_checked']}",
             "ok" if k["check"]["ok"] else "**FAIL**"]]
    return _table(["requests", "finished", "seconds", "cancels asked",
                   "finish reasons", "device memory growth MiB",
                   "RSS growth MiB", "ids agree with single runs", "check"], body)


def serving_md(rows) -> str:
    parts = []
    if _serving_kind(rows, "run"):
        parts.append(serving_runs_md(rows))
    for s in _serving_kind(rows, "saturation"):
        parts.append(serving_saturation_md(s))
    for t in _serving_kind(rows, "ttft"):
        parts.append(serving_ttft_md(t))
    for k in _serving_kind(rows, "soak"):
        parts.append(serving_soak_md(k))
    notes = [f"- check: {'ok' if r['check']['ok'] else '**FAIL**'}: "
             f"{r['check']['what']}" for r in _serving_kind(rows, "check")]
    notes += [f"- not run: {r['case']['part']}: {r['why']}"
              for r in _serving_kind(rows, "skipped")]
    notes += [f"- **failed**: {r['check']['what']}"
              for r in _serving_kind(rows, "error")]
    if notes:
        parts.append("\n".join(notes))
    return "\n\n".join(parts) if parts else "No part of the family has finished."


def serving_note(rows) -> str:
    plan = next(iter(_serving_kind(rows, "plan")), None)
    if not plan:
        return SERVING_NOTE
    return SERVING_NOTE + (
        f" This run: {plan['requests']} requests (seed {plan['seed']}), prompts "
        f"{plan['prompt_range'][0]}–{plan['prompt_range'][1]} and outputs "
        f"{plan['output_range'][0]}–{plan['output_range'][1]} tokens, "
        f"{plan['num_slots']} KV-cache slots, {plan['step_tokens']} rows a fused "
        f"step, prompts read by generate / generate_batch in chunks of up to "
        f"{max(plan['ttft_prompt'], plan['step_tokens'], plan['num_slots'])} "
        f"rows; transformers on the first {plan['hf_requests']} requests.")


SPARSE_LEGACY_NOTE = (
    "cuSPARSE: torch CSR × dense (timed between events; its workspace "
    "allocation prevents graph capture). Dense: torch.mm, graph replay.")
SPARSE_NOTE = (
    "Weights pruned at random (magnitude-independent, a fixed seed per "
    "case), the same tensor for each contender. fdc: decode.sparse_linear's "
    "default kernel for each M, the weight packed as Tiled-CSL (tile "
    "128×64); bytes = the packed weight it reads (header + words) + x + y, "
    "fdc rel err its logits against float64 of the pruned fp16 weight. "
    "Dense: torch.mm (cuBLAS), graph replay, interleaved with fdc's. "
    "cuSPARSE: torch CSR × dense, timed between events (its workspace "
    "allocation prevents graph capture). Weights rotated over > 3× L2. "
    "speedup = the peer's time over fdc's.")

SERVING_NOTE = (
    "7B-wide Llama (2 layers, bf16), greedy, no EOS, every token stamped on "
    "the host as it streams to Python (fdc: on_token; transformers: a "
    "streamer), Python's cyclic garbage collector paused during each timed "
    "run. Poisson arrivals at fractions of the fused capacity "
    "(the requests per second it serves when all arrive at t = 0). fdc "
    "fused: one engine, each request submitted at its arrival. One at a "
    "time and static batches (a batch starts when its last member arrived "
    "and the previous one finished) serve FIFO: measured live back to back, "
    "at the Poisson rates replayed from the measured batch times. "
    "Throughput = generated tokens / (last token − first arrival); TTFT = "
    "first token − arrival; ITL = gaps between a request's tokens. A "
    "subset (fewer requests) means the mode's time cap ended it.")

SECTIONS = (
    ("ceilings", "HBM ceilings", ceilings_md,
     "Large tensors (4 GiB), timed between CUDA events: the ceiling every "
     "% HBM figure divides by. Then, where the run has them, the same read "
     "of a B = 1 or mid-size KV cache's bytes, timed as the kernels are "
     "(CUDA-graph replay, inputs rotated over > 3× L2, a call per input "
     "set and at least 20 per replay): what a plain read of that size reaches, launch and tail "
     "included; since 2026-12-07 the fastest of torch.sum and a few Triton "
     "read kernels (fdc.bench.reads; on an H100 on 2026-12-07 torch.sum "
     "alone read 64 MiB at 74 % of the ceiling, Triton's at 94 %)."),
    ("linear", "Linear (flat GEMM / GEMV), bf16, y = x·Wᵀ", linear_md,
     "Bytes = W + x + y. Peer: torch.matmul (cuBLAS). Weights rotated over "
     "> 3× L2; CUDA-graph replay, a call per weight copy and at least 20 "
     "per replay."),
    ("attention", "Decode attention, bf16 KV cache, D = 128", attention_md,
     "Bytes = K + V of S positions + q + out. fdc: each softmax scheme "
     "(gqa_attention on MMA units, MHA too: gqa_attention_partial, then "
     "attention_reduce where a launch takes several splits (on sm_90 since "
     "2026-12-07, two splits add their rows in a cluster instead, "
     "gqa_attention_cluster); a launch of one split writes the output "
     "itself, from gqa_attention_partial (online) or "
     "gqa_attention_single_split (unified max)). Peer: the fastest of "
     "torch SDPA's flash / efficient / cuDNN (/ math for caches ≤ 1 GiB) "
     "backends "
     "that runs. Caches rotated over > 3× L2; CUDA-graph replay."),
    ("int4", "INT4 KV-cache GQA (Hq = 8, Hkv = 1, D = 128)", int4_md,
     "fdc reads the INT4 cache (4 (scale, min) fp16 pairs + 64 bytes per "
     "row), with each softmax scheme (online: f16 MMAs; unified max: f16 "
     "for the scores, bf16 for P V), their replays interleaved; GB/s, % "
     "HBM and the speedup are the faster one's. The peer reads a bf16 "
     "cache of the same shape. GB/s of each one's own bytes. Same-size "
     "read: the fastest plain read of the row's INT4 bytes (torch.sum, or "
     "since 2026-12-07 a Triton read kernel), timed as the kernels are "
     "(graph replay, inputs rotated over > 3× L2): what a plain read of "
     "that size reaches, launch and tail included."),
    ("sparse", "Unstructured-sparse linear, fp16", sparse_md,
     lambda rows: SPARSE_NOTE if _sparse_measured(rows) else SPARSE_LEGACY_NOTE),
    ("step", "Whole decode step, 7B-wide Llama (2 layers, random bf16 "
             "weights), context 1024", step_md,
     "Floor = (weights but the embedding table + KV cache read) / measured "
     "read ceiling. fdc step (graph): the step's kernels replayed as a CUDA "
     "graph. fdc runtime: the C runtime's batched generate (its step "
     "graphs), per token: (T(129 tokens) − T(1)) / 128. HF: LlamaForCausalLM.generate, per token after "
     "a 1024-token prompt. rel err: fdc's logits at position 0 vs "
     "transformers bf16."),
    ("pruned_step", "Whole decode step with a pruned MLP, 7B-wide Llama "
                    "(2 layers, random bf16 weights), context 1024",
     pruned_step_md,
     "The MLP weights (gate, up, down) pruned at random (a fixed seed), the "
     "same weights in both libraries: dense = the step family's library "
     "(decode.linear), sparse-MLP = the model compiled with --sparse-mlp "
     "(decode.sparse_linear on Tiled-CSL weights, packed as the runtime "
     "packs them). Both steps' kernels replayed as CUDA graphs, "
     "interleaved. Sparse-MLP floor = (weights read, the packed MLP's header "
     "and runs, but the embedding table + KV cache) / measured read "
     "ceiling. rel err: logits at position 0 vs transformers bf16 with the "
     "pruned weights."),
    ("serving", "Serving: Poisson arrivals, 7B-wide (2 layers, bf16)",
     serving_md, serving_note),
)


def markdown(results: dict) -> str:
    parts = [f"Measured {results['date']} on {results['gpu']} "
             f"({results['sms']} SMs, L2 {results['l2_bytes'] >> 20} MiB), "
             f"torch {results['torch']}, CUDA {results['cuda']}"
             + (" — **quick run**" if results.get("quick") else "") + ".",
             f"Command: `{results['command']}`"]
    for family, title, render, note in SECTIONS:
        rows, error = _rows(results, family)
        if rows is None and error is None:
            continue
        if callable(note):
            note = note(rows or [])
        parts.append(f"### {title}\n\n{note}\n")
        parts.append(f"Family failed: `{error}`" if error else render(rows))
        if family == "step" and rows and step_kernels_md(rows):
            parts.append(step_kernels_md(rows))
    return "\n\n".join(parts) + "\n"


def _kernel_short(kernel: dict) -> str:
    """A dispatch table entry in a few characters."""
    c, family = kernel["config"], kernel["family"]
    if family == "flat_gemm":
        return (f"flat r{c['row_tiles']} t{c['batch_tiles']} "
                f"w{c['subgroups']} u{c['k_unroll']}")
    if family == "tiled_gemm":
        split = c.get("split_k", 1)
        return (f"tiled {c['warps_n']}×{c['warps_m']} r{c['row_tiles']} "
                f"t{c['batch_tiles']} k{c['k_tile']} s{c['stages']}"
                + (f" split {split}" if split > 1 else ""))
    if family == "group_gemm":
        split = c.get("split_k", 1)
        return (f"group g{c['groups']} r{c['row_tiles']} b{c['batch']} "
                f"s{c['stages']}" + (f" split {split}" if split > 1 else ""))
    return family


def tuning_md(files: list[Path], min_features: int = 1024) -> str:
    """The measured dispatch tables of fdc tune's files: per signature (with
    at least `min_features` outputs), which kernel runs for which M."""
    body = []
    for path in files:
        data = json.loads(Path(path).read_text())
        for sig in data["signatures"]:
            features = sig["n"] // (2 if sig["activation"] == "silu_gate_up" else 1)
            if features < min_features:
                continue
            dispatch = sig["dispatch"]
            bounds, kernels = dispatch["max_batch"], dispatch["kernels"]
            ranges, low = [], 1
            for i, kernel in enumerate(kernels):
                high = bounds[i] if i < len(bounds) else None
                span = (f"{low}" if high == low else
                        f"{low}–{high}" if high else f"{low}+")
                ranges.append(f"{span}: {_kernel_short(kernel)}")
                low = (high or 0) + 1
            extra = " ".join(x for x in (
                sig["activation"] if sig["activation"] != "none" else "",
                "+bias" if sig.get("bias") else "",
                "+residual" if sig.get("residual") else "") if x)
            body.append([Path(path).stem, data.get("arch", ""),
                         f"[{sig['n']},{sig['k']}] {extra}".strip(),
                         "; ".join(ranges)])
    return _table(["library", "arch", "weight [N,K]", "M: kernel"], body)


def failed_checks(results: dict) -> list[str]:
    bad = []
    for family, data in results["families"].items():
        for row in data.get("rows", []):
            # "check", and "check_tuned" for a tuned library's run.
            for key in ("check", "check_tuned"):
                checks = row.get(key)
                if not checks:
                    continue
                if "ok" in checks:
                    checks = {key.removeprefix("check").strip("_"): checks}
                for scheme, result in checks.items():
                    if result["ok"]:
                        continue
                    if "rel_err" not in result:  # a check that says what failed
                        bad.append(f"{family}: {result.get('what', row['case'])}")
                        continue
                    bad.append(f"{family} {row['case']} {scheme} rel err "
                               f"{result['rel_err']:.2e} > {result['tol']:.0e}")
    return bad


def plots(results: dict, out: Path) -> list[Path]:
    """One PNG per family; [] without matplotlib."""
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    ceiling = None
    rows, _ = _rows(results, "ceilings")
    if rows:
        ceiling = rows[0]["gbps"]
    written = []

    def save(fig, name):
        path = Path(out) / f"{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    def ceiling_line(ax):
        if ceiling:
            ax.axhline(ceiling, color="gray", ls=":", label="HBM read ceiling")

    rows, _ = _rows(results, "linear")
    if rows:
        fig, ax = plt.subplots(figsize=(8, 5))
        for shape in dict.fromkeys(r["case"]["shape"] for r in rows):
            sel = [r for r in rows if r["case"]["shape"] == shape]
            m = [r["case"]["M"] for r in sel]
            line, = ax.plot(m, [r["fdc"]["gbps"] for r in sel], "o-",
                            label=f"fdc {shape}")
            ax.plot(m, [r["peer"]["gbps"] for r in sel], "x--",
                    color=line.get_color(), label=f"cuBLAS {shape}")
        ceiling_line(ax)
        ax.set(xscale="log", xlabel="M (batch)", ylabel="GB/s",
               title="Linear bf16: fdc (solid) vs cuBLAS (dashed)")
        ax.legend(fontsize=6, ncol=2)
        save(fig, "linear")

    rows, _ = _rows(results, "attention")
    if rows:
        rows = [r for r in rows if "fdc" in r]
        heads = list(dict.fromkeys((r["case"]["Hq"], r["case"]["Hkv"]) for r in rows))
        fig, axes = plt.subplots(1, len(heads), figsize=(5 * len(heads), 4.5),
                                 squeeze=False)
        for ax, (hq, hkv) in zip(axes[0], heads):
            for b in dict.fromkeys(r["case"]["B"] for r in rows):
                sel = [r for r in rows if (r["case"]["Hq"], r["case"]["Hkv"],
                                           r["case"]["B"]) == (hq, hkv, b)]
                if not sel:
                    continue
                s = [r["case"]["S"] for r in sel]
                line, = ax.plot(s, [max(v["gbps"] for v in r["fdc"].values())
                                    for r in sel], "o-", label=f"fdc B={b}")
                ax.plot(s, [r["peer"]["gbps"] if r.get("peer") else float("nan")
                            for r in sel], "x--", color=line.get_color(),
                        label=f"SDPA B={b}")
            ceiling_line(ax)
            ax.set(xscale="log", xlabel="S (context)", ylabel="GB/s",
                   title=f"Attention {hq}/{hkv}: fdc (solid) vs SDPA (dashed)")
            ax.legend(fontsize=6, ncol=2)
        save(fig, "attention")

    rows, _ = _rows(results, "int4")
    if rows:
        fig, ax = plt.subplots(figsize=(6, 4))
        b = [r["case"]["B"] for r in rows]
        for scheme in rows[0]["fdc"]:
            ax.plot(b, [r["fdc"][scheme]["us"] for r in rows], "o-",
                    label=f"fdc INT4 {scheme}")
        ax.plot(b, [r["peer"]["us"] for r in rows], "x--", label="SDPA flash bf16")
        ax.set(xscale="log", yscale="log", xlabel="B", ylabel="µs",
               title="INT4 GQA 8/1, S = 8192")
        ax.legend()
        save(fig, "int4")

    rows, _ = _rows(results, "sparse")
    if rows and _sparse_measured(rows):
        sparsities = sorted({r["case"]["sparsity"] for r in rows})
        fig, axes = plt.subplots(1, len(sparsities), squeeze=False,
                                 figsize=(4.5 * len(sparsities), 4.2), sharey=True)
        for ax, sparsity in zip(axes[0], sparsities):
            for shape in dict.fromkeys((r["case"]["N"], r["case"]["K"]) for r in rows):
                sel = [r for r in rows if r["case"]["sparsity"] == sparsity
                       and (r["case"]["N"], r["case"]["K"]) == shape
                       and "ratio_dense" in r]
                if not sel:
                    continue
                batches = [r["case"]["batch"] for r in sel]
                line, = ax.plot(batches, [r["ratio_dense"] for r in sel], "o-",
                                label=f"vs dense {shape[0]}×{shape[1]}")
                ax.plot(batches, [r["ratio_cusparse"] for r in sel], "x:",
                        color=line.get_color())
            # Reading 4 bytes per kept fp16 weight instead of 2 per weight.
            ax.axhline(1 / (2 * (1 - sparsity)), color="gray", ls="--",
                       label="packed-bytes bound")
            ax.axhline(1, color="black", lw=0.8)
            ax.set(xscale="log", yscale="log", xlabel="M (batch)",
                   title=f"{sparsity:.0%} sparse, fp16")
            batches = sorted({r["case"]["batch"] for r in rows})
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_xticks(batches, [str(b) for b in batches])
            ax.legend(fontsize=6)
        axes[0][0].set_ylabel("fdc speedup (peer µs / fdc µs)")
        fig.suptitle("Sparse linear: fdc vs dense cuBLAS (solid) and vs "
                     "cuSPARSE (dotted)", fontsize=10)
        save(fig, "sparse")
    elif rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for key in dict.fromkeys((r["case"]["N"], r["case"]["K"], r["case"]["sparsity"])
                                 for r in rows):
            sel = [r for r in rows
                   if (r["case"]["N"], r["case"]["K"], r["case"]["sparsity"]) == key]
            ax.plot([r["case"]["batch"] for r in sel],
                    [r["peers"]["cuSPARSE (torch CSR)"]["us"] for r in sel], "o-",
                    label=f"cuSPARSE {key[0]}×{key[1]} {key[2]:.0%}")
        for key in dict.fromkeys((r["case"]["N"], r["case"]["K"]) for r in rows):
            sel = [r for r in rows if (r["case"]["N"], r["case"]["K"]) == key
                   and r["case"]["sparsity"] == rows[0]["case"]["sparsity"]]
            ax.plot([r["case"]["batch"] for r in sel],
                    [r["peers"]["cuBLAS dense"]["us"] for r in sel], "k--",
                    label=f"cuBLAS dense {key[0]}×{key[1]}")
        ax.set(yscale="log", xlabel="batch", ylabel="µs",
               title="Sparse fp16 linear: cuSPARSE vs dense (fdc: not implemented)")
        ax.legend(fontsize=6)
        save(fig, "sparse")

    rows, _ = _rows(results, "step")
    if rows:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        series = (("floor", "floor"), ("fdc_graph", "fdc (graph)"),
                  ("fdc_runtime", "fdc runtime"), ("hf_eager", "HF eager"),
                  ("hf_compiled", "HF static+compile"))
        width = 0.8 / len(series)
        for i, (key, label) in enumerate(series):
            ax.bar([j + i * width for j in range(len(rows))],
                   [(r.get(key) or {}).get("us", float("nan")) / 1000 for r in rows],
                   width, label=label)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))],
                      [f"B={r['case']['B']}" for r in rows])
        ax.set(ylabel="ms per token", title="Decode step, 7B-wide (2 layers), ctx 1024")
        ax.legend()
        save(fig, "step")

    rows, _ = _rows(results, "serving")
    runs = _serving_kind(rows or [], "run")
    if runs:
        fig = serving_plot(plt, matplotlib, runs)
        save(fig, "serving")
    return written


def serving_plot(plt, matplotlib, runs):
    """Throughput, time to first token and inter-token latency against the
    arrival rate, a line per mode; "all at t = 0" drawn right of the
    highest rate."""
    rates = sorted({r["case"]["rate"] for r in runs if r["case"]["rate"] is not None})
    saturation_x = max(rates) * 1.6 if rates else 1.0

    def x_of(row):
        rate = row["case"]["rate"]
        return saturation_x if rate is None else rate

    def values(sel, get):
        return [float("nan") if get(r) is None else get(r) for r in sel]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    modes = sorted({r["case"]["mode"] for r in runs}, key=_serving_mode_order)
    for mode in modes:
        sel = sorted((r for r in runs if r["case"]["mode"] == mode), key=x_of)
        x = [x_of(r) for r in sel]
        line, = axes[0].plot(x, values(sel, lambda r: r["throughput"]), "o-",
                             label=mode)
        color = line.get_color()
        axes[1].plot(x, values(sel, lambda r: r["ttft_ms"]["p50"]), "o-", color=color)
        axes[1].plot(x, values(sel, lambda r: r["ttft_ms"]["p99"]), "x:", color=color)
        axes[2].plot(x, values(sel, lambda r: r["itl_ms"]["p50"]), "o-", color=color)
        axes[2].plot(x, values(sel, lambda r: r["itl_ms"]["p99"]), "x:", color=color)
    ticks = rates + [saturation_x]
    labels = [f"{r:.3g}" for r in rates] + ["all at\nt = 0"]
    titles = ("Throughput", "Time to first token: p50 (solid), p99 (dotted)",
              "Inter-token latency: p50 (solid), p99 (dotted)")
    ylabels = ("generated tokens/s", "ms", "ms")
    for ax, title, ylabel in zip(axes, titles, ylabels):
        ax.set(xscale="log", yscale="log", xlabel="arrival rate (requests/s)",
               ylabel=ylabel, title=title)
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xticks(ticks, labels)
        ax.title.set_fontsize(9)
    axes[0].legend(fontsize=7)
    fig.suptitle("Serving, 7B-wide (2 layers, bf16): Poisson arrivals", fontsize=10)
    return fig


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", type=Path)
    ap.add_argument("--plots", type=Path, help="directory for the PNG plots")
    args = ap.parse_args(argv)
    try:
        results = json.loads(args.results.read_text())
    except (OSError, ValueError) as err:
        print(f"error: {args.results}: {err}", file=sys.stderr)
        return 1
    print(markdown(results), end="")
    if args.plots:
        args.plots.mkdir(parents=True, exist_ok=True)
        written = plots(results, args.plots)
        if not written:
            print("no plots: matplotlib is not installed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
