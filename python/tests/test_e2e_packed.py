"""Packed weight layouts end to end on the host target: the frontend's
--sparse-mlp (Tiled-CSL MLP weights, decode.sparse_linear), compiled and run
against the dense build of the same checkpoint and the float64 reference;
INT4 KV cache / INT4 linear weights on f16/bf16 checkpoints (the f32 ones are
covered by test_quantisation.py); and the loader's errors for checkpoints that
do not fit a packed library.

The frontend tests need nothing built (fdc-opt verifies the IR when it is).
The compiled tests need build/bin/fdc and build/lib/libfdc_runtime.so (or the
build directory named by FDC_BUILD_DIR) and are skipped without them.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_module

from fdc.checkpoint import Checkpoint
from fdc.config import ModelConfig
from fdc.packing import (TILED_CSL_VERSION, f16_bits_to_f32, fake_quantise, pack_int4,
                         pack_tiled_csl, quantise_groups, tiled_csl_capacity_bytes,
                         tiled_csl_header_words, to_bits)
from fdc.reference.llama import ReferenceLlama
from fdc.safetensors import bf16_bits_to_f32, read_header, save_file
from fdc.testing.tiny_checkpoint import (SAFETENSORS_DTYPE, make_tiny_checkpoint, prune_mlp,
                                         tiny_config, tiny_weights, write_checkpoint)

PYTHON_DIR = Path(__file__).resolve().parents[1]
REPO = PYTHON_DIR.parent
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
FDC_OPT = BUILD / "bin" / "fdc-opt"
RUNTIME = BUILD / "lib" / "libfdc_runtime.so"
os.environ.setdefault("FDC_RUNTIME_LIB", str(RUNTIME))

_missing = [str(p) for p in (FDC, RUNTIME) if not p.exists()]
needs_build = pytest.mark.skipif(
    bool(_missing), reason=f"fdc is not built (missing {', '.join(_missing)}); build it with "
                           "`ninja -C build fdc fdc_runtime` to run the end-to-end tests")

PROMPT = [1, 2, 3, 4]
STEPS = 32
VOCAB = 512
TILE = "tile = 128x64"
SPARSITIES = (0.0, 0.8, 0.95, 1.0)
# Error of the compiled model's logits against the float64 reference fed the
# same tokens (||got - ref|| / ||ref||). Activations are stored in the
# checkpoint's dtype, so this is set by its precision; the dense build of the
# tiny checkpoints measures ~7e-4 (f16) and ~6e-3 (bf16).
STORAGE_TOL = {"f16": 3e-3, "bf16": 3e-2}


def rel_err(got, ref) -> float:
    got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def emit(ckpt, *flags) -> str:
    result = run_module("fdc.frontend", ckpt, "--name", "tiny", *flags)
    assert result.returncode == 0, result.stderr
    return result.stdout


def verify(text: str, tmp_path: Path) -> None:
    """fdc-opt parses and verifies the IR (when it is built)."""
    if not os.access(FDC_OPT, os.X_OK):
        return
    path = tmp_path / "verify.mlir"
    path.write_text(text)
    result = subprocess.run([str(FDC_OPT), str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def run_fdc(*args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(FDC), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        pytest.fail(f"fdc {' '.join(map(str, args))} exited {proc.returncode}:\n"
                    f"{proc.stdout}{proc.stderr}")
    return proc


def write_mixed_checkpoint(out_dir: Path, config: dict, weights: dict, dtype_of) -> None:
    """A checkpoint whose tensors have per-tensor dtypes (``dtype_of(name)``:
    f32/f16/bf16), one safetensors file per dtype plus an index."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    files: dict[str, dict] = {}
    for name, w in weights.items():
        files.setdefault(dtype_of(name), {})[name] = w
    weight_map = {}
    for dtype, part in files.items():
        file = f"model-{dtype}.safetensors"
        save_file(part, str(out_dir / file), SAFETENSORS_DTYPE[dtype], metadata={"format": "pt"})
        weight_map.update({name: file for name in part})
    (out_dir / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": weight_map}, indent=2) + "\n")


def is_mlp(name: str) -> bool:
    return ".mlp." in name


# =========================================================================== frontend


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("packed_ckpt")
    for dtype in ("f16", "bf16"):
        make_tiny_checkpoint(str(root / dtype), dtype=dtype, sparsity=0.8)
    make_tiny_checkpoint(str(root / "f32"), sparsity=0.8)
    make_tiny_checkpoint(str(root / "bf16_tied"), dtype="bf16", tied=True, sparsity=0.8)
    return root


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_sparse_mlp_ir(ckpts, tmp_path, dtype):
    text = emit(ckpts / dtype, "--sparse-mlp")
    gu = f"!decode.tiled_csl<1024x256x{dtype}, {TILE}>"
    down = f"!decode.tiled_csl<256x512x{dtype}, {TILE}>"
    act = f"tensor<?x256x{dtype}>"
    for i in range(2):
        p = f"model.layers.{i}."
        # gate_up stays one concat weight, now Tiled-CSL
        assert (f'decode.weight @"{p}mlp.gate_up_proj.weight" = concat ["{p}mlp.gate_proj.weight", '
                f'"{p}mlp.up_proj.weight"] : {gu}') in text
        assert f'decode.weight @"{p}mlp.down_proj.weight" : {down}' in text
        assert (f"%g_{i} = decode.sparse_linear %x2_{i}, %wgu_{i} {{activation = "
                f"#decode<activation silu_gate_up>}} : {act}, {gu} -> tensor<?x512x{dtype}>") in text
        assert (f"%h{2 * i + 2} = decode.sparse_linear %g_{i}, %wd_{i} residual %h{2 * i + 1} : "
                f"tensor<?x512x{dtype}>, {down}, {act} -> {act}") in text
        # attention projections stay dense
        assert f'decode.weight @"{p}self_attn.q_proj.weight" : tensor<256x256x{dtype}>' in text
    assert text.count("decode.sparse_linear") == 4
    assert text.count("= decode.linear") == 2 * 4 + 1  # q, k, v, o per layer; lm_head
    assert text.count("tiled_csl") == 4 * 3  # declaration, weight_ref, use
    verify(text, tmp_path)
    # without the flag, nothing changes
    plain = emit(ckpts / dtype)
    assert "tiled_csl" not in plain and "sparse_linear" not in plain
    assert plain == emit(ckpts / dtype, "--linear-weights", "dense")


def test_sparse_mlp_with_int4(ckpts, tmp_path):
    """--sparse-mlp with INT4 linear weights and KV cache: INT4 takes the
    attention projections, Tiled-CSL the MLP (a tied checkpoint: the embedding
    is the dense lm_head)."""
    text = emit(ckpts / "bf16_tied", "--sparse-mlp", "--linear-weights", "int4",
                "--group-size", "32", "--kv-cache", "int4", "--kv-groups", "2")
    qt = lambda n, k: f"!decode.qtensor<{n}x{k}xi4, group_size = 32, scale = f16>"
    for i in range(2):
        p = f"model.layers.{i}."
        for proj, n in (("q", 256), ("k", 64), ("v", 64), ("o", 256)):
            assert f'decode.weight @"{p}self_attn.{proj}_proj.weight" : {qt(n, 256)}' in text
        assert f"!decode.tiled_csl<1024x256xbf16, {TILE}>" in text
        assert f'decode.weight @"{p}mlp.down_proj.weight" : !decode.tiled_csl<256x512xbf16' in text
    assert "qtensor<1024x256" not in text and "qtensor<256x512" not in text
    assert "!decode.int4<groups = 2>" in text
    assert 'decode.weight @"model.embed_tokens.weight" : tensor<512x256xbf16>' in text
    verify(text, tmp_path)
    # A group size that does not divide intermediate_size is fine: down_proj is sparse.
    config = tiny_config("gqa", "bf16")
    config["intermediate_size"] = 576  # tiles divide [1152, 256] and [256, 576]; 128 does not
    write_checkpoint(str(tmp_path / "i576"), config, tiny_weights(config), "bf16")
    verify(emit(tmp_path / "i576", "--sparse-mlp", "--linear-weights", "int4",
                "--group-size", "128"), tmp_path)
    result = run_module("fdc.frontend", tmp_path / "i576", "--linear-weights", "int4",
                        "--group-size", "128")
    assert result.returncode == 1
    assert "--group-size 128 does not divide K = 576 (intermediate_size (down_proj))" in \
        result.stderr


def test_sparse_mlp_needs_f16_or_bf16(ckpts):
    result = run_module("fdc.frontend", ckpts / "f32", "--sparse-mlp", "-o", ckpts / "x.mlir")
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("fdc.frontend: error: --sparse-mlp: ")
    assert "f16 or bf16" in result.stderr and "checkpoint is f32" in result.stderr
    assert "Traceback" not in result.stderr and not (ckpts / "x.mlir").exists()


@pytest.mark.parametrize("change, message", [
    # gate_up [1088, 256]: 1088 rows are not whole 128-row tiles
    ({"intermediate_size": 544},
     "--sparse-mlp: weight 'model.layers.0.mlp.gate_up_proj.weight' [1088, 256] does not split "
     "into 128x64 tiles: N = 1088 is not a multiple of 128"),
    # down [320, 512]
    ({"hidden_size": 320},
     "--sparse-mlp: weight 'model.layers.0.mlp.down_proj.weight' [320, 512] does not split "
     "into 128x64 tiles: N = 320 is not a multiple of 128"),
    # gate_up [192, 256] (the first weight checked; down [256, 96] fails too)
    ({"intermediate_size": 96},
     "weight 'model.layers.0.mlp.gate_up_proj.weight' [192, 256] does not split into 128x64 "
     "tiles: N = 192 is not a multiple of 128"),
    ({"hidden_size": 288, "num_attention_heads": 9, "num_key_value_heads": 3},
     "weight 'model.layers.0.mlp.gate_up_proj.weight' [1024, 288] does not split into 128x64 "
     "tiles: K = 288 is not a multiple of 64"),
])
def test_sparse_mlp_tile_must_divide(tmp_path, change, message):
    config = dict(tiny_config("gqa", "f16"), **change)
    write_checkpoint(str(tmp_path / "c"), config, tiny_weights(config), "f16")
    emit(tmp_path / "c")  # the checkpoint itself is fine
    result = run_module("fdc.frontend", tmp_path / "c", "--sparse-mlp")
    assert result.returncode == 1 and result.stdout == ""
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# =========================================================================== compiled


class Libraries:
    """Checkpoints and model libraries, each built once per module."""

    def __init__(self, root: Path):
        self.root = root
        self._ckpts: dict[tuple, Path] = {}
        self._libs: dict[tuple, Path] = {}

    def checkpoint(self, dtype: str, sparsity: float) -> Path:
        key = (dtype, sparsity)
        if key not in self._ckpts:
            path = self.root / f"ckpt_{dtype}_{sparsity:g}"
            make_tiny_checkpoint(str(path), dtype=dtype, sparsity=sparsity)
            self._ckpts[key] = path
        return self._ckpts[key]

    def library(self, ckpt: Path, *flags: str) -> Path:
        key = (ckpt, flags)
        if key not in self._libs:
            tag = "_".join(f.lstrip("-") for f in flags) or "dense"
            mlir = self.root / f"{ckpt.name}.{tag}.mlir"
            mlir.write_text(emit(ckpt, *flags))
            so = mlir.with_suffix(".so")
            run_fdc("compile", mlir, "--target=host", "-o", so)
            self._libs[key] = so
        return self._libs[key]


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> Libraries:
    return Libraries(tmp_path_factory.mktemp("packed_e2e"))


def run_binding(so: Path, ckpt: Path, prompt=PROMPT, steps=STEPS, **sampling):
    from fdc.runtime import Model
    with Model(so, ckpt, max_context=256) as model:
        return model.generate(prompt, steps, return_logits=True, **sampling)


def teacher_forced(ref: ReferenceLlama, ids, prompt=PROMPT) -> np.ndarray:
    """The reference's logits for each generated id, fed the given ids."""
    cache = ref.new_cache(len(prompt) + len(ids))
    out = []
    for pos, tok in enumerate(list(prompt) + list(ids[:-1])):
        logits = ref.step(tok, pos, cache)
        if pos >= len(prompt) - 1:
            out.append(logits)
    return np.array(out)


# A lead of the best logit over the runner-up (relative to the largest
# logit) that f16/bf16 rounding cannot overturn.
CLEAR_MARGIN = {"f16": 0.01, "bf16": 0.05}


def check_greedy_ids(ids, forced, dtype) -> None:
    """Greedy ids agree with the reference wherever its best logit leads the
    runner-up clearly (near-ties may flip under f16/bf16 rounding)."""
    top2 = np.sort(forced, axis=1)[:, -2:]
    margin = (top2[:, 1] - top2[:, 0]) / np.abs(forced).max(axis=1)
    clear = margin > CLEAR_MARGIN[dtype]
    assert clear.sum() >= len(ids) // 4
    np.testing.assert_array_equal(np.array(ids)[clear], forced.argmax(axis=1)[clear])


def manifest_of(so: Path) -> dict:
    lib = ctypes.CDLL(str(so))
    return json.loads(ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "fdc_manifest"))))


