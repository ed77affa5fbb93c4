"""Bounds-checked safetensors reader and writer (numpy only).

File layout: 8-byte little-endian u64 N, then N bytes of JSON header
``{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__"?: {str: str}}``,
then the data section; offsets are relative to the start of the data section.

``read_header`` validates the whole header against the file size without
reading any tensor data, so the frontend can check a checkpoint cheaply.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from . import FdcError
from .strict import INT64_MAX, describe, open_regular, parse_json

# Refuse absurd headers before allocating for them (the reference
# implementation uses the same 100 MB limit).
MAX_HEADER_BYTES = 100 * 1000 * 1000

# Every dtype the format defines, with its item size, so that any valid file's
# header validates even if its tensors cannot be loaded.
ITEMSIZE = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}

# dtypes load_tensor / save_file handle. BF16 is stored as uint16 bit patterns.
_NUMPY_DTYPE = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I32": "<i4", "I64": "<i8",
                "U8": "u1"}
_FROM_NUMPY = {np.dtype("float32"): "F32", np.dtype("float16"): "F16",
               np.dtype("int32"): "I32", np.dtype("int64"): "I64", np.dtype("uint8"): "U8"}


class SafetensorsError(FdcError):
    pass


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int  # absolute file offset of the first byte
    end: int    # absolute file offset one past the last byte


@dataclass(frozen=True)
class Header:
    path: str
    tensors: dict[str, TensorInfo]
    metadata: dict[str, str]


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _byte_size(shape: list, itemsize: int, limit: int) -> int:
    """Bytes of a tensor of ``shape``, or ``limit + 1`` once it exceeds
    ``limit``: a header of millions of huge dimensions must not make the
    product a big-integer computation of hours."""
    if 0 in shape:
        return 0
    size = itemsize
    for d in shape:
        size *= d
        if size > limit:
            return limit + 1
    return size


def read_header(path: str) -> Header:
    """Parse and validate the header of ``path``; reads no tensor data.

    ``path`` must be a regular file (a FIFO or device is refused, not read);
    every problem is a SafetensorsError naming the file (and the tensor).
    """
    def fail(msg):
        raise SafetensorsError(f"{path}: {msg}")

    with open_regular(path, SafetensorsError) as f:
        try:
            file_size = os.fstat(f.fileno()).st_size
            prefix = f.read(8)
            if len(prefix) < 8:
                fail(f"file is {file_size} bytes, too short for the 8-byte header length")
            n = int.from_bytes(prefix, "little")
            if n > file_size - 8:
                fail(f"header length {n} runs past the end of the file ({file_size} bytes)")
            if n > MAX_HEADER_BYTES:
                fail(f"header length {n} exceeds {MAX_HEADER_BYTES} bytes")
            raw = f.read(n)
        except OSError as e:
            raise SafetensorsError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) != n:
        fail(f"file shrank while reading its {n}-byte header")

    header = parse_json(raw, f"{path}: header", SafetensorsError)
    if not isinstance(header, dict):
        fail("header is not a JSON object")

    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        fail("__metadata__ must map strings to strings")

    data_start = 8 + n
    data_size = file_size - data_start
    tensors = {}
    for name, entry in header.items():
        what = f"tensor {describe(name)}"
        if not isinstance(entry, dict):
            fail(f"{what}: entry is not an object")
        dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(dtype, str) or dtype not in ITEMSIZE:
            fail(f"{what}: unknown dtype {describe(dtype)}")
        if not isinstance(shape, list) or not all(
                _is_int(d) and 0 <= d <= INT64_MAX for d in shape):
            shown = (describe(shape) if not isinstance(shape, list) or len(shape) > 8
                     else "[" + ", ".join(map(describe, shape)) + "]")
            fail(f"{what}: shape must be a list of non-negative int64 integers, got {shown}")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(_is_int(o) for o in offsets)):
            shown = (describe(offsets) if not isinstance(offsets, list) or len(offsets) > 8
                     else "[" + ", ".join(map(describe, offsets)) + "]")
            fail(f"{what}: data_offsets must be [begin, end], got {shown}")
        begin, end = offsets
        if not 0 <= begin <= end <= data_size:
            fail(f"{what}: data_offsets [{describe(begin)}, {describe(end)}] outside the "
                 f"data section of {data_size} bytes")
        expected = _byte_size(shape, ITEMSIZE[dtype], data_size)
        if expected > data_size:
            fail(f"{what}: {dtype} shape of {len(shape)} dimensions needs more than the "
                 f"data section's {data_size} bytes")
        if end - begin != expected:
            fail(f"{what}: {end - begin} bytes for {dtype} shape {shape}, "
                 f"expected {describe(expected)}")
        tensors[name] = TensorInfo(name, dtype, tuple(shape), data_start + begin, data_start + end)

    ordered = sorted(tensors.values(), key=lambda t: (t.begin, t.end))
    for a, b in zip(ordered, ordered[1:]):
        if b.begin < a.end:
            fail(f"tensors {describe(a.name)} and {describe(b.name)} overlap")
    return Header(path, tensors, metadata)


def read_tensor(info: TensorInfo, path: str) -> np.ndarray:
    """Read one tensor described by ``info`` (from ``read_header(path)``).

    F32/F16/I32/I64 come back in their own dtype; BF16 comes back as float32
    (exact: bf16 is the top half of an f32).
    """
    if info.dtype not in _NUMPY_DTYPE:
        raise SafetensorsError(f"{path}: tensor {info.name!r}: cannot load dtype {info.dtype}")
    try:
        with open_regular(path, SafetensorsError) as f:
            f.seek(info.begin)
            raw = f.read(info.end - info.begin)
    except OSError as e:
        raise SafetensorsError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(raw) != info.end - info.begin:
        raise SafetensorsError(f"{path}: tensor {info.name!r}: file truncated")
    arr = np.frombuffer(raw, dtype=_NUMPY_DTYPE[info.dtype]).reshape(info.shape)
    if info.dtype == "BF16":
        return bf16_bits_to_f32(arr)
    return arr.astype(arr.dtype.newbyteorder("="))


def load_tensor(path: str, name: str) -> np.ndarray:
    """Load tensor ``name`` from the safetensors file ``path``."""
    header = read_header(path)
    if name not in header.tensors:
        raise SafetensorsError(f"{path}: no tensor {name!r}")
    return read_tensor(header.tensors[name], path)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """Round float32 to bf16 (round to nearest, ties to even); NaN stays NaN."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    rounded[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return rounded


