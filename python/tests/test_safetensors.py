import json
import os
import struct

import numpy as np
import pytest

from fdc import FdcError
from fdc.checkpoint import Checkpoint
from fdc.safetensors import (SafetensorsError, f32_to_bf16_bits, load_tensor, read_header,
                             save_file)


def write_raw(path, header, data=b"", header_len=None):
    raw = json.dumps(header).encode() if isinstance(header, dict) else header
    n = len(raw) if header_len is None else header_len
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", n) + raw + data)
    return str(path)


def test_round_trip_all_dtypes(tmp_path):
    rng = np.random.default_rng(0)
    tensors = {
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal((5,)).astype(np.float16),
        "i32": np.arange(6, dtype=np.int32).reshape(2, 3),
        "i64": np.array([-1, 2**40], dtype=np.int64),
        "scalar": np.float32(2.5).reshape(()),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    path = str(tmp_path / "t.safetensors")
    save_file(tensors, path, metadata={"format": "pt"})
    header = read_header(path)
    assert header.metadata == {"format": "pt"}
    for name, arr in tensors.items():
        assert header.tensors[name].shape == arr.shape
        out = load_tensor(path, name)
        assert out.dtype == arr.dtype and np.array_equal(out, arr)
    # the data section starts 8-byte aligned
    assert min(t.begin for t in header.tensors.values()) % 8 == 0


def test_bf16_round_trip_and_rounding(tmp_path):
    x = np.array([1.0, -2.5, 1 + 2**-8, 1 + 2**-7 + 2**-8, 1 + 2**-8 + 2**-20, np.inf, np.nan],
                 dtype=np.float32)
    bits = f32_to_bf16_bits(x)
    # exact values stay; ties go to even (down for 0x3F80, up for 0x3F81); above a tie rounds up
    assert list(bits[:6]) == [0x3F80, 0xC020, 0x3F80, 0x3F82, 0x3F81, 0x7F80]
    assert (bits[6] & 0x7F80) == 0x7F80 and (bits[6] & 0x7F) != 0  # still a NaN
    path = str(tmp_path / "b.safetensors")
    save_file({"x": x, "i": np.arange(3, dtype=np.int32)}, path, dtype_override="BF16")
    header = read_header(path)
    assert header.tensors["x"].dtype == "BF16" and header.tensors["i"].dtype == "I32"
    y = load_tensor(path, "x")
    assert y.dtype == np.float32
    assert np.array_equal(y[:6], [1.0, -2.5, 1.0, 1 + 2**-6, 1 + 2**-7, np.inf])
    assert np.isnan(y[6])


@pytest.mark.parametrize("contents, message", [
    (b"", "too short"),
    (b"\x10\x00\x00", "too short"),
])
def test_truncated_prefix(tmp_path, contents, message):
    path = tmp_path / "t.safetensors"
    path.write_bytes(contents)
    with pytest.raises(SafetensorsError, match=message):
        read_header(str(path))


def test_header_past_eof(tmp_path):
    path = write_raw(tmp_path / "t.safetensors", {}, header_len=1000)
    with pytest.raises(SafetensorsError, match="past the end of the file"):
        read_header(path)


@pytest.mark.parametrize("header, message", [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[1, 2]", "not a JSON object"),
    ({"a": {"dtype": "F99", "shape": [1], "data_offsets": [0, 4]}}, "unknown dtype 'F99'"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, "shape"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, "data_offsets"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 12]}}, "outside the data section"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, "expected 8"),
    ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
      "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}}, "overlap"),
    ({"__metadata__": {"k": 1}}, "__metadata__"),
    ({"a": [1]}, "not an object"),
])
def test_bad_header(tmp_path, header, message):
    path = write_raw(tmp_path / "t.safetensors", header, data=b"\0" * 8)
    with pytest.raises(SafetensorsError, match=message):
        read_header(path)


def test_data_truncated_after_header(tmp_path):
    path = str(tmp_path / "t.safetensors")
    save_file({"a": np.ones(16, dtype=np.float32)}, path)
    os.truncate(path, os.path.getsize(path) - 4)
    with pytest.raises(SafetensorsError, match="outside the data section"):
        read_header(path)


def test_unreadable_and_missing(tmp_path):
    with pytest.raises(SafetensorsError, match="cannot read"):
        read_header(str(tmp_path / "absent.safetensors"))
    path = str(tmp_path / "t.safetensors")
    save_file({"a": np.ones(2, dtype=np.float32)}, path)
    with pytest.raises(SafetensorsError, match="no tensor 'b'"):
        load_tensor(path, "b")


def test_header_only_validation_ignores_unknown_loadable_dtypes(tmp_path):
    header = {"a": {"dtype": "F64", "shape": [1], "data_offsets": [0, 8]}}
    path = write_raw(tmp_path / "t.safetensors", header, data=b"\0" * 8)
    assert read_header(path).tensors["a"].dtype == "F64"
    with pytest.raises(SafetensorsError, match="cannot load dtype F64"):
        load_tensor(path, "a")