@needs_build
@pytest.mark.parametrize("sparsity", SPARSITIES)
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_sparse_mlp_matches_dense(libs, dtype, sparsity):
    """The sparse product is exact dense math on the pruned weights, with the
    same epilogues: the sparse build's logits equal the dense build's (to
    1e-6; the host lowering expands each tile into a dense one and sums in
    column order, as the dense product does, whatever order the packer gave
    the words), and both are within the storage dtype's tolerance of the
    float64 reference on the same pruned weights."""
    ckpt = libs.checkpoint(dtype, sparsity)
    sparse_so = libs.library(ckpt, "--sparse-mlp")
    manifest = manifest_of(sparse_so)
    packed = {w["name"]: w for w in manifest["weights"] if w["layout"] == "tiled_csl"}
    assert sorted(packed) == sorted(f"model.layers.{i}.mlp.{w}_proj.weight"
                                    for i in range(2) for w in ("gate_up", "down"))
    for w in packed.values():
        assert w["dtype"] == dtype and w["tile"] == [128, 64]
        assert w["csl_version"] == TILED_CSL_VERSION
    assert sum(k["op"] == "decode.sparse_linear" for k in manifest["kernels"]) == 4

    ids, logits = run_binding(sparse_so, ckpt)
    dense_ids, dense_logits = run_binding(libs.library(ckpt), ckpt)
    assert ids == dense_ids
    assert np.all(np.isfinite(logits))
    sparse_vs_dense = rel_err(logits, dense_logits)
    assert sparse_vs_dense < 1e-6

    forced = teacher_forced(ReferenceLlama(str(ckpt)), ids)
    err, dense_err = rel_err(logits, forced), rel_err(dense_logits, forced)
    assert err < STORAGE_TOL[dtype]
    assert err <= dense_err * (1 + 1e-5) + 1e-9
    check_greedy_ids(ids, forced, dtype)
    assert len(set(ids)) >= 8, ids
    if sparsity == 0.8:
        # The comparison sees the pruning: the unpruned weights' reference is far off.
        full = libs.root / f"unpruned_{dtype}"
        if not full.exists():
            make_tiny_checkpoint(str(full), dtype=dtype)
        assert rel_err(logits, teacher_forced(ReferenceLlama(str(full)), ids)) > 10 * err


