"""Hostile and careless checkpoints (issue 10): the frontend refuses each with
one `fdc.frontend: error:` line naming the file, tensor or key, exits 1,
never hangs, never prints a traceback, and never reads outside the checkpoint."""
import json
import os
import struct

import pytest
from cli_helpers import frontend

from fdc.testing.tiny_checkpoint import make_tiny_checkpoint

TIMEOUT = 60  # a FIFO used to hang the frontend forever


def short(value):
    """A short test id for a long parameter."""
    text = value.decode(errors="replace") if isinstance(value, bytes) else str(value)
    return text if len(text) <= 24 else text[:20] + f"...({len(text)})"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = tmp_path_factory.mktemp("base") / "tiny"
    make_tiny_checkpoint(str(path))
    return path


def clone(tiny, dst, files=("config.json", "model.safetensors")):
    """A copy of the tiny checkpoint (hard links: nothing below edits in place)."""
    os.makedirs(dst)
    for f in files:
        os.link(tiny / f, dst / f)
    return dst


def refused(ckpt, *args):
    """The frontend's stderr line for a checkpoint it must refuse."""
    result = frontend(ckpt, *args, "-o", str(ckpt) + ".mlir")
    assert result.returncode == 1, result.stderr
    assert not os.path.exists(str(ckpt) + ".mlir")
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("fdc.frontend: error: ")
    return result.stderr[len("fdc.frontend: error: "):-1]


