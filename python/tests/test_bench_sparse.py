"""The sparse benchmark family's and the GPU sparse test's GPU-free parts: the
benchmark and test models (verified, and run on the host target against
float64 with weights packed by fdc.packing, whose words the GPU side's torch
packer reproduces), which kernels the suite times, the layout version the
suite accepts, and the report's sparse table and summary. The torch packer
and the timing run only on a GPU (test/gpu/gpu_check.py's sparse_checks
checks pack_torch against fdc.packing there)."""

from __future__ import annotations

import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from fdc import packing
from fdc.bench import models, report, tiled_csl
from fdc.bench.launcher import LaunchRecorder, ModelLibrary, step_args
from fdc.testing import sparse_models

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
FDC_OPT = BUILD / "bin" / "fdc-opt"
CUDA = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
HAVE_CUDA_TOOLKIT = (CUDA / "bin" / "ptxas").exists() and \
    (CUDA / "nvvm" / "libdevice" / "libdevice.10.bc").exists()

needs_fdc = pytest.mark.skipif(not FDC.exists(), reason=f"{FDC} is not built")
needs_cuda = pytest.mark.skipif(not HAVE_CUDA_TOOLKIT,
                                reason="no CUDA toolkit (ptxas, libdevice)")


def pruned(rng, shape, sparsity) -> np.ndarray:
    w = rng.standard_normal(shape).astype(np.float32)
    return w * (rng.random(shape) >= sparsity)


def packed_words(w: np.ndarray, tile, dtype: str) -> np.ndarray:
    """The packed words (u32: header, then the runs) of w, as the runtime
    packs them."""
    return np.frombuffer(packing.pack_tiled_csl(w, tile, dtype, capacity=False),
                         dtype="<u4")


def test_layout_version_is_the_packed_one():
    assert tiled_csl.layout_version({"name": "w", "csl_version": 3}) == 3
    for entry in ({"name": "w"}, {"name": "w", "csl_version": 2}):
        with pytest.raises(tiled_csl.TiledCSLError, match="weight 'w'"):
            tiled_csl.layout_version(entry)


def test_sparse_op_kernels_are_those_between_embedding_and_head():
    step = ["embedding_0", "sparse_linear_2", "linear_epilogue_0", "linear_3",
            "linear_epilogue_1", "argmax_0"]
    assert models.sparse_op_kernels(step) == {"sparse_linear_2",
                                              "linear_epilogue_0"}
    assert models.sparse_op_kernels(["embedding_0", "sparse_linear_0",
                                     "linear_0", "argmax_0"]) == {"sparse_linear_0"}
    with pytest.raises(ValueError):
        models.sparse_op_kernels(["embedding_0", "linear_0", "argmax_0"])


def test_linear_op_kernels_count_the_split_k_reduction():
    # A split-K kernel's reduction is timed with it; the head's kernels not.
    step = ["embedding_0", "linear_1", "linear_epilogue_0", "linear_2",
            "argmax_0"]
    assert models.linear_op_kernels(step) == {"linear_1", "linear_epilogue_0"}
    step = ["embedding_0", "linear_0", "linear_3", "linear_epilogue_1",
            "argmax_0"]
    assert models.linear_op_kernels(step) == {"linear_0"}
    with pytest.raises(ValueError, match="no measured linear"):
        models.linear_op_kernels(["embedding_0", "linear_0", "argmax_0"])
    # One reduction kernel for both ops: they could not be timed apart.
    with pytest.raises(ValueError, match="share kernels"):
        models.linear_op_kernels(["embedding_0", "linear_1",
                                  "linear_epilogue_0", "linear_2",
                                  "linear_epilogue_0", "argmax_0"])


def test_sparse_model_names():
    names = [m.name for m in models.sparse_models()]
    assert len(names) == len(set(names)) == len(models.SPARSE_SHAPES)
    assert not set(names) & {m.name for m in models.all_models()}
    names = [v.name for v in sparse_models.VARIANTS]
    assert len(names) == len(set(names))
    assert all(n.startswith("sparse-") for n in names)


@needs_fdc
def test_sparse_models_verify():
    irs = [m.ir for m in models.sparse_models()]
    irs += [sparse_models.model_ir(v) for v in sparse_models.VARIANTS]
    for ir in irs:
        proc = subprocess.run([str(FDC_OPT), "-"], input=ir, capture_output=True,
                              text=True)
        assert proc.returncode == 0, f"{ir.splitlines()[0]}: {proc.stderr}"