@needs_build
def test_sparse_mlp_cli_and_batch(libs, tmp_path):
    """`fdc run` gives the binding's logits; a batch of several sequences (the
    sparse product loops over the batch inside each tile) gives each
    sequence's single-request result."""
    from fdc.runtime import Model
    ckpt = libs.checkpoint("bf16", 0.8)
    so = libs.library(ckpt, "--sparse-mlp")
    ids, logits = run_binding(so, ckpt)
    dump = tmp_path / "logits.bin"
    proc = run_fdc("run", so, "--weights", ckpt, "--prompt-ids", ",".join(map(str, PROMPT)),
                   "--max-new-tokens", STEPS, "--max-context", 256, "--dump-logits", dump)
    assert f"ids: {','.join(map(str, ids))}" in proc.stdout
    np.testing.assert_array_equal(np.fromfile(dump, dtype="<f4").reshape(STEPS, VOCAB), logits)

    requests = [dict(prompt_ids=[5], max_new_tokens=20, return_logits=True),
                dict(prompt_ids=[1, 2, 3, 4, 5, 6, 7], max_new_tokens=12, return_logits=True),
                dict(prompt_ids=[9, 8, 7, 6], max_new_tokens=16, seed=42, temperature=0.8,
                     top_k=20, top_p=0.9, return_logits=True)]
    with Model(so, ckpt, max_context=256, num_slots=3) as model:
        batch = model.generate_batch(requests)
        for spec, got in zip(requests, batch):
            kwargs = {k: v for k, v in spec.items()
                      if k not in ("prompt_ids", "max_new_tokens", "return_logits")}
            alone_ids, alone_logits = model.generate(spec["prompt_ids"], spec["max_new_tokens"],
                                                     return_logits=True, **kwargs)
            assert got["error"] is None and got["finish_reason"] == "length"
            assert got["ids"] == alone_ids
            np.testing.assert_allclose(got["logits"], alone_logits, rtol=1e-5, atol=1e-5)