def write_index(ckpt, weight_map):
    (ckpt / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


# --- 1. weight_map entries that leave the checkpoint --------------------------------

@pytest.mark.parametrize("entry", [
    "../other/model.safetensors", "../../other/model.safetensors", "/etc/passwd", "..", ".",
    "", "sub/model.safetensors", "./model.safetensors",
])
def test_index_entry_outside_the_checkpoint(tiny, tmp_path, entry):
    # ../other/model.safetensors exists and is a valid checkpoint file: it must
    # still not be read.
    clone(tiny, tmp_path / "other")
    ckpt = clone(tiny, tmp_path / "ckpt", ("config.json",))
    write_index(ckpt, {"model.embed_tokens.weight": entry})
    assert refused(ckpt) == (
        f"{ckpt}/model.safetensors.index.json: weight_map entry 'model.embed_tokens.weight' "
        f"names {entry!r}, which is not a file of the checkpoint")


def test_index_entry_not_a_string(tiny, tmp_path):
    ckpt = clone(tiny, tmp_path / "ckpt", ("config.json",))
    write_index(ckpt, {"model.embed_tokens.weight": ["model.safetensors"]})
    assert refused(ckpt) == (f"{ckpt}/model.safetensors.index.json: weight_map entry "
                             f"'model.embed_tokens.weight' is not a string")


def test_symlinks_inside_the_checkpoint_are_followed(tiny, tmp_path):
    ckpt = clone(tiny, tmp_path / "ckpt", ("config.json",))
    os.makedirs(ckpt / "blobs")
    os.link(tiny / "model.safetensors", ckpt / "blobs" / "abc")
    os.symlink("blobs/abc", ckpt / "model-00001-of-00001.safetensors")
    from fdc.safetensors import read_header
    names = read_header(str(tiny / "model.safetensors")).tensors
    write_index(ckpt, {n: "model-00001-of-00001.safetensors" for n in names})
    result = frontend(ckpt)
    assert result.returncode == 0, result.stderr
    assert "decode.model @ckpt " in result.stdout


def test_hugging_face_cache_snapshot_is_read(tiny, tmp_path):
    # A cache snapshot's files are links to ../../blobs: links the user placed
    # are followed, as the runtime follows them; only index entries are names.
    blobs = tmp_path / "models--x" / "blobs"
    snapshot = tmp_path / "models--x" / "snapshots" / "abc"
    os.makedirs(blobs)
    os.makedirs(snapshot)
    for name in ("config.json", "model.safetensors"):
        os.link(tiny / name, blobs / name)
        os.symlink(f"../../blobs/{name}", snapshot / name)
    result = frontend(snapshot)
    assert result.returncode == 0, result.stderr
    assert "decode.model @abc " in result.stdout


# --- 2. FIFOs and other non-regular files --------------------------------------------

@pytest.mark.parametrize("name, files", [
    ("model.safetensors", ("config.json",)),
    ("config.json", ("model.safetensors",)),
    ("model.safetensors.index.json", ("config.json", "model.safetensors")),
    ("model-00001-of-00002.safetensors", ("config.json",)),  # a shard named by the index
    ("x.safetensors", ("config.json",)),                      # a shard found by listing
])
def test_fifo_is_refused_not_read(tiny, tmp_path, name, files):
    ckpt = clone(tiny, tmp_path / "ckpt", files)
    os.mkfifo(ckpt / name)
    if name.startswith("model-0"):
        write_index(ckpt, {"model.embed_tokens.weight": name})
    result = frontend_with_timeout(ckpt)
    assert result.returncode == 1
    assert result.stderr == f"fdc.frontend: error: {ckpt}/{name}: not a regular file (a FIFO)\n"


def test_directory_in_place_of_a_file(tiny, tmp_path):
    ckpt = clone(tiny, tmp_path / "ckpt", ("model.safetensors",))
    os.mkdir(ckpt / "config.json")
    assert refused(ckpt) == f"{ckpt}/config.json: not a regular file (a directory)"


def frontend_with_timeout(ckpt):
    import subprocess
    import sys

    from cli_helpers import PYTHON_DIR
    return subprocess.run([sys.executable, "-m", "fdc.frontend", str(ckpt)],
                          env=dict(os.environ, PYTHONPATH=PYTHON_DIR), capture_output=True,
                          text=True, timeout=TIMEOUT)


# --- 3. config.json values that used to raise tracebacks ------------------------------

def with_raw_config(tiny, tmp_path, key, raw):
    """The tiny checkpoint with config.json's ``key`` set to the JSON text ``raw``."""
    ckpt = clone(tiny, tmp_path / "ckpt", ("model.safetensors",))
    config = json.loads((tiny / "config.json").read_text())
    config[key] = "@@"
    (ckpt / "config.json").write_text(json.dumps(config).replace('"@@"', raw))
    return ckpt


INT64 = "[1, 9223372036854775807]"


@pytest.mark.parametrize("key, raw, message", [
    # Type confusion: a string, a bool or a float where an integer belongs.
    ("hidden_size", '"256"', f"'hidden_size' must be an integer in {INT64}, got '256'"),
    ("hidden_size", "true", f"'hidden_size' must be an integer in {INT64}, got true"),
    ("hidden_size", "256.0", f"'hidden_size' must be an integer in {INT64}, got 256.0"),
    ("num_hidden_layers", "[2]", f"'num_hidden_layers' must be an integer in {INT64}, got [2]"),
    ("num_attention_heads", "0", f"'num_attention_heads' must be an integer in {INT64}, got 0"),
    ("num_key_value_heads", "-2", f"'num_key_value_heads' must be an integer in {INT64}, got -2"),
    # Integers too large for the IR's i64 (or the runtime's i32 token ids).
    ("hidden_size", "1" + "0" * 30,
     f"'hidden_size' must be an integer in {INT64}, got 1" + "0" * 30),
    ("max_position_embeddings", "9223372036854775808",
     f"'max_position_embeddings' must be an integer in {INT64}, got 9223372036854775808"),
    ("vocab_size", "4294967808",
     "'vocab_size' must be an integer in [1, 2147483647] (token ids are i32), got 4294967808"),
    ("intermediate_size", "9223372036854775807",
     "'intermediate_size' (9223372036854775807) is too large: the fused gate_up weight has "
     "2 x intermediate_size rows, more than 9223372036854775807"),
    # Floats: the wrong type, overflowing to inf, not finite as an f32.
    ("rms_norm_eps", '"1e-5"', "'rms_norm_eps' must be a number, got '1e-5'"),
    ("rms_norm_eps", "1e999", "'rms_norm_eps' must be a finite number, got inf"),
    ("rms_norm_eps", "1" + "0" * 99, "'rms_norm_eps' = 1" + "0" * 99 + " overflows f32"),
    ("rope_theta", "1e39", "'rope_theta' = 1e+39 overflows f32"),
    ("rope_theta", "-1e999", "'rope_theta' must be a finite number, got -inf"),
    ("partial_rotary_factor", "1e308", "'partial_rotary_factor' must be in (0, 1], got 1e+308"),
    ("partial_rotary_factor", "true", "'partial_rotary_factor' must be a number, got true"),
    # Booleans must be booleans.
    ("tie_word_embeddings", '"false"', "'tie_word_embeddings' must be true or false, got 'false'"),
    ("attention_bias", "0", "'attention_bias' must be true or false, got 0"),
    ("rope_parameters", '"default"', "'rope_parameters' must be an object, got 'default'"),
], ids=short)
def test_config_value_types_and_ranges(tiny, tmp_path, key, raw, message):
    assert refused(with_raw_config(tiny, tmp_path, key, raw)) == "config.json: " + message


def test_mistral_sliding_window_type(tiny, tmp_path):
    ckpt = with_raw_config(tiny, tmp_path, "sliding_window", '"4096"')
    config = json.loads((ckpt / "config.json").read_text())
    config["architectures"] = ["MistralForCausalLM"]
    (ckpt / "config.json").write_text(json.dumps(config))
    assert refused(ckpt) == (f"config.json: 'sliding_window' must be an integer in {INT64}, "
                             f"got '4096'")


def test_architecture_not_a_string(tiny, tmp_path):
    ckpt = with_raw_config(tiny, tmp_path, "architectures", '[["LlamaForCausalLM"]]')
    assert refused(ckpt) == ('unsupported architecture ["LlamaForCausalLM"] '
                             '(supported: LlamaForCausalLM, MistralForCausalLM)')


def test_absurd_layer_count_fails_fast(tiny, tmp_path):
    ckpt = with_raw_config(tiny, tmp_path, "num_hidden_layers", str(10**18))
    assert refused(ckpt) == "missing tensor 'model.layers.2.input_layernorm.weight'"


@pytest.mark.parametrize("key, raw, message", [
    ("hidden_size", "1" + "0" * 5000, "an integer of 5001 digits is out of range"),
    ("hidden_size", "[" * 100000 + "]" * 100000, "JSON nested too deeply"),
    ("rms_norm_eps", "NaN", "NaN is not valid JSON"),
    ("rms_norm_eps", "-Infinity", "-Infinity is not valid JSON"),
], ids=short)
def test_config_json_parse_limits(tiny, tmp_path, key, raw, message):
    ckpt = with_raw_config(tiny, tmp_path, key, raw)
    assert refused(ckpt) == f"{ckpt}/config.json: {message}"


def test_config_not_utf8_or_not_an_object(tiny, tmp_path):
    ckpt = clone(tiny, tmp_path / "ckpt", ("model.safetensors",))
    (ckpt / "config.json").write_bytes(b'{"a": "\xff"}')
    assert refused(ckpt) == (f"{ckpt}/config.json: not valid JSON: not UTF-8 (invalid start "
                             f"byte at byte 7)")
    (ckpt / "config.json").write_text("[1]")
    assert refused(ckpt) == f"{ckpt}/config.json: not a JSON object"


def test_index_json_parse_limits(tiny, tmp_path):
    ckpt = clone(tiny, tmp_path / "ckpt")
    index = ckpt / "model.safetensors.index.json"
    index.write_text('{"weight_map": ' + "[" * 100000 + "]" * 100000 + "}")
    assert refused(ckpt) == f"{index}: JSON nested too deeply"
    index.write_text('{"metadata": {"total_size": 1' + "0" * 5000 + "}}")
    assert refused(ckpt) == f"{index}: an integer of 5001 digits is out of range"
    index.write_text('{"weight_map": 7}')
    assert refused(ckpt) == f'{index}: missing or malformed "weight_map"'


# --- safetensors headers --------------------------------------------------------------

def raw_safetensors(path, header: bytes):
    path.write_bytes(struct.pack("<Q", len(header)) + header)


@pytest.mark.parametrize("header, message", [
    (b"[" * 100000 + b"]" * 100000, "header: JSON nested too deeply"),
    (b'{"a": {"dtype": "F32", "shape": [1' + b"0" * 5000 + b'], "data_offsets": [0, 0]}}',
     "header: an integer of 5001 digits is out of range"),
    (b'{"a": {"dtype": ["F32"], "shape": [], "data_offsets": [0, 4]}}',
     "tensor 'a': unknown dtype [\"F32\"]"),
    (b'{"a": {"dtype": "F32", "shape": [0, 9223372036854775808], "data_offsets": [0, 0]}}',
     "tensor 'a': shape must be a list of non-negative int64 integers, got "
     "[0, 9223372036854775808]"),
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, NaN]}}',
     "header: NaN is not valid JSON"),
], ids=short)
def test_safetensors_header_limits(tiny, tmp_path, header, message):
    ckpt = clone(tiny, tmp_path / "ckpt", ("config.json",))
    raw_safetensors(ckpt / "model.safetensors", header)
    assert refused(ckpt) == f"{ckpt}/model.safetensors: {message}"


