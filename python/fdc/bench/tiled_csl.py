"""Tiled-CSL packing on the GPU, for the suite and the GPU numerics test,
where the weights are made from a seed on the GPU machine and written
straight into a model library's arena (the runtime packs checkpoint weights
itself; these paths skip the runtime, as the linear family does).

``pack_torch(w, tile)`` is ``fdc.packing.pack_tiled_csl`` (the runtime's
packer mirrored in numpy, docs/model-library.md "Packed weight layouts")
vectorised over all tiles with torch on the tensor's device: a 36864 x 9216
weight packs in well under a second on an H100, where the numpy packer takes
seconds. It returns the packed words as int32 (the u32 bits): the header
(TileOffsets, padded to a whole vector), then the runs. The GPU test checks
it against ``fdc.packing`` word for word on every weight it packs.
"""

from __future__ import annotations

from .. import packing

VERSION = packing.TILED_CSL_VERSION
BANKS = packing.TILED_CSL_BANKS
# Elements of the padded weight that pack_torch handles per step (bounds its
# temporaries to a few GiB on the GPU).
_TORCH_CHUNK_ELEMENTS = 1 << 25


class TiledCSLError(ValueError):
    pass


def layout_version(entry: dict) -> int:
    """The layout version of a manifest weight entry: the one this packer
    writes, or an error naming the weight."""
    version = entry.get("csl_version")
    if version != VERSION:
        raise TiledCSLError(f"weight '{entry.get('name')}': Tiled-CSL version "
                            f"{version} is not the version packed here ({VERSION})")
    return version


def _bank(location, tk: int):
    """packing.tiled_csl_bank for torch integer tensors."""
    if tk % 64 == 0:
        location = location ^ (((location // tk) & 7) * 8)
    return (location >> 1) & (BANKS - 1)


def pack_torch(w, tile=(128, 64)):
    """The packed words of the [N, K] f16 / bf16 torch tensor ``w`` as an
    int32 tensor on w's device (the u32 words of packing.pack_tiled_csl)."""
    import torch

    if w.dtype not in (torch.float16, torch.bfloat16) or w.dim() != 2:
        raise TiledCSLError(f"pack_torch needs a 2-D f16 / bf16 tensor, got "
                            f"{w.dtype} {list(w.shape)}")
    n, k = w.shape
    try:
        rows, cols = packing.tiled_csl_grid(n, k, tile)
    except packing.PackingError as err:
        raise TiledCSLError(str(err)) from err
    tn, tk = int(tile[0]), int(tile[1])
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
        words, size = _runs_torch(per_tile, tk)
        runs.append(words)
        sizes.append(size)
    sizes = torch.cat(sizes)
    header = torch.zeros(packing.tiled_csl_header_words(n, k, tile),
                         dtype=torch.int64, device=device)
    header[1:rows * cols + 1] = torch.cumsum(sizes, 0)
    out = torch.cat([header, *runs])
    # u32 bits as int32 (two's complement).
    out = torch.where(out >= 1 << 31, out - (1 << 32), out)
    return out.to(torch.int32)


def _runs_torch(per_tile, tk: int):
    """(words of every tile's run in tile order (int64), run length per
    tile) of ``per_tile`` [T, TN * TK] element bits (int32, zero outside the
    matrix): the packer's per-tile steps for all tiles at once."""
    import torch

    device = per_tile.device
    tiles, area = per_tile.shape
    keep = (per_tile & 0x7FFF) != 0
    real = keep.sum(1)
    real_tile, real_loc = keep.nonzero(as_tuple=True)
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
    # L: each tile's list sorted stably by (rank in bank, bank), the tiles in
    # place: a word's rank is its index among its tile's words of its bank.
    cell = tile_of * BANKS + _bank(loc, tk)
    del loc
    by_cell = torch.sort(cell, stable=True).indices
    sorted_cell = cell[by_cell]
    first = torch.searchsorted(sorted_cell, sorted_cell, right=False)
    rank = torch.empty_like(cell)
    rank[by_cell] = torch.arange(total, device=device) - first
    del by_cell, sorted_cell, first
    # Within a tile rank * 32 + bank < 2^21; tiles take the bits above.
    key = (tile_of << 21) | (rank << packing.TILED_CSL_BANK_BITS) | \
        (cell & (BANKS - 1))
    word = word[torch.sort(key, stable=True).indices]
    del cell, rank, key
    # Word `index` of L goes to instruction 4q + j, lane l (slot 128q + 4l +
    # j), dealt instruction by instruction over its group's V_q vectors.
    run = size[tile_of]
    group = index >> 7
    vectors = torch.clamp((run >> 2) - 32 * group, max=32)
    in_group = index - 128 * group
    slot = 128 * group + 4 * (in_group % vectors) + in_group // vectors
    del run, group, vectors, in_group
    out = torch.empty(total, dtype=torch.int64, device=device)
    out[start[tile_of] + slot] = word
    return out, size


def words_read(packed_words: int) -> int:
    """Bytes a kernel reads of a packed weight of this many words (header
    and runs; the capacity beyond them is never read)."""
    return 4 * packed_words