@needs_build
def test_sparse_mlp_packs_f32_sources(libs, tmp_path):
    """A tiled_csl weight also takes f32 sources, rounded to its element type
    by the loader: MLP weights stored as f32 give exactly the logits of the
    bf16 checkpoint (saved with the same round-to-nearest-even)."""
    ckpt = libs.checkpoint("bf16", 0.8)
    so = libs.library(ckpt, "--sparse-mlp")
    config = tiny_config("gqa", "bf16")
    weights = prune_mlp(tiny_weights(config, seed=0), 0.8)
    mixed = tmp_path / "mixed"
    write_mixed_checkpoint(mixed, config, weights, lambda n: "f32" if is_mlp(n) else "bf16")
    assert Checkpoint(str(mixed)).tensors["model.layers.1.mlp.up_proj.weight"].dtype == "F32"
    ids, logits = run_binding(so, ckpt)
    mixed_ids, mixed_logits = run_binding(so, mixed)
    assert mixed_ids == ids
    np.testing.assert_array_equal(mixed_logits, logits)


# --------------------------------------------------------------------------- fdc pack

SPARSE_INT4 = ("--sparse-mlp", "--linear-weights", "int4", "--group-size", "32")


def packed_tensors(path: Path) -> tuple[dict, dict[str, bytes]]:
    """The metadata and raw tensor bytes of a packed-weights file."""
    header = read_header(str(path))
    data = path.read_bytes()
    assert all(info.dtype == "U8" and len(info.shape) == 1 for info in header.tensors.values())
    return header.metadata, {name: data[info.begin:info.end]
                             for name, info in header.tensors.items()}


