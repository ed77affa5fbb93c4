import numpy as np
import pytest

from fdc.reference.llama import ReferenceLlama, attention, rms_norm, rope, sample
from fdc.testing.tiny_checkpoint import make_tiny_checkpoint, tiny_config, tiny_weights

PROMPT = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def gqa():
    config = tiny_config("gqa")
    return config, tiny_weights(config, seed=0)


def test_checkpoint_path_matches_arrays(tmp_path, gqa):
    config, weights = gqa
    make_tiny_checkpoint(str(tmp_path), "gqa", seed=0, shards=2)
    from_disk = ReferenceLlama(str(tmp_path)).generate(PROMPT, 4)
    in_memory = ReferenceLlama.from_arrays(config, weights).generate(PROMPT, 4)
    assert from_disk[0] == in_memory[0]
    assert np.array_equal(from_disk[1], in_memory[1])


def test_gqa_equals_mha_with_repeated_kv_heads(gqa):
    config, weights = gqa
    group = config["num_attention_heads"] // config["num_key_value_heads"]
    mha_config = dict(config, num_key_value_heads=config["num_attention_heads"])
    mha_weights = dict(weights)
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    for name, w in weights.items():
        if name.endswith(("k_proj.weight", "v_proj.weight")):
            heads = w.reshape(-1, head_dim, w.shape[1])
            mha_weights[name] = np.repeat(heads, group, axis=0).reshape(-1, w.shape[1])
    ids_g, logits_g = ReferenceLlama.from_arrays(config, weights).generate(PROMPT, 6)
    ids_m, logits_m = ReferenceLlama.from_arrays(mha_config, mha_weights).generate(PROMPT, 6)
    assert ids_g == ids_m
    np.testing.assert_allclose(logits_g, logits_m, rtol=1e-12, atol=1e-12)


def test_generate_is_greedy_and_step_consistent(gqa):
    model = ReferenceLlama.from_arrays(*gqa)
    ids, logits = model.generate(PROMPT, 5)
    assert logits.shape == (5, 512)
    assert ids == [int(np.argmax(row)) for row in logits]
    assert len(set(ids)) > 1, "greedy decoding of the tiny model should not be degenerate"
    cache = model.new_cache(16)
    for pos, tok in enumerate(PROMPT + ids[:2]):
        step_logits = model.step(tok, pos, cache)
    np.testing.assert_array_equal(step_logits, logits[2])


def test_rope_position_zero_is_identity_and_tail_passes_through():
    x = np.random.default_rng(1).standard_normal((3, 16))
    np.testing.assert_array_equal(rope(x, 0, 16, 10000.0), x)
    partial = rope(x, 7, 8, 10000.0)
    np.testing.assert_array_equal(partial[:, 8:], x[:, 8:])
    # pairs (d, d + rot/2) rotate: their norms are preserved
    pair_norm = lambda y: y[:, :4] ** 2 + y[:, 4:8] ** 2
    np.testing.assert_allclose(pair_norm(partial), pair_norm(x), rtol=1e-12)


def test_rope_pairs_and_relative_positions():
    x = np.zeros((1, 4))
    x[0, 0] = 1.0  # pair (0, 2), frequency theta^0 = 1
    np.testing.assert_allclose(rope(x, 1, 4, 100.0), [[np.cos(1), 0, np.sin(1), 0]], atol=1e-15)
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((1, 8)), rng.standard_normal((1, 8))
    dot = lambda m, n: (rope(q, m, 8, 500.0) @ rope(k, n, 8, 500.0).T).item()
    assert dot(5, 2) == pytest.approx(dot(13, 10), rel=1e-10)


def test_attention_over_one_position_returns_v():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((8, 4))
    k, v = rng.standard_normal((1, 2, 4)), rng.standard_normal((1, 2, 4))
    out = attention(q, k, v, 0.5)
    np.testing.assert_allclose(out, np.repeat(v[0], 4, axis=0), rtol=1e-15)


def test_attention_weights_positions_by_scaled_scores():
    q = np.array([[1.0, 0.0]])
    k = np.array([[[0.0, 0.0]], [[2.0, 0.0]]])  # scores 0 and 2*scale
    v = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    w = 1 / (1 + np.exp(-1.0))  # scale 0.5: softmax([0, 1])[1]
    np.testing.assert_allclose(attention(q, k, v, 0.5), [[1 - w, w]], rtol=1e-14)


def test_rms_norm():
    x = np.array([3.0, 4.0])
    expected = x / np.sqrt(12.5 + 1e-5) * np.array([1.0, 2.0])
    np.testing.assert_allclose(rms_norm(x, np.array([1.0, 2.0]), 1e-5), expected)


LOGITS = np.array([1.0, 3.0, 2.0, 3.0, -1.0], dtype=np.float32)


def test_sample_greedy_takes_first_max():
    for u in (0.0, 0.5, 0.999):
        assert sample(LOGITS, 0.0, 0, 1.0, u) == 1
        assert sample(LOGITS, -1.0, 3, 0.5, u) == 1


def test_sample_top_k_one_and_tiny_top_p_are_argmax():
    logits = np.array([0.5, 2.0, 1.0, -3.0], dtype=np.float32)
    for u in (0.0, 0.3, 0.999):
        assert sample(logits, 1.0, 1, 1.0, u) == 1
        assert sample(logits, 0.7, 0, 1e-6, u) == 1


def test_sample_top_k_keeps_ties():
    # k = 1 but two tokens share the max: both kept, u picks among them
    assert sample(LOGITS, 1.0, 1, 1.0, 0.0) == 1
    assert sample(LOGITS, 1.0, 1, 1.0, 0.99) == 3
    # k = 2 keeps the tied pair only
    assert {sample(LOGITS, 1.0, 2, 1.0, u) for u in np.linspace(0, 0.999, 50)} == {1, 3}


def test_sample_u_extremes():
    assert sample(LOGITS, 1.0, 0, 1.0, 0.0) == 0  # first kept index, vocabulary order
    assert sample(LOGITS, 1.0, 3, 1.0, 0.0) == 1  # top-k drops index 0
    assert sample(LOGITS, 1.0, 0, 1.0, 1.0) == 4  # none exceeds Z: last kept index
    assert sample(LOGITS, 1.0, 3, 1.0, 1.0) == 3


def test_sample_top_p_threshold():
    p = np.array([0.2, 0.5, 0.3], dtype=np.float32)
    logits = np.log(p)
    kept = lambda top_p: {sample(logits, 1.0, 0, top_p, u) for u in np.linspace(0, 0.999, 200)}
    assert kept(0.4) == {1}
    assert kept(0.75) == {1, 2}
    assert kept(0.9) == {0, 1, 2}
    # ties at the threshold are all kept
    tied = np.log(np.array([0.4, 0.2, 0.4], dtype=np.float32))
    assert {sample(tied, 1.0, 0, 0.3, u) for u in np.linspace(0, 0.999, 200)} == {0, 2}


def test_sample_follows_softmax_distribution():
    logits = np.array([0.0, 1.0, -0.5, 2.0], dtype=np.float32)
    temperature, n = 1.5, 20000
    draws = [sample(logits, temperature, 0, 1.0, (i + 0.5) / n) for i in range(n)]
    freq = np.bincount(draws, minlength=4) / n
    p = np.exp(logits / temperature)
    np.testing.assert_allclose(freq, p / p.sum(), atol=2 / n)