def save_file(tensors: dict[str, np.ndarray], path: str, dtype_override: str | None = None,
              metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` (in the given order) to ``path``.

    ``dtype_override`` ("F32", "F16" or "BF16") converts every floating-point
    tensor to that dtype; integer tensors keep theirs.
    """
    if dtype_override not in (None, "F32", "F16", "BF16"):
        raise SafetensorsError(f"unsupported dtype_override {dtype_override!r}")
    header: dict = {"__metadata__": dict(metadata)} if metadata else {}
    blobs, offset = [], 0
    for name, arr in tensors.items():
        arr = np.asarray(arr)
        if dtype_override and arr.dtype.kind == "f":
            dtype = dtype_override
        elif arr.dtype in _FROM_NUMPY:
            dtype = _FROM_NUMPY[arr.dtype]
        else:
            raise SafetensorsError(f"tensor {name!r}: cannot save numpy dtype {arr.dtype}")
        if dtype == "BF16":
            data = f32_to_bf16_bits(arr.astype(np.float32)).astype("<u2").tobytes()
        else:
            data = arr.astype(_NUMPY_DTYPE[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)  # keep the data section 8-byte aligned
    with open(path, "wb") as f:
        f.write(len(raw).to_bytes(8, "little"))
        f.write(raw)
        for data in blobs:
            f.write(data)