def compile_ir(ir: str, name: str, tmp: Path, target: str) -> ModelLibrary:
    source = tmp / f"{name}.mlir"
    source.write_text(ir)
    out = tmp / f"{name}-{target.replace(':', '_')}.so"
    proc = subprocess.run([str(FDC), "compile", str(source), f"--target={target}",
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return ModelLibrary(out)


def host_step(library: ModelLibrary, dense: dict, w_words: np.ndarray,
              dtype: str, tokens) -> np.ndarray:
    """One step of a host library: the dense weights (float32, stored in
    `dtype`), the packed "w", the logits."""
    m = len(tokens)
    arena = np.zeros(library.weights_bytes, dtype=np.uint8)
    for name, values in dense.items():
        entry = library.weight(name)
        raw = packing.to_bits(values, dtype).view(np.uint8).reshape(-1)
        assert raw.size == entry["bytes"]
        arena[entry["offset"]:entry["offset"] + raw.size] = raw
    entry = library.weight("w")
    raw = w_words.view(np.uint8)
    assert raw.size <= entry["bytes"]
    arena[entry["offset"]:entry["offset"] + raw.size] = raw
    arena[entry["offset"] + raw.size:entry["offset"] + entry["bytes"]] = 0xFF
    logits = np.full((m, library.manifest["config"]["vocab_size"]), np.nan,
                     np.float32)
    next_tokens = np.full(m, -1, np.int32)
    cache = np.zeros(max(library.kv_cache_bytes(m, 1), 256), np.uint8)
    inputs = {"tokens": np.asarray(tokens, np.int32),
              "positions": np.zeros(m, np.int32), "slots": np.arange(m, dtype=np.int32),
              "temperature": np.zeros(m, np.float32), "top_k": np.zeros(m, np.int32),
              "top_p": np.ones(m, np.float32), "uniform": np.full(m, 0.5, np.float32)}
    library.step(step_args(batch=m, num_slots=m, max_context=1,
                           weights=arena.ctypes.data, kv_cache=cache.ctypes.data,
                           logits=logits.ctypes.data,
                           next_tokens=next_tokens.ctypes.data,
                           **{k: v.ctypes.data for k, v in inputs.items()}))
    return logits


def rel_err(got, ref) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


@needs_fdc
def test_sparse_bench_model_on_host_matches_float64(tmp_path):
    """The suite's model, its weight pruned and packed as the suite packs it
    (in the manifest's layout version), on the host target."""
    rng = np.random.default_rng(3)
    n, k = 384, 256
    model = models.sparse_model(n, k)
    library = compile_ir(model.ir, model.name, tmp_path, "host")
    assert tiled_csl.layout_version(library.weight("w")) == 3
    dense = {"table": packing.round_to(rng.standard_normal((models.TABLE_ROWS, k)), "f16"),
             "head": packing.round_to(rng.standard_normal((models.HEAD_ROWS, n))
                                      / math.sqrt(n), "f16")}
    w = packing.round_to(pruned(rng, (n, k), 0.8) / math.sqrt(k), "f16")
    words = packed_words(w, models.SPARSE_TILE, "f16")
    for m in (1, 8, 17):
        tokens = rng.integers(0, models.TABLE_ROWS, m)
        logits = host_step(library, dense, words, "f16", tokens)
        y = dense["table"][tokens].astype(np.float64) @ w.T.astype(np.float64)
        y = packing.round_to(y.astype(np.float32), "f16").astype(np.float64)
        assert rel_err(logits, y @ dense["head"].T.astype(np.float64)) < 1e-2


def variant_reference(v, dense, w, tokens) -> np.ndarray:
    x = dense["table"][tokens].astype(np.float64)
    acc = x @ w.T.astype(np.float64)
    if v.bias:
        acc = acc + dense["b"]
    if v.activation == "silu_gate_up":
        gate, up = acc[:, :v.n], acc[:, v.n:]
        acc = gate / (1 + np.exp(-gate)) * up
    if v.residual:
        acc = acc + dense["rtable"][tokens]
    y = packing.round_to(acc.astype(np.float32), v.dtype).astype(np.float64)
    return y @ dense["head"].T.astype(np.float64)


@needs_fdc
@pytest.mark.parametrize("v", sparse_models.VARIANTS, ids=lambda v: v.name)
def test_sparse_gpu_test_models_on_host(v, tmp_path):
    """The GPU test's models (pinned kernels mean nothing on the host) on
    the host target: every epilogue and the reference it uses, on a random
    weight and on one with empty rows, empty tiles and a dense tile."""
    library = compile_ir(sparse_models.model_ir(v), v.name, tmp_path, "host")
    assert tiled_csl.layout_version(library.weight("w")) == 3
    rng = np.random.default_rng(len(v.name))
    dense = {}
    for name, shape in v.weight_shapes().items():
        if name != "w":
            scale = 1 / math.sqrt(shape[-1]) if name == "head" else 1.0
            dense[name] = packing.round_to(rng.standard_normal(shape) * scale, v.dtype)
    weights = [pruned(rng, (v.rows, v.k), 0.9) / math.sqrt(v.k)]
    holes = pruned(rng, (v.rows, v.k), 0.8) / math.sqrt(v.k)
    holes[::5], holes[:128, 64:128] = 0.0, 0.0
    holes[-40:, :64] = rng.standard_normal((40, 64)) + 3.0
    weights.append(holes)
    for w in weights:
        w = packing.round_to(w, v.dtype)
        words = packed_words(w, v.tile, v.dtype)
        for m in (1, 3, 17):
            tokens = rng.integers(0, sparse_models.TABLE_ROWS, m)
            logits = host_step(library, dense, words, v.dtype, tokens)
            assert rel_err(logits, variant_reference(v, dense, w, tokens)) < 1e-2


@needs_fdc
@needs_cuda
def test_suite_times_the_sparse_kernels_of_a_cuda_library(tmp_path):
    """On a CUDA library the step launches the embedding, the sparse op's
    kernel (and a split's linear_epilogue), then the head's linear."""
    model = models.sparse_model(1024, 512)
    library = compile_ir(model.ir, model.name, tmp_path, "cuda:sm_90")
    assert tiled_csl.layout_version(library.weight("w")) == 3
    entry = library.weight("w")
    assert entry["bytes"] == packing.tiled_csl_capacity_bytes(1024, 512, models.SPARSE_TILE)
    for batch in (1, 8, 32):
        recorder = LaunchRecorder()
        recorder.run(library, step_args(batch=batch, num_slots=batch, max_context=1,
                                        weights=1 << 40, kv_cache=2 << 40,
                                        scratch=3 << 40))
        launched = [launch.kernel for launch in recorder.launches]
        kernels = models.sparse_op_kernels(launched)
        assert any(k.startswith("sparse_linear_") for k in kernels), launched
        assert launched[0].startswith("embedding_")


def synthetic_sparse_rows(err: float = 1e-4) -> list[dict]:
    def timed(us, nbytes):
        return {"us": us, "bytes": nbytes, "gbps": nbytes / us / 1e3,
                "hbm_pct": 100 * nbytes / us / 1e3 / 3000}
    rows = []
    for (n, k), base in (((4096, 11008), 40.0), ((9216, 9216), 70.0)):
        for sparsity, fdc_us in ((0.7, base), (0.9, base / 2)):
            for batch, slow in ((8, 1.0), (32, 1.25)):
                us = fdc_us * slow
                rows.append({
                    "case": {"shape": "s", "N": n, "K": k, "sparsity": sparsity,
                             "batch": batch},
                    "fdc": {"kernel": ["sparse_linear_0"], **timed(us, 10**6)},
                    "check": {"rel_err": err, "tol": 1e-2, "ok": err <= 1e-2},
                    "peers": {"cuSPARSE (torch CSR)": timed(20 * base, 10**6),
                              "cuBLAS dense": timed(base, 10**6)},
                    "ratio_dense": base / us, "ratio_cusparse": 20 * base / us})
    return rows


def test_report_sparse_table_and_summary():
    rows = synthetic_sparse_rows()
    results = {"date": "d", "gpu": "G", "sms": 1, "l2_bytes": 50 << 20,
               "torch": "t", "cuda": "c", "command": "suite",
               "families": {"sparse": {"rows": rows}}}
    text = report.markdown(results)
    assert "speedup vs dense" in text and "packed weight it reads" in text
    line = next(l for l in text.splitlines() if l.startswith("| s [9216,9216] | 90% | 32"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[3] == "43.8" and cells[8] == "1.60" and cells[9] == "32.0"
    summary = report.sparse_summary(rows)
    per = summary["per_sparsity"]
    assert per["0.7"]["geomean_vs_dense"] == pytest.approx(1 / math.sqrt(1.25))
    assert per["0.9"]["min_vs_dense"] == pytest.approx(2 / 1.25)
    assert per["0.9"]["min_vs_dense_case"]["batch"] == 32
    assert summary["min_vs_cusparse"] == pytest.approx(20 / 1.25)
    assert "Least speedup over cuSPARSE in all: 16.0" in text
    assert report.failed_checks(results) == []
    results["families"]["sparse"]["rows"] = synthetic_sparse_rows(0.5)
    assert "5.0e-01 **FAIL**" in report.markdown(results)
    assert len(report.failed_checks(results)) == len(rows)


def test_report_keeps_the_table_of_runs_without_fdc():
    """Rows of a run before fdc's sparse kernel was timed (a status only)
    keep their table (docs/perf.md's may come from such a run)."""
    rows = [{"case": {"N": 8, "K": 8, "sparsity": 0.7, "batch": 8},
             "fdc": {"status": "not implemented"},
             "peers": {"cuSPARSE (torch CSR)": {"us": 2.0, "gbps": 1.0, "hbm_pct": 1.0},
                       "cuBLAS dense": {"us": 1.0, "gbps": 1.0, "hbm_pct": 1.0}}}]
    text = report.sparse_md(rows)
    assert "cuSPARSE / dense time" in text and "not implemented" in text
    assert report.sparse_summary(rows) is None
