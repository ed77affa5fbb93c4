"""The serving benchmark's GPU-free parts (fdc.bench.serving): the seeded
workload, the metrics on hand-made timestamps, the replay of the batch
modes, the id comparison, the runners and the whole benchmark on a tiny
host-target library (and transformers on CPU, where installed), and the
report of its results. The 7B-wide run itself is on the GPU
(scripts/bench.sh run --families serving)."""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import os
import shutil
import subprocess
import types
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from fdc.bench import report, serving
from fdc.bench.serving import Batch, Plan, Request, Timeline

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
RUNTIME = BUILD / "lib" / "libfdc_runtime.so"
VOCAB = 512  # the tiny checkpoint's

needs_build = pytest.mark.skipif(
    not (FDC.exists() and RUNTIME.exists()),
    reason=f"fdc is not built ({FDC}, {RUNTIME})")


# --- the workload -------------------------------------------------------------

def test_workload_is_seeded_and_in_range():
    a = serving.make_workload(300, 32000, seed=7)
    b = serving.make_workload(300, 32000, seed=7)
    c = serving.make_workload(300, 32000, seed=8)
    assert [r.index for r in a] == list(range(300))
    for x, y in zip(a, b):
        assert x.max_new_tokens == y.max_new_tokens
        np.testing.assert_array_equal(x.prompt, y.prompt)
    assert [r.max_new_tokens for r in a] != [r.max_new_tokens for r in c]
    lengths = [r.prompt.size for r in a]
    outputs = [r.max_new_tokens for r in a]
    assert 32 <= min(lengths) and max(lengths) <= 1024
    assert 32 <= min(outputs) and max(outputs) <= 512
    # Uniform: spread over the range, mean near its middle.
    assert max(lengths) - min(lengths) > 800 and abs(np.mean(lengths) - 528) < 60
    assert abs(np.mean(outputs) - 272) < 30
    ids = np.concatenate([r.prompt for r in a])
    assert ids.dtype == np.int32 and ids.min() >= 0 and ids.max() < 32000
    assert len(np.unique(ids)) > 20000


def test_workload_ranges_are_inclusive():
    requests = serving.make_workload(400, 5, seed=1, prompt_range=(1, 3),
                                     output_range=(2, 4))
    assert {r.prompt.size for r in requests} == {1, 2, 3}
    assert {r.max_new_tokens for r in requests} == {2, 3, 4}
    assert set(np.concatenate([r.prompt for r in requests]).tolist()) == set(range(5))


def test_arrivals_are_poisson_and_seeded():
    slow = serving.arrival_times(20000, 5.0, seed=3)
    assert slow[0] == 0 and np.all(np.diff(slow) >= 0)
    np.testing.assert_array_equal(slow, serving.arrival_times(20000, 5.0, seed=3))
    assert not np.array_equal(slow, serving.arrival_times(20000, 5.0, seed=4))
    gaps = np.diff(slow)
    assert abs(gaps.mean() - 0.2) < 0.006  # mean 1 / rate
    assert abs(gaps.std() - 0.2) < 0.01  # exponential: std = mean
    # Every rate sees the same pattern, scaled.
    np.testing.assert_allclose(serving.arrival_times(20000, 10.0, seed=3), slow / 2)
    np.testing.assert_array_equal(serving.arrival_times(4, None, seed=3), np.zeros(4))
    with pytest.raises(ValueError):
        serving.arrival_times(4, 0.0, seed=3)


# --- metrics and replay --------------------------------------------------------

def test_metrics_on_hand_made_timestamps():
    timelines = [Timeline(0, 0.0, [1.0, 1.5, 2.5], [1, 2, 3], "length"),
                 Timeline(1, 0.5, [2.0, 2.25], [4, 5], "length"),
                 Timeline(2, 1.0, [], [], "cancelled")]
    m = serving.metrics(timelines)
    assert (m["requests"], m["complete"], m["tokens"]) == (3, 2, 5)
    assert m["duration_s"] == pytest.approx(2.5)  # last token 2.5 - arrival 0
    assert m["throughput"] == pytest.approx(2.0)
    # TTFT 1.0 and 1.5 s; ITL 0.5, 1.0 and 0.25 s (linear interpolation).
    assert m["ttft_ms"]["p50"] == pytest.approx(1250.0)
    assert m["ttft_ms"]["p99"] == pytest.approx(1495.0)
    assert m["itl_ms"]["p50"] == pytest.approx(500.0)
    assert m["itl_ms"]["p99"] == pytest.approx(990.0)
    empty = serving.metrics([Timeline(0, 0.0)])
    assert empty["throughput"] is None and empty["ttft_ms"]["p50"] is None


