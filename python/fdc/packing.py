"""Packed weight layouts of docs/model-library.md ("Packed weight layouts").

The same packing as the runtime's loader (runtime/lib/Packing.cpp), byte for
byte: group-wise INT4 with (scale, min) pairs, and Flash-LLM's Tiled-CSL.
All arithmetic is float32, as in the runtime and the compiled INT4 KV-cache
append, so ``quantise_groups`` also emulates the INT4 KV cache exactly.

- ``pack_int4(w, group_size, scale_dtype)`` -> bytes (``int4_packed_bytes``)
- ``pack_tiled_csl(w, tile, dtype)`` -> bytes (``tiled_csl_capacity_bytes``)
- ``dequantise_int4`` / ``unpack_tiled_csl`` invert them (for tests and the
  reference).
"""

from __future__ import annotations

import numpy as np

from .safetensors import bf16_bits_to_f32, f32_to_bf16_bits

SCALE_DTYPES = ("f16", "bf16", "f32")
SPARSE_DTYPES = ("f16", "bf16")
_ITEMSIZE = {"f16": 2, "bf16": 2, "f32": 4}


class PackingError(ValueError):
    pass


def f32_to_f16_bits(x) -> np.ndarray:
    """Round float32 to IEEE binary16 bits (nearest, ties to even; overflow to
    inf). NaN becomes 0x7e00 with its sign, as in the runtime."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore"):
        bits = x.astype(np.float16).view(np.uint16).copy()
    nan = np.isnan(x)
    bits[nan] = (np.signbit(x[nan]).astype(np.uint16) << 15) | 0x7E00
    return bits


def f16_bits_to_f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint16).view(np.float16).astype(np.float32)


def to_bits(x, dtype: str) -> np.ndarray:
    """Bits of float32 ``x`` rounded to ``dtype`` (f16/bf16: uint16, f32: uint32)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f16":
        return f32_to_f16_bits(x)
    if dtype == "bf16":
        return f32_to_bf16_bits(np.atleast_1d(x)).reshape(x.shape)
    if dtype == "f32":
        return x.view(np.uint32).copy()
    raise PackingError(f"unknown dtype {dtype!r} (expected f16, bf16 or f32)")


