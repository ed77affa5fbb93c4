import os
import subprocess

import numpy as np
import pytest

from fdc.packing import (TILED_CSL_VERSION, PackingError, dequantise_int4, f32_to_f16_bits,
                         fake_quantise, int4_packed_bytes, pack_int4, pack_tiled_csl,
                         quantise_groups, round_to, tiled_csl_bank, tiled_csl_capacity_bytes,
                         tiled_csl_grid, tiled_csl_header_words, tiled_csl_runs,
                         tiled_csl_tile_order, to_bits, unpack_int4, unpack_tiled_csl)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The matrix of runtime/test/PackingTest.cpp (Int4KnownMatrix), same bytes.
INT4_MATRIX = np.array([[0, 15, 7.5, 8.5, -1, 1, 1, -1],
                        [5, 5, 5, 5, 1, 2, 3, 4]], dtype=np.float32)
INT4_BYTES = bytes([
    # row 0: group 0 min 0 scale 1 -> q 0, 15, 8 (7.5 ties to even), 8 (8.5 too);
    #        group 1 min -1 scale f16(2/15) -> q 0, 15, 15, 0
    0xF0, 0x88, 0xF0, 0x0F,
    # row 1: group 0 constant -> scale 0, q 0; group 1 min 1 scale f16(0.2) -> 0, 5, 10, 15
    0x00, 0x00, 0x50, 0xFA,
    # (scale, min) f16 pairs by (row, group)
    0x00, 0x3C, 0x00, 0x00,
    0x44, 0x30, 0x00, 0xBC,
    0x00, 0x00, 0x00, 0x45,
    0x66, 0x32, 0x00, 0x3C,
])

CSL_MATRIX = np.array([[1, 0, 0, 2],
                       [0, -0.0, 3, 0],
                       [0, 0, 1e-10, 0],
                       [0, -1, 0, 0]], dtype=np.float32)


def u32(*words):
    return np.array(words, dtype="<u4").tobytes()


def test_f16_rounding_is_nearest_even():
    x = np.array([1.0, 0.2, 65504, 65519, 65520, 1 + 2**-11, 1 + 3 * 2**-11,
                  2**-24, 2**-25, 3 * 2**-25, -0.0, np.inf, np.nan], dtype=np.float32)
    assert f32_to_f16_bits(x).tolist() == [0x3C00, 0x3266, 0x7BFF, 0x7BFF, 0x7C00, 0x3C00,
                                           0x3C02, 0x0001, 0x0000, 0x0002, 0x8000, 0x7C00,
                                           0x7E00]
    assert to_bits(np.array([0.1], np.float32), "bf16").tolist() == [0x3DCD]
    assert round_to(np.array([0.1], np.float32), "bf16")[0] == np.float32(0.10009765625)


def test_int4_known_bytes():
    assert int4_packed_bytes(2, 8, 4) == 24
    assert pack_int4(INT4_MATRIX, 4, "f16") == INT4_BYTES
    q, scale, minimum = unpack_int4(INT4_BYTES, 2, 8, 4)
    assert q.tolist() == [[0, 15, 8, 8, 0, 15, 15, 0], [0, 0, 0, 0, 0, 5, 10, 15]]
    assert scale.tolist() == [[1.0, np.float32(0.13330078125)], [0.0, np.float32(0.199951171875)]]
    assert minimum.tolist() == [[0.0, -1.0], [5.0, 1.0]]
    deq = dequantise_int4(INT4_BYTES, 2, 8, 4)
    assert deq[1, :4].tolist() == [5, 5, 5, 5]  # a constant group is exact
    np.testing.assert_array_equal(deq, fake_quantise(INT4_MATRIX, 4))


def test_int4_scale_dtypes():
    x = np.array([[-0.5, 1.0, 0.25, 1.0]], dtype=np.float32)
    f32 = pack_int4(x, 4, "f32")
    assert len(f32) == 2 + 8
    scale, minimum = np.frombuffer(f32[2:], dtype="<f4")
    assert scale == np.float32(1.5) / np.float32(15) and minimum == -0.5
    assert f32[:2] == bytes([0xF0, 0xF0 | int(np.rint(np.float32(0.75) / scale))])
    # bf16 scale 0x3dcd = 0.10009765625: 0.75 / scale = 7.49 -> 7
    assert pack_int4(x, 4, "bf16") == bytes([0xF0, 0xF7, 0xCD, 0x3D, 0x00, 0xBF])