# --- 4. values the IR verifier rejects: the frontend rejects them first ---------------

@pytest.mark.parametrize("key, raw, message", [
    ("rms_norm_eps", "0", "'rms_norm_eps' must be greater than 0 as an f32, got 0"),
    ("rms_norm_eps", "-1e-05", "'rms_norm_eps' must be greater than 0 as an f32, got -1e-05 "
                               "(-9.999999747378752e-06 as an f32)"),
    ("rms_norm_eps", "1e-60", "'rms_norm_eps' must be greater than 0 as an f32, got 1e-60 "
                              "(0.0 as an f32)"),
    ("rope_theta", "1", "'rope_theta' must be greater than 1 as an f32, got 1"),
    ("rope_theta", "0.5", "'rope_theta' must be greater than 1 as an f32, got 0.5"),
    ("rope_theta", "1.00000001", "'rope_theta' must be greater than 1 as an f32, got "
                                 "1.00000001 (1.0 as an f32)"),
    ("rope_theta", "-10000.0", "'rope_theta' must be greater than 1 as an f32, got -10000.0"),
], ids=short)
def test_values_the_verifier_rejects(tiny, tmp_path, key, raw, message):
    assert refused(with_raw_config(tiny, tmp_path, key, raw)) == "config.json: " + message


def test_rope_parameters_theta_is_checked(tiny, tmp_path):
    ckpt = with_raw_config(tiny, tmp_path, "rope_parameters",
                           '{"rope_type": "default", "rope_theta": 0.5}')
    assert refused(ckpt) == ("config.json: 'rope_parameters.rope_theta' must be greater than 1 "
                             "as an f32, got 0.5")