def round_to(x, dtype: str) -> np.ndarray:
    """float32 ``x`` rounded to ``dtype`` and widened back to float32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "f16":
        return f16_bits_to_f32(f32_to_f16_bits(x))
    if dtype == "bf16":
        return bf16_bits_to_f32(f32_to_bf16_bits(np.atleast_1d(x)).reshape(x.shape))
    if dtype == "f32":
        return x.copy()
    raise PackingError(f"unknown dtype {dtype!r} (expected f16, bf16 or f32)")


def _ieee_min_max(x: np.ndarray):
    """Minimum and maximum over the last axis with -0 < +0 (IEEE
    minimum/maximum, as arith.minimumf/maximumf and the runtime)."""
    lo, hi = x.min(axis=-1), x.max(axis=-1)
    zero = x == 0
    neg_zero = np.any(zero & np.signbit(x), axis=-1)
    pos_zero = np.any(zero & ~np.signbit(x), axis=-1)
    lo = np.where(lo == 0, np.where(neg_zero, np.float32(-0.0), np.float32(0.0)), lo)
    hi = np.where(hi == 0, np.where(pos_zero, np.float32(0.0), np.float32(-0.0)), hi)
    return lo.astype(np.float32), hi.astype(np.float32)


def quantise_groups(x, scale_dtype: str = "f16"):
    """Quantise the groups along the last axis of float32 ``x`` to 4 bits.

    Returns ``(q, scale, minimum)``: q uint8 in [0, 15] of x's shape, and the
    per-group scale and min (float32 values representable in scale_dtype):
    min = round(min x), scale = round((max x - min x) / 15) (from the exact
    min), q = clamp(round_half_even((x - min) / scale), 0, 15) (the rounded
    min), q = 0 where scale == 0; all in float32.
    """
    x = np.asarray(x, dtype=np.float32)
    if scale_dtype not in SCALE_DTYPES:
        raise PackingError(f"scale dtype {scale_dtype!r} is not one of {', '.join(SCALE_DTYPES)}")
    if not np.all(np.isfinite(x)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise PackingError(f"element {list(bad)} is {x[bad]}; int4 packing needs finite values")
    lo, hi = _ieee_min_max(x)
    minimum = round_to(lo, scale_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        scale = round_to((hi - lo) / np.float32(15), scale_dtype)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.rint((x - minimum[..., None]) / scale[..., None])
    q = np.where(q >= 0, q, np.float32(0))  # also NaN
    q = np.minimum(q, np.float32(15))
    q = np.where(scale[..., None] == 0, np.float32(0), q)
    return q.astype(np.uint8), scale, minimum


def dequantise_groups(q, scale, minimum) -> np.ndarray:
    """min + scale * q in float32 (the compiled reader's arithmetic)."""
    q = np.asarray(q).astype(np.float32)
    return (np.asarray(minimum, np.float32)[..., None]
            + np.asarray(scale, np.float32)[..., None] * q).astype(np.float32)


def fake_quantise(x, group_size: int, scale_dtype: str = "f16") -> np.ndarray:
    """x [..., K] float32 quantised in groups of ``group_size`` along K and
    dequantised: the values the compiled code reads back."""
    x = np.asarray(x, dtype=np.float32)
    k = x.shape[-1]
    if group_size <= 0 or k % group_size:
        raise PackingError(f"group size {group_size} does not divide {k}")
    groups = x.reshape(*x.shape[:-1], k // group_size, group_size)
    return dequantise_groups(*quantise_groups(groups, scale_dtype)).reshape(x.shape)


def _check_matrix(w, what: str) -> np.ndarray:
    w = np.asarray(w)
    if w.ndim != 2 or w.shape[0] <= 0 or w.shape[1] <= 0:
        raise PackingError(f"{what} needs a 2-D [N, K] matrix of positive sizes, got "
                           f"shape {list(w.shape)}")
    return w.astype(np.float32)


def int4_packed_bytes(n: int, k: int, group_size: int, scale_dtype: str = "f16") -> int:
    return n * k // 2 + n * (k // group_size) * 2 * _ITEMSIZE[scale_dtype]


def pack_int4(w, group_size: int, scale_dtype: str = "f16") -> bytes:
    """The int4 layout of w [N, K]: N*K/2 nibble bytes (element 2j of a row in
    the low nibble of byte j), then the (scale, min) pairs by (row, group)."""
    w = _check_matrix(w, "int4")
    n, k = w.shape
    if k % 2:
        raise PackingError(f"int4 needs an even K, got {k}")
    if group_size <= 0 or k % group_size:
        raise PackingError(f"group_size {group_size} does not divide K = {k}")
    if not np.all(np.isfinite(w)):
        r, c = (int(i) for i in np.argwhere(~np.isfinite(w))[0])
        raise PackingError(f"element [{r}, {c}] is {w[r, c]}; int4 packing needs finite values")
    q, scale, minimum = quantise_groups(w.reshape(n, k // group_size, group_size), scale_dtype)
    q = q.reshape(n, k)
    nibbles = (q[:, 0::2] | (q[:, 1::2] << 4)).astype(np.uint8)
    pairs = np.stack([to_bits(scale, scale_dtype), to_bits(minimum, scale_dtype)], axis=-1)
    pairs = pairs.astype("<u2" if _ITEMSIZE[scale_dtype] == 2 else "<u4")
    return nibbles.tobytes() + pairs.tobytes()


def unpack_int4(data: bytes, n: int, k: int, group_size: int, scale_dtype: str = "f16"):
    """(q [N, K] uint8, scale [N, K/G], min [N, K/G]) from packed bytes."""
    if len(data) != int4_packed_bytes(n, k, group_size, scale_dtype):
        raise PackingError(f"{len(data)} bytes, expected "
                           f"{int4_packed_bytes(n, k, group_size, scale_dtype)}")
    raw = np.frombuffer(data, dtype=np.uint8)
    nibbles = raw[:n * k // 2].reshape(n, k // 2)
    q = np.empty((n, k), dtype=np.uint8)
    q[:, 0::2], q[:, 1::2] = nibbles & 0xF, nibbles >> 4
    if scale_dtype == "f32":
        pairs = np.frombuffer(data[n * k // 2:], dtype="<f4").astype(np.float32)
    else:
        bits = np.frombuffer(data[n * k // 2:], dtype="<u2").astype(np.uint16)
        pairs = f16_bits_to_f32(bits) if scale_dtype == "f16" else bf16_bits_to_f32(bits)
    pairs = pairs.reshape(n, k // group_size, 2)
    return q, pairs[..., 0], pairs[..., 1]


def dequantise_int4(data: bytes, n: int, k: int, group_size: int,
                    scale_dtype: str = "f16") -> np.ndarray:
    q, scale, minimum = unpack_int4(data, n, k, group_size, scale_dtype)
    groups = q.reshape(n, k // group_size, group_size)
    return dequantise_groups(groups, scale, minimum).reshape(n, k)


def _check_tile(shape, tile) -> tuple[int, int]:
    if len(tile) != 2:
        raise PackingError(f"tile must be [rows, columns], got {list(tile)}")
    for t, s, dim in zip(tile, shape, "NK"):
        if t <= 0 or s % t:
            raise PackingError(f"tile {list(tile)}: {t} does not divide {dim} = {s}")
    if tile[0] * tile[1] > 65536:
        raise PackingError(f"tile {list(tile)} has {tile[0] * tile[1]} elements, more than "
                           f"16-bit locations address (65536)")
    return int(tile[0]), int(tile[1])


def tiled_csl_capacity_bytes(n: int, k: int, tile=(128, 64)) -> int:
    tiles = (n // tile[0]) * (k // tile[1])
    return (tiles + 1) * 4 + n * k * 4


def pack_tiled_csl(w, tile=(128, 64), dtype: str = "f16", capacity: bool = True) -> bytes:
    """The tiled_csl layout of w [N, K]: TileOffsets (tiles + 1 u32 word
    indices, tiles row-major), then one u32 word per value that is non-zero in
    ``dtype`` (low 16 bits the value, high 16 its location r * TK + c in the
    tile), ordered by location inside each tile. With ``capacity`` the result
    is zero-padded to tiled_csl_capacity_bytes (what the arena reserves)."""
    if dtype not in SPARSE_DTYPES:
        raise PackingError(f"tiled_csl needs dtype f16 or bf16, got {dtype!r}")
    w = _check_matrix(w, "tiled_csl")
    n, k = w.shape
    tn, tk = _check_tile(w.shape, tile)
    bits = to_bits(w, dtype).astype(np.uint32)
    # [tile rows, tn, tile cols, tk] -> [tiles, tn * tk] in tile-major order.
    per_tile = bits.reshape(n // tn, tn, k // tk, tk).transpose(0, 2, 1, 3).reshape(-1, tn * tk)
    keep = (per_tile & 0x7FFF) != 0
    counts = keep.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype("<u4")
    location = np.broadcast_to(np.arange(tn * tk, dtype=np.uint32), per_tile.shape)
    # Boolean indexing walks row-major: by tile, then by location.
    words = ((location[keep] << 16) | per_tile[keep]).astype("<u4")
    out = offsets.tobytes() + words.tobytes()
    if capacity:
        out += bytes(tiled_csl_capacity_bytes(n, k, (tn, tk)) - len(out))
    return out


def unpack_tiled_csl(data: bytes, n: int, k: int, tile=(128, 64), dtype: str = "f16") -> np.ndarray:
    """The dense float32 [N, K] matrix of packed tiled_csl bytes (any word order)."""
    tn, tk = _check_tile((n, k), tile)
    tiles = (n // tn) * (k // tk)
    raw = np.frombuffer(data, dtype="<u4")
    offsets = raw[:tiles + 1]
    words = raw[tiles + 1:tiles + 1 + int(offsets[-1])]
    dense = np.zeros((tiles, tn * tk), dtype=np.uint16)
    tile_of = np.repeat(np.arange(tiles), np.diff(offsets.astype(np.int64)))
    dense[tile_of, words >> 16] = (words & 0xFFFF).astype(np.uint16)
    dense = dense.reshape(n // tn, k // tk, tn, tk).transpose(0, 2, 1, 3).reshape(n, k)
    return f16_bits_to_f32(dense) if dtype == "f16" else bf16_bits_to_f32(dense)
