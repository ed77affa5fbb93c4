"""float64 numpy reference of Llama decode (Hugging Face LlamaForCausalLM semantics).

One sequence, one token per step. Weights are read from the checkpoint and
widened to float64 (bf16 widens exactly), so the reference shows what the
checkpoint computes, free of the compiled code's rounding.

Options emulate the storage the compiled code uses (python/fdc/packing.py,
docs/model-library.md), so its remaining differences are rounding only:

- ``kv_int4_groups`` = G: the INT4 KV cache. Each appended K/V head vector is
  rounded to float32 and quantised in G groups (fp16 scale and min, q in
  [0, 15]); attention reads min + scale * q.
- ``linear_int4_group_size`` = G: INT4 linear weights. Every decoder-layer
  linear weight (q/k/v/o, gate, up, down; not the embedding or lm_head) is
  replaced by its group-wise quantised value (groups of G along K, fp16
  scale and min) as the runtime packs it.

Unstructured-sparse (tiled_csl) weights need no option: dense math on the
pruned weights is their exact semantics.
"""

from __future__ import annotations

import numpy as np

from ..checkpoint import Checkpoint
from ..config import ModelConfig
from ..packing import fake_quantise

LINEAR_WEIGHTS = ("self_attn.q_proj.weight", "self_attn.k_proj.weight",
                  "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                  "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight")


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x: np.ndarray, position: int, rotary_dim: int, theta: float) -> np.ndarray:
    """Rotate x [heads, head_dim] by ``position`` HF style (rotate_half).

    Element d < rotary_dim/2 pairs with d + rotary_dim/2 and both rotate by
    position * theta^(-2d/rotary_dim); elements past rotary_dim pass through.
    """
    half = rotary_dim // 2
    inv_freq = theta ** (-np.arange(half, dtype=np.float64) * 2 / rotary_dim)
    angle = position * inv_freq
    cos, sin = np.cos(angle), np.sin(angle)
    x1, x2 = x[..., :half], x[..., half:rotary_dim]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., rotary_dim:]],
                          axis=-1)


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    """q [Hq, D]; k, v [T, Hkv, D] for positions 0..T-1 -> [Hq, D].

    Query head h reads kv head h // (Hq / Hkv) (grouped-query attention).
    """
    group = q.shape[0] // k.shape[1]
    kh = np.repeat(k, group, axis=1)  # [T, Hq, D]
    vh = np.repeat(v, group, axis=1)
    scores = np.einsum("hd,thd->ht", q, kh) * scale
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("ht,thd->hd", p, vh)


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class KVCache:
    """Per-layer K and V rows [max_context, kv_heads, head_dim] of one sequence."""

    def __init__(self, cfg: ModelConfig, max_context: int):
        shape = (cfg.num_layers, max_context, cfg.num_kv_heads, cfg.head_dim)
        self.k = np.zeros(shape)
        self.v = np.zeros(shape)