@pytest.mark.parametrize("phi, lo, hi, message", [
    ("0", "-5", "1000", "--softmax unified_max: --hi 1000.0 overflows exp() in f32 "
                        "(must be <= 88)"),
    ("0", "-5", "88.001", "--softmax unified_max: --hi 88.001 overflows exp() in f32 "
                          "(must be <= 88)"),
    ("0", "5", "5", "--softmax unified_max needs --lo < --hi (as f32), got --lo 5.0, --hi 5.0"),
    ("0", "1.00000001", "1.00000002", "--softmax unified_max needs --lo < --hi (as f32), got "
                                      "--lo 1.00000001, --hi 1.00000002"),
    ("nan", "-5", "10", "--softmax unified_max: --phi nan is not a finite f32"),
    ("1e39", "-5", "10", "--softmax unified_max: --phi 1e+39 is not a finite f32"),
    ("0", "-inf", "10", "--softmax unified_max: --lo -inf is not a finite f32"),
], ids=short)
def test_softmax_flags_the_verifier_rejects(tiny, tmp_path, phi, lo, hi, message):
    ckpt = clone(tiny, tmp_path / "ckpt")
    assert refused(ckpt, "--softmax", "unified_max", f"--phi={phi}", f"--lo={lo}",
                   f"--hi={hi}") == message


def test_softmax_hi_88_is_accepted(tiny, tmp_path):
    result = frontend(clone(tiny, tmp_path / "ckpt"), "--softmax", "unified_max", "--phi", "0",
                      "--lo", "-5", "--hi", "88")
    assert result.returncode == 0, result.stderr
    assert "hi = 88.0>" in result.stdout


def test_config_at_the_limits_is_accepted(tiny, tmp_path):
    """The checks are not too strict: the smallest f32-positive eps, theta just
    above 1 and JSON nested a little are fine."""
    ckpt = clone(tiny, tmp_path / "ckpt", ("model.safetensors",))
    config = json.loads((tiny / "config.json").read_text())
    config.update(rms_norm_eps=1e-45, rope_theta=1.0001, extra=[[[[[[1]]]]]],
                  head_dim=None, attention_bias=False)
    (ckpt / "config.json").write_text(json.dumps(config))
    result = frontend(ckpt)
    assert result.returncode == 0, result.stderr
    assert "rms_norm_eps = 1.0e-45 : f32" in result.stdout or "1.40129846e-45" in result.stdout


def test_a_checkpoint_without_files_is_refused_cleanly(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    assert "no .safetensors files" in refused(ckpt)