def test_int4_error_is_bounded_by_half_a_scale():
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((16, 256)) * rng.uniform(0.01, 10, (16, 1))).astype(np.float32)
    for g, scale_dtype in ((32, "f16"), (64, "bf16"), (128, "f32")):
        deq = dequantise_int4(pack_int4(w, g, scale_dtype), 16, 256, g, scale_dtype)
        _, scale, _ = quantise_groups(w.reshape(16, -1, g), scale_dtype)
        err = np.abs(deq - w).reshape(16, -1, g).max(axis=-1)
        # scale/2 plus the rounding of min and scale to scale_dtype (a few ulp)
        assert np.all(err <= scale * 0.5 * (1 + 2**-6) + np.abs(w).max() * 2**-9)
        assert np.all(err > 0)


def test_int4_errors():
    with pytest.raises(PackingError, match="group_size 3 does not divide K = 8"):
        pack_int4(INT4_MATRIX, 3)
    with pytest.raises(PackingError, match="even K"):
        pack_int4(np.zeros((2, 3)), 1)
    with pytest.raises(PackingError, match="scale dtype 'f64'"):
        pack_int4(INT4_MATRIX, 4, "f64")
    with pytest.raises(PackingError, match=r"element \[0, 2\] is inf"):
        pack_int4(np.array([[0, 1, np.inf, 2]]), 2)
    with pytest.raises(PackingError, match="2-D"):
        pack_int4(np.zeros(8), 4)


def test_tiled_csl_sizes():
    assert TILED_CSL_VERSION == 3
    # H = roundUp(tiles + 1, 4): 3 tiles -> 4 words, 4 -> 8, 7 -> 8, 8 -> 12
    assert [tiled_csl_header_words(n, 4, (1, 4)) for n in (3, 4, 7, 8)] == [4, 8, 8, 12]
    assert tiled_csl_grid(200, 100, (128, 64)) == (2, 2)
    assert tiled_csl_grid(128, 64, (128, 64)) == (1, 1)
    # H * 4 + tiles * TN * TK * 4, partial tiles reserving whole tiles
    assert tiled_csl_capacity_bytes(4, 4, (2, 2)) == 8 * 4 + 4 * 4 * 4
    assert tiled_csl_capacity_bytes(256, 512, (128, 64)) == 20 * 4 + 16 * 128 * 64 * 4
    assert tiled_csl_capacity_bytes(200, 100, (128, 64)) == 8 * 4 + 4 * 128 * 64 * 4
    assert tiled_csl_capacity_bytes(3, 3, (2, 2)) == 8 * 4 + 4 * 4 * 4


def test_tiled_csl_banks():
    # (loc >> 1) & 31, row r's 16-byte chunks XOR r mod 8 when TK % 64 == 0
    assert tiled_csl_bank([0, 1, 2, 62, 63], 64).tolist() == [0, 0, 1, 31, 31]
    # row 1: chunk XOR 1 (64 -> 72, 96 -> 104, 127 -> 119); row 2: XOR 2
    assert tiled_csl_bank([64, 65, 96, 127, 128], 64).tolist() == [4, 4, 20, 27, 8]
    assert tiled_csl_bank([64, 128, 191, 256], 128).tolist() == [0, 4, 27, 8]
    # row 7 (448..511): XOR 7; row 8 starts a new period
    assert tiled_csl_bank([448, 504, 512], 64).tolist() == [28, 0, 0]
    assert tiled_csl_bank([48, 96, 100], 48).tolist() == [24, 16, 18]  # no swizzle