class ReferenceLlama:
    def __init__(self, checkpoint_dir: str, *, kv_int4_groups: int = 0,
                 linear_int4_group_size: int = 0):
        ckpt = Checkpoint(checkpoint_dir)
        cfg = ModelConfig.from_dict(ckpt.config)
        self._init(cfg, {name: ckpt.load(name) for name in cfg.tensor_shapes()},
                   kv_int4_groups, linear_int4_group_size)

    @classmethod
    def from_arrays(cls, config: dict, weights: dict[str, np.ndarray], *,
                    kv_int4_groups: int = 0,
                    linear_int4_group_size: int = 0) -> "ReferenceLlama":
        """Build from an in-memory config.json dict and HF-named weights."""
        self = cls.__new__(cls)
        self._init(ModelConfig.from_dict(config), weights, kv_int4_groups,
                   linear_int4_group_size)
        return self

    def _init(self, cfg: ModelConfig, weights: dict[str, np.ndarray], kv_int4_groups: int,
              linear_int4_group_size: int) -> None:
        self.cfg = cfg
        if kv_int4_groups < 0 or (kv_int4_groups and (
                cfg.head_dim % kv_int4_groups or (cfg.head_dim // kv_int4_groups) % 2)):
            raise ValueError(f"kv_int4_groups {kv_int4_groups} must divide head_dim "
                             f"{cfg.head_dim} into groups of even size")
        self.kv_int4_groups = kv_int4_groups
        self.linear_int4_group_size = linear_int4_group_size
        self.w = {}
        for name, shape in cfg.tensor_shapes().items():
            w = np.asarray(weights[name])
            if w.shape != shape:
                raise ValueError(f"{name}: shape {w.shape}, expected {shape}")
            if linear_int4_group_size and name.startswith("model.layers.") and \
                    name.endswith(LINEAR_WEIGHTS):
                # Checkpoint values are f32/bf16/f16: exact in float32.
                w = fake_quantise(w.astype(np.float32), linear_int4_group_size)
            self.w[name] = np.asarray(w, dtype=np.float64)

    def _cache_row(self, x: np.ndarray) -> np.ndarray:
        """What the cache holds for head vectors x [heads, head_dim]."""
        if not self.kv_int4_groups:
            return x
        return fake_quantise(x.astype(np.float32),
                             self.cfg.head_dim // self.kv_int4_groups).astype(np.float64)

    def new_cache(self, max_context: int | None = None) -> KVCache:
        return KVCache(self.cfg, max_context or self.cfg.max_position_embeddings)

    def step(self, token: int, position: int, cache: KVCache) -> np.ndarray:
        """Consume ``token`` at ``position`` (cache must hold 0..position-1); return logits [V]."""
        cfg, w = self.cfg, self.w
        hq, hkv, hd = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        h = w["model.embed_tokens.weight"][token]
        for i in range(cfg.num_layers):
            p = f"model.layers.{i}."
            x = rms_norm(h, w[p + "input_layernorm.weight"], cfg.rms_norm_eps)
            q = (w[p + "self_attn.q_proj.weight"] @ x).reshape(hq, hd)
            k = (w[p + "self_attn.k_proj.weight"] @ x).reshape(hkv, hd)
            v = (w[p + "self_attn.v_proj.weight"] @ x).reshape(hkv, hd)
            q = rope(q, position, cfg.rotary_dim, cfg.rope_theta)
            cache.k[i, position] = self._cache_row(rope(k, position, cfg.rotary_dim,
                                                        cfg.rope_theta))
            cache.v[i, position] = self._cache_row(v)
            a = attention(q, cache.k[i, :position + 1], cache.v[i, :position + 1],
                          1.0 / np.sqrt(hd))
            h = h + w[p + "self_attn.o_proj.weight"] @ a.reshape(-1)
            x = rms_norm(h, w[p + "post_attention_layernorm.weight"], cfg.rms_norm_eps)
            g = silu(w[p + "mlp.gate_proj.weight"] @ x) * (w[p + "mlp.up_proj.weight"] @ x)
            h = h + w[p + "mlp.down_proj.weight"] @ g
        h = rms_norm(h, w["model.norm.weight"], cfg.rms_norm_eps)
        lm = w["model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight"]
        return lm @ h

    def generate(self, prompt_ids: list[int], max_new_tokens: int):
        """Greedy decoding, prefilling the prompt one token at a time.

        Returns (generated ids [max_new_tokens], logits [max_new_tokens, V]),
        where logits[i] are those of the step whose argmax is generated id i:
        the step that consumed the last prompt token for i = 0, and the step
        that consumed generated id i-1 after that.
        """
        assert prompt_ids, "the prompt must not be empty"
        cache = self.new_cache(len(prompt_ids) + max_new_tokens)
        for pos, tok in enumerate(prompt_ids):
            logits = self.step(tok, pos, cache)
        ids, all_logits = [], []
        for i in range(max_new_tokens):
            ids.append(int(np.argmax(logits)))
            all_logits.append(logits)
            if i + 1 < max_new_tokens:
                logits = self.step(ids[-1], len(prompt_ids) + i, cache)
        return ids, np.array(all_logits).reshape(max_new_tokens, self.cfg.vocab_size)


def sample(logits: np.ndarray, temperature: float, top_k: int, top_p: float, u: float) -> int:
    """The sampling rule decode.sample implements, in float32.

    temperature <= 0: argmax (first index of the max). Otherwise
    z = logits / temperature; top-k keeps z_j >= the k-th largest z (ties
    kept) when 0 < top_k < V; p = softmax of the kept z; top-p (top_p < 1)
    keeps p_j >= t for the largest t whose kept mass {p_l >= t} is >= top_p;
    the result is the first kept index j (vocabulary order) whose running sum
    of kept p exceeds u * (sum of kept p), or the last kept index if none does.
    """
    logits = np.asarray(logits, dtype=np.float32)
    if temperature <= 0:
        return int(np.argmax(logits))
    z = logits / np.float32(temperature)
    vocab = z.shape[0]
    keep = np.ones(vocab, dtype=bool)
    if 0 < top_k < vocab:
        kth = np.partition(z, vocab - top_k)[vocab - top_k]
        keep = z >= kth
    e = np.where(keep, np.exp(z - z[keep].max()), np.float32(0))
    p = e / e.sum(dtype=np.float32)
    if top_p < 1:
        desc = np.sort(p[keep])[::-1]
        cum = np.cumsum(desc, dtype=np.float32)
        # mass of {p_l >= desc[i]} includes every tie of desc[i]
        last_tie = np.searchsorted(-desc, -desc, side="right") - 1
        enough = np.nonzero(cum[last_tie] >= np.float32(top_p))[0]
        t = desc[enough[0]] if enough.size else desc[-1]
        keep &= p >= t
    kept = np.nonzero(keep)[0]
    cum = np.cumsum(p[kept], dtype=np.float32)
    over = np.nonzero(cum > np.float32(u) * cum[-1])[0]
    return int(kept[over[0]] if over.size else kept[-1])