def write_config(d):
    (d / "config.json").write_text("{}")


def test_checkpoint_single_index_and_glob(tmp_path):
    a, b = np.ones(2, dtype=np.float32), np.arange(3, dtype=np.int32)
    single = tmp_path / "single"
    single.mkdir()
    write_config(single)
    save_file({"a": a, "b": b}, str(single / "model.safetensors"))
    save_file({"ignored": a}, str(single / "other.safetensors"))
    assert set(Checkpoint(str(single)).tensors) == {"a", "b"}

    glob = tmp_path / "glob"
    glob.mkdir()
    write_config(glob)
    save_file({"a": a}, str(glob / "x.safetensors"))
    save_file({"b": b}, str(glob / "y.safetensors"))
    ckpt = Checkpoint(str(glob))
    assert np.array_equal(ckpt.load("b"), b)

    indexed = tmp_path / "indexed"
    indexed.mkdir()
    write_config(indexed)
    save_file({"a": a}, str(indexed / "p1.safetensors"))
    save_file({"b": b}, str(indexed / "p2.safetensors"))
    index = {"weight_map": {"a": "p1.safetensors", "b": "p2.safetensors"}}
    (indexed / "model.safetensors.index.json").write_text(json.dumps(index))
    ckpt = Checkpoint(str(indexed))
    assert np.array_equal(ckpt.load("a"), a) and np.array_equal(ckpt.load("b"), b)

    index["weight_map"]["c"] = "p1.safetensors"
    (indexed / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(SafetensorsError, match="no tensor 'c'"):
        Checkpoint(str(indexed))


def test_checkpoint_duplicate_and_empty(tmp_path):
    write_config(tmp_path)
    with pytest.raises(FdcError, match="no .safetensors files"):
        Checkpoint(str(tmp_path))
    save_file({"a": np.ones(1, dtype=np.float32)}, str(tmp_path / "x.safetensors"))
    save_file({"a": np.ones(1, dtype=np.float32)}, str(tmp_path / "y.safetensors"))
    with pytest.raises(SafetensorsError, match="'a' is in both"):
        Checkpoint(str(tmp_path))


def test_non_regular_files_are_refused_not_read(tmp_path):
    """A FIFO would block open()/read() forever; a directory is no file."""
    fifo = tmp_path / "f.safetensors"
    os.mkfifo(fifo)
    with pytest.raises(SafetensorsError) as info:
        read_header(str(fifo))
    assert str(info.value) == f"{fifo}: not a regular file (a FIFO)"
    with pytest.raises(SafetensorsError) as info:
        read_header(str(tmp_path))
    assert str(info.value) == f"{tmp_path}: not a regular file (a directory)"


@pytest.mark.parametrize("header, message", [
    (b"[" * 100000 + b"]" * 100000, "header: JSON nested too deeply"),
    (b'{"a": {"dtype": "F32", "shape": [1' + b"0" * 5000 + b'], "data_offsets": [0, 0]}}',
     "header: an integer of 5001 digits is out of range"),
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, Infinity]}}',
     "header: Infinity is not valid JSON"),
    (b'{"a": {"dtype": {"x": 1}, "shape": [1], "data_offsets": [0, 4]}}',
     "tensor 'a': unknown dtype {\"x\": 1}"),
    (b'{"a": {"dtype": "F32", "shape": [true], "data_offsets": [0, 4]}}',
     "tensor 'a': shape must be a list of non-negative int64 integers, got [true]"),
    (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4.0]}}',
     "tensor 'a': data_offsets must be [begin, end], got [0, 4.0]"),
    (b'{"a": {"dtype": "F32", "shape": [' + b", ".join([b"4611686018427387904"] * 200000)
     + b'], "data_offsets": [0, 4]}}',
     "tensor 'a': F32 shape of 200000 dimensions needs more than the data section's 8 bytes"),
], ids=["nested", "digits", "infinity", "dtype-object", "shape-bool", "offset-float",
        "huge-rank"])
def test_hostile_headers(tmp_path, header, message):
    path = write_raw(tmp_path / "t.safetensors", header, data=b"\0" * 8)
    with pytest.raises(SafetensorsError) as info:
        read_header(path)
    assert str(info.value) == f"{path}: {message}"


def test_checkpoint_index_entries_stay_in_the_directory(tmp_path):
    write_config(tmp_path)
    save_file({"a": np.ones(1, dtype=np.float32)}, str(tmp_path / "p1.safetensors"))
    for entry in ("../p1.safetensors", "/etc/passwd", "..", "", "a\0b"):
        (tmp_path / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {"a": entry}}))
        with pytest.raises(FdcError) as info:
            Checkpoint(str(tmp_path))
        assert str(info.value) == (f"{tmp_path}/model.safetensors.index.json: weight_map entry "
                                   f"'a' names {entry!r}, which is not a file of the checkpoint")
