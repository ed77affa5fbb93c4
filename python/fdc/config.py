"""Model hyper-parameters from a Hugging Face config.json, validated.

Required keys: architectures, hidden_size, intermediate_size,
num_hidden_layers, num_attention_heads, vocab_size, rms_norm_eps,
max_position_embeddings. Optional keys take the Hugging Face defaults:
num_key_value_heads (= num_attention_heads), head_dim
(= hidden_size // num_attention_heads), partial_rotary_factor (1.0),
rope_theta (10000.0), tie_word_embeddings (false).

MistralForCausalLM has the Llama structure plus sliding-window attention.
The IR has no sliding window, so a Mistral config is accepted only when the
window never takes effect (sliding_window null or >= max_position_embeddings);
otherwise it is an error rather than a silently different model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import FdcError
from .strict import INT32_MAX, INT64_MAX, describe, is_int, is_number, to_f32

SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM")


class ConfigError(FdcError):
    pass


@dataclass(frozen=True)
class ModelConfig:
    architecture: str
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rotary_dim: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    tie_word_embeddings: bool

    @staticmethod
    def from_dict(cfg: dict) -> "ModelConfig":
        """Validate ``cfg`` (a parsed config.json) strictly: every value the IR
        carries gets the type and range the IR verifier (and runtime) require,
        so that the frontend never emits IR that ``fdc compile`` then rejects.
        """
        if not isinstance(cfg, dict):
            raise ConfigError(f"config.json: not a JSON object, got {describe(cfg)}")

        def fail(msg):
            raise ConfigError(f"config.json: {msg}")

        def need(key):
            if key not in cfg:
                fail(f"missing key {key!r}")
            return cfg[key]

        def pos_int(key, value, hi=INT64_MAX, why=""):
            if not is_int(value) or not 1 <= value <= hi:
                fail(f"{key!r} must be an integer in [1, {hi}]{why}, got {describe(value)}")
            return value

        def finite(key, value) -> float:
            if not is_number(value):
                fail(f"{key!r} must be a number, got {describe(value)}")
            try:
                x = float(value)
            except OverflowError:
                x = math.inf
            if not math.isfinite(x):
                fail(f"{key!r} must be a finite number, got {describe(value)}")
            return x

        def f32_above(key, value, bound) -> float:
            """A finite number that is still finite and > bound once rounded to
            f32, as the verifier checks the IR's f32 attribute."""
            x = finite(key, value)
            f = to_f32(x)
            if not math.isfinite(f):
                fail(f"{key!r} = {describe(value)} overflows f32")
            if not f > bound:
                shown = describe(value) + (f" ({f!r} as an f32)" if f != x else "")
                fail(f"{key!r} must be greater than {bound} as an f32, got {shown}")
            return x

        def boolean(key, default):
            value = cfg.get(key, default)
            if value is None:
                value = default
            if not isinstance(value, bool):
                fail(f"{key!r} must be true or false, got {describe(value)}")
            return value

        archs = need("architectures")
        if not isinstance(archs, list) or len(archs) != 1:
            fail(f"'architectures' must list one architecture, got {describe(archs)}")
        arch = archs[0]
        if not isinstance(arch, str) or arch not in SUPPORTED_ARCHITECTURES:
            raise ConfigError(f"unsupported architecture {describe(arch)} "
                              f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")

        hidden = pos_int("hidden_size", need("hidden_size"))
        intermediate = pos_int("intermediate_size", need("intermediate_size"))
        if 2 * intermediate > INT64_MAX:
            fail(f"'intermediate_size' ({intermediate}) is too large: the fused gate_up "
                 f"weight has 2 x intermediate_size rows, more than {INT64_MAX}")
        layers = pos_int("num_hidden_layers", need("num_hidden_layers"))
        heads = pos_int("num_attention_heads", need("num_attention_heads"))
        kv_heads = cfg.get("num_key_value_heads")
        kv_heads = heads if kv_heads is None else pos_int("num_key_value_heads", kv_heads)
        if heads % kv_heads:
            fail(f"num_attention_heads ({heads}) is not a multiple of "
                 f"num_key_value_heads ({kv_heads})")
        if cfg.get("head_dim") is not None:
            head_dim = pos_int("head_dim", cfg["head_dim"])
        elif hidden % heads:
            fail(f"hidden_size ({hidden}) is not a multiple of "
                 f"num_attention_heads ({heads}) and there is no 'head_dim'")
        else:
            head_dim = hidden // heads
        if heads * head_dim > INT64_MAX:
            fail(f"num_attention_heads x head_dim ({heads} x {head_dim}) is more than "
                 f"{INT64_MAX}")
        factor = cfg.get("partial_rotary_factor")
        factor = 1.0 if factor is None else finite("partial_rotary_factor", factor)
        if not 0 < factor <= 1:
            fail(f"'partial_rotary_factor' must be in (0, 1], got {describe(factor)}")
        rotary_dim = int(head_dim * factor)
        if not (0 < rotary_dim <= head_dim and rotary_dim % 2 == 0):
            fail(f"rotary dimension {rotary_dim} (head_dim {head_dim} x "
                 f"partial_rotary_factor {factor}) must be even and in (0, head_dim]")
        vocab = pos_int("vocab_size", need("vocab_size"), INT32_MAX, " (token ids are i32)")

        theta_key, rope_theta = "rope_theta", cfg.get("rope_theta")
        rope_params = cfg.get("rope_parameters")  # newer transformers versions
        if rope_params is not None:
            if not isinstance(rope_params, dict):
                fail(f"'rope_parameters' must be an object, got {describe(rope_params)}")
            rope_type = rope_params.get("rope_type", "default")
            if rope_type != "default":
                fail(f"unsupported rope_parameters rope_type {describe(rope_type)} "
                     f"(supported: 'default')")
            if rope_params.get("rope_theta") is not None:
                theta_key, rope_theta = "rope_parameters.rope_theta", rope_params["rope_theta"]
        if rope_theta is None:
            rope_theta = 10000.0
        if cfg.get("rope_scaling") is not None:
            fail(f"unsupported 'rope_scaling' {describe(cfg['rope_scaling'])}")
        for key in ("attention_bias", "mlp_bias"):
            if boolean(key, False):
                fail(f"unsupported {key!r} = true")
        act = cfg.get("hidden_act", "silu")
        if act != "silu":
            fail(f"unsupported 'hidden_act' {describe(act)} (supported: 'silu')")

        max_pos = pos_int("max_position_embeddings", need("max_position_embeddings"))
        window = cfg.get("sliding_window")
        if arch == "MistralForCausalLM" and window is not None:
            window = pos_int("sliding_window", window)
            if window < max_pos:
                fail(f"'sliding_window' ({window}) < max_position_embeddings ({max_pos}) "
                     f"is not supported")
        tie = cfg.get("tie_word_embeddings", False)
        if not isinstance(tie, bool):
            fail(f"'tie_word_embeddings' must be true or false, got {describe(tie)}")

        return ModelConfig(
            architecture=arch,
            hidden_size=hidden,
            intermediate_size=intermediate,
            num_layers=layers,
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            rotary_dim=rotary_dim,
            vocab_size=vocab,
            rms_norm_eps=f32_above("rms_norm_eps", need("rms_norm_eps"), 0),
            rope_theta=f32_above(theta_key, rope_theta, 1),
            max_position_embeddings=max_pos,
            tie_word_embeddings=tie,
        )

    def iter_tensor_shapes(self):
        """(name, shape) of every checkpoint tensor the model reads, lazily (so a
        config claiming 10**18 layers fails at the first missing tensor)."""
        d, f, v = self.hidden_size, self.intermediate_size, self.vocab_size
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        yield "model.embed_tokens.weight", (v, d)
        for i in range(self.num_layers):
            p = f"model.layers.{i}."
            yield from {
                p + "input_layernorm.weight": (d,),
                p + "self_attn.q_proj.weight": (q, d),
                p + "self_attn.k_proj.weight": (kv, d),
                p + "self_attn.v_proj.weight": (kv, d),
                p + "self_attn.o_proj.weight": (d, q),
                p + "post_attention_layernorm.weight": (d,),
                p + "mlp.gate_proj.weight": (f, d),
                p + "mlp.up_proj.weight": (f, d),
                p + "mlp.down_proj.weight": (d, f),
            }.items()
        yield "model.norm.weight", (d,)
        if not self.tie_word_embeddings:
            yield "lm_head.weight", (v, d)

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every checkpoint tensor the model reads, with its expected shape."""
        return dict(self.iter_tensor_shapes())
