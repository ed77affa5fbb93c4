import filecmp
import json
import os
import re
import subprocess

import numpy as np
import pytest
from cli_helpers import emit, frontend, run_module

from fdc.frontend.emit import mlir_f32
from fdc.safetensors import load_tensor, read_header, save_file
from fdc.testing.tiny_checkpoint import make_tiny_checkpoint

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
FDC_OPT = os.path.join(os.environ.get("FDC_BUILD_DIR") or os.path.join(REPO, "build"), "bin",
                       "fdc-opt")
FLOAT = re.compile(r"(?<![\w.])[-+]?\d+\.\d*(?:[eE][-+]?\d+)?")



@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    variants = {
        "tiny_llama": {},
        "mha": {"variant": "mha"},
        "tied": {"tied": True},
        "sharded": {"shards": 3},
        "bf16": {"dtype": "bf16"},
    }
    for name, kwargs in variants.items():
        make_tiny_checkpoint(str(root / name), **kwargs)
    return root


def copy_checkpoint(src, dst, config_edit=None, weights_edit=None):
    """A copy of the single-file checkpoint src with edited config/weights."""
    os.makedirs(dst)
    config = json.loads((src / "config.json").read_text())
    if config_edit:
        config_edit(config)
    (dst / "config.json").write_text(json.dumps(config))
    path = str(src / "model.safetensors")
    weights = {name: load_tensor(path, name) for name in read_header(path).tensors}
    if weights_edit:
        weights_edit(weights)
    save_file(weights, str(dst / "model.safetensors"))
    return dst


def test_tiny_checkpoint_is_deterministic(tmp_path):
    for d in ("a", "b"):
        assert run_module("fdc.testing.tiny_checkpoint", str(tmp_path / d), "--seed", "7",
                          "--dtype", "bf16").returncode == 0
    make_tiny_checkpoint(str(tmp_path / "c"), seed=8, dtype="bf16")
    for f in ("config.json", "model.safetensors"):
        assert filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False)
    assert not filecmp.cmp(tmp_path / "a" / "model.safetensors",
                           tmp_path / "c" / "model.safetensors", shallow=False)
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["torch_dtype"] == "bfloat16" and config["num_key_value_heads"] == 2


def normalise_floats(text):
    return FLOAT.sub(lambda m: mlir_f32(float(m.group())), text)


def test_matches_the_documented_example(checkpoints):
    """Every line of docs/model-ir.md's example appears in our layer-0 output."""
    with open(os.path.join(REPO, "docs", "model-ir.md")) as f:
        doc = f.read().split("```mlir\n")[1].split("```")[0]
    ours = emit(checkpoints / "tiny_llama")
    ours = {normalise_floats(re.sub(r"_0\b", "", line.strip())) for line in ours.splitlines()}
    for line in doc.splitlines():
        line = line.strip()
        if line and not line.startswith("//"):
            assert normalise_floats(line) in ours


def test_variants(checkpoints, tmp_path):
    out = tmp_path / "m.mlir"
    assert frontend(checkpoints / "tiny_llama", "-o", str(out)).returncode == 0
    gqa = out.read_text()
    assert gqa.startswith("decode.model @tiny_llama attributes")
    assert gqa.count("decode.attention") == 2 and "layer = 1 : i64" in gqa
    assert "kv_heads = 2, head_dim = 32, f32>" in gqa

    mha = emit(checkpoints / "mha")
    assert "decode.model @mha " in mha
    assert "kv_heads = 8, head_dim = 32, f32>" in mha
    assert 'self_attn.k_proj.weight" : tensor<256x256xf32>' in mha

    tied = emit(checkpoints / "tied")
    assert "lm_head" not in tied and "tie_word_embeddings = true" in tied
    assert tied.count('decode.weight_ref @"model.embed_tokens.weight"') == 2

    assert emit(checkpoints / "sharded").replace("@sharded", "@tiny_llama") == gqa

    bf16 = emit(checkpoints / "bf16")
    assert "-> tensor<?x512xf32>" in bf16 and "head_dim = 32, bf16>" in bf16
    assert bf16.replace("@bf16", "@tiny_llama").replace("bf16", "f32") == gqa