def test_tiled_csl_known_bytes():
    # 2x2 tiles: locations 0, 1 are bank 0, locations 2, 3 bank 1. -0 and
    # 1e-10 (zero in f16) are dropped; tile 3 is empty (no run, no padding).
    # Each run is padded to 4 words at its first zero location, sorted by
    # (rank in bank, bank) and dealt to its one vector (lane 0): slot j <-
    # word j of that list.
    # tile 0: 1@0, pads @1: all bank 0 (ranks 0..3), in list order.
    # tile 1: 2@1 (bank 0), 3@2 (1), pads @0 (0): 2@1, 3@2, pad, pad.
    # tile 2: -1@3 (bank 1), pads @0 (0): pad, -1@3, pad, pad.
    header = u32(0, 4, 8, 12, 12, 0, 0, 0)
    expected = header + u32(0x00003C00, 0x00010000, 0x00010000, 0x00010000,
                            0x00014000, 0x00024200, 0x00000000, 0x00000000,
                            0x00000000, 0x0003BC00, 0x00000000, 0x00000000)
    assert pack_tiled_csl(CSL_MATRIX, (2, 2), "f16", capacity=False) == expected
    full = pack_tiled_csl(CSL_MATRIX, (2, 2), "f16")
    assert full == expected + bytes(96 - len(expected))
    np.testing.assert_array_equal(unpack_tiled_csl(full, 4, 4, (2, 2), "f16"),
                                  round_to(CSL_MATRIX, "f16"))
    # 1e-10 is not zero in bf16: tile 3 holds it at location 0, pads at 1.
    tiny = int(to_bits(np.array([1e-10], np.float32), "bf16")[0])
    bf16 = pack_tiled_csl(CSL_MATRIX, (2, 2), "bf16", capacity=False)
    assert bf16 == u32(0, 4, 8, 12, 16, 0, 0, 0,
                       0x00003F80, 0x00010000, 0x00010000, 0x00010000,
                       0x00014000, 0x00024040, 0x00000000, 0x00000000,
                       0x00000000, 0x0003BF80, 0x00000000, 0x00000000,
                       tiny, 0x00010000, 0x00010000, 0x00010000)


def test_tiled_csl_partial_tiles_known_bytes():
    # [3, 3] in 2x2 tiles (bf16 1..9): the last tile row and column are
    # partial; padding goes to the first location outside the matrix.
    w = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    b = {int(v): int(to_bits(np.array([v], np.float32), "bf16")[0]) for v in range(1, 10)}
    data = pack_tiled_csl(w, (2, 2), "bf16", capacity=False)
    assert data == u32(0, 4, 8, 12, 16, 0, 0, 0,
                       # tile 0: 1@0, 2@1 (bank 0), 4@2, 5@3 (bank 1): by
                       # (rank, bank) 1@0, 4@2, 2@1, 5@3
                       b[1], 2 << 16 | b[4], 1 << 16 | b[2], 3 << 16 | b[5],
                       # tile 1: 3@0 (bank 0), 6@2 (1), pads @1 (0; column 3 is outside)
                       b[3], 2 << 16 | b[6], 0x00010000, 0x00010000,
                       # tile 2: 7@0, 8@1 (bank 0), pads @2 (1; row 3 is outside)
                       b[7], 0x00020000, 1 << 16 | b[8], 0x00020000,
                       # tile 3: 9@0, pads @1
                       b[9], 0x00010000, 0x00010000, 0x00010000)
    full = pack_tiled_csl(w, (2, 2), "bf16")
    assert len(full) == tiled_csl_capacity_bytes(3, 3, (2, 2))
    np.testing.assert_array_equal(unpack_tiled_csl(full, 3, 3, (2, 2), "bf16"), w)