@needs_build
def test_fdc_pack_round_trip(libs, tmp_path):
    """`fdc pack` writes every int4 and tiled_csl weight of the library once,
    as fdc.packing packs it (an independent implementation of the layouts);
    the binding and `fdc run` load the file instead of packing and give the
    unpacked load's logits bit for bit, also from a checkpoint that no longer
    holds the packed weights' sources."""
    from fdc.runtime import Model
    ckpt = libs.checkpoint("bf16", 0.8)
    so = libs.library(ckpt, *SPARSE_INT4)
    packed = tmp_path / "tiny.packed"
    proc = run_fdc("pack", so, "--weights", ckpt, "-o", packed)
    manifest = manifest_of(so)
    layouts = {w["name"]: w for w in manifest["weights"] if w["layout"] != "dense"}
    int4 = sum(w["layout"] == "int4" for w in layouts.values())
    assert int4 >= 8 and len(layouts) - int4 == 4
    assert proc.stdout.startswith(f"packed {int4} int4 and 4 tiled_csl weights (")

    metadata, tensors = packed_tensors(packed)
    assert metadata["format"] == "fdc-packed-weights" and metadata["version"] == "1"
    descriptions = json.loads(metadata["weights"])
    assert sorted(tensors) == sorted(descriptions) == sorted(layouts)
    checkpoint = Checkpoint(str(ckpt))
    for name, w in layouts.items():
        assert descriptions[name]["sources"] == w["sources"]
        assert descriptions[name]["shape"] == w["shape"]
        dense = np.concatenate([checkpoint.load(s) for s in w["sources"]])
        if w["layout"] == "int4":
            assert tensors[name] == pack_int4(dense, w["group_size"], w["scale_dtype"])
        else:
            assert descriptions[name]["csl_version"] == TILED_CSL_VERSION
            expected = pack_tiled_csl(dense, tuple(w["tile"]), w["dtype"], capacity=False)
            assert tensors[name] == expected
            assert len(expected) < w["bytes"]

    ids, logits = run_binding(so, ckpt)
    with Model(so, ckpt, max_context=256, packed_weights=packed) as model:
        packed_ids, packed_logits = model.generate(PROMPT, STEPS, return_logits=True)
    assert packed_ids == ids
    np.testing.assert_array_equal(packed_logits, logits)

    # The checkpoint without the packed weights' sources.
    config = json.loads((ckpt / "config.json").read_text())
    sources = {s for w in layouts.values() for s in w["sources"]}
    rest = {name: checkpoint.load(name) for name in checkpoint.tensors if name not in sources}
    write_checkpoint(str(tmp_path / "rest"), config, rest, "bf16")
    dump = tmp_path / "logits.bin"
    proc = run_fdc("run", so, "--weights", tmp_path / "rest", "--packed-weights", packed,
                   "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", STEPS,
                   "--max-context", 256, "--dump-logits", dump)
    assert f"ids: {','.join(map(str, ids))}" in proc.stdout
    np.testing.assert_array_equal(np.fromfile(dump, dtype="<f4").reshape(STEPS, VOCAB), logits)
    # Without the file that checkpoint cannot be packed.
    expect_load_error(so, tmp_path / "rest", "has no tensor")


@needs_build
def test_fdc_pack_refusals(libs, tmp_path):
    """A packed-weights file made for another library, or damaged, is refused
    naming the file and the weight; fdc pack refuses a library with nothing
    to pack and keeps an existing output when it fails."""
    from fdc.runtime import FdcRuntimeError, FdcTypeError, Model
    ckpt = libs.checkpoint("bf16", 0.8)
    sparse_so = libs.library(ckpt, "--sparse-mlp")
    both_so = libs.library(ckpt, *SPARSE_INT4)
    packed = tmp_path / "sparse.packed"
    run_fdc("pack", sparse_so, "--weights", ckpt, "-o", packed)

    def refused(so, path, *needles):
        with pytest.raises(FdcRuntimeError) as info:
            Model(so, ckpt, max_context=64, packed_weights=path)
        for needle in needles:
            assert needle in str(info.value), str(info.value)

    refused(both_so, packed, f"packed-weights file '{packed}' has no weight "
                             "'model.layers.0.self_attn.k_proj.weight' (int4) of the library")
    # The f16 checkpoint's library has the same weights in f16.
    f16_so = libs.library(libs.checkpoint("f16", 0.8), "--sparse-mlp")
    refused(f16_so, packed, "weight 'model.layers.0.mlp.down_proj.weight': dtype bf16 does "
                            "not match the library's f16")
    # A word moved outside its tile.
    metadata, tensors = packed_tensors(packed)
    name = "model.layers.1.mlp.down_proj.weight"
    words = np.frombuffer(tensors[name], "<u4").copy()
    header = tiled_csl_header_words(256, 512)
    words[header + 5] = (words[header + 5] & 0xffff) | (128 * 64) << 16
    tensors[name] = words.tobytes()
    damaged = tmp_path / "damaged.packed"
    save_file({k: np.frombuffer(v, np.uint8) for k, v in tensors.items()}, str(damaged),
              metadata=metadata)
    refused(sparse_so, damaged, f"packed-weights file '{damaged}': weight '{name}': tiled_csl "
                                "tile 0 word 5 (location 8192): outside the 128x64 tile")
    refused(sparse_so, ckpt / "model.safetensors", "(make one with fdc pack)")
    with pytest.raises(FdcTypeError, match="packed_weights must be a path"):
        Model(sparse_so, ckpt, packed_weights=3)

    dense_so = libs.library(ckpt)
    proc = run_fdc("pack", dense_so, "--weights", ckpt, "-o", tmp_path / "x", check=False)
    assert proc.returncode == 1 and not (tmp_path / "x").exists()
    assert proc.stderr == ("fdc pack: error: the library has no int4 or tiled_csl weight to "
                           "pack\n")
    # A checkpoint without the MLP weights fails after the int4 weights are
    # written: the old file stays, and no temporary file is left.
    checkpoint = Checkpoint(str(ckpt))
    config = json.loads((ckpt / "config.json").read_text())
    write_checkpoint(str(tmp_path / "no_mlp"), config,
                     {n: checkpoint.load(n) for n in checkpoint.tensors if not is_mlp(n)}, "bf16")
    before = packed.read_bytes()
    proc = run_fdc("pack", both_so, "--weights", tmp_path / "no_mlp", "-o", packed, check=False)
    assert proc.returncode == 1 and "has no tensor 'model.layers.0.mlp.gate_proj.weight'" in \
        proc.stderr, proc.stderr
    assert packed.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.packed", "no_mlp",
                                                          "sparse.packed"]


