"""The benchmark suite's GPU-free parts: the benchmark models (compiled and run
on the host target against numpy), the launcher's step ABI and launch
recording (on CUDA libraries compiled here, no GPU), the preparation
script, and the report. The timing itself runs only on a GPU
(scripts/bench.sh run)."""

from __future__ import annotations

import ctypes
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fdc.bench import models, report
from fdc.bench.launcher import (LaunchAttribute, LaunchConfig, LaunchRecorder,
                                LibraryError, ModelLibrary,
                                dependent_launch_config, step_args,
                                wants_dependent_launch)
from fdc.reference.llama import attention
from fdc.safetensors import bf16_bits_to_f32, f32_to_bf16_bits

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
CUDA = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
HAVE_CUDA_TOOLKIT = (CUDA / "bin" / "ptxas").exists() and \
    (CUDA / "nvvm" / "libdevice" / "libdevice.10.bc").exists()

needs_fdc = pytest.mark.skipif(not FDC.exists(), reason=f"{FDC} is not built")
needs_cuda = pytest.mark.skipif(not HAVE_CUDA_TOOLKIT,
                                reason="no CUDA toolkit (ptxas, libdevice)")


def compile_model(model: models.BenchModel, tmp: Path, target: str) -> Path:
    source = tmp / f"{model.name}.mlir"
    source.write_text(model.ir)
    out = tmp / f"{model.name}-{target.replace(':', '_')}.so"
    proc = subprocess.run([str(FDC), "compile", str(source), f"--target={target}",
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_model_has_a_unique_name():
    names = [m.name for m in models.all_models()]
    assert len(names) == len(set(names))
    # The INT4 family's 8/1 model takes each softmax scheme too.
    assert len(names) == len(models.LINEAR_SHAPES) + \
        (len(models.ATTENTION_HEADS) + 1) * len(models.SOFTMAX)


@needs_fdc
def test_every_model_verifies():
    for model in models.all_models():
        proc = subprocess.run([str(BUILD / "bin" / "fdc-opt"), "-"],
                              input=model.ir, capture_output=True, text=True)
        assert proc.returncode == 0, f"{model.name}: {proc.stderr}"


def bf16(x: np.ndarray) -> np.ndarray:
    return bf16_bits_to_f32(f32_to_bf16_bits(x.astype(np.float32)))


class HostStep:
    """A host-target library run through the launcher's StepArgs."""

    def __init__(self, library: ModelLibrary, batch: int, max_context: int):
        self.library = library
        self.arena = np.zeros(library.weights_bytes, dtype=np.uint8)
        vocab = library.manifest["config"]["vocab_size"]
        self.cache = np.zeros(max(library.kv_cache_bytes(batch, max_context), 8),
                              dtype=np.uint8)
        self.logits = np.full((batch, vocab), np.nan, dtype=np.float32)
        self.next = np.full(batch, -1, dtype=np.int32)
        self.batch, self.max_context = batch, max_context

    def put(self, name: str, values: np.ndarray) -> np.ndarray:
        """Stores `values` rounded to bf16; returns the rounded values."""
        entry = self.library.weight(name)
        bits = f32_to_bf16_bits(values.astype(np.float32))
        assert bits.nbytes == entry["bytes"]
        self.arena[entry["offset"]:entry["offset"] + entry["bytes"]] = \
            bits.view(np.uint8).reshape(-1)
        return bf16_bits_to_f32(bits)

    def run(self, tokens, positions, slots):
        m = self.batch
        inputs = {
            "tokens": np.asarray(tokens, np.int32),
            "positions": np.asarray(positions, np.int32),
            "slots": np.asarray(slots, np.int32),
            "temperature": np.zeros(m, np.float32),
            "top_k": np.zeros(m, np.int32), "top_p": np.ones(m, np.float32),
            "uniform": np.full(m, 0.5, np.float32)}
        args = step_args(batch=m, num_slots=m, max_context=self.max_context,
                         weights=self.arena.ctypes.data,
                         kv_cache=self.cache.ctypes.data,
                         logits=self.logits.ctypes.data,
                         next_tokens=self.next.ctypes.data,
                         **{k: v.ctypes.data for k, v in inputs.items()})
        self.library.step(args)
        return self.logits, self.next


@needs_fdc
def test_step_floor_counts_weights_embedding_rows_and_kv_cache():
    cfg = {"num_hidden_layers": 2, "num_key_value_heads": 8, "head_dim": 128,
           "hidden_size": 4096}
    # 1,000 weight bytes of which 100 are the embedding table; B = 3 rows of
    # 4096 bf16; K and V of 2 layers, 8 heads, 128 dims, 5 positions, bf16.
    kv = 3 * 5 * 2 * 2 * 8 * 128 * 2
    assert models.step_floor_bytes(1000, 100, cfg, 3, 5) == \
        900 + 3 * 4096 * 2 + kv


def test_linear_model_on_host_matches_numpy(tmp_path):
    """The linear benchmark model (as the suite fills it) through StepArgs."""
    rng = np.random.default_rng(1)
    n, k, m = 96, 128, 3
    library = ModelLibrary(compile_model(models.linear_model(n, k), tmp_path, "host"))
    assert library.target == "host"
    step = HostStep(library, m, 1)
    table = step.put("table", rng.standard_normal((models.TABLE_ROWS, k)))
    w = step.put("w", rng.standard_normal((n, k)) / math.sqrt(k))
    head = step.put("head", rng.standard_normal((models.HEAD_ROWS, n)) / math.sqrt(n))
    tokens = rng.integers(0, models.TABLE_ROWS, m)
    logits, next_tokens = step.run(tokens, np.zeros(m), np.arange(m))
    y = bf16(table[tokens].astype(np.float64) @ w.T.astype(np.float64))
    ref = y.astype(np.float64) @ head.T.astype(np.float64)
    assert np.linalg.norm(logits - ref) / np.linalg.norm(ref) < 1e-2
    np.testing.assert_array_equal(next_tokens, logits.argmax(axis=1))


@needs_fdc
def test_attention_model_on_host_matches_numpy(tmp_path):
    """GQA attention over a random bf16 cache at given positions and slots."""
    rng = np.random.default_rng(2)
    hq, hkv, d, s, m = 4, 2, models.HEAD_DIM, 40, 3
    library = ModelLibrary(compile_model(
        models.attention_model(hq, hkv, "unified_max"), tmp_path, "host"))
    step = HostStep(library, m, s)
    table = step.put("table", rng.standard_normal((models.TABLE_ROWS, hq * d)))
    head = step.put("head", rng.standard_normal((models.HEAD_ROWS, hq * d)) / 20)
    cache = bf16(rng.standard_normal((m, 1, 2, hkv, s, d)))
    step.cache[:] = f32_to_bf16_bits(cache).view(np.uint8).reshape(-1)
    tokens = rng.integers(0, models.TABLE_ROWS, m)
    positions, slots = np.array([s - 1, 7, 0]), np.array([2, 0, 1])
    logits, _ = step.run(tokens, positions, slots)
    ref = []
    for i in range(m):
        q = table[tokens[i]].reshape(hq, d).astype(np.float64)
        # [k|v, Hkv, T, D] -> [T, Hkv, D] each, as the reference takes them.
        kv = cache[slots[i], 0, :, :, :positions[i] + 1].astype(np.float64)
        keys, values = kv.transpose(0, 2, 1, 3)
        out = attention(q, keys, values, 1 / math.sqrt(d))
        ref.append(bf16(out).reshape(-1).astype(np.float64) @ head.T)
    ref = np.stack(ref)
    assert np.linalg.norm(logits - ref) / np.linalg.norm(ref) < 1e-2


@needs_fdc
@needs_cuda
def test_linear_family_times_the_split_k_reduction(tmp_path):
    # [1024, 4096] (a GQA model's k and v) at M = 4 runs a GEMM split 8
    # ways in K, more than a cluster adds: the linear family times its
    # linear_epilogue with it, and not the head's kernels.
    model = models.linear_model(1024, 4096)
    library = ModelLibrary(compile_model(model, tmp_path, "cuda:sm_90a"))
    recorder = LaunchRecorder()
    args = step_args(batch=4, num_slots=4, max_context=1, weights=1 << 40,
                     kv_cache=2 << 40, scratch=3 << 40)
    recorder.run(library, args)
    launched = [l.kernel for l in recorder.launches]
    measured = models.linear_op_kernels(launched)
    assert len(measured) == 2, launched
    assert any(k.startswith("linear_epilogue_") for k in measured)
    last = max(launched.index(k) for k in measured)
    head = [k for k in launched[last + 1:] if k.startswith("linear_")]
    assert head and not set(head) & measured


@needs_fdc
@needs_cuda
def test_recorder_sees_the_manifest_kernels_in_order(tmp_path):
    model = models.attention_model(32, 8, "online")
    library = ModelLibrary(compile_model(model, tmp_path, "cuda:sm_90"))
    assert library.cubin("sm_90") and library.cubin("sm_80") is None
    assert library.ptx().startswith(b"//")
    recorder = LaunchRecorder()
    args = step_args(batch=4, num_slots=4, max_context=2048, weights=1 << 40,
                     kv_cache=2 << 40, scratch=3 << 40)
    recorder.run(library, args)
    launched = [l.kernel for l in recorder.launches]
    # The manifest's order; of the linear op's dispatch table (three flat
    # GEMM tiles: the head's 128 rows leave the units idle, so no GEMV; a
    # tiled GEMM, and the wide one split in K with its linear_epilogue) one
    # kernel runs per step at M = 4, and the 8 splits of the attention run
    # its partial kernel and reduce, not its kernel of 2 splits in a cluster.
    assert launched == sorted(launched, key=library.kernels.index)
    assert all(k.startswith(("linear_", "gqa_attention_cluster_"))
               for k in set(library.kernels) - set(launched))
    assert len(library.kernels) - len(launched) == 6
    assert any(k.startswith("linear_epilogue_") for k in library.kernels)
    launches = {l.kernel.rsplit("_", 1)[0]: l for l in recorder.launches}
    # GQA 32/8: one partial block per KV head; the reduce's units are 32
    # head dims of a (sequence, query head) row, each with the power of two
    # of 32-lane groups (of a block's 16) that loads its splits four at a
    # time, so a block takes 16 / groups units.
    splits, kv_heads, batch = launches["gqa_attention_partial"].grid
    assert (kv_heads, batch) == (8, 4) and splits >= 1
    units = batch * 32 * (128 // 32)
    groups = 1
    while groups < 16 and groups * 4 < splits:
        groups *= 2
    per_block = 16 // groups
    assert launches["attention_reduce"].grid == (
        (units + per_block - 1) // per_block, 1, 1)


@needs_fdc
@needs_cuda
def test_dependent_launch_where_the_target_has_it(tmp_path, monkeypatch):
    # sm_90 kernels wait for the kernel before them (griddepcontrol), and
    # the manifest asks for dependent launches; sm_80 has neither.
    model = models.linear_model(64, 64)
    (tmp_path / "sm90").mkdir()
    (tmp_path / "sm80").mkdir()
    sm90 = ModelLibrary(compile_model(model, tmp_path / "sm90", "cuda:sm_90"))
    sm80 = ModelLibrary(compile_model(model, tmp_path / "sm80", "cuda:sm_80"))
    assert sm90.manifest["dependent_launch"] is True
    assert sm80.manifest["dependent_launch"] is False
    assert b"griddepcontrol.wait" in sm90.ptx()
    assert b"griddepcontrol" not in sm80.ptx()
    monkeypatch.delenv("FDC_DEPENDENT_LAUNCH", raising=False)
    assert wants_dependent_launch(sm90) and not wants_dependent_launch(sm80)
    monkeypatch.setenv("FDC_DEPENDENT_LAUNCH", "0")
    assert not wants_dependent_launch(sm90)


def test_launch_config_has_cuda_h_layout():
    # CUlaunchAttribute and CUlaunchConfig of cuda.h (CUDA 12 and 13).
    assert ctypes.sizeof(LaunchAttribute) == 72
    assert LaunchAttribute.value.offset == 8
    assert ctypes.sizeof(LaunchConfig) == 56
    assert (LaunchConfig.stream.offset, LaunchConfig.attrs.offset,
            LaunchConfig.num_attrs.offset) == (32, 40, 48)
    config, attribute = dependent_launch_config()
    assert (config.num_attrs, config.attrs.contents.id,
            config.attrs.contents.value) == (1, 6, 1)


@needs_fdc
@needs_cuda
def test_failed_launch_stops_the_step_with_the_error(tmp_path):
    library = ModelLibrary(compile_model(models.linear_model(64, 64), tmp_path,
                                         "cuda:sm_90"))

    class Failing(LaunchRecorder):
        def _launch(self, name, grid, block, shared, params):
            super()._launch(name, grid, block, shared, params)
            raise RuntimeError(f"no device for {name}")

    recorder = Failing()
    with pytest.raises(LibraryError, match="no device for embedding_0"):
        recorder.run(library, step_args(batch=1, num_slots=1, max_context=1))
    assert len(recorder.launches) == 1  # the step returned at the failure


def test_a_file_that_is_not_a_library_is_refused(tmp_path):
    path = tmp_path / "not-a-library.so"
    path.write_bytes(b"\x7fELF garbage")
    with pytest.raises(LibraryError, match="cannot open"):
        ModelLibrary(path)


@needs_fdc
@needs_cuda
def test_prepare_builds_every_library(tmp_path):
    out = tmp_path / "artifacts"
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "fdc.bench.prepare", "--out",
                           str(out), "--build", str(BUILD)], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (out / "lib" / "libfdc_runtime.so").exists()
    names = {m.name for m in models.all_models()} | {"wide-bf16-online"}
    for name in names:
        library = ModelLibrary(out / "models" / f"{name}.so")
        # The H100's arch-specific target, whose tables use the group GEMM.
        assert library.target == "cuda:sm_90a" and library.cubin("sm_90a")
    config = json.loads((out / "models" / "wide-config.json").read_text())
    assert config["hidden_size"] == 4096


def synthetic_results(err: float) -> dict:
    def timed(us, nbytes):
        return {"us": us, "bytes": nbytes, "gbps": nbytes / us / 1e3,
                "hbm_pct": 100 * nbytes / us / 1e3 / 3000}
    return {
        "date": "2026-11-23T00:00:00+00:00", "gpu": "Test GPU", "sms": 132,
        "l2_bytes": 50 << 20, "torch": "x", "cuda": "y", "quick": False,
        "command": "suite",
        "families": {
            "ceilings": {"rows": [{"case": {"what": "streaming read", "bytes": 1},
                                   "us": 1.0, "gbps": 3000.0}]},
            "linear": {"rows": [{
                "case": {"shape": "o", "N": 8, "K": 8, "M": 1},
                "fdc": timed(10.0, 30000), "peer": {"name": "cuBLAS", **timed(20.0, 30000)},
                "ratio": 2.0, "check": {"rel_err": err, "tol": 1e-2, "ok": err <= 1e-2}}]},
            "attention": {"rows": [{"case": {"Hq": 8, "Hkv": 1, "B": 1, "S": 99},
                                    "skipped": "too big"}]},
            "step": {"error": "Traceback ...\nRuntimeError: out of memory\n"},
        }}


def test_report_tables_name_peer_fraction_and_failures():
    text = report.markdown(synthetic_results(2e-3))
    assert "Test GPU" in text and "Command: `suite`" in text
    row = next(line for line in text.splitlines() if line.startswith("| o [8,8]"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:5] == ["1", "10.0", "3", "0"]  # M, µs, GB/s, % HBM
    assert cells[5] == "cuBLAS" and cells[9] == "2.00"
    assert "Not run (KV cache over the memory cap): 8/1 B=1 S=99." in text
    assert "Family failed: `RuntimeError: out of memory`" in text
    assert "**FAIL**" not in text
    assert report.failed_checks(synthetic_results(2e-3)) == []


def test_report_flags_a_failed_check():
    results = synthetic_results(0.5)
    assert "5.0e-01 **FAIL**" in report.markdown(results)
    (failure,) = report.failed_checks(results)
    assert failure.startswith("linear") and "5.00e-01" in failure


def test_pruned_step_table_and_its_checks():
    """The pruned-MLP step rows: both libraries' times, the speedup, the
    sparse step against its floor, and each library's check (a failed
    sparse check fails the run)."""
    def check(err):
        return {"rel_err": err, "tol": 6e-2, "ok": err <= 6e-2}
    row = {"case": {"B": 8, "context": 1024, "sparsity": 0.8},
           "dense": {"us": 480.0, "floor_us": 398.0},
           "sparse": {"us": 320.0, "floor_us": 200.0},
           "speedup": 1.5, "check": {"dense": check(3e-2), "sparse": check(4e-2)}}
    results = synthetic_results(1e-3)
    results["families"]["pruned_step"] = {"rows": [row]}
    text = report.markdown(results)
    line = next(l for l in text.splitlines() if l.startswith("| 8 | 1024 |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2:8] == ["80.0 %", "480.0", "320.0", "1.50", "200", "1.60"]
    assert report.failed_checks(results) == []
    row["check"]["sparse"] = check(0.2)
    (failure,) = report.failed_checks(results)
    assert failure.startswith("pruned_step") and "sparse" in failure


def test_report_cli(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(synthetic_results(1e-3)))
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    ok = subprocess.run([sys.executable, "-m", "fdc.bench.report", str(path)],
                        env=env, capture_output=True, text=True)
    assert ok.returncode == 0 and "### Linear" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "fdc.bench.report",
                          str(tmp_path / "missing.json")], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "missing.json" in bad.stderr


def test_perf_page_matches_its_results():
    """docs/perf.md's tables are those of docs/perf/results.json, and every
    plot it shows is committed."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    proc = subprocess.run([sys.executable, "-m", "fdc.bench.docs", "--check"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    page = (REPO / "docs" / "perf.md").read_text()
    for name in ("linear", "attention", "int4", "sparse", "step", "serving"):
        assert f"(perf/{name}.png)" in page
        assert (REPO / "docs" / "perf" / f"{name}.png").stat().st_size > 0
    results = json.loads((REPO / "docs" / "perf" / "results.json").read_text())
    assert report.failed_checks(results) == []
    assert set(results["families"]) == {"ceilings", "linear", "attention", "int4",
                                        "sparse", "pruned_step", "step",
                                        "serving"}


def test_tuning_table_names_each_kernel_and_its_split(tmp_path):
    """The measured dispatch tables in perf.md: one row per signature, each
    M range with its kernel; split-K GEMMs say how many ways."""
    tiled = {"warps_n": 2, "warps_m": 2, "row_tiles": 4, "batch_tiles": 4,
             "k_tile": 64, "stages": 4}
    tuning = {"signatures": [{
        "n": 4096, "k": 11008, "dtype": "bf16", "activation": "none",
        "bias": False, "residual": False,
        "dispatch": {"max_batch": [1, 16], "kernels": [
            {"family": "gemv", "config": {}},
            {"family": "tiled_gemm", "config": dict(tiled, split_k=1)},
            {"family": "tiled_gemm", "config": dict(tiled, split_k=3)}]}}],
        "arch": "sm_90"}
    path = tmp_path / "linear_4096x11008_bf16.json"
    path.write_text(json.dumps(tuning))
    row = next(line for line in report.tuning_md([path]).splitlines()
               if "[4096,11008]" in line)
    assert ("1: gemv; 2–16: tiled 2×2 r4 t4 k64 s4; "
            "17+: tiled 2×2 r4 t4 k64 s4 split 3") in row
    assert "| sm_90 |" in row


def test_tuning_table_names_group_gemms():
    """A group GEMM in a dispatch table: its groups, row tiles, batch
    columns, stages and split."""
    kernel = {"family": "group_gemm", "config": {
        "groups": 1, "row_tiles": 2, "batch": 64, "stages": 6, "split_k": 2}}
    assert report._kernel_short(kernel) == "group g1 r2 b64 s6 split 2"
    kernel["config"]["split_k"] = 1
    assert report._kernel_short(kernel) == "group g1 r2 b64 s6"
