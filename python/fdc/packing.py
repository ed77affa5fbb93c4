"""Packed weight layouts of docs/model-library.md ("Packed weight layouts").

The same packing as the runtime's loader (runtime/lib/Packing.cpp), byte for
byte: group-wise INT4 with (scale, min) pairs, and Flash-LLM's Tiled-CSL
(version 3: partial tiles, 16-byte aligned runs, bank-spreading word order).
All arithmetic is float32, as in the runtime and the compiled INT4 KV-cache
append, so ``quantise_groups`` also emulates the INT4 KV cache exactly.

- ``pack_int4(w, group_size, scale_dtype)`` -> bytes (``int4_packed_bytes``)
- ``pack_tiled_csl(w, tile, dtype)`` -> bytes (``tiled_csl_capacity_bytes``)
- ``dequantise_int4`` / ``unpack_tiled_csl`` invert them (for tests and the
  reference); ``tiled_csl_tile_order`` is one tile's word order as the spec
  reads, ``tiled_csl_bank`` the shared-memory bank it spreads.
"""

from __future__ import annotations

import numpy as np

from .safetensors import bf16_bits_to_f32, f32_to_bf16_bits

SCALE_DTYPES = ("f16", "bf16", "f32")
# The Tiled-CSL layout this module packs (the manifest's "csl_version").
TILED_CSL_VERSION = 3
# The shared-memory banks version 3's word order spreads a store over: 32
# banks of 4 bytes (two 2-byte elements a bank). Part of the format, as the
# runtime's kTiledCSLOrderBanks and the compiler's TiledCSLType::kOrderBanks:
# a GPU with other banks reads the same words, only with more conflicts.
TILED_CSL_BANKS = 32
TILED_CSL_BANK_BITS = TILED_CSL_BANKS.bit_length() - 1  # log2 of the banks
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
    return w.astype(np.float32, copy=False)


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


def _check_tile(tile) -> tuple[int, int]:
    """(TN, TK) of a tiled_csl tile, as the runtime and the type's verifier
    check it: TN * TK <= 65536 (16-bit locations) and a multiple of 4 (runs
    are padded to whole 16-byte vectors). N and K need not be multiples."""
    if len(tile) != 2:
        raise PackingError(f"tile must be [rows, columns], got {list(tile)}")
    tn, tk = int(tile[0]), int(tile[1])
    for t, dim in zip((tn, tk), "NK"):
        if t <= 0 or t > 65536:
            raise PackingError(f"tile {[tn, tk]}: {t} along {dim} is not in [1, 65536]")
    if tn * tk > 65536:
        raise PackingError(f"tile {[tn, tk]} has {tn * tk} elements, more than 16-bit locations "
                           f"address (65536)")
    if tn * tk % 4:
        raise PackingError(f"tile {[tn, tk]} has {tn * tk} elements, not a multiple of 4 (tile "
                           f"runs are padded to whole 16-byte vectors)")
    return tn, tk


