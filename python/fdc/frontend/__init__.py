"""Checkpoint -> model IR frontend.

Reads config.json and the safetensors headers only (never tensor data),
checks that every tensor the model needs is present with the expected shape
and one supported dtype, and prints the decode.model (docs/model-ir.md).
"""

from __future__ import annotations

import math
import os
import re

from .. import FdcError
from ..checkpoint import Checkpoint
from ..config import ModelConfig
from ..strict import describe, is_number, to_f32
from .emit import (MLP_SUFFIXES, SPARSE_ELEMENT_TYPES, SPARSE_TILE, Quantisation, Softmax,
                   emit_model)

ELEMENT_TYPE = {"F32": "f32", "BF16": "bf16", "F16": "f16"}
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FrontendError(FdcError):
    pass


def default_name(checkpoint_dir: str) -> str:
    """The checkpoint directory's basename as a bare MLIR symbol name."""
    base = os.path.basename(os.path.normpath(os.path.abspath(checkpoint_dir)))
    name = re.sub(r"[^A-Za-z0-9_]", "_", base)
    return name if _SYMBOL.fullmatch(name) else "model_" + name


def check_tensors(ckpt: Checkpoint, cfg: ModelConfig) -> str:
    """Check every needed tensor; return the common element type."""
    dtype, first = None, None
    for name, shape in cfg.iter_tensor_shapes():
        info = ckpt.tensors.get(name)
        if info is None:
            raise FrontendError(f"missing tensor {name!r}")
        if info.shape != shape:
            raise FrontendError(f"tensor {name!r} has shape {list(info.shape)}, "
                                f"expected {list(shape)}")
        if info.dtype not in ELEMENT_TYPE:
            raise FrontendError(f"tensor {name!r} has unsupported dtype {info.dtype} "
                                f"(supported: {', '.join(ELEMENT_TYPE)})")
        if dtype is None:
            dtype, first = info.dtype, name
        elif info.dtype != dtype:
            raise FrontendError(f"mixed dtypes: tensor {name!r} is {info.dtype} "
                                f"but {first!r} is {dtype}")
    return ELEMENT_TYPE[dtype]


# The largest --hi the verifier takes: exp(hi) must not overflow f32.
SOFTMAX_MAX_HI = 88.0


def check_softmax(softmax: Softmax) -> None:
    """The verifier's rules for #decode.softmax<unified_max>, on the f32 values
    the IR holds: phi, lo and hi finite, lo < hi, hi <= 88."""
    if softmax.kind == "online":
        return
    if softmax.kind != "unified_max":
        raise FrontendError(f"unknown softmax {softmax.kind!r} (online or unified_max)")
    values = {}
    for flag in ("phi", "lo", "hi"):
        x = getattr(softmax, flag)
        f = to_f32(x) if is_number(x) else math.nan
        if not math.isfinite(f):
            raise FrontendError(f"--softmax unified_max: --{flag} {describe(x)} is not a "
                                f"finite f32")
        values[flag] = f
    if not values["lo"] < values["hi"]:
        raise FrontendError(f"--softmax unified_max needs --lo < --hi (as f32), got "
                            f"--lo {describe(softmax.lo)}, --hi {describe(softmax.hi)}")
    if values["hi"] > SOFTMAX_MAX_HI:
        raise FrontendError(f"--softmax unified_max: --hi {describe(softmax.hi)} overflows "
                            f"exp() in f32 (must be <= {SOFTMAX_MAX_HI:g})")


def check_quantisation(cfg: ModelConfig, quant: Quantisation) -> None:
    """Refuse storage choices the model's dimensions cannot take, naming the flag."""
    g = quant.kv_int4_groups
    if g < 0 or (g and (cfg.head_dim % g or (cfg.head_dim // g) % 2)):
        if g > 0 and cfg.head_dim % g == 0:
            why = (f"gives groups of {cfg.head_dim // g} elements; INT4 needs an even "
                   f"group size (two values per byte)")
        else:
            why = f"does not divide head_dim {cfg.head_dim}"
        raise FrontendError(f"--kv-cache int4: --kv-groups {g} {why}")
    gs = quant.linear_int4_group_size
    if gs:
        ks = {"hidden_size": cfg.hidden_size,
              "num_attention_heads * head_dim (o_proj)": cfg.num_heads * cfg.head_dim}
        if not quant.sparse_mlp:  # with --sparse-mlp, down_proj is tiled_csl
            ks["intermediate_size (down_proj)"] = cfg.intermediate_size
        for what, k in ks.items():
            if gs < 0 or k % gs:
                raise FrontendError(f"--linear-weights int4: --group-size {gs} does not divide "
                                    f"K = {k} ({what})")
            if k % 2:
                raise FrontendError(f"--linear-weights int4: K = {k} ({what}) is odd; INT4 "
                                    f"rows need an even K")


def mlp_weight_shapes(cfg: ModelConfig) -> dict[str, tuple[int, int]]:
    """The MLP weights the model declares (gate_up fused), [N, K] each."""
    d, f = cfg.hidden_size, cfg.intermediate_size
    shapes = {}
    for i in range(cfg.num_layers):
        p = f"model.layers.{i}."
        shapes[p + MLP_SUFFIXES[0]] = (2 * f, d)
        shapes[p + MLP_SUFFIXES[1]] = (d, f)
    return shapes


def check_sparse_mlp(cfg: ModelConfig, elem: str, quant: Quantisation) -> None:
    """--sparse-mlp needs an f16/bf16 checkpoint and MLP weights the tile divides."""
    if not quant.sparse_mlp:
        return
    if elem not in SPARSE_ELEMENT_TYPES:
        raise FrontendError(f"--sparse-mlp: !decode.tiled_csl weights hold "
                            f"{' or '.join(SPARSE_ELEMENT_TYPES)} values, but the checkpoint "
                            f"is {elem}")
    tn, tk = SPARSE_TILE
    for name, (n, k) in mlp_weight_shapes(cfg).items():
        bad = [f"{dim} = {size} is not a multiple of {t}"
               for dim, size, t in (("N", n, tn), ("K", k, tk)) if size % t]
        if bad:
            raise FrontendError(f"--sparse-mlp: weight {name!r} [{n}, {k}] does not split "
                                f"into {tn}x{tk} tiles: {', '.join(bad)}")


def model_ir(checkpoint_dir: str, name: str | None = None, softmax: Softmax = Softmax(),
             quant: Quantisation = Quantisation()) -> str:
    name = default_name(checkpoint_dir) if name is None else name
    if not _SYMBOL.fullmatch(name):
        raise FrontendError(f"model name {name!r} is not of the form [A-Za-z_][A-Za-z0-9_]*")
    check_softmax(softmax)
    ckpt = Checkpoint(checkpoint_dir)
    cfg = ModelConfig.from_dict(ckpt.config)
    elem = check_tensors(ckpt, cfg)
    check_quantisation(cfg, quant)
    check_sparse_mlp(cfg, elem, quant)
    return emit_model(cfg, elem, name, softmax, quant)