def test_replay_starts_a_batch_after_its_last_arrival_and_the_previous_batch():
    measured = [Timeline(10, 0.0, [1.0, 2.0], [1, 2], "length"),
                Timeline(11, 0.0, [1.5, 3.0], [3, 4], "length"),
                Timeline(12, 0.0, [3.5, 4.0], [5, 6], "length")]
    batches = [Batch((0, 1), 0.0, 3.0), Batch((2,), 3.0, 4.0)]
    same = serving.replay(measured, batches, [0.0, 0.0, 0.0])
    assert [t.tokens for t in same] == [t.tokens for t in measured]
    late = serving.replay(measured, batches, [0.0, 5.0, 6.0])
    # Batch 0 waits for its last member (5); batch 1 for batch 0's end (8).
    assert [t.tokens for t in late] == [[6.0, 7.0], [6.5, 8.0], [8.5, 9.0]]
    assert [t.arrival for t in late] == [0.0, 5.0, 6.0]
    assert [t.index for t in late] == [10, 11, 12] and late[2].ids == [5, 6]
    idle = serving.replay(measured, batches, [0.0, 0.0, 10.0])
    assert idle[2].tokens == [10.5, 11.0]


def test_compare_ids_allows_only_near_ties():
    logits = np.array([[0.0, 3.0, -3.0, 1.0], [2.0, 1.95, -2.0, 0.0],
                       [0.5, 0.0, 3.0, -3.0]])
    assert serving.compare_ids([1, 0, 2], [1, 0, 2], logits) == (True, "identical")
    ok, how = serving.compare_ids([1, 1, 0], [1, 0, 2], logits)
    assert ok and "step 1" in how  # 0.05 below the best: a near-tie
    ok, how = serving.compare_ids([3, 0, 2], [1, 0, 2], logits)
    assert not ok and "NOT a near-tie" in how
    assert not serving.compare_ids([1, 0], [1, 0, 2], logits)[0]


def test_plan_sizes_fit_every_request():
    plan = Plan()
    assert plan.max_context >= 1024 + 512 and plan.max_step_rows >= 1024
    assert plan.max_step_rows >= plan.step_tokens >= plan.num_slots
    assert plan.num_slots >= max(plan.static_batches)
    quick = Plan.quick()
    assert quick.requests < plan.requests and quick.budget_s < plan.budget_s


def test_the_suite_runs_the_serving_family():
    """suite.py needs torch to import: read it instead."""
    tree = ast.parse((REPO / "python/fdc/bench/suite.py").read_text())
    families = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                    and node.targets[0].id == "FAMILIES")
    assert "serving" in ast.literal_eval(families)
    assert any(isinstance(node, ast.FunctionDef) and node.name == "serving"
               for node in tree.body)