# --------------------------------------------------------------------------- loader errors


def expect_load_error(so: Path, ckpt: Path, *needles: str) -> None:
    """Both the binding and `fdc run` refuse the checkpoint with a message
    holding every needle."""
    from fdc.runtime import FdcRuntimeError, Model
    with pytest.raises(FdcRuntimeError) as info:
        Model(so, ckpt, max_context=64)
    for needle in needles:
        assert needle in str(info.value), str(info.value)
    proc = run_fdc("run", so, "--weights", ckpt, "--prompt-ids", "1", "--max-new-tokens", 1,
                   check=False)
    assert proc.returncode != 0
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@needs_build
@pytest.mark.parametrize("name, shape, needles", [
    ("model.layers.1.mlp.down_proj.weight", (256, 448),
     ["weight 'model.layers.1.mlp.down_proj.weight'",
      "checkpoint shape [256, 448] does not fit library shape [256, 512]"]),
    ("model.layers.0.mlp.gate_proj.weight", (500, 256),
     ["weight 'model.layers.0.mlp.gate_up_proj.weight'", "1012 rows"]),
    ("model.layers.0.mlp.up_proj.weight", (512, 200),
     ["weight 'model.layers.0.mlp.gate_up_proj.weight'",
      "source 'model.layers.0.mlp.up_proj.weight'", "[512, 200]"]),
])
def test_sparse_library_refuses_wrong_shape(libs, tmp_path, name, shape, needles):
    so = libs.library(libs.checkpoint("bf16", 0.8), "--sparse-mlp")
    config = tiny_config("gqa", "bf16")
    weights = prune_mlp(tiny_weights(config, seed=0), 0.8)
    weights[name] = np.ones(shape, np.float32)
    write_checkpoint(str(tmp_path / "bad"), config, weights, "bf16")
    expect_load_error(so, tmp_path / "bad", *needles)


@needs_build
def test_sparse_library_refuses_wrong_dtype(libs, tmp_path):
    """A bf16 tiled_csl weight takes bf16 or f32 sources, not f16."""
    so = libs.library(libs.checkpoint("bf16", 0.8), "--sparse-mlp")
    config = tiny_config("gqa", "bf16")
    weights = prune_mlp(tiny_weights(config, seed=0), 0.8)
    write_mixed_checkpoint(tmp_path / "bad", config, weights,
                           lambda n: "f16" if n.endswith("layers.0.mlp.down_proj.weight")
                           else "bf16")
    expect_load_error(so, tmp_path / "bad", "weight 'model.layers.0.mlp.down_proj.weight'",
                      "checkpoint dtype F16", "bf16 or f32 (to pack as tiled_csl)")


def fake_library(manifest: dict, tmp_path: Path) -> Path:
    """A host library with ``manifest`` (hashed as fdc compile does) and a
    step that does nothing: what the runtime checks at load time."""
    text = json.dumps(manifest).encode()
    data = text + b"\0"
    manifest_hash = 14695981039346656037  # FNV-1a, as fdc_manifest_hash_of
    for byte in text:
        manifest_hash = ((manifest_hash ^ byte) * 1099511628211) & (2**64 - 1)
    source = tmp_path / "fake.c"
    source.write_text(
        "#include <stdint.h>\n"
        "const uint32_t fdc_abi_version = 3;\n"
        'const char fdc_target[] = "host";\n'
        f"const char fdc_manifest[] = {{{','.join(map(str, data))}}};\n"
        f"const uint64_t fdc_manifest_hash = {manifest_hash}ULL;\n"
        "void fdc_model_step(const void *args) { (void)args; }\n")
    fake = tmp_path / "fake.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(fake), str(source)], check=True)
    return fake


@needs_build
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the library")
@pytest.mark.parametrize("version", [1, 2, 4])
def test_library_with_other_tiled_csl_version(libs, tmp_path, version):
    """A library whose tiled_csl weight declares another layout version (a
    version 1 library has location-ordered runs and no padding, a version 2
    one words ordered for the odd-row swizzle) is refused, naming the weight
    and the version."""
    ckpt = libs.checkpoint("bf16", 0.8)
    manifest = manifest_of(libs.library(ckpt, "--sparse-mlp"))
    name = "model.layers.1.mlp.gate_up_proj.weight"
    entry = next(w for w in manifest["weights"] if w["name"] == name)
    assert entry["csl_version"] == TILED_CSL_VERSION == 3
    entry["csl_version"] = version
    expect_load_error(fake_library(manifest, tmp_path), ckpt, f"weight '{name}'",
                      f"tiled_csl layout version {version} is not the version this runtime "
                      f"reads (3)")


