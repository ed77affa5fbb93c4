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
        def need(key):
            if key not in cfg:
                raise ConfigError(f"config.json: missing key {key!r}")
            return cfg[key]

        def pos_int(key, value):
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"config.json: {key!r} must be a positive integer, got {value!r}")
            return value

        def number(key, value):
            if (not isinstance(value, (int, float)) or isinstance(value, bool)
                    or not math.isfinite(value)):
                raise ConfigError(f"config.json: {key!r} must be a finite number, got {value!r}")
            return float(value)

        archs = need("architectures")
        if not isinstance(archs, list) or len(archs) != 1:
            raise ConfigError(f"config.json: 'architectures' must list one architecture, got {archs!r}")
        arch = archs[0]
        if arch not in SUPPORTED_ARCHITECTURES:
            raise ConfigError(f"unsupported architecture {arch!r} "
                              f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")

        hidden = pos_int("hidden_size", need("hidden_size"))
        heads = pos_int("num_attention_heads", need("num_attention_heads"))
        kv_heads = pos_int("num_key_value_heads", cfg.get("num_key_value_heads", heads))
        if heads % kv_heads:
            raise ConfigError(f"config.json: num_attention_heads ({heads}) is not a multiple "
                              f"of num_key_value_heads ({kv_heads})")
        if cfg.get("head_dim") is not None:
            head_dim = pos_int("head_dim", cfg["head_dim"])
        elif hidden % heads:
            raise ConfigError(f"config.json: hidden_size ({hidden}) is not a multiple of "
                              f"num_attention_heads ({heads}) and there is no 'head_dim'")
        else:
            head_dim = hidden // heads
        factor = number("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
        rotary_dim = int(head_dim * factor)
        if not (0 < rotary_dim <= head_dim and rotary_dim % 2 == 0):
            raise ConfigError(f"config.json: rotary dimension {rotary_dim} (head_dim {head_dim} x "
                              f"partial_rotary_factor {factor}) must be even and in (0, head_dim]")

        rope_theta = cfg.get("rope_theta", 10000.0)
        rope_params = cfg.get("rope_parameters")  # newer transformers versions
        if isinstance(rope_params, dict):
            if rope_params.get("rope_type", "default") != "default":
                raise ConfigError(f"config.json: unsupported rope_parameters {rope_params!r}")
            rope_theta = rope_params.get("rope_theta", rope_theta)
        if cfg.get("rope_scaling") is not None:
            raise ConfigError(f"config.json: unsupported 'rope_scaling' {cfg['rope_scaling']!r}")
        for key in ("attention_bias", "mlp_bias"):
            if cfg.get(key):
                raise ConfigError(f"config.json: unsupported {key!r} = true")
        if cfg.get("hidden_act", "silu") != "silu":
            raise ConfigError(f"config.json: unsupported 'hidden_act' {cfg['hidden_act']!r}")

        max_pos = pos_int("max_position_embeddings", need("max_position_embeddings"))
        window = cfg.get("sliding_window")
        if arch == "MistralForCausalLM" and window is not None and window < max_pos:
            raise ConfigError(f"config.json: 'sliding_window' ({window}) < "
                              f"max_position_embeddings ({max_pos}) is not supported")
        tie = cfg.get("tie_word_embeddings", False)
        if not isinstance(tie, bool):
            raise ConfigError(f"config.json: 'tie_word_embeddings' must be a boolean, got {tie!r}")

        return ModelConfig(
            architecture=arch,
            hidden_size=hidden,
            intermediate_size=pos_int("intermediate_size", need("intermediate_size")),
            num_layers=pos_int("num_hidden_layers", need("num_hidden_layers")),
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            rotary_dim=rotary_dim,
            vocab_size=pos_int("vocab_size", need("vocab_size")),
            rms_norm_eps=number("rms_norm_eps", need("rms_norm_eps")),
            rope_theta=number("rope_theta", rope_theta),
            max_position_embeddings=max_pos,
            tie_word_embeddings=tie,
        )

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every checkpoint tensor the model reads, with its expected shape."""
        d, f, v = self.hidden_size, self.intermediate_size, self.vocab_size
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        shapes = {"model.embed_tokens.weight": (v, d)}
        for i in range(self.num_layers):
            p = f"model.layers.{i}."
            shapes.update({
                p + "input_layernorm.weight": (d,),
                p + "self_attn.q_proj.weight": (q, d),
                p + "self_attn.k_proj.weight": (kv, d),
                p + "self_attn.v_proj.weight": (kv, d),
                p + "self_attn.o_proj.weight": (d, q),
                p + "post_attention_layernorm.weight": (d,),
                p + "mlp.gate_proj.weight": (f, d),
                p + "mlp.up_proj.weight": (f, d),
                p + "mlp.down_proj.weight": (d, f),
            })
        shapes["model.norm.weight"] = (d,)
        if not self.tie_word_embeddings:
            shapes["lm_head.weight"] = (v, d)
        return shapes
