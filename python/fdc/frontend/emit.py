"""Print the model IR (docs/model-ir.md) for a validated config."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..config import ModelConfig


def mlir_f32(x: float) -> str:
    """A valid MLIR float literal that parses back to float32(x) exactly.

    MLIR needs a '.' in a decimal float ("1e-05" is not a float literal) and
    parses it as a double before rounding to f32, so the shortest float32 repr
    is used only if that double-then-f32 path gives the same value; otherwise
    9 significant digits (always enough for f32, and far from rounding ties).
    """
    v = np.float32(x)
    if not math.isfinite(v):
        raise ValueError(f"{x!r} is not a finite float")
    s = str(v)
    mantissa, e, exponent = s.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    s = mantissa + (e + exponent if e else "")
    return s if np.float32(float(s)) == v else f"{float(v):.8e}"


@dataclass(frozen=True)
class Softmax:
    """The attention softmax: "online", or "unified_max" with its phi/lo/hi."""
    kind: str = "online"
    phi: float = 0.0
    lo: float = 0.0
    hi: float = 0.0

    def attr(self) -> str:
        if self.kind == "online":
            return "#decode.softmax<online>"
        return (f"#decode.softmax<unified_max, phi = {mlir_f32(self.phi)}, "
                f"lo = {mlir_f32(self.lo)}, hi = {mlir_f32(self.hi)}>")


def _config_attr(cfg: ModelConfig) -> str:
    entries = {
        "architecture": f'"{cfg.architecture}"',
        "head_dim": f"{cfg.head_dim} : i64",
        "hidden_size": f"{cfg.hidden_size} : i64",
        "intermediate_size": f"{cfg.intermediate_size} : i64",
        "max_position_embeddings": f"{cfg.max_position_embeddings} : i64",
        "num_attention_heads": f"{cfg.num_heads} : i64",
        "num_hidden_layers": f"{cfg.num_layers} : i64",
        "num_key_value_heads": f"{cfg.num_kv_heads} : i64",
        "rms_norm_eps": f"{mlir_f32(cfg.rms_norm_eps)} : f32",
        "rope_theta": f"{mlir_f32(cfg.rope_theta)} : f32",
        "tie_word_embeddings": "true" if cfg.tie_word_embeddings else "false",
        "vocab_size": f"{cfg.vocab_size} : i64",
    }
    return "{" + ", ".join(f"{k} = {v}" for k, v in sorted(entries.items())) + "}"


@dataclass(frozen=True)
class Quantisation:
    """Storage choices beyond the checkpoint's dtype.

    ``kv_int4_groups`` > 0: the KV cache element is ``!decode.int4<groups = G>``.
    ``linear_int4_group_size`` > 0: every decoder-layer linear weight
    (q/k/v/o, the fused gate_up and down) is
    ``!decode.qtensor<NxKxi4, group_size = G, scale = f16>``; the embedding and
    lm_head stay dense.
    ``sparse_mlp``: the MLP weights (fused gate_up, down) are
    ``!decode.tiled_csl<NxKxT, tile = 128x64>`` and the MLP uses
    ``decode.sparse_linear``; with ``linear_int4_group_size`` too, INT4 applies
    to the attention projections only.
    """
    kv_int4_groups: int = 0
    linear_int4_group_size: int = 0
    sparse_mlp: bool = False


# --sparse-mlp: every decoder-layer MLP weight (the fused gate_up and down) is
# !decode.tiled_csl<NxKxT, tile = 128x64> with T the checkpoint's f16/bf16;
# the MLP's linears become decode.sparse_linear.
SPARSE_TILE = (128, 64)
SPARSE_ELEMENT_TYPES = ("f16", "bf16")
MLP_SUFFIXES = ("mlp.gate_up_proj.weight", "mlp.down_proj.weight")


# Decoder-layer linear weights (the fused gate_up included), by suffix.
LINEAR_SUFFIXES = ("self_attn.q_proj.weight", "self_attn.k_proj.weight",
                   "self_attn.v_proj.weight", "self_attn.o_proj.weight",
                   "mlp.gate_up_proj.weight", "mlp.down_proj.weight")


def emit_model(cfg: ModelConfig, elem: str, name: str, softmax: Softmax = Softmax(),
               quant: Quantisation = Quantisation()) -> str:
    """The decode.model text for ``cfg`` with element type ``elem`` (f32/bf16/f16)."""
    d, f, v = cfg.hidden_size, cfg.intermediate_size, cfg.vocab_size
    hq, hkv, hd = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim

    def t(*dims) -> str:
        return "tensor<" + "x".join(map(str, dims)) + f"x{elem}>"

    def weight_t(sym: str, n: int, k: int) -> str:
        """The type of the 2-D weight ``sym`` [n, k]."""
        layer = sym.startswith("model.layers.")
        if quant.sparse_mlp and layer and sym.endswith(MLP_SUFFIXES):
            return (f"!decode.tiled_csl<{n}x{k}x{elem}, "
                    f"tile = {SPARSE_TILE[0]}x{SPARSE_TILE[1]}>")
        g = quant.linear_int4_group_size
        if g and layer and sym.endswith(LINEAR_SUFFIXES):
            return f"!decode.qtensor<{n}x{k}xi4, group_size = {g}, scale = f16>"
        return t(n, k)

    act_d, act_q, act_kv = t("?", d), t("?", hq * hd), t("?", hkv * hd)
    heads_q, heads_kv = t("?", hq, hd), t("?", hkv, hd)
    logits_t = f"tensor<?x{v}xf32>"
    cache_elem = (f"!decode.int4<groups = {quant.kv_int4_groups}>" if quant.kv_int4_groups
                  else elem)
    cache_t = (f"!decode.kv_cache<layers = {cfg.num_layers}, kv_heads = {hkv}, "
               f"head_dim = {hd}, {cache_elem}>")
    eps = f"{{eps = {mlir_f32(cfg.rms_norm_eps)} : f32}}"
    rope_attrs = f"{{rotary_dim = {cfg.rotary_dim} : i64, theta = {mlir_f32(cfg.rope_theta)} : f32}}"
    scale = mlir_f32(1.0 / math.sqrt(hd))

    weights = {}  # symbol -> (type, concat sources or None)
    for tensor, shape in cfg.tensor_shapes().items():
        if tensor.endswith(".mlp.gate_proj.weight"):
            prefix = tensor[:-len("gate_proj.weight")]
            weights[prefix + "gate_up_proj.weight"] = (
                weight_t(prefix + "gate_up_proj.weight", 2 * f, d),
                [tensor, prefix + "up_proj.weight"])
        elif not tensor.endswith(".mlp.up_proj.weight"):
            weights[tensor] = (weight_t(tensor, *shape) if len(shape) == 2 else t(*shape), None)

    lines = [f"decode.model @{name} attributes {{config = {_config_attr(cfg)}}} {{"]
    for sym, (ty, sources) in weights.items():
        concat = (" = concat [" + ", ".join(f'"{s}"' for s in sources) + "]") if sources else ""
        lines.append(f'  decode.weight @"{sym}"{concat} : {ty}')
    lines.append(
        "  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, "
        "%slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, "
        f"%top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: {cache_t}) -> "
        f"({logits_t}, tensor<?xi32>, {cache_t}) {{")
    body = []

    def ref(value: str, sym: str) -> None:
        body.append(f'%{value} = decode.weight_ref @"{sym}" : {weights[sym][0]}')

    body += ["%c0 = arith.constant 0 : index", "%m = tensor.dim %tokens, %c0 : tensor<?xi32>"]
    ref("emb", "model.embed_tokens.weight")
    body.append(f"%h0 = decode.embedding %emb[%tokens] : {t(v, d)}, tensor<?xi32> -> {act_d}")
    cache = "%cache"
    for i in range(cfg.num_layers):
        p, s = f"model.layers.{i}.", f"_{i}"
        h_in, h_mid, h_out = f"%h{2 * i}", f"%h{2 * i + 1}", f"%h{2 * i + 2}"
        ref("ln" + s, p + "input_layernorm.weight")
        body.append(f"%x{s} = decode.rms_norm {h_in}, %ln{s} {eps} : {act_d}, {t(d)} -> {act_d}")
        for proj in "qkv":
            ref(f"w{proj}{s}", f"{p}self_attn.{proj}_proj.weight")
        for proj, out_t in (("q", act_q), ("k", act_kv), ("v", act_kv)):
            body.append(f"%{proj}{s} = decode.linear %x{s}, %w{proj}{s} : {act_d}, "
                        f"{weights[f'{p}self_attn.{proj}_proj.weight'][0]} -> {out_t}")
        for proj, heads, flat_t, heads_t in (("q", hq, act_q, heads_q), ("k", hkv, act_kv, heads_kv),
                                             ("v", hkv, act_kv, heads_kv)):
            body.append(f"%{proj}h{s} = tensor.expand_shape %{proj}{s} [[0], [1, 2]] output_shape "
                        f"[%m, {heads}, {hd}] : {flat_t} into {heads_t}")
        body.append(f"%qr{s} = decode.rope %qh{s}, %positions {rope_attrs} : {heads_q} -> {heads_q}")
        body.append(f"%kr{s} = decode.rope %kh{s}, %positions {rope_attrs} : {heads_kv} -> {heads_kv}")
        new_cache = f"%c{i + 1}"
        body.append(f"{new_cache} = decode.kv_append %kr{s}, %vh{s} into {cache}[%slots, %positions] "
                    f"{{layer = {i} : i64}} : {heads_kv}, {heads_kv} into {cache_t}")
        cache = new_cache
        body.append(f"%a{s} = decode.attention %qr{s}, {cache}[%slots, %positions] {{layer = {i} : i64, "
                    f"scale = {scale} : f32, softmax = {softmax.attr()}}} : {heads_q}, {cache_t} -> {heads_q}")
        body.append(f"%af{s} = tensor.collapse_shape %a{s} [[0], [1, 2]] : {heads_q} into {act_q}")
        ref("wo" + s, p + "self_attn.o_proj.weight")
        body.append(f"{h_mid} = decode.linear %af{s}, %wo{s} residual {h_in} : {act_q}, "
                    f"{weights[p + 'self_attn.o_proj.weight'][0]}, {act_d} -> {act_d}")
        ref("pln" + s, p + "post_attention_layernorm.weight")
        body.append(f"%x2{s} = decode.rms_norm {h_mid}, %pln{s} {eps} : {act_d}, {t(d)} -> {act_d}")
        ref("wgu" + s, p + "mlp.gate_up_proj.weight")
        mlp_linear = "decode.sparse_linear" if quant.sparse_mlp else "decode.linear"
        body.append(f"%g{s} = {mlp_linear} %x2{s}, %wgu{s} {{activation = #decode<activation "
                    f"silu_gate_up>}} : {act_d}, {weights[p + 'mlp.gate_up_proj.weight'][0]} -> "
                    f"{t('?', f)}")
        ref("wd" + s, p + "mlp.down_proj.weight")
        body.append(f"{h_out} = {mlp_linear} %g{s}, %wd{s} residual {h_mid} : {t('?', f)}, "
                    f"{weights[p + 'mlp.down_proj.weight'][0]}, {act_d} -> {act_d}")
    ref("fn", "model.norm.weight")
    body.append(f"%hn = decode.rms_norm %h{2 * cfg.num_layers}, %fn {eps} : {act_d}, {t(d)} -> {act_d}")
    ref("lm", "model.embed_tokens.weight" if cfg.tie_word_embeddings else "lm_head.weight")
    body.append(f"%logits = decode.linear %hn, %lm : {act_d}, {t(v, d)} -> {logits_t}")
    body.append(f"%next = decode.sample %logits, %uniform, %temperature, %top_k, %top_p : "
                f"{logits_t} -> tensor<?xi32>")
    body.append(f"return %logits, %next, {cache} : {logits_t}, tensor<?xi32>, {cache_t}")
    lines += ["    " + line for line in body]
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"