@needs_build
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler to build the library")
def test_library_with_partial_tiles(libs, tmp_path):
    """The tiny model's shapes are multiples of the tile, so a hand-made
    library declares a tiled_csl weight [256, 500] with 128x64 tiles (the
    last tile column partial); its checkpoint has that weight. The runtime takes it at the
    version 2 capacity (the grid's, 2 x 8 tiles, as for [256, 512]) and
    refuses any other, naming the weight."""
    so = libs.library(libs.checkpoint("bf16", 0.8), "--sparse-mlp")
    manifest = manifest_of(so)
    name = "model.layers.0.mlp.down_proj.weight"
    entry = next(w for w in manifest["weights"] if w["name"] == name)
    capacity = tiled_csl_capacity_bytes(256, 500, (128, 64))
    assert capacity == entry["bytes"] == 20 * 4 + 16 * 128 * 64 * 4
    entry["shape"] = [256, 500]
    manifest["config"]["intermediate_size"] = 500
    config = dict(tiny_config("gqa", "bf16"))
    weights = prune_mlp(tiny_weights(config, seed=0), 0.8)
    weights[name] = weights[name][:, :500]
    write_checkpoint(str(tmp_path / "ckpt"), config, weights, "bf16")
    from fdc.runtime import Model
    with Model(fake_library(manifest, tmp_path), tmp_path / "ckpt", max_context=64):
        pass
    entry["bytes"] = (2 * 7 + 1) * 4 + 256 * 500 * 4  # version 1: tiles rounded down
    (tmp_path / "bad").mkdir()
    expect_load_error(fake_library(manifest, tmp_path / "bad"), tmp_path / "ckpt",
                      f"weight '{name}'", f"bytes {entry['bytes']} does not match the tiled_csl "
                      f"capacity of [256, 500] with tile [128, 64] ({capacity})")


# --------------------------------------------------------------------------- INT4 on f16/bf16


class StepArgs(ctypes.Structure):
    """FdcStepArgs (runtime/include/fdc_model_abi.h)."""
    _fields_ = ([("batch", ctypes.c_int64), ("num_slots", ctypes.c_int64),
                 ("max_context", ctypes.c_int64)] +
                [(f, ctypes.c_void_p) for f in (
                    "weights", "kv_cache", "tokens", "positions", "slots", "temperature",
                    "top_k", "top_p", "uniform", "logits", "next_tokens", "scratch", "device")])


class DirectStep:
    """A host model library's fdc_model_step called directly, with a weight
    arena packed by fdc.packing, so that its KV cache can be read."""

    def __init__(self, so: Path, ckpt: Path, max_context: int = 16):
        self.lib = ctypes.CDLL(str(so))
        m = json.loads(ctypes.string_at(ctypes.addressof(
            ctypes.c_char.in_dll(self.lib, "fdc_manifest"))))
        checkpoint = Checkpoint(str(ckpt))
        self.arena = np.zeros(m["weights_bytes"], np.uint8)
        for w in m["weights"]:
            dense = np.concatenate([checkpoint.load(s) for s in w["sources"]]).astype(np.float32)
            if w["layout"] == "dense":
                data = to_bits(dense, w["dtype"]).tobytes()
            elif w["layout"] == "int4":
                data = pack_int4(dense, w["group_size"], w["scale_dtype"])
            else:
                data = pack_tiled_csl(dense, tuple(w["tile"]), w["dtype"])
            assert len(data) <= w["bytes"], w["name"]
            self.arena[w["offset"]:w["offset"] + len(data)] = np.frombuffer(data, np.uint8)
        self.kv, self.vocab, self.max_context = (m["kv_cache"], m["config"]["vocab_size"],
                                                 max_context)
        kv = self.kv
        self.cache = np.zeros((1, kv["layers"], 2, kv["kv_heads"], max_context, kv["row_bytes"]),
                              np.uint8)
        self.fn = self.lib.fdc_model_step
        self.fn.argtypes = [ctypes.POINTER(StepArgs)]
        self.fn.restype = None

    def step(self, token: int, position: int) -> np.ndarray:
        arrays = [np.array([token], np.int32), np.array([position], np.int32),
                  np.zeros(1, np.int32), np.zeros(1, np.float32), np.zeros(1, np.int32),
                  np.ones(1, np.float32), np.zeros(1, np.float32),
                  np.zeros((1, self.vocab), np.float32), np.zeros(1, np.int32)]
        ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)
        args = StepArgs(1, 1, self.max_context, ptr(self.arena), ptr(self.cache),
                        *map(ptr, arrays), None, None)
        self.fn(ctypes.byref(args))
        return arrays[7][0]

    def dense_rows(self, layer: int, position: int) -> np.ndarray:
        """[2 (k, v), kv_heads, head_dim] float32 of a dense f16/bf16 cache."""
        bits = self.cache[0, layer, :, :, position, :].copy().view("<u2")
        if self.kv["dtype"] == "f16":
            return f16_bits_to_f32(bits)
        return bf16_bits_to_f32(bits.reshape(-1)).reshape(bits.shape)

    def int4_rows(self, layer: int, position: int, groups: int):
        """(q, scale, min) of an INT4 cache's rows: [2, kv_heads, G, head_dim/G] ..."""
        row = self.cache[0, layer, :, :, position, :]
        pairs = f16_bits_to_f32(row[..., :4 * groups].copy().view("<u2"))
        nibbles = row[..., 4 * groups:]
        q = np.empty(nibbles.shape[:-1] + (2 * nibbles.shape[-1],), np.uint8)
        q[..., 0::2], q[..., 1::2] = nibbles & 0xF, nibbles >> 4
        return (q.reshape(*q.shape[:-1], groups, -1), pairs[..., 0::2], pairs[..., 1::2])


