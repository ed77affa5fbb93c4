"""INT4 KV cache / INT4 linear weights / pruned checkpoints: frontend flags,
reference emulation and (when the compiler is built) the compiled model."""

import json
import os
import re
import subprocess

import numpy as np
import pytest
from cli_helpers import emit, frontend, run_module

from fdc.checkpoint import Checkpoint
from fdc.packing import fake_quantise, quantise_groups
from fdc.reference.llama import LINEAR_WEIGHTS, ReferenceLlama
from fdc.testing.tiny_checkpoint import (MLP_WEIGHTS, magnitude_prune, make_tiny_checkpoint,
                                         tiny_config, tiny_weights)

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
BUILD = os.environ.get("FDC_BUILD_DIR") or os.path.join(REPO, "build")
FDC_OPT = os.path.join(BUILD, "bin", "fdc-opt")
FDC = os.path.join(BUILD, "bin", "fdc")
PROMPT = [1, 2, 3, 4]



def verify(text, tmp_path):
    """fdc-opt parses and verifies the IR (skipped when it is not built)."""
    if not os.access(FDC_OPT, os.X_OK):
        return
    path = tmp_path / "model.mlir"
    path.write_text(text)
    result = subprocess.run([FDC_OPT, str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    make_tiny_checkpoint(str(root / "f32"))
    make_tiny_checkpoint(str(root / "bf16"), dtype="bf16", tied=True)
    return root


# --------------------------------------------------------------------------- frontend


def test_int4_kv_cache_flag(ckpts, tmp_path):
    text = emit(ckpts / "f32", "--kv-cache", "int4", "--kv-groups", "4")
    cache = ("!decode.kv_cache<layers = 2, kv_heads = 2, head_dim = 32, "
             "!decode.int4<groups = 4>>")
    assert text.count(cache) == 2 + 2 + 2 + 1  # signature, appends, attentions, return
    assert "head_dim = 32, f32>" not in text
    # activations and weights keep the checkpoint dtype
    assert "tensor<?x2x32xf32>" in text and "qtensor" not in text
    verify(text, tmp_path)


def test_int4_linear_weights_flag(ckpts, tmp_path):
    text = emit(ckpts / "bf16", "--linear-weights", "int4", "--group-size", "64")
    qt = lambda n, k: f"!decode.qtensor<{n}x{k}xi4, group_size = 64, scale = f16>"
    for i in range(2):
        p = f"model.layers.{i}."
        for sym, ty in ((p + "self_attn.q_proj.weight", qt(256, 256)),
                        (p + "self_attn.k_proj.weight", qt(64, 256)),
                        (p + "self_attn.v_proj.weight", qt(64, 256)),
                        (p + "self_attn.o_proj.weight", qt(256, 256)),
                        (p + "mlp.down_proj.weight", qt(256, 512))):
            assert f'decode.weight @"{sym}" : {ty}' in text
            assert f'decode.weight_ref @"{sym}" : {ty}' in text
        assert (f'decode.weight @"{p}mlp.gate_up_proj.weight" = concat ["{p}mlp.gate_proj.weight", '
                f'"{p}mlp.up_proj.weight"] : {qt(1024, 256)}') in text
        assert f'decode.weight @"{p}input_layernorm.weight" : tensor<256xbf16>' in text
    assert text.count("qtensor") == 2 * 6 * 3  # declaration, weight_ref, linear
    # the (tied) embedding stays dense and is the lm_head
    assert 'decode.weight @"model.embed_tokens.weight" : tensor<512x256xbf16>' in text
    assert re.search(r"%logits = decode.linear %hn, %lm : tensor<\?x256xbf16>, "
                     r"tensor<512x256xbf16> -> tensor<\?x512xf32>", text)
    assert "silu_gate_up>} : tensor<?x256xbf16>, " + qt(1024, 256) in text
    verify(text, tmp_path)


def test_combined_flags_and_default_group_size(ckpts, tmp_path):
    text = emit(ckpts / "f32", "--kv-cache", "int4", "--kv-groups", "1",
                "--linear-weights", "int4")
    assert "group_size = 128, scale = f16" in text and "!decode.int4<groups = 1>" in text
    verify(text, tmp_path)
    # without flags: unchanged
    plain = emit(ckpts / "f32")
    assert "int4" not in plain and "qtensor" not in plain


@pytest.mark.parametrize("args, message", [
    (["--kv-cache", "int4", "--kv-groups", "3"],
     "--kv-cache int4: --kv-groups 3 does not divide head_dim 32"),
    (["--kv-cache", "int4", "--kv-groups", "32"],
     "--kv-groups 32 gives groups of 1 elements; INT4 needs an even group size"),
    (["--linear-weights", "int4", "--group-size", "48"],
     "--linear-weights int4: --group-size 48 does not divide K = 256 (hidden_size)"),
    (["--linear-weights", "int4", "--group-size", "512"],
     "--group-size 512 does not divide K = 256"),
])
def test_bad_quantisation_is_refused_clearly(ckpts, args, message):
    result = frontend(ckpts / "f32", *args)
    assert result.returncode == 1 and result.stdout == ""
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("args, message", [
    (["--kv-cache", "int4"], "--kv-cache int4 needs --kv-groups"),
    (["--kv-groups", "2"], "--kv-groups only applies to --kv-cache int4"),
    (["--kv-cache", "int4", "--kv-groups", "0"], "--kv-groups must be positive"),
    (["--group-size", "64"], "--group-size only applies to --linear-weights int4"),
    (["--linear-weights", "int4", "--group-size", "-2"], "--group-size must be positive"),
    (["--kv-cache", "f16"], "invalid choice"),
])
def test_bad_flag_combinations(ckpts, args, message):
    result = frontend(ckpts / "f32", *args)
    assert result.returncode == 2
    assert message in result.stderr, result.stderr


# --------------------------------------------------------------------------- checkpoints


def test_magnitude_prune():
    w = np.array([[0.5, -3.0, 0.1], [2.0, -0.2, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(magnitude_prune(w, 0.5), [[0, -3.0, 0], [2.0, 0, 1.0]])
    np.testing.assert_array_equal(magnitude_prune(w, 0.0), w)
    assert not np.any(magnitude_prune(w, 1.0))
    with pytest.raises(ValueError):
        magnitude_prune(w, 1.5)


def test_sparse_tiny_checkpoint(tmp_path):
    result = run_module("fdc.testing.tiny_checkpoint", str(tmp_path / "s"), "--sparsity", "0.75",
                        "--dtype", "f16", "--seed", "3")
    assert result.returncode == 0, result.stderr
    ckpt = Checkpoint(str(tmp_path / "s"))
    assert json.loads((tmp_path / "s" / "config.json").read_text())["torch_dtype"] == "float16"
    dense = tiny_weights(tiny_config("gqa", "f16"), seed=3)
    for name, info in ckpt.tensors.items():
        assert info.dtype == "F16"
        w = ckpt.load(name)
        if name.endswith(MLP_WEIGHTS):
            assert np.mean(w == 0) == pytest.approx(0.75, abs=1e-6)
            kept = w != 0  # the largest magnitudes are the ones kept
            assert np.abs(dense[name][kept]).min() >= np.abs(dense[name][~kept]).max()
        else:
            assert np.count_nonzero(w) == w.size
    assert run_module("fdc.testing.tiny_checkpoint", str(tmp_path / "x"),
                      "--sparsity", "2").returncode == 2


def test_frontend_accepts_f16_checkpoint(tmp_path):
    make_tiny_checkpoint(str(tmp_path / "h"), dtype="f16", sparsity=0.5)
    text = emit(tmp_path / "h")
    assert "tensor<512x256xf16>" in text
    verify(text, tmp_path)


# --------------------------------------------------------------------------- reference


@pytest.fixture(scope="module")
def tiny():
    config = tiny_config("gqa")
    return config, tiny_weights(config, seed=0)


def test_group_quantisation_error_is_at_most_half_a_scale():
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((64, 4, 8)) * rng.uniform(0.01, 100, (64, 1, 1))).astype(np.float32)
    q, scale, minimum = quantise_groups(x)
    assert q.max() <= 15
    deq = minimum[..., None] + scale[..., None] * q.astype(np.float32)
    err = np.abs(deq - x)
    # half a step, plus the fp16 rounding of min (the group's first value is
    # min itself) and of the scale (up to 15 half-ulps of it)
    bound = scale * 0.5 + np.abs(minimum) * 2**-11 + 15 * scale * 2**-11
    assert np.all(err <= bound[..., None] * (1 + 1e-6))
    assert np.all(err.max(axis=-1) <= scale * 0.5 + np.abs(x).max(axis=-1) * 2**-9)
    # constant groups are exact up to fp16 rounding: scale 0, q 0
    q, scale, minimum = quantise_groups(np.full((1, 4), 0.1, np.float32))
    assert scale[0] == 0 and not q.any() and minimum[0] == np.float32(np.float16(0.1))


def teacher_forced_logits(model, tokens):
    cache = model.new_cache(len(tokens))
    return np.array([model.step(t, p, cache) for p, t in enumerate(tokens)])


def test_int4_kv_reference_differs_slightly(tiny):
    config, weights = tiny
    ids_f, _ = ReferenceLlama.from_arrays(config, weights).generate(PROMPT, 6)
    tokens = PROMPT + ids_f[:-1]
    logits_f = teacher_forced_logits(ReferenceLlama.from_arrays(config, weights), tokens)
    runs = {}
    for groups in (16, 4, 1):
        model = ReferenceLlama.from_arrays(config, weights, kv_int4_groups=groups)
        runs[groups] = np.abs(teacher_forced_logits(model, tokens) - logits_f).max()
        assert 0 < runs[groups] < 2.5, runs  # logits have std ~4
    # more groups (smaller groups) -> smaller quantisation error
    assert runs[16] < runs[4] < runs[1], runs
    assert runs[16] < 0.05, runs
    # the cache holds dequantised values: every group of a row is min + scale * q
    model = ReferenceLlama.from_arrays(config, weights, kv_int4_groups=4)
    cache = model.new_cache(8)
    model.step(3, 0, cache)
    row = cache.k[0, 0].astype(np.float32)  # [kv_heads, head_dim]
    np.testing.assert_array_equal(fake_quantise(row, 8), row)  # idempotent
    assert len(np.unique(row[0, :8])) <= 16


def test_int4_linear_reference(tiny):
    config, weights = tiny
    model = ReferenceLlama.from_arrays(config, weights, linear_int4_group_size=64)
    for name, w in weights.items():
        if name.startswith("model.layers.") and name.endswith(LINEAR_WEIGHTS):
            np.testing.assert_array_equal(model.w[name], fake_quantise(w, 64))
            assert not np.array_equal(model.w[name], w)
        else:
            np.testing.assert_array_equal(model.w[name], w)
    ids_f, logits_f = ReferenceLlama.from_arrays(config, weights).generate(PROMPT, 4)
    ids, logits = model.generate(PROMPT, 4)
    assert 0 < np.abs(logits - logits_f).max() < 4
    with pytest.raises(ValueError, match="kv_int4_groups 3"):
        ReferenceLlama.from_arrays(config, weights, kv_int4_groups=3)


# --------------------------------------------------------------------------- compiled


@pytest.mark.parametrize("args, options", [
    (["--kv-cache", "int4", "--kv-groups", "2"], {"kv_int4_groups": 2}),
    (["--linear-weights", "int4", "--group-size", "64"], {"linear_int4_group_size": 64}),
    (["--kv-cache", "int4", "--kv-groups", "4", "--linear-weights", "int4", "--group-size", "32"],
     {"kv_int4_groups": 4, "linear_int4_group_size": 32}),
])
def test_compiled_matches_emulating_reference(ckpts, tmp_path, args, options):
    """The compiled INT4 model (weights packed by the runtime loader) matches
    the reference that emulates its storage, far closer than the float one."""
    if not os.access(FDC, os.X_OK):
        pytest.skip("build/bin/fdc is not built")
    ckpt = ckpts / "f32"
    (tmp_path / "m.mlir").write_text(emit(ckpt, *args))
    for cmd in ([FDC, "compile", str(tmp_path / "m.mlir"), "--target=host",
                 "-o", str(tmp_path / "m.so")],
                [FDC, "run", str(tmp_path / "m.so"), "--weights", str(ckpt),
                 "--prompt-ids", ",".join(map(str, PROMPT)), "--max-new-tokens", "6",
                 "--dump-logits", str(tmp_path / "logits.bin")]):
        result = subprocess.run(cmd, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    got = np.fromfile(tmp_path / "logits.bin", dtype="<f4").reshape(6, -1)
    ids, want = ReferenceLlama(str(ckpt), **options).generate(PROMPT, 6)
    assert f"ids: {','.join(map(str, ids))}" in result.stdout
    np.testing.assert_allclose(got, want, atol=2e-3, rtol=0)
    _, plain = ReferenceLlama(str(ckpt)).generate(PROMPT, 6)
    assert np.abs(got - plain).max() > 10 * np.abs(got - want).max()