def tiled_csl_grid(n: int, k: int, tile=(128, 64)) -> tuple[int, int]:
    """(tile rows, tile columns) of an [N, K] weight: ceil(N/TN) x ceil(K/TK)."""
    tn, tk = _check_tile(tile)
    return -(-n // tn), -(-k // tk)


def tiled_csl_header_words(n: int, k: int, tile=(128, 64)) -> int:
    """H: the tiles + 1 TileOffsets rounded up to a multiple of 4 u32s."""
    rows, cols = tiled_csl_grid(n, k, tile)
    return (rows * cols + 1 + 3) // 4 * 4


def tiled_csl_capacity_bytes(n: int, k: int, tile=(128, 64)) -> int:
    """The arena bytes of a tiled_csl weight: H * 4 + tiles * TN * TK * 4."""
    rows, cols = tiled_csl_grid(n, k, tile)
    return tiled_csl_header_words(n, k, tile) * 4 + rows * cols * int(tile[0]) * int(tile[1]) * 4


def tiled_csl_bank(location, tk: int) -> np.ndarray:
    """The shared-memory bank of tile locations in the GPU kernels' dense
    tile (2-byte elements, rows of TK; when TK % 64 == 0 row r's 16-byte
    chunks XOR r mod 8, the group MMA's 128-byte swizzle) among
    TILED_CSL_BANKS (32) banks of 4 bytes:
    ((loc ^ 8 * ((loc // TK) % 8)) >> 1) & 31."""
    loc = np.asarray(location)
    loc = loc if loc.dtype in (np.int32, np.int64) else loc.astype(np.int64)
    if tk % 64 == 0:
        loc = loc ^ (((loc // tk) & 7) << 3)
    return (loc >> 1) & (TILED_CSL_BANKS - 1)


def _rank_in_bank(bank: np.ndarray) -> np.ndarray:
    """Per word, how many words of its bank come before it in the list."""
    order = np.argsort(bank, kind="stable")
    sorted_bank = bank[order]
    first = np.searchsorted(sorted_bank, sorted_bank, side="left")
    rank = np.empty(bank.size, dtype=np.int64)
    rank[order] = np.arange(bank.size) - first
    return rank


def _deal_slots(count: int, position: np.ndarray) -> np.ndarray:
    """The slot of L's word ``position`` in a run of ``count`` words: dealt
    instruction by instruction, instruction 4q + j taking slots 128q + 4l + j
    of its group's V_q = min(32, count / 4 - 32q) vectors."""
    group = position >> 7
    vectors = np.minimum(32, count // 4 - 32 * group)
    in_group = position - 128 * group
    return 128 * group + 4 * (in_group % vectors) + in_group // vectors


def tiled_csl_tile_order(locations, tk: int) -> np.ndarray:
    """The version 3 order of one tile's run, written as the spec reads
    (docs/model-library.md): ``locations`` are the run's P words (P a multiple
    of 4) in list order, the real words by location then the padding words.
    Returns ``perm``: slot s of the packed run holds word perm[s] of the list.

    Each word is ranked within its bank (0 for the bank's first in list
    order); L is the list sorted stably by (rank, bank), i.e. round by round
    one word of every bank that has one left. L is dealt out instruction by
    instruction: instruction t = 4q + j takes the next V_q words into slots
    128q + 4l + j, l < V_q. An instruction's 32 words thus come from 32
    consecutive places of L, distinct banks while every bank has words left,
    and a bank repeats only as often as the rounds its slots span."""
    bank = tiled_csl_bank(locations, tk).astype(np.int64)
    p = bank.size
    if p % 4:
        raise PackingError(f"a tile run of {p} words is not a multiple of 4")
    by_key = np.argsort(_rank_in_bank(bank) * TILED_CSL_BANKS + bank, kind="stable")
    perm = np.empty(p, dtype=np.int64)
    perm[_deal_slots(p, np.arange(p))] = by_key
    return perm


def _exclusive_cumsum(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.size, dtype=np.int64)
    np.cumsum(x.reshape(-1)[:-1], out=out[1:])
    return out


def _stable_argsort(key: np.ndarray) -> np.ndarray:
    """np.argsort(key, kind="stable"), as a radix sort where keys fit 16 bits."""
    if key.size and 0 <= key.min() and key.max() < 1 << 16:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable")


def _pack_tiles(bits: np.ndarray, tk: int) -> tuple[np.ndarray, np.ndarray]:
    """The version 3 runs of tiles ``bits`` [T, TN * TK] (uint16, zero outside
    the matrix): (words of all runs in tile order, padded word count per tile).
    tiled_csl_tile_order for all tiles at once."""
    tiles, area = bits.shape
    keep = (bits & 0x7FFF) != 0
    real = np.count_nonzero(keep, axis=1).astype(np.int64)
    size = (real + 3) & ~3
    start = _exclusive_cumsum(size)
    total = int(size.sum())
    if total == 0:
        return np.zeros(0, dtype="<u4"), size
    # The list, int32 (a step's words are far fewer than 2^31): real words by
    # location (flatnonzero walks row-major), then padding at the first
    # location without a real word (outside the matrix or zero).
    tile_of = np.repeat(np.arange(tiles, dtype=np.int32), size)
    index = np.arange(total, dtype=np.int32) - start.astype(np.int32)[tile_of]
    flat = np.flatnonzero(keep)
    is_real = index < real.astype(np.int32)[tile_of]
    loc = np.empty(total, dtype=np.int32)
    loc[is_real] = flat % area
    loc[~is_real] = np.argmin(keep, axis=1).astype(np.int32)[tile_of[~is_real]]
    word = np.zeros(total, dtype=np.uint32)
    word[is_real] = bits.reshape(-1)[flat]
    word |= loc.astype(np.uint32) << 16
    del keep, flat, is_real
    # L: each tile's list sorted stably by (rank in bank, bank), the tiles in
    # place: a word's rank is its index among its tile's words of its bank.
    bank = tiled_csl_bank(loc, tk).astype(np.int32)
    del loc
    by_bank = _stable_argsort(tile_of * TILED_CSL_BANKS + bank)
    cell = (tile_of * TILED_CSL_BANKS + bank)[by_bank]
    cell_start = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    cell_length = np.diff(np.r_[cell_start, cell.size])
    rank = np.empty(total, dtype=np.int32)
    rank[by_bank] = (np.arange(total, dtype=np.int32)
                     - np.repeat(cell_start, cell_length).astype(np.int32))
    del by_bank, cell, cell_start, cell_length
    # Within a tile rank * 32 + bank < 2^21; tiles take the bits above.
    key = (tile_of.astype(np.int64) << 21
           | rank.astype(np.int64) << TILED_CSL_BANK_BITS | bank)
    word = word[np.argsort(key, kind="stable")]
    del rank, bank, key
    # Word `index` of L goes to instruction 4q + j, lane l (slot 128q + 4l +
    # j), dealt instruction by instruction over its group's V_q vectors.
    run = size.astype(np.int32)[tile_of]
    group = index >> 7
    vectors = np.minimum(32, (run >> 2) - 32 * group)
    in_group = index - 128 * group
    slot = 128 * group + 4 * (in_group % vectors) + in_group // vectors
    del run, group, vectors, in_group
    out = np.empty(total, dtype="<u4")
    out[start[tile_of] + slot] = word
    return out, size


# Elements a pack_tiled_csl step converts at once (bounds its temporaries).
_CSL_CHUNK_ELEMENTS = 1 << 22


def pack_tiled_csl(w, tile=(128, 64), dtype: str = "f16", capacity: bool = True) -> bytes:
    """The tiled_csl (version 3) layout of w [N, K]: the header (tiles + 1
    u32 TileOffsets over the ceil(N/TN) x ceil(K/TK) row-major grid, zero
    u32s up to H = roundUp(tiles + 1, 4)), then each tile's run: one u32 word
    per in-matrix value that is non-zero in ``dtype`` (low 16 bits the value,
    high 16 its location r * TK + c in the tile), padded to a multiple of 4
    with zero-valued words at the tile's first location that is zero or
    outside the matrix, in the bank-spreading order of tiled_csl_tile_order.
    With ``capacity`` the result is zero-padded to tiled_csl_capacity_bytes
    (what the arena reserves)."""
    if dtype not in SPARSE_DTYPES:
        raise PackingError(f"tiled_csl needs dtype f16 or bf16, got {dtype!r}")
    w = _check_matrix(w, "tiled_csl")
    n, k = w.shape
    tn, tk = _check_tile(tile)
    rows, cols = tiled_csl_grid(n, k, (tn, tk))
    header = tiled_csl_header_words(n, k, (tn, tk))
    sizes, runs = [], []
    step = max(1, _CSL_CHUNK_ELEMENTS // (cols * tn * tk))  # tile rows at once
    for row in range(0, rows, step):
        last = min(rows, row + step)
        block = np.zeros(((last - row) * tn, cols * tk), dtype=np.uint16)
        part = w[row * tn:last * tn]
        block[:part.shape[0], :k] = to_bits(part, dtype)
        per_tile = block.reshape(last - row, tn, cols, tk).transpose(0, 2, 1, 3)
        words, size = _pack_tiles(per_tile.reshape(-1, tn * tk), tk)
        runs.append(words)
        sizes.append(size)
    offsets = np.zeros(header, dtype="<u4")
    offsets[1:rows * cols + 1] = np.cumsum(np.concatenate(sizes))
    used = 4 * (header + int(offsets[rows * cols]))
    spare = tiled_csl_capacity_bytes(n, k, (tn, tk)) - used if capacity else 0
    return b"".join([offsets.tobytes(), *(r.tobytes() for r in runs), bytes(spare)])


def tiled_csl_runs(data: bytes, n: int, k: int, tile=(128, 64)):
    """(offsets [tiles + 1], words) of packed tiled_csl bytes: tile t's run is
    words[offsets[t]:offsets[t + 1]], padding included. Checks the header."""
    tn, tk = _check_tile(tile)
    rows, cols = tiled_csl_grid(n, k, (tn, tk))
    tiles, header = rows * cols, tiled_csl_header_words(n, k, (tn, tk))
    raw = np.frombuffer(data, dtype="<u4", count=len(data) // 4)
    if raw.size < header:
        raise PackingError(f"{len(data)} bytes hold no {header}-word header")
    offsets = raw[:tiles + 1].astype(np.int64)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0) or np.any(offsets % 4):
        raise PackingError("TileOffsets must start at 0, ascend and be multiples of 4")
    if np.any(raw[tiles + 1:header]):
        raise PackingError("the header's padding is not zero")
    if header + offsets[-1] > raw.size:
        raise PackingError(f"{offsets[-1]} words do not fit {len(data)} bytes")
    if np.any(np.diff(offsets) > tn * tk):
        raise PackingError(f"a tile run holds more than {tn * tk} words")
    return offsets, raw[header:header + offsets[-1]]


def unpack_tiled_csl(data: bytes, n: int, k: int, tile=(128, 64), dtype: str = "f16") -> np.ndarray:
    """The dense float32 [N, K] matrix of packed tiled_csl (version 3) bytes
    (any word order). Padding words (value bits +0/-0) are skipped, as a
    summing consumer does; a real word outside the matrix or a location
    given twice is an error."""
    tn, tk = _check_tile(tile)
    rows, cols = tiled_csl_grid(n, k, (tn, tk))
    offsets, words = tiled_csl_runs(data, n, k, (tn, tk))
    tile_of = np.repeat(np.arange(rows * cols), np.diff(offsets))
    real = (words & 0x7FFF) != 0
    tile_of, words = tile_of[real], words[real]
    loc = (words >> 16).astype(np.int64)
    r = (tile_of // cols) * tn + loc // tk
    c = (tile_of % cols) * tk + loc % tk
    if np.any(loc >= tn * tk) or np.any(r >= n) or np.any(c >= k):
        raise PackingError("a non-zero word's location is outside the tile or the matrix")
    flat = r * k + c
    if np.unique(flat).size != flat.size:
        raise PackingError("a location holds two non-zero words")
    dense = np.zeros(n * k, dtype=np.uint16)
    dense[flat] = (words & 0xFFFF).astype(np.uint16)
    dense = dense.reshape(n, k)
    return f16_bits_to_f32(dense) if dtype == "f16" else bf16_bits_to_f32(dense)