@needs_build
@pytest.mark.parametrize("groups", [1, 4, 16])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_int4_kv_append_is_exact_on_half_checkpoints(libs, dtype, groups):
    """Layer 0's K/V rows are computed identically by the dense and the INT4
    KV build (nothing before the first append differs); the INT4 cache then
    holds exactly quantise_groups of the dense cache's f16/bf16 rows (scale,
    min and every nibble). The whole-model comparison below cannot be this
    precise: a 1-ulp change of a K element can move it to the next INT4 step."""
    ckpt = libs.checkpoint(dtype, 0.8)
    dense = DirectStep(libs.library(ckpt), ckpt)
    int4 = DirectStep(libs.library(ckpt, "--kv-cache", "int4", "--kv-groups", str(groups)), ckpt)
    assert int4.kv["int4_groups"] == groups
    for position, token in enumerate([1, 2, 3, 4, 5]):
        ld, li = dense.step(token, position), int4.step(token, position)
        assert np.all(np.isfinite(li)) and 0 < rel_err(li, ld) < 0.2
        x = dense.dense_rows(0, position)
        want_q, want_scale, want_min = quantise_groups(x.reshape(*x.shape[:-1], groups, -1))
        q, scale, minimum = int4.int4_rows(0, position, groups)
        np.testing.assert_array_equal(scale, want_scale)
        np.testing.assert_array_equal(minimum, want_min)
        np.testing.assert_array_equal(q, want_q)
    # the direct calls agree with the runtime
    ids, logits = run_binding(libs.library(ckpt), ckpt, prompt=[1, 2, 3, 4, 5], steps=1)
    np.testing.assert_array_equal(logits[0], ld)


def emulating_reference(ckpt: Path, kv_groups: int, attn_group_size: int) -> ReferenceLlama:
    """The reference with an INT4 KV cache and INT4 attention projections
    (the MLP's sparse weights are exact)."""
    checkpoint = Checkpoint(str(ckpt))
    cfg = ModelConfig.from_dict(checkpoint.config)
    weights = {}
    for name in cfg.tensor_shapes():
        w = checkpoint.load(name).astype(np.float32)
        if attn_group_size and ".self_attn." in name:
            w = fake_quantise(w, attn_group_size)
        weights[name] = w
    return ReferenceLlama.from_arrays(checkpoint.config, weights, kv_int4_groups=kv_groups)


@needs_build
@pytest.mark.parametrize("flags, kv_groups, attn_group, tol", [
    # INT4 KV rounding turns an activation's last-bit differences into whole
    # INT4 steps now and then, so these errors exceed the dense model's.
    (("--kv-cache", "int4", "--kv-groups", "4"), 4, 0, {"f16": 2e-2, "bf16": 5e-2}),
    (("--linear-weights", "int4", "--group-size", "64"), 0, "all", STORAGE_TOL),
    (("--sparse-mlp", "--linear-weights", "int4", "--group-size", "32", "--kv-cache", "int4",
      "--kv-groups", "2"), 2, 32, {"f16": 3e-2, "bf16": 6e-2}),
])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_int4_on_half_checkpoints(libs, dtype, flags, kv_groups, attn_group, tol):
    """INT4 storage on f16/bf16 checkpoints (test_quantisation.py covers f32),
    alone and with the sparse MLP: the logits are within tolerance of the
    reference that emulates the storage, and closer to it than to the plain
    reference."""
    ckpt = libs.checkpoint(dtype, 0.8)
    ids, logits = run_binding(libs.library(ckpt, *flags), ckpt)
    if attn_group == "all":
        emu = ReferenceLlama(str(ckpt), linear_int4_group_size=64)
    else:
        emu = emulating_reference(ckpt, kv_groups, attn_group)
    err = rel_err(logits, teacher_forced(emu, ids))
    plain = rel_err(logits, teacher_forced(ReferenceLlama(str(ckpt)), ids))
    assert err < tol[dtype]
    assert err < plain


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
