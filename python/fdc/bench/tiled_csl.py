"""Tiled-CSL packing for the GPU suite and the GPU numerics test, where the
weights are made from a seed on the GPU machine and written straight into a
model library's arena (the runtime packs checkpoint weights itself; these
paths skip the runtime, as the linear family does).

Two packers of the same layout (docs/model-library.md, "Packed weight
layouts"; version 2 unless a library's manifest entry says otherwise):

- ``pack_torch(w, tile, version)``: vectorised over all tiles with torch, on
  the tensor's device (a 36864 x 9216 weight packs in well under a second on
  an H100). The suite and ``test/gpu/gpu_check.py`` use it.
- ``pack_numpy(bits, tile, version)``: the spec read literally, one tile at
  a time (small weights: tests, and the GPU test's cross-check of
  ``pack_torch``).

Both return the packed words as 32-bit integers: the header (TileOffsets,
padded to ``header_words``), then the runs. ``fdc.packing.pack_tiled_csl``
(the runtime's packer mirrored in numpy) must give the same bytes; the GPU
test checks that too where it packs version 2.

Version 1 (no manifest ``csl_version``: libraries compiled before version 2)
is the older layout: TileOffsets with no padding, each tile's words in
location order, no padding words, N and K multiples of the tile.
"""

from __future__ import annotations

import numpy as np

VERSION = 2
WORDS_PER_VECTOR = 4
BANKS = 32
# Elements of the padded weight that pack_torch handles per step (bounds its
# temporaries to a few GiB on the GPU).
_TORCH_CHUNK_ELEMENTS = 1 << 25


class TiledCSLError(ValueError):
    pass


def layout_version(entry: dict) -> int:
    """The layout version of a manifest weight entry (1 if it names none)."""
    return int(entry.get("csl_version", 1))


