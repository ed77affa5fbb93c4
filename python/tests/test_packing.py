import os
import subprocess

import numpy as np
import pytest

from fdc.packing import (PackingError, dequantise_int4, f32_to_f16_bits, fake_quantise,
                         int4_packed_bytes, pack_int4, pack_tiled_csl, quantise_groups, round_to,
                         tiled_csl_capacity_bytes, to_bits, unpack_int4, unpack_tiled_csl)

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


def test_tiled_csl_known_bytes():
    assert tiled_csl_capacity_bytes(4, 4, (2, 2)) == 84
    # -0 and 1e-10 (zero in f16) are dropped; tile 3 is empty
    expected = u32(0, 1, 3, 4, 4, 0x00003C00, 0x00014000, 0x00024200, 0x0003BC00)
    assert pack_tiled_csl(CSL_MATRIX, (2, 2), "f16", capacity=False) == expected
    full = pack_tiled_csl(CSL_MATRIX, (2, 2), "f16")
    assert full == expected + bytes(84 - len(expected))
    bf16 = pack_tiled_csl(CSL_MATRIX, (2, 2), "bf16", capacity=False)
    tiny = int(to_bits(np.array([1e-10], np.float32), "bf16")[0])
    assert bf16 == u32(0, 1, 3, 4, 5, 0x00003F80, 0x00014000, 0x00024040, 0x0003BF80, tiny)
    dense = unpack_tiled_csl(full, 4, 4, (2, 2), "f16")
    np.testing.assert_array_equal(dense, round_to(CSL_MATRIX, "f16"))


def test_tiled_csl_round_trip_and_locations():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((256, 128)).astype(np.float32)
    w[rng.random(w.shape) < 0.7] = 0
    data = pack_tiled_csl(w, (128, 64), "bf16")
    assert len(data) == tiled_csl_capacity_bytes(256, 128)
    np.testing.assert_array_equal(unpack_tiled_csl(data, 256, 128, (128, 64), "bf16"),
                                  round_to(w, "bf16"))
    offsets = np.frombuffer(data[:20], dtype="<u4")
    assert offsets[-1] == np.count_nonzero(w)
    words = np.frombuffer(data[20:20 + 4 * int(offsets[-1])], dtype="<u4")
    for t in range(4):  # locations ascend inside each tile
        loc = words[offsets[t]:offsets[t + 1]] >> 16
        assert np.all(np.diff(loc.astype(np.int64)) > 0)


def test_tiled_csl_errors():
    w = np.ones((4, 6), np.float32)
    with pytest.raises(PackingError, match=r"tile \[2, 4\]: 4 does not divide K = 6"):
        pack_tiled_csl(w, (2, 4))
    with pytest.raises(PackingError, match=r"tile \[3, 3\]: 3 does not divide N = 4"):
        pack_tiled_csl(w, (3, 3))
    with pytest.raises(PackingError, match="more than 16-bit locations"):
        pack_tiled_csl(np.ones((512, 256)), (512, 256))
    with pytest.raises(PackingError, match="f16 or bf16"):
        pack_tiled_csl(w, (2, 3), "f32")


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
        for tile in ((8, 16), (4, 8), (n, k)):
            for dtype in ("f16", "bf16"):
                assert cpp_pack(binary, w, "tiled_csl", n, k, *tile, dtype) == \
                    pack_tiled_csl(w, tile, dtype), (trial, tile, dtype)
    # every f32 bit pattern class through the f16/bf16 conversions
    bits = rng.integers(0, 2**32, 64 * 1024, dtype=np.uint64).astype(np.uint32)
    w = bits.view(np.float32).reshape(256, 256)
    w = np.where(np.isfinite(w), w, np.float32(1)).astype(np.float32)
    for dtype in ("f16", "bf16"):
        assert cpp_pack(binary, w, "tiled_csl", 256, 256, 128, 64, dtype) == \
            pack_tiled_csl(w, (128, 64), dtype)