# --- on a tiny host-target library ---------------------------------------------

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(library, checkpoint) of the tiny f32 GQA Llama, compiled for the host."""
    if not (FDC.exists() and RUNTIME.exists()):
        pytest.skip("fdc is not built")
    os.environ.setdefault("FDC_RUNTIME_LIB", str(RUNTIME))
    from fdc.frontend import model_ir
    from fdc.frontend.emit import Softmax
    from fdc.testing.tiny_checkpoint import make_tiny_checkpoint

    root = tmp_path_factory.mktemp("serving")
    ckpt = root / "ckpt"
    make_tiny_checkpoint(str(ckpt), "gqa", "f32", seed=0)
    source = root / "tiny.mlir"
    source.write_text(model_ir(str(ckpt), "tiny", Softmax()))
    library = root / "tiny.so"
    proc = subprocess.run([str(FDC), "compile", str(source), "--target=host",
                           "-o", str(library)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return library, ckpt


def _model(tiny, **options):
    from fdc.runtime import Model
    return Model(*tiny, **options)


def _assert_served(requests: list[Request], timelines: list[Timeline]):
    assert [t.index for t in timelines] == [r.index for r in requests]
    for request, t in zip(requests, timelines):
        assert t.finish_reason == "length"
        assert len(t.ids) == len(t.tokens) == request.max_new_tokens
        assert t.tokens[0] >= t.arrival and t.tokens == sorted(t.tokens)


@needs_build
def test_runners_on_a_host_model(tiny):
    """Every request finishes with its tokens; fused, one at a time and
    static batches give the same ids (greedy, f32 on the host)."""
    requests = serving.make_workload(6, VOCAB, seed=5, prompt_range=(3, 20),
                                     output_range=(2, 9))
    saturated = np.zeros(len(requests))
    arrivals = serving.arrival_times(len(requests), 100.0, seed=5)
    with _model(tiny, max_context=64, num_slots=4, max_step_rows=8) as model:
        fused = serving.run_fused(model, requests, arrivals, step_tokens=6)
        one, one_batches = serving.run_batched(model, requests, saturated, 1)
        static, static_batches = serving.run_batched(model, requests, saturated, 4)
        check = serving.check_fused_ids(model, requests[:3], step_tokens=4)
    for timelines in (fused, one, static):
        _assert_served(requests, timelines)
        assert [t.ids for t in timelines] == [t.ids for t in one]
    assert [t.arrival for t in fused] == pytest.approx(list(arrivals))
    assert check["check"]["ok"] and "3 of 3 identical" in check["check"]["what"]
    # Batches of 4 then 2; the second starts after the first ended, and
    # each member's tokens lie within its batch.
    assert [b.members for b in static_batches] == [(0, 1, 2, 3), (4, 5)]
    assert static_batches[1].start >= static_batches[0].end
    for batch in static_batches:
        for m in batch.members:
            assert batch.start <= static[m].tokens[0]
            assert static[m].tokens[-1] <= batch.end
    # Back to back, a replay reproduces the measured times (up to the
    # loop's own microseconds between batches).
    replayed = serving.replay(one, one_batches, saturated)
    for a, b in zip(replayed, one):
        assert a.tokens == pytest.approx(b.tokens, abs=0.05)


@needs_build
def test_fused_runner_cancels_what_outlives_its_cap(tiny):
    requests = serving.make_workload(3, VOCAB, seed=6, prompt_range=(2, 4),
                                     output_range=(200, 200))
    with _model(tiny, max_context=256, num_slots=4) as model:
        timelines = serving.run_fused(model, requests, np.zeros(3), 4, cap_s=0.05)
        assert model.generate([1, 2], 2)  # the engine is closed again
    assert len(timelines) <= 3
    assert all(t.finish_reason == "cancelled" and len(t.ids) < 200 for t in timelines)


@needs_build
def test_decode_step_and_ttft_on_a_host_model(tiny):
    with _model(tiny, max_context=64, num_slots=3, max_step_rows=16) as model:
        step = serving.decode_step_s(model, VOCAB, context=4, tokens=5, seed=1)
        serving.warm_step_graphs(model, 20)  # sizes up to max_step_rows
        ttft = serving.engine_ttft_s(model, np.arange(1, 17, dtype=np.int32), 16)
    assert 0 < step < 1 and 0 < ttft < 1


def tiny_plan(**changes) -> Plan:
    plan = Plan(requests=8, prompt_range=(4, 16), output_range=(2, 8),
                num_slots=4, step_tokens=8, rate_fractions=(0.5, 0.25),
                static_batches=(4, 2), hf_requests=3, check_requests=2,
                check_tokens=6, ttft_prompt=20, ttft_repeats=2, decode_context=4,
                decode_tokens=5, graph_rows=4, soak_requests=100,
                soak_prompt_range=(2, 6), soak_output_range=(1, 4),
                soak_in_flight=8, soak_checked=4, budget_s=60)
    return dataclasses.replace(plan, **changes)


def _results(rows) -> dict:
    return {"date": "2026-11-25T00:00:00+00:00", "gpu": "host", "sms": 0,
            "l2_bytes": 0, "torch": "-", "cuda": "-", "quick": False,
            "command": "test", "families": {"serving": {"rows": rows}}}


@needs_build
def test_serve_on_a_host_model(tiny):
    """The whole benchmark (no transformers): every part runs, the checks
    pass, the report renders it."""
    setup = serving.Setup(partial(_model, tiny), VOCAB)
    seen = []
    rows = serving.serve(setup, tiny_plan(), log=lambda text: None,
                         progress=lambda rows: seen.append(len(rows)))
    kinds = [r["kind"] for r in rows]
    assert "error" not in kinds and "skipped" not in kinds, rows
    assert seen == sorted(seen) and seen[-1] == len(rows)
    runs = {(r["case"]["mode"], r["case"]["fraction"]): r for r in rows
            if r["kind"] == "run"}
    modes = (serving.FUSED, serving.ONE_AT_A_TIME, "fdc static B=4",
             "fdc static B=2")
    assert set(runs) == {(m, f) for m in modes for f in (None, 0.5, 0.25)}
    for (mode, fraction), run in runs.items():
        assert run["measured"] == ("live" if mode == serving.FUSED or fraction is None
                                   else "replayed")
        assert run["requests"] == run["complete"] == 8
        assert run["throughput"] > 0 and run["itl_ms"]["p99"] >= run["itl_ms"]["p50"]
    [check] = [r for r in rows if r["kind"] == "check"]
    assert check["check"]["ok"]
    [summary] = [r for r in rows if r["kind"] == "saturation"]
    assert summary["fused_over_one_at_a_time"] > 0 and summary["decode_step_ms"] > 0
    assert summary["ids_identical_to_one_at_a_time"] == "8/8"
    assert summary["best_static"] in modes
    [ttft] = [r for r in rows if r["kind"] == "ttft"]
    assert ttft["chunk_rows"] == 20 and ttft["hf_prefill_ms"] is None
    [soak] = [r for r in rows if r["kind"] == "soak"]
    assert soak["done"] == 100 and soak["check"]["ok"], soak["check"]
    assert sum(soak["finish_reasons"].values()) == 100
    assert set(soak["finish_reasons"]) <= {"length", "cancelled"}
    assert soak["ids_agree"] == soak["ids_checked"] == 4
    assert soak["device_growth_mib"] is None and soak["rss_growth_mib"] is not None
    results = _results(rows)
    assert report.failed_checks(results) == []
    text = report.markdown(results)
    assert "### Serving" in text and "fdc static B=2" in text and "≥ 1.3×" in text


@needs_build
def test_serve_records_a_failing_part_and_goes_on(tiny):
    def no_second_model(**options):
        if options["num_slots"] == 1:
            raise RuntimeError("no second model here")
        return _model(tiny, **options)

    setup = serving.Setup(no_second_model, VOCAB)
    rows = serving.serve(setup, tiny_plan(rate_fractions=(), soak_requests=20),
                         log=lambda text: None)
    [error] = [r for r in rows if r["kind"] == "error"]
    assert error["case"]["part"] == "time to first token"
    assert any(r["kind"] == "soak" for r in rows)  # later parts still ran
    bad = report.failed_checks(_results(rows))
    assert bad == ["serving: serving part 'time to first token' failed: "
                   "RuntimeError: no second model here"]
    assert "**failed**" in report.markdown(_results(rows))


@needs_build
def test_transformers_runner_on_cpu(tiny):
    """transformers one at a time and its prefill, on the same tiny
    checkpoint on the CPU (where transformers is installed)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    hf = transformers.LlamaForCausalLM.from_pretrained(str(tiny[1])).eval()
    requests = serving.make_workload(3, VOCAB, seed=9, prompt_range=(3, 10),
                                     output_range=(2, 6))
    timelines, batches = serving.run_hf(hf, requests, np.zeros(3))
    _assert_served(requests, timelines)
    assert [b.members for b in batches] == [(0,), (1,), (2,)]
    with _model(tiny, max_context=64) as model:
        for request, t in zip(requests, timelines):
            ids, logits = model.generate(request.prompt, request.max_new_tokens,
                                         return_logits=True)
            assert serving.compare_ids(t.ids, ids, logits)[0]
    assert 0 < serving.hf_ttft_s(hf, requests[0].prompt) < 5
    setup = serving.Setup(partial(_model, tiny), VOCAB, hf)
    rows = serving.serve(setup, tiny_plan(rate_fractions=(0.5,), soak_requests=10),
                         log=lambda text: None)
    assert "error" not in [r["kind"] for r in rows]
    hf_runs = [r for r in rows if r["kind"] == "run"
               and r["case"]["mode"] == serving.TRANSFORMERS]
    assert [r["measured"] for r in hf_runs] == ["live", "replayed"]
    assert all(r["requests"] == 3 for r in hf_runs)
    [ttft] = [r for r in rows if r["kind"] == "ttft"]
    assert ttft["hf_prefill_ms"] > 0 and ttft["hf_over_fdc_chunked"] > 0