def grid(n: int, k: int, tile) -> tuple[int, int]:
    """(tile rows, tiles per row): ceil(N / TN) x ceil(K / TK)."""
    tn, tk = int(tile[0]), int(tile[1])
    return -(-n // tn), -(-k // tk)


def header_words(n: int, k: int, tile, version: int = VERSION) -> int:
    rows, cols = grid(n, k, tile)
    tiles = rows * cols
    if version == 1:
        return tiles + 1
    return (tiles + 1 + WORDS_PER_VECTOR - 1) // WORDS_PER_VECTOR * WORDS_PER_VECTOR


def capacity_bytes(n: int, k: int, tile, version: int = VERSION) -> int:
    """The arena bytes reserved for the weight (enough for a dense one)."""
    rows, cols = grid(n, k, tile)
    if version == 1:
        return header_words(n, k, tile, 1) * 4 + n * k * 4
    return (header_words(n, k, tile, version) * 4
            + rows * cols * int(tile[0]) * int(tile[1]) * 4)


def _check(n: int, k: int, tile, version: int) -> tuple[int, int]:
    if version not in (1, 2):
        raise TiledCSLError(f"Tiled-CSL version {version} is not 1 or 2")
    tn, tk = int(tile[0]), int(tile[1])
    if tn <= 0 or tk <= 0 or tn * tk > 65536 or tn * tk % WORDS_PER_VECTOR:
        raise TiledCSLError(f"tile {tn}x{tk}: need TN * TK <= 65536 and a "
                            "multiple of 4")
    if version == 1 and (n % tn or k % tk):
        raise TiledCSLError(f"version 1 needs N = {n} and K = {k} to be "
                            f"multiples of the tile {tn}x{tk}")
    return tn, tk


def bank(location, tk: int):
    """Shared-memory bank of tile locations (numpy or torch integers):
    ((loc ^ swz) >> 1) & 31, swz = 32 for odd tile rows when TK % 64 == 0."""
    if tk % 64 == 0:
        location = location ^ (((location // tk) & 1) * 32)
    return (location >> 1) & (BANKS - 1)


def tile_order(banks: list[int], p: int) -> list[int]:
    """perm: slot s of a run of p words holds word perm[s] of its list (real
    words by location, then the padding words), ``banks`` the list's banks.
    The spec read literally: the list sorted stably by bank is dealt out
    lane-major over the store instructions t = 4q + j (q the group of 128
    slots, V_q = min(32, p/4 - 32q) lanes): for each lane l, for each t,
    slot 128q + 4l + j takes the next word if l < V_q."""
    by_bank = sorted(range(p), key=lambda i: banks[i])  # sorted() is stable
    groups = -(-p // 128)
    perm = [0] * p
    taken = 0
    for lane in range(32):
        for t in range(4 * groups):
            q, j = divmod(t, 4)
            if lane < min(32, p // 4 - 32 * q):
                perm[128 * q + 4 * lane + j] = by_bank[taken]
                taken += 1
    return perm


def pack_numpy(bits: np.ndarray, tile=(128, 64), version: int = VERSION) -> np.ndarray:
    """The packed words (uint32: header, then the runs) of the [N, K] matrix
    of 16-bit element bits ``bits`` (f16 or bf16; +0/-0 are not stored).
    The spec read literally, one tile at a time."""
    bits = np.asarray(bits, dtype=np.uint16)
    n, k = bits.shape
    tn, tk = _check(n, k, tile, version)
    rows, cols = grid(n, k, tile)
    runs, offsets = [], [0]
    for tr in range(rows):
        for tc in range(cols):
            block = np.zeros((tn, tk), dtype=np.uint16)
            part = bits[tr * tn:(tr + 1) * tn, tc * tk:(tc + 1) * tk]
            block[:part.shape[0], :part.shape[1]] = part
            flat = block.reshape(-1)
            keep = (flat & 0x7FFF) != 0
            locs = np.flatnonzero(keep).astype(np.int64)
            values = flat[locs].astype(np.int64)
            if version == 2:
                pad = -len(locs) % WORDS_PER_VECTOR
                if pad:
                    # Zeros and out-of-matrix elements are both kept False.
                    first = int(np.flatnonzero(~keep)[0])
                    locs = np.concatenate([locs, np.full(pad, first, np.int64)])
                    values = np.concatenate([values, np.zeros(pad, np.int64)])
                perm = tile_order(bank(locs, tk).tolist(), len(locs))
                words = ((locs << 16) | values)[np.asarray(perm, dtype=np.int64)]
            else:
                words = (locs << 16) | values
            runs.append(words)
            offsets.append(offsets[-1] + len(words))
    header = np.zeros(header_words(n, k, tile, version), dtype=np.int64)
    header[:len(offsets)] = offsets
    return np.concatenate([header, *runs]).astype(np.uint32)


def pack_torch(w, tile=(128, 64), version: int = VERSION):
    """The packed words of the [N, K] f16 / bf16 torch tensor ``w`` as an
    int32 tensor on w's device (the same bits as pack_numpy's uint32)."""
    import torch

    if w.dtype not in (torch.float16, torch.bfloat16) or w.dim() != 2:
        raise TiledCSLError(f"pack_torch needs a 2-D f16 / bf16 tensor, got "
                            f"{w.dtype} {list(w.shape)}")
    n, k = w.shape
    tn, tk = _check(n, k, tile, version)
    rows, cols = grid(n, k, tile)
    device = w.device
    bits = w.contiguous().view(torch.int16)
    area = tn * tk
    step = max(1, _TORCH_CHUNK_ELEMENTS // (cols * area))
    runs, sizes = [], []
    for row in range(0, rows, step):
        last = min(rows, row + step)
        block = torch.zeros(((last - row) * tn, cols * tk), dtype=torch.int32,
                            device=device)
        part = bits[row * tn:last * tn]
        block[:part.shape[0], :k] = part.to(torch.int32) & 0xFFFF
        per_tile = (block.view(last - row, tn, cols, tk).permute(0, 2, 1, 3)
                    .reshape(-1, area))
        del block
        words, size = _runs_torch(per_tile, tk, version)
        runs.append(words)
        sizes.append(size)
    sizes = torch.cat(sizes)
    header = torch.zeros(header_words(n, k, tile, version), dtype=torch.int64,
                         device=device)
    header[1:rows * cols + 1] = torch.cumsum(sizes, 0)
    out = torch.cat([header, *runs])
    # u32 bits as int32 (two's complement).
    out = torch.where(out >= 1 << 31, out - (1 << 32), out)
    return out.to(torch.int32)


def _runs_torch(per_tile, tk: int, version: int):
    """(words of every tile's run in tile order (int64), run length per
    tile) of ``per_tile`` [T, TN * TK] element bits (int32, zero outside the
    matrix): pack_numpy's per-tile steps for all tiles at once."""
    import torch

    device = per_tile.device
    tiles, area = per_tile.shape
    keep = (per_tile & 0x7FFF) != 0
    real = keep.sum(1)
    real_tile, real_loc = keep.nonzero(as_tuple=True)
    if version == 1:
        words = (real_loc << 16) | per_tile[real_tile, real_loc].to(torch.int64)
        return words, real
    size = (real + 3) // 4 * 4
    total = int(size.sum())
    if total == 0:
        return torch.zeros(0, dtype=torch.int64, device=device), size
    start = torch.cumsum(size, 0) - size
    arange_tiles = torch.arange(tiles, device=device)
    tile_of = torch.repeat_interleave(arange_tiles, size)
    index = torch.arange(total, device=device) - start[tile_of]
    is_real = index < real[tile_of]
    # The list: real words by location, then padding at the first location
    # (row-major) that holds no real word (zero or outside the matrix).
    positions = torch.arange(area, dtype=torch.int32, device=device)
    first_free = torch.where(keep, area, positions).amin(1).to(torch.int64)
    loc = torch.empty(total, dtype=torch.int64, device=device)
    loc[is_real] = real_loc
    loc[~is_real] = first_free[tile_of[~is_real]]
    word = torch.zeros(total, dtype=torch.int64, device=device)
    word[is_real] = per_tile[real_tile, real_loc].to(torch.int64)
    word |= loc << 16
    del keep, real_tile, real_loc, is_real, first_free
    # L: each tile's list sorted stably by bank (the tiles stay in place).
    word = word[torch.sort(tile_of * BANKS + bank(loc, tk), stable=True).indices]
    del loc
    # Word i of L goes to lane l, instruction t (slot 128 (t // 4) + 4l +
    # t % 4): the first V lanes (V the last group's vectors) have all
    # I = 4 * groups instructions, the other lanes all but the last group's 4.
    run = size[tile_of]
    instructions = 4 * ((run + 127) // 128)
    last = run // 4 - 8 * (instructions - 4)
    head = last * instructions
    short = torch.clamp(instructions - 4, min=1)
    first = index < head
    lane = torch.where(first, index // instructions, last + (index - head) // short)
    t = torch.where(first, index % instructions, (index - head) % short)
    del run, instructions, last, head, short, first
    out = torch.empty(total, dtype=torch.int64, device=device)
    out[start[tile_of] + 128 * (t >> 2) + 4 * lane + (t & 3)] = word
    return out, size


def words_read(packed_words: int) -> int:
    """Bytes a kernel reads of a packed weight of this many words (header
    and runs; the capacity beyond them is never read)."""
    return 4 * packed_words


def dense_bits_of(packed: np.ndarray, n: int, k: int, tile=(128, 64),
                  version: int = VERSION) -> np.ndarray:
    """The [N, K] element bits of packed words (uint32), as a summing
    consumer reads them: padding words (value +0/-0) skipped; errors on a
    real word outside the matrix or a location given twice."""
    tn, tk = _check(n, k, tile, version)
    rows, cols = grid(n, k, tile)
    tiles = rows * cols
    packed = np.asarray(packed, dtype=np.uint32)
    head = header_words(n, k, tile, version)
    offsets = packed[:tiles + 1].astype(np.int64)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise TiledCSLError("TileOffsets must start at 0 and ascend")
    if version == 2 and (np.any(offsets % 4) or np.any(packed[tiles + 1:head])):
        raise TiledCSLError("version 2: offsets are multiples of 4 and the "
                            "header's padding is zero")
    words = packed[head:head + offsets[-1]]
    tile_of = np.repeat(np.arange(tiles), np.diff(offsets))
    real = (words & 0x7FFF) != 0
    tile_of, words = tile_of[real], words[real]
    loc = (words >> 16).astype(np.int64)
    r = (tile_of // cols) * tn + loc // tk
    c = (tile_of % cols) * tk + loc % tk
    if np.any(loc >= tn * tk) or np.any(r >= n) or np.any(c >= k):
        raise TiledCSLError("a non-zero word lies outside the tile or matrix")
    flat = r * k + c
    if np.unique(flat).size != flat.size:
        raise TiledCSLError("a location holds two non-zero words")
    dense = np.zeros(n * k, dtype=np.uint16)
    dense[flat] = (words & 0xFFFF).astype(np.uint16)
    return dense.reshape(n, k)