def check_tiled_csl(data: bytes, w, tile, dtype):
    """Every rule of version 3 on packed ``data`` of w, word by word, with
    the per-tile order of tiled_csl_tile_order (the spec as written)."""
    n, k = w.shape
    tn, tk = tile
    rows, cols = -(-n // tn), -(-k // tk)
    tiles = rows * cols
    header = tiled_csl_header_words(n, k, tile)
    assert header % 4 == 0 and tiles + 1 <= header < tiles + 5
    assert len(data) == tiled_csl_capacity_bytes(n, k, tile) == header * 4 + tiles * tn * tk * 4
    raw = np.frombuffer(data, "<u4")
    offsets = raw[:tiles + 1].astype(np.int64)
    assert offsets[0] == 0 and np.all(offsets % 4 == 0) and np.all(np.diff(offsets) >= 0)
    assert not np.any(raw[tiles + 1:header])  # header padding
    assert not np.any(raw[header + offsets[-1]:])  # unused capacity
    bits = np.zeros((rows * tn, cols * tk), np.uint16)
    bits[:n, :k] = to_bits(w, dtype)
    inside = np.zeros(bits.shape, bool)
    inside[:n, :k] = True
    for t in range(tiles):
        r0, c0 = (t // cols) * tn, (t % cols) * tk
        tile_bits = bits[r0:r0 + tn, c0:c0 + tk].reshape(-1)
        tile_inside = inside[r0:r0 + tn, c0:c0 + tk].reshape(-1)
        real_loc = np.flatnonzero(tile_bits & 0x7FFF)
        run = raw[header + offsets[t]:header + offsets[t + 1]]
        assert run.size == (real_loc.size + 3) // 4 * 4, t
        value, loc = run & 0xFFFF, run >> 16
        real = (value & 0x7FFF) != 0
        assert sorted(loc[real].tolist()) == real_loc.tolist(), t
        np.testing.assert_array_equal(value[real], tile_bits[loc[real]])
        padding = loc[~real]
        assert np.all(value[~real] == 0) and padding.size < 4
        if padding.size:
            first = np.flatnonzero(((tile_bits & 0x7FFF) == 0) | ~tile_inside)[0]
            assert np.all(padding == first), t
            assert tile_bits[first] & 0x7FFF == 0 or not tile_inside[first]
        listed = np.concatenate([real_loc, padding]).astype(np.int64)
        assert np.array_equal(loc, listed[tiled_csl_tile_order(listed, tk)]), t
    np.testing.assert_array_equal(unpack_tiled_csl(data, n, k, tile, dtype), round_to(w, dtype))
    return offsets


@pytest.mark.parametrize("shape", [(200, 100), (128, 64), (256, 128)])
@pytest.mark.parametrize("sparsity", [0.0, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_tiled_csl_round_trip(shape, sparsity, dtype):
    rng = np.random.default_rng(int(sparsity * 10) + shape[1])
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < sparsity] = 0
    data = pack_tiled_csl(w, (128, 64), dtype)
    offsets = check_tiled_csl(data, w, (128, 64), dtype)
    nonzero = np.count_nonzero(round_to(w, dtype))
    assert nonzero <= offsets[-1] < nonzero + 4 * (len(offsets) - 1)
    if sparsity == 1.0:
        assert offsets[-1] == 0


@pytest.mark.parametrize("tile", [(4, 8), (3, 4), (2, 2), (1, 4), (8, 128), (16, 48)])
def test_tiled_csl_other_tiles(tile):
    rng = np.random.default_rng(sum(tile))
    for n, k in ((37, 29), (1, 1), (64, 256), (5, 130)):
        w = tricky_matrix(rng, n, k) if n * k >= 4 else np.ones((n, k), np.float32)
        w[rng.random(w.shape) < 0.6] = 0
        for dtype in ("f16", "bf16"):
            check_tiled_csl(pack_tiled_csl(w, tile, dtype), w, tile, dtype)


def test_tiled_csl_empty_rows_and_tiles():
    """Zero rows inside tiles, a whole zero tile (an empty run: equal
    offsets, no padding) and a zero partial tile."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((200, 100)).astype(np.float32)
    w[rng.random(w.shape) < 0.7] = 0
    w[5:40] = 0  # zero rows in tiles 0 and 1
    w[:128, 64:] = 0  # tile 1 (partial: 36 columns) is empty
    w[150, :] = 0
    w[128:, :64] = -0.0  # tile 2 (partial: 72 rows) holds only -0
    data = pack_tiled_csl(w, (128, 64), "f16")
    offsets = check_tiled_csl(data, w, (128, 64), "f16")
    assert offsets[1] == offsets[2] == offsets[3]
    assert offsets[4] - offsets[3] == (np.count_nonzero(w[128:, 64:]) + 3) // 4 * 4


def test_tiled_csl_dense_partial_tiles_pad_outside():
    """A dense [7, 7] in 4x8 tiles: tile 0 holds 28 values (no padding), tile
    1 21 values and 3 padding words at (0, 7), the first location outside."""
    w = np.arange(1, 50, dtype=np.float32).reshape(7, 7)
    data = pack_tiled_csl(w, (4, 8), "f16")
    offsets = check_tiled_csl(data, w, (4, 8), "f16")
    assert offsets.tolist() == [0, 28, 52]
    run = np.frombuffer(data, "<u4")[4 + 28:4 + 52]
    assert sorted((run[(run & 0xFFFF) == 0] >> 16).tolist()) == [7, 7, 7]
    # 129 x 63 dense in 128x64 tiles: the last tile row has 63 values.
    w = np.ones((129, 63), np.float32)
    offsets = check_tiled_csl(pack_tiled_csl(w, (128, 64), "bf16"), w, (128, 64), "bf16")
    assert offsets.tolist() == [0, 128 * 63, 128 * 63 + 64]


def instructions(words):
    """The (V, word indices) of a tile run's store instructions in order:
    instruction 4q + j stores slots 128q + 4l + j of its V lanes."""
    for q in range(-(-words.size // 128)):
        vectors = min(32, words.size // 4 - 32 * q)
        for j in range(4):
            yield vectors, 128 * q + 4 * np.arange(vectors) + j


def bank_uses(words, tk):
    """[instructions, 32]: how many words of each bank each instruction stores."""
    return np.array([np.bincount(tiled_csl_bank(words[slots] >> 16, tk), minlength=32)
                     for _, slots in instructions(words)])


def wavefronts(words, tk) -> int:
    """Shared-memory wavefronts of a run's stores: per instruction, the most
    words it stores into one bank."""
    return int(bank_uses(words, tk).max(axis=1).sum()) if words.size else 0


def dealt_list(words):
    """The run's words in the order they were dealt (L): instruction by
    instruction, lane by lane."""
    return np.concatenate([words[slots] for _, slots in instructions(words)])


def check_round_robin(words, tk):
    """L is round-robin over the banks: the words' ranks within their bank
    never decrease, and within a rank the banks increase. Every
    instruction stores distinct banks while all 32 banks have words left;
    and each stores at most as many words of a bank as ranks it spans, so
    the run takes at most max_b c_b + I - 1 wavefronts (c_b the words of
    bank b, I the instructions), against a floor of max(max_b c_b, I)."""
    if words.size == 0:
        return
    listed = dealt_list(words)
    bank = tiled_csl_bank(listed >> 16, tk)
    count = np.bincount(bank, minlength=32)
    rank = np.array([np.count_nonzero(bank[:i] == bank[i]) for i in range(bank.size)])
    key = rank * 32 + bank
    assert np.all(np.diff(key) > 0)
    full_rounds = count.min()
    position = 0
    for vectors, slots in instructions(words):
        span = rank[position:position + vectors]
        if span.max() < full_rounds:
            assert np.unique(bank[position:position + vectors]).size == vectors
        position += vectors
    uses = bank_uses(words, tk)
    assert wavefronts(words, tk) <= count.max() + uses.shape[0] - 1


@pytest.mark.parametrize("shape", [(128, 64), (64, 128), (128, 48)])
def test_tiled_csl_bank_order(shape):
    """A random 70%-sparse tile (rows swizzled when TK % 64 == 0): the packed
    order's stores take within 20 % of the floor max(max_b c_b, I)
    wavefronts (~2400 words, a bank's most ~90 over ~76 instructions; 1.10-
    1.14x here), where location order takes over twice as many
    (neighbouring locations share a bank, a lane's next word is ~13
    locations on)."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal(shape).astype(np.float32)
    w[rng.random(shape) < 0.7] = 0
    data = pack_tiled_csl(w, shape, "f16")
    check_tiled_csl(data, w, shape, "f16")
    _, words = tiled_csl_runs(data, *shape, shape)
    tk = shape[1]
    assert words.size > 1500 and words.size % 128  # a partial last group
    check_round_robin(words, tk)
    count = np.bincount(tiled_csl_bank(words >> 16, tk), minlength=32)
    floor = max(count.max(), bank_uses(words, tk).shape[0])
    assert wavefronts(words, tk) <= 1.2 * floor
    real = (words & 0xFFFF) != 0
    by_location = np.concatenate([np.sort(words[real]), words[~real]])
    assert wavefronts(by_location, tk) > 2 * wavefronts(words, tk)


def test_tiled_csl_bank_bound_random_tiles():
    """The deal's properties on many runs: sparsities, tiles, partial groups."""
    rng = np.random.default_rng(11)
    for trial in range(60):
        tile = [(128, 64), (64, 128), (16, 48), (32, 32), (2, 64)][trial % 5]
        w = rng.standard_normal(tile).astype(np.float32)
        w[rng.random(tile) < rng.choice([0.0, 0.3, 0.7, 0.9, 0.99])] = 0
        _, words = tiled_csl_runs(pack_tiled_csl(w, tile, "bf16"), *tile, tile)
        check_round_robin(words, tile[1])


def test_tiled_csl_tile_order_deals_instructions():
    # 8 words of banks 0..7 (locations 0, 2, ..., 14; rank 0 each): L in list
    # order; two vectors, so instruction j takes L[2j] (lane 0, slot j) and
    # L[2j + 1] (lane 1, slot 4 + j).
    assert tiled_csl_tile_order(np.arange(0, 16, 2), 64).tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    # padding (location 0, bank 0) after words of banks 1, 2: rank 0 of
    # banks 0, 1, 2, then bank 0's second word.
    assert tiled_csl_tile_order([2, 4, 0, 0], 64).tolist() == [2, 0, 1, 3]
    # 132 words of banks i % 32 (rank i // 32): L in list order. Group 0's
    # instruction j takes L[32j:32j + 32] (lane l, slot 4l + j); group 1 has
    # one vector, lane 0 taking L[128:132].
    order = tiled_csl_tile_order(np.arange(0, 264, 2), 1024)
    assert order[:4].tolist() == [0, 32, 64, 96]  # lane 0, group 0
    assert order[4:8].tolist() == [1, 33, 65, 97]  # lane 1
    assert order[124:128].tolist() == [31, 63, 95, 127]  # lane 31
    assert order[128:].tolist() == [128, 129, 130, 131]  # lane 0, group 1
    # Row 1 of a 64-wide tile XORs its chunks with 1: location 64 (row 1,
    # chunk 0) is bank 4, so after bank 0's location 0 and before bank 8's
    # location 16.
    assert tiled_csl_tile_order([0, 16, 64, 66], 64).tolist() == [0, 2, 3, 1]
    with pytest.raises(PackingError, match="not a multiple of 4"):
        tiled_csl_tile_order([0, 1, 2], 64)


def test_tiled_csl_unpack_skips_padding():
    """Padding words (value +0/-0) never overwrite a value, wherever they
    point; a non-zero word outside the matrix is refused."""
    # [2, 3] in one 2x4 tile; words in any order, padding at 3 (outside) and
    # at 0 after the real word there, a -0 word at 1.
    data = u32(0, 4, 0, 0, 0x00030000, 0x00004000, 0x00000000, 0x00018000)
    dense = unpack_tiled_csl(data, 2, 3, (2, 4), "f16")
    assert dense.tolist() == [[2, 0, 0], [0, 0, 0]]
    with pytest.raises(PackingError, match="outside the tile or the matrix"):
        unpack_tiled_csl(u32(0, 4, 0, 0, 0x00033C00, 0, 0, 0), 2, 3, (2, 4), "f16")
    with pytest.raises(PackingError, match="two non-zero words"):
        unpack_tiled_csl(u32(0, 4, 0, 0, 0x3C00, 0x4000, 0, 0), 2, 3, (2, 4), "f16")
    with pytest.raises(PackingError, match="multiples of 4"):
        unpack_tiled_csl(u32(0, 3, 0, 0, 0x3C00, 0, 0, 0), 2, 3, (2, 4), "f16")


def test_tiled_csl_errors():
    w = np.ones((4, 6), np.float32)
    with pytest.raises(PackingError, match=r"tile \[3, 3\] has 9 elements, not a multiple of 4"):
        pack_tiled_csl(w, (3, 3))
    with pytest.raises(PackingError, match=r"tile \[0, 4\]: 0 along N is not in \[1, 65536\]"):
        pack_tiled_csl(w, (0, 4))
    with pytest.raises(PackingError, match="more than 16-bit locations"):
        pack_tiled_csl(np.ones((512, 256)), (512, 256))
    with pytest.raises(PackingError, match="f16 or bf16"):
        pack_tiled_csl(w, (2, 2), "f32")
    with pytest.raises(PackingError, match="2-D"):
        pack_tiled_csl(np.ones(8), (2, 2))
    # tiles need not divide the matrix (version 1 required it)
    assert tiled_csl_capacity_bytes(4, 6, (4, 4)) == 4 * 4 + 2 * 64
    assert len(pack_tiled_csl(w, (4, 4))) == 4 * 4 + 2 * 64


def pack_check_binary():
    candidates = [os.environ.get("FDC_PACK_CHECK", "")]
    build = os.environ.get("FDC_BUILD_DIR") or os.path.join(REPO, "build")
    candidates.append(os.path.join(build, "runtime", "test", "fdc-pack-check"))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def cpp_pack(binary, w, *args):
    result = subprocess.run([binary, *map(str, args)], input=w.astype("<f4").tobytes(),
                            capture_output=True)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout


def tricky_matrix(rng, n, k):
    """Normal values of many magnitudes, exact zeros of both signs, f16
    subnormals, f16/bf16 rounding ties and values past the f16 range."""
    w = (rng.standard_normal((n, k)) * 10.0 ** rng.integers(-8, 6, (n, 1))).astype(np.float32)
    flat = w.reshape(-1)
    picks = rng.choice(flat.size, flat.size // 4, replace=False)
    specials = np.array([0.0, -0.0, 2**-25, 3 * 2**-25, 2**-24 * 1.5, 1 + 2**-11, 1 + 3 * 2**-11,
                         np.float32(1 + 2**-8), 65519, 65520, -70000, 1e-10], dtype=np.float32)
    flat[picks] = specials[rng.integers(0, specials.size, picks.size)]
    return w


def test_python_packer_matches_runtime_packer():
    """The runtime's packer (fdc-pack-check) gives the same bytes: int4, and
    tiled_csl version 2 with whole and partial tiles, padding, empty tiles
    and the bank order (swizzled when TK % 64 == 0)."""
    binary = pack_check_binary()
    if binary is None:
        pytest.skip("fdc-pack-check not built (ninja -C build fdc-pack-check, or set "
                    "FDC_PACK_CHECK)")
    rng = np.random.default_rng(2)
    for trial in range(6):
        n, k = 8 * int(rng.integers(1, 5)), 16 * int(rng.integers(1, 9))
        w = tricky_matrix(rng, n, k)
        for g in (2, 8, 16):
            for scale_dtype in ("f16", "bf16", "f32"):
                assert cpp_pack(binary, w, "int4", n, k, g, scale_dtype) == \
                    pack_int4(w, g, scale_dtype), (trial, g, scale_dtype)
        w[rng.random(w.shape) < 0.5] = 0
        w[:, :8] = 0  # empty tiles
        for rows, cols in ((n, k), (n - 1, k - 3)):
            part = np.ascontiguousarray(w[:rows, :cols])
            for tile in ((8, 16), (4, 8), (3, 4), (n, k), (4, 64), (2, 128)):
                for dtype in ("f16", "bf16"):
                    assert cpp_pack(binary, part, "tiled_csl", rows, cols, *tile, dtype) == \
                        pack_tiled_csl(part, tile, dtype), (trial, rows, cols, tile, dtype)
    # every f32 bit pattern class through the f16/bf16 conversions
    bits = rng.integers(0, 2**32, 64 * 1024, dtype=np.uint64).astype(np.uint32)
    w = bits.view(np.float32).reshape(256, 256)
    w = np.where(np.isfinite(w), w, np.float32(1)).astype(np.float32)
    for dtype in ("f16", "bf16"):
        assert cpp_pack(binary, w, "tiled_csl", 256, 256, 128, 64, dtype) == \
            pack_tiled_csl(w, (128, 64), dtype)
    # 70%-sparse partial 128x64 tiles: long runs through the bank order
    w = rng.standard_normal((300, 200)).astype(np.float32)
    w[rng.random(w.shape) < 0.7] = 0
    for tile in ((128, 64), (64, 128), (128, 48)):
        for dtype in ("f16", "bf16"):
            assert cpp_pack(binary, w, "tiled_csl", 300, 200, *tile, dtype) == \
                pack_tiled_csl(w, tile, dtype), (tile, dtype)