@needs_build
def test_family_on_cpu(tiny, tmp_path, monkeypatch):
    """The suite's entry point, with the tiny checkpoint standing in for the
    7B-wide model, transformers on the CPU and no device memory to read."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from fdc.testing import wide_model

    library, ckpt = tiny
    models_dir = tmp_path / "models"
    models_dir.mkdir()
    shutil.copy(ckpt / "config.json", models_dir / "wide-config.json")
    shutil.copy(library, models_dir / "wide-bf16-online.so")

    def build(out_dir, config_path, seed):
        assert json.loads(Path(config_path).read_text())["vocab_size"] == VOCAB
        shutil.copytree(ckpt, out_dir, dirs_exist_ok=True)
        return transformers.LlamaForCausalLM.from_pretrained(out_dir)

    class TinyPlan:
        def __new__(cls):
            return tiny_plan(soak_requests=20)

        quick = staticmethod(lambda: tiny_plan(soak_requests=20))

    monkeypatch.setattr(wide_model, "build", build)
    monkeypatch.setattr(serving, "Plan", TinyPlan)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda: (1 << 30, 2 << 30))
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    saved = []
    bench = types.SimpleNamespace(
        artifacts=tmp_path, quick=False, remaining_s=lambda: 500.0,
        results={"families": {}},
        save=lambda: saved.append(len(bench.results["families"]["serving"]["rows"])))
    rows = serving.family(bench)
    assert "error" not in [r["kind"] for r in rows]
    assert saved and saved[-1] == len(rows)
    [soak] = [r for r in rows if r["kind"] == "soak"]
    assert soak["device_growth_mib"] == 0.0 and soak["check"]["ok"]
    assert any(r["kind"] == "run" and r["case"]["mode"] == serving.TRANSFORMERS
               for r in rows)


# --- the report ----------------------------------------------------------------

def _run(mode, rate, fraction, throughput, measured="live", requests=256):
    return {"kind": "run", "case": {"mode": mode, "rate": rate, "fraction": fraction},
            "measured": measured, "requests": requests, "complete": requests,
            "tokens": 1000, "duration_s": 1.0, "throughput": throughput,
            "ttft_ms": {"p50": 10.0, "p99": 20.0},
            "itl_ms": {"p50": 1.0, "p99": 1.5}}


def synthetic_rows() -> list[dict]:
    return [
        {"kind": "plan", "case": {"what": "plan"}, **_plan_dict()},
        {"kind": "check", "case": {"what": "fused ids vs one at a time"},
         "check": {"ok": True, "what": "fused ids vs one at a time: 4 of 4 identical"}},
        _run(serving.FUSED, None, None, 40000.0),
        _run(serving.FUSED, 50.0, 0.5, 12345.0),
        _run(serving.ONE_AT_A_TIME, None, None, 1600.0, requests=180),
        _run(serving.ONE_AT_A_TIME, 50.0, 0.5, 1500.0, "replayed", 180),
        _run("fdc static B=32", None, None, 16000.0),
        _run("fdc static B=8", None, None, 8000.0),
        _run(serving.TRANSFORMERS, None, None, 400.0, requests=16),
        {"kind": "saturation", "case": {"what": "saturation"}, "capacity_rps": 100.0,
         "fused_tok_s": 40000.0, "one_at_a_time_tok_s": 1600.0,
         "fused_over_one_at_a_time": 25.0, "best_static": "fdc static B=32",
         "fused_over_best_static": 2.5, "itl_p50_ms": 1.0, "itl_p99_ms": 1.5,
         "decode_step_ms": 0.9, "decode_batch": 64, "itl_p99_over_step": 1.5 / 0.9,
         "ids_identical_to_one_at_a_time": "170/180"},
        {"kind": "ttft", "case": {"prompt": 1024}, "chunk_rows": 1024,
         "fdc_chunked_ms": 20.0, "fdc_one_per_step_ms": 650.0,
         "one_per_step_over_chunked": 32.5, "hf_prefill_ms": 30.0,
         "hf_over_fdc_chunked": 1.5},
        {"kind": "soak", "case": {"requests": 10000}, "done": 10000, "seconds": 9.5,
         "finish_reasons": {"length": 9100, "cancelled": 900}, "cancel_asked": 950,
         "ids_checked": 16, "ids_agree": 16, "device_growth_mib": 0.0,
         "rss_growth_mib": 1.2, "samples": [], "warm_at": 1000,
         "check": {"ok": True, "what": "soak: fine"}},
        {"kind": "skipped", "case": {"part": "fdc fused at 25.0 req/s"},
         "why": "needs about 20 s, more than is left"},
    ]


def _plan_dict() -> dict:
    return dataclasses.asdict(Plan())


def test_report_renders_serving_results():
    results = _results(synthetic_rows())
    text = report.markdown(results)
    assert "### Serving: Poisson arrivals" in text
    assert "This run: 256 requests (seed 14)" in text
    assert ("| fdc fused | all at t = 0 | – | 256 | live | 40,000 | 10.0 | 20.0 | "
            "1.00 | 1.50 |") in text
    assert "| fdc one at a time | 50.0 | 0.5 | 180 | replayed | 1,500 |" in text
    # Static batches by size, then transformers.
    assert text.index("fdc static B=8 |") < text.index("fdc static B=32 |") < \
        text.index("| transformers one at a time")
    assert "| fused / one at a time, tokens/s | 25.0× | ≥ 10× |" in text
    assert "| fused / best static (fdc static B=32), tokens/s | 2.50× | ≥ 1.3× |" in text
    assert "ITL p99 / fused decode step at B = 64 (1.50 / 0.90 ms) | 1.67 | ≤ 2 |" in text
    assert "| 1024 | 20.0 (1024 rows a step) | 650.0 | 32.5× | ≥ 20× | 30.0 | 1.50× |" \
        in text
    assert "| 10000 | 10000 | 9.5 | 950 | 900 cancelled, 9100 length | 0.0 | 1.2 | " \
        "16/16 | ok |" in text
    assert "- not run: fdc fused at 25.0 req/s" in text
    assert report.failed_checks(results) == []


def test_report_fails_a_failed_serving_check():
    rows = synthetic_rows()
    rows[1]["check"] = {"ok": False, "what": "fused ids vs one at a time: NOT a near-tie"}
    soak = next(r for r in rows if r["kind"] == "soak")
    soak["check"] = {"ok": False, "what": "soak: RSS growth 80.0 MiB (≤ 32.0)"}
    bad = report.failed_checks(_results(rows))
    assert bad == ["serving: fused ids vs one at a time: NOT a near-tie",
                   "serving: soak: RSS growth 80.0 MiB (≤ 32.0)"]
    assert "**FAIL**" in report.markdown(_results(rows))


def test_report_renders_a_partial_run():
    rows = synthetic_rows()[:1]
    assert "No part of the family has finished." in report.markdown(_results(rows))
    failed = _results([])
    failed["families"]["serving"] = {"error": "Traceback...\nRuntimeError: boom\n"}
    assert "Family failed: `RuntimeError: boom`" in report.markdown(failed)


def test_serving_plot(tmp_path):
    pytest.importorskip("matplotlib")
    written = report.plots(_results(synthetic_rows()), tmp_path)
    assert written == [tmp_path / "serving.png"]
    assert (tmp_path / "serving.png").stat().st_size > 10000


def test_metrics_of_a_synthetic_run_agree_with_numpy():
    rng = np.random.default_rng(0)
    timelines = []
    for i in range(20):
        arrival = float(rng.uniform(0, 1))
        tokens = list(arrival + np.cumsum(rng.uniform(0.01, 0.1, int(rng.integers(1, 9)))))
        timelines.append(Timeline(i, arrival, tokens, [0] * len(tokens), "length"))
    m = serving.metrics(timelines)
    itl = np.concatenate([np.diff(t.tokens) for t in timelines])
    assert m["itl_ms"]["p99"] == pytest.approx(1e3 * np.percentile(itl, 99))
    span = max(t.tokens[-1] for t in timelines) - min(t.arrival for t in timelines)
    assert m["throughput"] == pytest.approx(sum(len(t.tokens) for t in timelines) / span)
    assert not math.isnan(m["ttft_ms"]["p50"])


def test_timed_runs_pause_the_garbage_collector():
    import gc

    seen = []

    @serving.collector_paused()
    def timed():
        seen.append(gc.isenabled())

    assert gc.isenabled()
    timed()
    timed()
    assert seen == [False, False]
    assert gc.isenabled()  # restored after each run
    gc.disable()
    try:
        timed()
        assert not gc.isenabled()  # a collector already off stays off
    finally:
        gc.enable()
    # Every timed mode and the step its tail is compared with run paused.
    for fn in (serving.run_fused, serving.run_batched, serving.run_hf,
               serving.decode_step_s, serving.ttft_comparison):
        assert hasattr(fn, "__wrapped__"), fn.__name__