def test_name_and_softmax_options(checkpoints, tmp_path):
    assert "decode.model @my_model " in emit(checkpoints / "tiny_llama", "--name", "my_model")
    odd = tmp_path / "3b-v0.1"
    os.symlink(checkpoints / "tiny_llama", odd)
    assert "decode.model @model_3b_v0_1 " in emit(odd)
    text = emit(checkpoints / "tiny_llama", "--softmax", "unified_max",
                "--phi", "6", "--lo", "-10", "--hi", "10.5")
    assert text.count("#decode.softmax<unified_max, phi = 6.0, lo = -10.0, hi = 10.5>") == 2
    assert frontend(checkpoints / "tiny_llama", "--softmax", "unified_max").returncode == 2
    assert frontend(checkpoints / "tiny_llama", "--name", "a.b").returncode == 1


def test_mlir_f32_round_trips():
    for x in (1e-5, 1e-6, 10000.0, 500000.0, 1 / np.sqrt(32), 1 / np.sqrt(128), -3.0, 0.0,
              3.4e38, 1.17549435e-38):
        s = mlir_f32(x)
        assert re.fullmatch(r"-?\d+\.\d*(e[-+]\d+)?", s), s
        assert np.float32(float(s)) == np.float32(x)


def error_case(checkpoints, tmp_path, config_edit=None, weights_edit=None):
    ckpt = copy_checkpoint(checkpoints / "tiny_llama", tmp_path / "bad", config_edit, weights_edit)
    return frontend(ckpt)


def set_key(key, value):
    return lambda config: config.__setitem__(key, value)


@pytest.mark.parametrize("config_edit, weights_edit, message", [
    (set_key("architectures", ["GPT2LMHeadModel"]), None,
     "unsupported architecture 'GPT2LMHeadModel'"),
    (lambda c: c.pop("rms_norm_eps"), None, "missing key 'rms_norm_eps'"),
    (lambda c: c.pop("vocab_size"), None, "missing key 'vocab_size'"),
    (set_key("rope_scaling", {"rope_type": "llama3"}), None, "unsupported 'rope_scaling'"),
    (None, lambda w: w.pop("model.layers.1.mlp.up_proj.weight"),
     "missing tensor 'model.layers.1.mlp.up_proj.weight'"),
    (None, lambda w: w.__setitem__("model.norm.weight", np.ones(255, np.float32)),
     r"tensor 'model.norm.weight' has shape \[255\], expected \[256\]"),
    (None, lambda w: w.__setitem__("model.norm.weight", np.ones(256, np.int32)),
     "tensor 'model.norm.weight' has unsupported dtype I32"),
    (None, lambda w: w.__setitem__("model.norm.weight", np.ones(256, np.float16)),
     "mixed dtypes: tensor 'model.norm.weight' is F16"),
    (lambda c: c.update(architectures=["MistralForCausalLM"], sliding_window=1024), None,
     r"'sliding_window' \(1024\) < max_position_embeddings \(2048\)"),
])
def test_errors(checkpoints, tmp_path, config_edit, weights_edit, message):
    result = error_case(checkpoints, tmp_path, config_edit, weights_edit)
    assert result.returncode == 1
    assert re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr


def test_mistral_without_window_is_accepted(checkpoints, tmp_path):
    result = error_case(checkpoints, tmp_path, lambda c: c.update(
        architectures=["MistralForCausalLM"], sliding_window=None))
    assert result.returncode == 0, result.stderr
    assert 'architecture = "MistralForCausalLM"' in result.stdout


@pytest.mark.parametrize("contents, message", [
    (b"\x05", "too short"),
    (b"\xff" * 8, "past the end of the file"),
])
def test_unreadable_safetensors(checkpoints, tmp_path, contents, message):
    ckpt = copy_checkpoint(checkpoints / "tiny_llama", tmp_path / "bad")
    (ckpt / "model.safetensors").write_bytes(contents)
    result = frontend(ckpt)
    assert result.returncode == 1 and message in result.stderr
    assert "model.safetensors" in result.stderr and "Traceback" not in result.stderr


def test_missing_config(tmp_path):
    result = frontend(tmp_path)
    assert result.returncode == 1 and "config.json" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(not os.path.exists(FDC_OPT), reason="build/bin/fdc-opt not built")
@pytest.mark.parametrize("variant, args", [
    ("tiny_llama", ()), ("mha", ()), ("tied", ()), ("bf16", ()),
    ("tiny_llama", ("--softmax", "unified_max", "--phi", "6", "--lo", "-10", "--hi", "10")),
])
def test_fdc_opt_parses_and_round_trips(checkpoints, tmp_path, variant, args):
    src = tmp_path / "m.mlir"
    src.write_text(emit(checkpoints / variant, *args))
    first = subprocess.run([FDC_OPT, str(src)], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([FDC_OPT], input=first.stdout, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
