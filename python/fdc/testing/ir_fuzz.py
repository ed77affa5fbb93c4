"""The IR -> run fuzzer (docs/fuzzing.md).

    python -m fdc.testing.ir_fuzz --seconds 60 [--seed N] --fdc BUILD/bin/fdc
        --runner BUILD/bin/fdc-ir-fuzz-runner --out DIR [--cases N] [--keep]

Every case is a random decode.model, deterministic per seed: a Llama-like
stack built from the dialect's ops in random but well-typed combinations
(dims, f32/bf16/f16, tied or not, online/unified_max softmax, INT4 KV cache,
INT4 qtensor and Tiled-CSL weights, rope, rms_norm, bias/residual/silu_gate_up
epilogues, argmax or sample), about half of them then mutated (NaN, Inf, zero,
negative, huge and denormal attributes; shape mismatches; step operands
swapped or replaced by computed indices; a too small embedding table; odd
config values; a checkpoint that does not fit), a matching random checkpoint
and a few steps of step inputs, valid and hostile (token ids, positions and
slots out of range, batch 0 or larger than the slot count, NaN sampling
parameters).

The oracle: ``fdc compile --target=host`` exits 0, or exits 1 with an
``error:`` diagnostic (never a signal, an LLVM ERROR, an assertion or a
hang). A compiled library then goes to fdc-ir-fuzz-runner (built with
AddressSanitizer and UBSan, every buffer the library is handed between guard
pages), where every step runs or is refused by name, no sanitizer report or
signal happens, and every next token lies in [0, vocab). An unmutated model
must also compile, load and run its valid steps.

A failing case is saved under --out (model.mlir, checkpoint/, inputs.txt, the
logs, case.json and repro.sh) and the driver exits 1 after a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from ..safetensors import save_file

COMPILE_TIMEOUT = 60
RUN_TIMEOUT = 60
INT32_MIN, INT32_MAX = -(2 ** 31), 2 ** 31 - 1
ST_DTYPE = {"f32": "F32", "bf16": "BF16", "f16": "F16"}


# ---------------------------------------------------------------------------
# Float attributes

def f32_hex(bits: int) -> str:
    return f"0x{bits:08X}"


def f32_lit(x: float) -> str:
    """An MLIR f32 literal for any float32 value (NaN and Inf as hex)."""
    v = np.float32(x)
    if not math.isfinite(v):
        return f32_hex(struct.unpack("<I", struct.pack("<f", v))[0])
    return f"{float(v):.9e}"


# Values a mutated float attribute takes.
SPECIAL_FLOATS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, -1.0, 3.4e38,
                  -3.4e38, 1.0e-45, 1.0e-40, 1.0e30, 1.0e-30]
SPECIAL_INTS = [0, -1, -2, 1, 3, 7, 2 ** 31 - 1, 2 ** 31, 2 ** 40, 2 ** 62, -(2 ** 62)]


def special_float(rng: random.Random) -> float:
    return rng.choice(SPECIAL_FLOATS)


# ---------------------------------------------------------------------------
# The model

@dataclass
class Weight:
    name: str
    mlir_type: str          # the decode.weight's type
    shape: tuple            # the dense [N, K] / [N] shape it is loaded as
    sources: list | None = None   # concat sources (name, shape), or None
    scale: float = 1.0

    def checkpoint_tensors(self):
        if self.sources:
            return list(self.sources)
        return [(self.name, self.shape)]


@dataclass
class Spec:
    """The random choices of one model (mutations edit these or the text)."""
    elem: str
    hidden: int
    inter: int
    vocab: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool
    max_pos: int
    eps: float
    theta: float
    kv_int4: int
    linear_int4: int
    sparse_mlp: bool
    sampler: str
    softmax: tuple          # ("online",) or ("unified_max", phi, lo, hi)
    config_overrides: dict = field(default_factory=dict)


@dataclass
class Case:
    seed: int
    mutations: list
    mlir: str
    weights: dict           # checkpoint tensor name -> float32 array
    dtype: str              # the checkpoint's safetensors dtype
    slots: int
    max_context: int
    steps: list             # (valid: bool, line: str)

    @property
    def valid(self) -> bool:
        return not self.mutations

    def inputs_text(self) -> str:
        return (f"options {self.slots} {self.max_context}\n"
                + "".join(line + "\n" for _, line in self.steps))


class Builder:
    """Emits the text of one decode.model from a Spec, with mutation hooks."""

    def __init__(self, spec: Spec, rng: random.Random, mutations: list):
        self.s, self.rng, self.mutations = spec, rng, mutations
        self.weights: dict[str, Weight] = {}
        self.body: list[str] = []
        self.n = 0
        # Hostile structural knobs set by mutate(); each names itself.
        self.knobs: dict[str, object] = {}

    # -- helpers --------------------------------------------------------
    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def t(self, *dims, elem=None) -> str:
        return "tensor<" + "x".join(map(str, dims)) + f"x{elem or self.s.elem}>"

    def cache_t(self) -> str:
        s = self.s
        elem = f"!decode.int4<groups = {s.kv_int4}>" if s.kv_int4 else s.elem
        layers = self.knobs.get("cache_layers", s.layers)
        return (f"!decode.kv_cache<layers = {layers}, kv_heads = {s.kv_heads}, "
                f"head_dim = {s.head_dim}, {elem}>")

    def weight(self, name: str, n: int, k: int | None, kind: str = "dense",
               sources=None, scale: float = 1.0) -> str:
        s = self.s
        if k is None:
            ty = self.t(n)
            shape = (n,)
        else:
            shape = (n, k)
            if kind == "int4":
                ty = f"!decode.qtensor<{n}x{k}xi4, group_size = {s.linear_int4}, scale = f16>"
            elif kind == "csl":
                ty = f"!decode.tiled_csl<{n}x{k}x{s.elem}, tile = 128x64>"
            else:
                ty = self.t(n, k)
        self.weights[name] = Weight(name, ty, shape, sources, scale)
        v = self.fresh("w")
        self.body.append(f'{v} = decode.weight_ref @"{name}" : {ty}')
        return v

    def index(self, role: str) -> str:
        """The step argument for ``role`` (tokens/positions/slots), or a
        hostile replacement when a mutation asked for one."""
        swap = self.knobs.get("swap")
        if swap and swap[0] == role and self.rng.random() < 0.7:
            return swap[1]
        return "%" + role

    def floatattr(self, name: str, value: float) -> str:
        target = self.knobs.get("float_attr")
        if target == name and self.rng.random() < 0.6:
            value = special_float(self.rng)
            self.mutations.append(f"{name} = {value!r}")
        return f32_lit(value)

    # -- ops ------------------------------------------------------------
    def rms_norm(self, x: str, name: str, d: int) -> str:
        w = self.weight(name, d, None)
        out = self.fresh("n")
        eps = self.floatattr("eps", self.s.eps)
        act = self.t("?", d)
        self.body.append(f"{out} = decode.rms_norm {x}, {w} {{eps = {eps} : f32}} : "
                         f"{act}, {self.t(d)} -> {act}")
        return out

    def linear(self, x: str, k: int, n: int, name: str, kind: str = "dense",
               residual: str | None = None, bias: bool = False, gate_up: bool = False,
               sources=None, out_elem: str | None = None, scale: float = 1.0) -> str:
        wn = n
        if self.knobs.get("bad_linear") == name:
            wn = n + self.rng.choice([1, -1 if n > 1 else 2])
            self.mutations.append(f"{name}: weight rows {wn} for {n} outputs")
        w = self.weight(name, wn, k, kind, sources, scale)
        wty = self.weights[name].mlir_type
        rows = n // 2 if gate_up else n
        out_t = self.t("?", rows, elem=out_elem)
        op = "decode.sparse_linear" if kind == "csl" else "decode.linear"
        text = f"{op} {x}, {w}"
        types = [self.t("?", k), wty]
        if bias:
            b = self.weight(name.replace(".weight", ".bias"), n, None, scale=0.1)
            text += f" bias {b}"
            types.append(self.t(n))
        if residual:
            text += f" residual {residual}"
            types.append(out_t)
        if gate_up:
            text += " {activation = #decode<activation silu_gate_up>}"
        out = self.fresh("y")
        self.body.append(f"{out} = {text} : {', '.join(types)} -> {out_t}")
        return out

    def heads(self, x: str, h: int, d: int) -> str:
        out = self.fresh("hd")
        self.body.append(f"{out} = tensor.expand_shape {x} [[0], [1, 2]] output_shape "
                         f"[%m, {h}, {d}] : {self.t('?', h * d)} into {self.t('?', h, d)}")
        return out

    def rope(self, x: str, h: int) -> str:
        s = self.s
        rot = self.rng.choice([d for d in range(2, s.head_dim + 1, 2)])
        if self.knobs.get("rotary_dim") is not None and self.rng.random() < 0.7:
            rot = self.knobs["rotary_dim"]
            self.mutations.append(f"rotary_dim = {rot}")
        theta = self.floatattr("theta", s.theta)
        out = self.fresh("r")
        ty = self.t("?", h, s.head_dim)
        self.body.append(f"{out} = decode.rope {x}, {self.index('positions')} "
                         f"{{rotary_dim = {rot} : i64, theta = {theta} : f32}} : {ty} -> {ty}")
        return out

    def layer_attr(self, i: int) -> int:
        bad = self.knobs.get("layer")
        if bad is not None and self.rng.random() < 0.5:
            self.mutations.append(f"layer = {bad}")
            return bad
        return i

    def build(self) -> str:
        s, rng = self.s, self.rng
        d, f, v, hq, hkv, hd = s.hidden, s.inter, s.vocab, s.heads, s.kv_heads, s.head_dim
        lin_kind = "int4" if s.linear_int4 else "dense"
        mlp_kind = "csl" if s.sparse_mlp else lin_kind
        self.body += ["%c0 = arith.constant 0 : index",
                      "%m = tensor.dim %tokens, %c0 : tensor<?xi32>"]
        rows = self.knobs.get("embed_rows", v)
        emb_w = self.weight("model.embed_tokens.weight", rows, d)
        h = self.fresh("h")
        self.body.append(f"{h} = decode.embedding {emb_w}[{self.index('tokens')}] : "
                         f"{self.t(rows, d)}, tensor<?xi32> -> {self.t('?', d)}")
        cache = "%cache"
        for i in range(s.layers):
            p = f"model.layers.{i}."
            x = self.rms_norm(h, p + "input_layernorm.weight", d) if rng.random() < 0.85 else h
            bias = rng.random() < 0.2
            q = self.linear(x, d, hq * hd, p + "self_attn.q_proj.weight", lin_kind, bias=bias)
            k = self.linear(x, d, hkv * hd, p + "self_attn.k_proj.weight", lin_kind, bias=bias)
            vv = self.linear(x, d, hkv * hd, p + "self_attn.v_proj.weight", lin_kind, bias=bias)
            qh, kh, vh = self.heads(q, hq, hd), self.heads(k, hkv, hd), self.heads(vv, hkv, hd)
            if rng.random() < 0.8:
                qh = self.rope(qh, hq)
            if rng.random() < 0.8:
                kh = self.rope(kh, hkv)
            ct = self.cache_t()
            new_cache = self.fresh("c")
            self.body.append(
                f"{new_cache} = decode.kv_append {kh}, {vh} into {cache}"
                f"[{self.index('slots')}, {self.index('positions')}] "
                f"{{layer = {self.layer_attr(i)} : i64}} : {self.t('?', hkv, hd)}, "
                f"{self.t('?', hkv, hd)} into {ct}")
            # Attend the cache just written (reading the one before the
            # append is a verifier error: a mutation); sometimes another
            # layer's rows (well-typed, reads zeros or older rows).
            read = new_cache
            if self.knobs.get("stale_cache") and rng.random() < 0.7:
                read = cache
                self.mutations.append("attention reads the cache before this step's append")
            cache = new_cache
            read_layer = i if rng.random() < 0.9 else rng.randrange(s.layers)
            scale = self.floatattr("scale", rng.choice([1.0 / math.sqrt(hd), 1.0,
                                                       rng.uniform(0.01, 2.0)]))
            sm = s.softmax
            if sm[0] == "online":
                sm_attr = "#decode.softmax<online>"
            else:
                sm_attr = (f"#decode.softmax<unified_max, phi = {self.floatattr('phi', sm[1])}, "
                           f"lo = {self.floatattr('lo', sm[2])}, "
                           f"hi = {self.floatattr('hi', sm[3])}>")
            splits = ""
            if rng.random() < 0.2:
                splits = f", splits = {rng.choice([0, 1, 2, 3, 8])} : i64"
            if self.knobs.get("splits") is not None:
                splits = f", splits = {self.knobs['splits']} : i64"
                self.mutations.append(f"splits = {self.knobs['splits']}")
            a = self.fresh("a")
            qt = self.t("?", hq, hd)
            self.body.append(
                f"{a} = decode.attention {qh}, {read}[{self.index('slots')}, "
                f"{self.index('positions')}] {{layer = {self.layer_attr(read_layer)} : i64, "
                f"scale = {scale} : f32, softmax = {sm_attr}{splits}}} : {qt}, {ct} -> {qt}")
            af = self.fresh("af")
            self.body.append(f"{af} = tensor.collapse_shape {a} [[0], [1, 2]] : "
                             f"{qt} into {self.t('?', hq * hd)}")
            h = self.linear(af, hq * hd, d, p + "self_attn.o_proj.weight", lin_kind,
                            residual=h if rng.random() < 0.8 else None)
            if rng.random() < 0.85:
                x2 = (self.rms_norm(h, p + "post_attention_layernorm.weight", d)
                      if rng.random() < 0.85 else h)
                style = rng.random()
                if style < 0.7:
                    g = self.linear(x2, d, 2 * f, p + "mlp.gate_up_proj.weight", mlp_kind,
                                    gate_up=True,
                                    sources=[(p + "mlp.gate_proj.weight", (f, d)),
                                             (p + "mlp.up_proj.weight", (f, d))])
                elif style < 0.8:
                    g = self.linear(x2, d, 2 * f, p + "mlp.gate_up_proj.weight", mlp_kind,
                                    gate_up=True)
                else:
                    g = self.linear(x2, d, f, p + "mlp.up_proj.weight", mlp_kind,
                                    bias=rng.random() < 0.3)
                h = self.linear(g, f, d, p + "mlp.down_proj.weight", mlp_kind,
                                residual=h if rng.random() < 0.9 else None)
        if rng.random() < 0.9:
            h = self.rms_norm(h, "model.norm.weight", d)
        logits_t = f"tensor<?x{v}xf32>"
        if s.tied:
            lm = "model.embed_tokens.weight"
            lw = self.fresh("w")
            self.body.append(f'{lw} = decode.weight_ref @"{lm}" : {self.t(rows, d)}')
            logits = self.fresh("l")
            self.body.append(f"{logits} = decode.linear {h}, {lw} : {self.t('?', d)}, "
                             f"{self.t(rows, d)} -> tensor<?x{rows}xf32>")
            logits_t = f"tensor<?x{rows}xf32>"
        else:
            logits = self.linear(h, d, v, "lm_head.weight", out_elem="f32", scale=4.0)
        nxt = self.fresh("next")
        if s.sampler == "argmax":
            self.body.append(f"{nxt} = decode.argmax {logits} : {logits_t} -> tensor<?xi32>")
        else:
            self.body.append(f"{nxt} = decode.sample {logits}, %uniform, %temperature, %top_k, "
                             f"%top_p : {logits_t} -> tensor<?xi32>")
        ct = self.cache_t()
        self.body.append(f"return {logits}, {nxt}, {cache} : {logits_t}, tensor<?xi32>, {ct}")

        # A computed index (decode.argmax of the logits) replaces a step
        # argument: prepend nothing, the value is defined where it is used.
        if self.knobs.get("computed_index"):
            self._computed_index(logits, logits_t)

        lines = [f"decode.model @fuzz attributes {{config = {self.config_attr()}}} {{"]
        for w in self.weights.values():
            concat = ""
            if w.sources:
                concat = " = concat [" + ", ".join(f'"{n}"' for n, _ in w.sources) + "]"
            lines.append(f'  decode.weight @"{w.name}"{concat} : {w.mlir_type}')
        lines.append(
            "  func.func @step(%tokens: tensor<?xi32>, %positions: tensor<?xi32>, "
            "%slots: tensor<?xi32>, %temperature: tensor<?xf32>, %top_k: tensor<?xi32>, "
            f"%top_p: tensor<?xf32>, %uniform: tensor<?xf32>, %cache: {ct}) -> "
            f"({logits_t}, tensor<?xi32>, {ct}) {{")
        lines += ["    " + line for line in self.body]
        lines += ["  }", "}"]
        return "\n".join(lines) + "\n"

    def _computed_index(self, logits: str, logits_t: str) -> None:
        """Feed a second step's worth of computation an index that is not a
        step argument: argmax over a linear of the embedding."""
        # Insert right after the embedding: %idx = argmax(linear(h0)).
        role = self.knobs["computed_index"]
        at = next(i for i, line in enumerate(self.body) if "decode.embedding" in line) + 1
        h0 = self.body[at - 1].split(" = ")[0]
        d = self.s.hidden
        width = self.rng.choice([2, 7, 64, 4096])
        self.weights["fuzz.index_proj.weight"] = Weight(
            "fuzz.index_proj.weight", self.t(width, d), (width, d))
        extra = [f'%ixw = decode.weight_ref @"fuzz.index_proj.weight" : {self.t(width, d)}',
                 f"%ixl = decode.linear {h0}, %ixw : {self.t('?', d)}, {self.t(width, d)} -> "
                 f"tensor<?x{width}xf32>",
                 f"%ixv = decode.argmax %ixl : tensor<?x{width}xf32> -> tensor<?xi32>"]
        self.body[at:at] = extra
        replaced = 0
        for i in range(at + len(extra), len(self.body)):
            line = self.body[i]
            if role == "slots" and "[%slots" in line:
                self.body[i] = line.replace("[%slots", "[%ixv", 1)
                replaced += 1
            elif role == "positions" and ("%positions]" in line or "decode.rope" in line):
                self.body[i] = line.replace("%positions", "%ixv", 1)
                replaced += 1
        self.mutations.append(f"{role} replaced by a computed argmax index (width {width}, "
                              f"{replaced} uses)")

    def config_attr(self) -> str:
        s = self.s
        entries = {
            "architecture": '"LlamaForCausalLM"',
            "head_dim": f"{s.head_dim} : i64",
            "hidden_size": f"{s.hidden} : i64",
            "intermediate_size": f"{s.inter} : i64",
            "max_position_embeddings": f"{s.max_pos} : i64",
            "num_attention_heads": f"{s.heads} : i64",
            "num_hidden_layers": f"{s.layers} : i64",
            "num_key_value_heads": f"{s.kv_heads} : i64",
            "rms_norm_eps": f"{f32_lit(s.eps)} : f32",
            "rope_theta": f"{f32_lit(s.theta)} : f32",
            "tie_word_embeddings": "true" if s.tied else "false",
            "vocab_size": f"{s.vocab} : i64",
        }
        for key, value in s.config_overrides.items():
            if value is None:
                entries.pop(key, None)
            else:
                entries[key] = value
        return "{" + ", ".join(f"{k} = {v}" for k, v in sorted(entries.items())) + "}"


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def random_spec(rng: random.Random) -> Spec:
    elem = rng.choice(["f32", "bf16", "f16"])
    head_dim = rng.choice([2, 4, 6, 8, 16, 32])
    kv_heads = rng.choice([1, 1, 2, 3])
    heads = kv_heads * rng.choice([1, 2, 4])
    hidden = rng.choice([heads * head_dim, 8, 16, 24, 40, 64])
    inter = rng.choice([1, 4, 8, 24, 64, 96])
    vocab = rng.choice([1, 2, 5, 16, 64, 100, 256])
    kv_int4 = 0
    if rng.random() < 0.2:
        kv_int4 = rng.choice([g for g in divisors(head_dim) if (head_dim // g) % 2 == 0] or [0])
    linear_int4 = 0
    if rng.random() < 0.15:
        common = math.gcd(math.gcd(hidden, heads * head_dim), inter)
        choices = [g for g in divisors(common) if g % 2 == 0]
        linear_int4 = rng.choice(choices) if choices else 0
    sparse = elem != "f32" and rng.random() < 0.2
    if sparse:  # the 128x64 tiles must divide every MLP weight
        hidden, inter = 128, 128
    if rng.random() < 0.3:
        softmax = ("online",)
    else:
        phi = rng.uniform(-5, 5)
        softmax = ("unified_max", phi, rng.uniform(-80, -1), rng.uniform(1, 80))
    if softmax[0] == "online" or rng.random() < 0.5:
        pass
    return Spec(elem=elem, hidden=hidden, inter=inter, vocab=vocab,
                layers=rng.choice([1, 1, 2, 3]), heads=heads, kv_heads=kv_heads,
                head_dim=head_dim, tied=rng.random() < 0.3,
                max_pos=rng.choice([4, 16, 64, 2048]),
                eps=rng.choice([1e-5, 1e-6, 0.1]), theta=rng.choice([10000.0, 500000.0, 3.0]),
                kv_int4=kv_int4, linear_int4=linear_int4, sparse_mlp=sparse,
                sampler=rng.choice(["argmax", "sample", "sample"]), softmax=softmax)


# Mutation kinds, each a function of (spec, builder knobs, rng) that records
# what it did in `mutations`.
def _mutate(spec: Spec, knobs: dict, rng: random.Random, mutations: list,
            ckpt_mutations: list) -> None:
    kind = rng.choice(["float_attr", "float_attr", "rotary_dim", "layer", "splits", "swap",
                       "stale_cache",
                       "computed_index", "embed_rows", "bad_linear", "config", "dims",
                       "group", "checkpoint", "checkpoint"])
    if kind == "float_attr":
        knobs["float_attr"] = rng.choice(["eps", "theta", "scale", "phi", "lo", "hi"])
        if knobs["float_attr"] in ("phi", "lo", "hi") and spec.softmax[0] == "online":
            spec.softmax = ("unified_max", 0.0, -20.0, 20.0)
    elif kind == "rotary_dim":
        knobs["rotary_dim"] = rng.choice([0, -2, 1, 3, spec.head_dim + 2, spec.head_dim * 2,
                                          2 ** 40, -(2 ** 62)])
    elif kind == "layer":
        knobs["layer"] = rng.choice([-1, spec.layers, spec.layers + 5, 2 ** 31, 2 ** 62])
    elif kind == "stale_cache":
        knobs["stale_cache"] = True
    elif kind == "splits":
        knobs["splits"] = rng.choice([-1, 2 ** 31, 2 ** 62, 100000])
    elif kind == "swap":
        role = rng.choice(["tokens", "positions", "slots"])
        other = rng.choice([r for r in ("%tokens", "%positions", "%slots", "%top_k")
                            if r != "%" + role])
        knobs["swap"] = (role, other)
        mutations.append(f"{role} operand swapped for {other}")
    elif kind == "computed_index":
        knobs["computed_index"] = rng.choice(["slots", "positions"])
    elif kind == "embed_rows":
        knobs["embed_rows"] = rng.choice([max(spec.vocab - 1, 1), 1, spec.vocab + 3]) \
            if spec.vocab > 1 else 1
        if knobs["embed_rows"] == spec.vocab:
            knobs["embed_rows"] = spec.vocab + 1
        mutations.append(f"embedding table has {knobs['embed_rows']} rows, vocab {spec.vocab}")
    elif kind == "bad_linear":
        knobs["bad_linear"] = rng.choice(["model.layers.0.self_attn.q_proj.weight",
                                          "model.layers.0.self_attn.o_proj.weight",
                                          "model.layers.0.mlp.down_proj.weight",
                                          "lm_head.weight"])
    elif kind == "config":
        key = rng.choice(["vocab_size", "max_position_embeddings", "num_hidden_layers",
                          "hidden_size", "rms_norm_eps", "tie_word_embeddings"])
        value = rng.choice([None, "0 : i64", "-1 : i64", f"{2 ** 62} : i64", "1 : i64",
                            f"{f32_hex(0x7FC00000)} : f32", '"x"', "true"])
        spec.config_overrides[key] = value
        mutations.append(f"config {key} = {value}")
        if key == "max_position_embeddings" and value in ("1 : i64",):
            spec.max_pos = 1
    elif kind == "dims":
        which = rng.choice(["cache_layers", "vocab_one", "huge"])
        if which == "cache_layers":
            knobs["cache_layers"] = rng.choice([0, spec.layers + 1, 2 ** 40])
            mutations.append(f"kv_cache layers = {knobs['cache_layers']}")
        elif which == "vocab_one":
            spec.vocab = 1
            mutations.append("vocab 1")
        else:
            spec.inter = rng.choice([2 ** 31, 2 ** 40, 2 ** 62 // max(spec.hidden, 1)])
            mutations.append(f"intermediate_size {spec.inter} (weights overflow)")
    elif kind == "group":
        if rng.random() < 0.5:
            spec.kv_int4 = rng.choice([3, 5, spec.head_dim * 2, -1, 2 ** 40])
            mutations.append(f"int4 kv groups = {spec.kv_int4}")
        else:
            spec.linear_int4 = rng.choice([3, 5, 2 ** 40, -4, 1])
            mutations.append(f"qtensor group_size = {spec.linear_int4}")
    else:
        ckpt_mutations.append(rng.choice(["missing", "shape", "nan", "inf", "dtype", "rows"]))
        mutations.append(f"checkpoint: {ckpt_mutations[-1]}")


def random_weights(builder: Builder, rng: np.random.Generator,
                   ckpt_mutations: list) -> dict[str, np.ndarray]:
    tensors = {}
    for w in builder.weights.values():
        for name, shape in w.checkpoint_tensors():
            if any(dim > 1 << 16 or dim <= 0 for dim in shape):
                continue  # the mutated, absurd ones: the compiler must refuse first
            if len(shape) == 1:
                arr = rng.uniform(0.9, 1.1, shape) * w.scale
            else:
                arr = rng.standard_normal(shape) * (w.scale / math.sqrt(shape[1]))
            tensors[name] = arr.astype(np.float32)
    names = list(tensors)
    for m in ckpt_mutations:
        if not names:
            break
        victim = names[int(rng.integers(len(names)))]
        if m == "missing":
            tensors.pop(victim, None)
            names.remove(victim)
        elif m == "shape":
            a = tensors[victim]
            tensors[victim] = np.zeros(tuple(d + 1 for d in a.shape), np.float32)
        elif m == "rows" and tensors[victim].ndim == 2:
            tensors[victim] = tensors[victim][:-1] if tensors[victim].shape[0] > 1 else \
                tensors[victim].reshape(-1)
        elif m in ("nan", "inf") and tensors[victim].dtype.kind == "f":
            a = tensors[victim].copy()
            a.reshape(-1)[:: max(1, a.size // 3)] = np.nan if m == "nan" else np.inf
            tensors[victim] = a
        elif m == "dtype":
            tensors[victim] = tensors[victim].astype(np.int32)
    return tensors


def random_steps(rng: random.Random, vocab: int, slots: int, max_ctx: int,
                 hostile: bool) -> list:
    steps = []
    for i in range(rng.randint(2, 5)):
        valid = not hostile or rng.random() < 0.5
        m = rng.randint(1, slots)
        slot_ids = rng.sample(range(slots), m)
        tokens = [rng.randrange(max(vocab, 1)) for _ in range(m)]
        positions = [rng.randrange(max_ctx) if rng.random() < 0.5 else min(i, max_ctx - 1)
                     for _ in range(m)]
        temperature = [rng.choice([0.0, 0.7, 1.0, 1.5]) for _ in range(m)]
        top_k = [rng.choice([0, 0, 1, 3, vocab, vocab + 5]) for _ in range(m)]
        top_p = [rng.choice([1.0, 1.0, 0.9, 0.5, 1e-6]) for _ in range(m)]
        uniform = [rng.choice([0.0, rng.random(), 0.99999994]) for _ in range(m)]
        if not valid:
            what = rng.choice(["token", "token", "position", "position", "slot", "slot",
                               "batch", "dup_slot", "sampling"])
            j = rng.randrange(m)
            if what == "token":
                tokens[j] = rng.choice([vocab, vocab + 1, -1, INT32_MAX, INT32_MIN])
            elif what == "position":
                positions[j] = rng.choice([max_ctx, -1, INT32_MAX, INT32_MIN, max_ctx + 100])
            elif what == "slot":
                slot_ids[j] = rng.choice([slots, -1, INT32_MAX, INT32_MIN])
            elif what == "batch":
                if rng.random() < 0.5:
                    m = 0
                    tokens = positions = slot_ids = temperature = top_k = top_p = uniform = []
                else:
                    extra = slots + 1 - m
                    m = slots + 1
                    tokens = tokens + [0] * extra
                    positions = positions + [0] * extra
                    slot_ids = slot_ids + list(range(extra))
                    temperature = temperature + [0.0] * extra
                    top_k = top_k + [0] * extra
                    top_p = top_p + [1.0] * extra
                    uniform = uniform + [0.5] * extra
            elif what == "dup_slot":
                if m >= 2:
                    slot_ids[1] = slot_ids[0]  # run or refused: either is fine
                else:
                    valid = True  # one row: nothing to duplicate
            else:
                temperature[j] = rng.choice([float("nan"), float("inf"), -1.0, 1e-30, 1e30])
                top_k[j] = rng.choice([-1, INT32_MIN, INT32_MAX])
                top_p[j] = rng.choice([float("nan"), 0.0, -1.0, 2.0, float("inf")])
                uniform[j] = rng.choice([float("nan"), 1.0, -0.5, 7.0])

        def fl(xs):
            return " ".join(repr(float(np.float32(x))) if math.isfinite(x) else
                            ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))
                            for x in xs)

        line = (f"step {m} | {' '.join(map(str, tokens))} | {' '.join(map(str, positions))} | "
                f"{' '.join(map(str, slot_ids))} | {fl(temperature)} | "
                f"{' '.join(map(str, top_k))} | {fl(top_p)} | {fl(uniform)}")
        steps.append((valid, re.sub(" +", " ", line)))
    return steps


def generate(seed: int, hostile: bool | None = None) -> Case:
    """The case for ``seed`` (deterministic). ``hostile`` None: decided by the
    seed (about half the cases are mutated)."""
    rng = random.Random(seed)
    if hostile is None:
        hostile = rng.random() < 0.5
    spec = random_spec(rng)
    mutations: list = []
    ckpt_mutations: list = []
    knobs: dict = {}
    if hostile:
        for _ in range(rng.choice([1, 1, 2])):
            _mutate(spec, knobs, rng, mutations, ckpt_mutations)
    builder = Builder(spec, rng, mutations)
    builder.knobs = knobs
    mlir = builder.build()
    if hostile and not mutations:
        mutations.append("(a mutation that did not fire)")
    weights = random_weights(builder, np.random.default_rng(seed), ckpt_mutations)
    slots = rng.choice([1, 2, 3])
    max_ctx = max(1, min(rng.choice([1, 4, 16]), spec.max_pos if spec.max_pos > 0 else 16))
    steps = random_steps(rng, spec.vocab, slots, max_ctx, hostile=hostile or rng.random() < 0.5)
    return Case(seed=seed, mutations=mutations, mlir=mlir, weights=weights,
                dtype=ST_DTYPE[spec.elem], slots=slots, max_context=max_ctx, steps=steps)


# ---------------------------------------------------------------------------
# The oracle

@dataclass
class Outcome:
    failure: str | None     # a one-line class, None when the case passed
    detail: str = ""
    compile_log: str = ""
    run_log: str = ""
    compiled: bool = False
    ran_steps: int = 0


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "SUMMARY: UndefinedBehaviorSanitizer", "SUMMARY: AddressSanitizer")
COMPILER_CRASH_MARKERS = ("LLVM ERROR", "Assertion", "Stack dump", "PLEASE submit",
                          "UNREACHABLE", "Sanitizer")


def _signal_name(rc: int) -> str:
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return f"signal {-rc}"


def _run(cmd: list, timeout: int, env=None) -> tuple[int | None, str]:
    """(returncode or None on timeout, stdout+stderr). The child gets its own
    process group so a hang is killed whole."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        return proc.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace")


def fault_buffer(log: str) -> str:
    """Which buffer of the runner's map the faulting address hit (or is next to)."""
    m = re.search(r"SEGV on unknown address (0x[0-9a-f]+)", log)
    if not m:
        m = re.search(r"BUS on unknown address (0x[0-9a-f]+)", log)
    if not m:
        return ""
    addr = int(m.group(1), 16)
    best = None
    for name, lo, hi in re.findall(r"buffer (\S+) (0x[0-9a-f]+) (0x[0-9a-f]+)", log):
        lo, hi = int(lo, 16), int(hi, 16)
        dist = 0 if lo <= addr < hi else (lo - addr if addr < lo else addr - hi)
        if best is None or dist < best[0]:
            best = (dist, name, addr - lo, hi - lo)
    if best is None or best[0] > 1 << 16:
        return f"address {m.group(1)} (no buffer near)"
    dist, name, off, size = best
    where = "before" if off < 0 else ("inside" if off < size else "past the end of")
    return f"address {m.group(1)} {where} {name} (offset {off} of {size} bytes)"


def write_case(case: Case, directory: str) -> dict:
    os.makedirs(directory, exist_ok=True)
    paths = {"mlir": os.path.join(directory, "model.mlir"),
             "checkpoint": os.path.join(directory, "checkpoint"),
             "inputs": os.path.join(directory, "inputs.txt"),
             "library": os.path.join(directory, "model.so")}
    with open(paths["mlir"], "w") as f:
        f.write(case.mlir)
    os.makedirs(paths["checkpoint"], exist_ok=True)
    save_file(case.weights, os.path.join(paths["checkpoint"], "model.safetensors"),
              case.dtype)
    with open(paths["inputs"], "w") as f:
        f.write(case.inputs_text())
    return paths


def check(case: Case, directory: str, fdc: str, runner: str) -> Outcome:
    paths = write_case(case, directory)
    rc, log = _run([fdc, "compile", paths["mlir"], "--target=host", "-o", paths["library"]],
                   COMPILE_TIMEOUT)
    out = Outcome(None, compile_log=log)
    if rc is None:
        out.failure = "compile: hang"
        out.detail = f"fdc compile ran past {COMPILE_TIMEOUT} s"
        return out
    if rc < 0:
        out.failure = f"compile: {_signal_name(rc)}"
        out.detail = _first_line(log, ("error", "LLVM", "Assert")) or log[-300:]
        return out
    crash = next((m for m in COMPILER_CRASH_MARKERS if m in log), None)
    if crash:
        out.failure = f"compile: {crash}"
        out.detail = _first_line(log, (crash,))
        return out
    if rc != 0:
        if rc != 1 or "error:" not in log:
            out.failure = f"compile: exit {rc} without an error: diagnostic"
            out.detail = log[-300:]
        elif case.valid:
            out.failure = "compile: a well-typed model was rejected"
            out.detail = _first_line(log, ("error:",))
        return out
    out.compiled = True
    env = dict(os.environ)
    env.setdefault("FDC_GUARD_PAGES", "tight")
    env["ASAN_OPTIONS"] = ("detect_leaks=0:abort_on_error=0:handle_segv=1:handle_sigbus=1:"
                           "handle_abort=1:" + env.get("ASAN_OPTIONS", ""))
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:" + env.get("UBSAN_OPTIONS", "")
    rc, log = _run([runner, paths["library"], paths["checkpoint"], paths["inputs"]],
                   RUN_TIMEOUT, env)
    out.run_log = log
    out.ran_steps = len(re.findall(r"^step \d+ ran", log, re.M))
    marker = next((m for m in SANITIZER_MARKERS if m in log), None)
    if rc is None:
        out.failure = "run: hang"
        out.detail = f"the runner ran past {RUN_TIMEOUT} s; last line: {_last_step(log)}"
    elif marker or rc < 0:
        what = _first_line(log, ("ERROR: AddressSanitizer", "runtime error:")) or \
            (_signal_name(rc) if rc < 0 else marker)
        if not marker:
            kind = _signal_name(rc)
        elif "SEGV" in what or "BUS" in what:
            kind = "SEGV" if "SEGV" in what else "BUS"
        elif "runtime error" in what:
            # UBSan: name the check and the source line, not the values.
            kind = "UBSan " + re.sub(r"^.*?(\S+:\d+):\d+: runtime error: ([^0-9'-]*).*$",
                                     r"\2at \1", what).strip()
        else:
            kind = "ASan " + re.sub(r"^.*AddressSanitizer: (\S+).*$", r"\1", what)
        out.failure = f"run: {kind}"
        fb = fault_buffer(log)
        if fb:
            out.failure += " " + re.sub(r" ?\(offset.*", "",
                                        re.sub(r"address 0x[0-9a-f]+ ", "", fb))
        out.detail = f"{_last_step(log)}: {what}" + (f"; {fb}" if fb else "")
    elif rc == 3:
        out.failure = "run: next token out of range"
        out.detail = _first_line(log, ("FDC-FUZZ-CONTRACT",))
    elif rc == 2:
        if case.valid:
            out.failure = "run: a well-typed model was refused at load"
            out.detail = _first_line(log, ("load refused",))
    elif rc != 0:
        out.failure = f"run: runner exit {rc}"
        out.detail = log[-300:]
    elif case.valid:
        for i, (valid, _) in enumerate(case.steps):
            if valid and not re.search(rf"^step {i} ran", log, re.M):
                out.failure = "run: a valid step was refused"
                out.detail = _first_line(log, (f"step {i} refused",))
                break
    return out


def _first_line(log: str, needles) -> str:
    for line in log.splitlines():
        if any(n in line for n in needles):
            return line.strip()[:400]
    return ""


def _last_step(log: str) -> str:
    steps = re.findall(r"fdc-ir-fuzz-runner: step (\d+)", log)
    return f"step {steps[-1]}" if steps else "at load"


def save_failure(case: Case, outcome: Outcome, scratch: str, out_dir: str, fdc: str,
                 runner: str) -> str:
    dest = os.path.join(out_dir, f"case-{case.seed}")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(scratch, dest)
    with open(os.path.join(dest, "compile.log"), "w") as f:
        f.write(outcome.compile_log)
    with open(os.path.join(dest, "run.log"), "w") as f:
        f.write(outcome.run_log)
    with open(os.path.join(dest, "case.json"), "w") as f:
        json.dump({"seed": case.seed, "failure": outcome.failure, "detail": outcome.detail,
                   "mutations": case.mutations,
                   "steps": [{"valid": v, "line": line} for v, line in case.steps]}, f, indent=1)
    with open(os.path.join(dest, "repro.sh"), "w") as f:
        f.write("#!/bin/sh\n# " + outcome.failure + "\ncd \"$(dirname \"$0\")\"\n"
                f"{shlex.quote(fdc)} compile model.mlir --target=host -o model.so &&\n"
                f"FDC_GUARD_PAGES=tight ASAN_OPTIONS=detect_leaks=0 "
                f"{shlex.quote(runner)} model.so checkpoint inputs.txt\n")
    os.chmod(os.path.join(dest, "repro.sh"), 0o755)
    return dest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fdc.testing.ir_fuzz",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="stop starting cases after this")
    ap.add_argument("--cases", type=int, default=0, help="stop after this many cases (0 = no cap)")
    ap.add_argument("--seed", type=int, default=None,
                    help="first case's seed (default: from the clock; printed)")
    ap.add_argument("--fdc", required=True)
    ap.add_argument("--runner", required=True)
    ap.add_argument("--out", required=True, help="failing cases are saved here")
    ap.add_argument("--only", choices=["valid", "hostile"], default=None,
                    help="generate only unmutated (or only mutated) models")
    ap.add_argument("--inputs", choices=["all", "valid"], default="all",
                    help="'valid': drop the hostile steps (to look past the runtime's "
                         "input checks at the compiler)")
    ap.add_argument("--one", action="store_true", help="run just the case --seed and print it")
    args = ap.parse_args(argv)

    seed = args.seed if args.seed is not None else int(time.time() * 1000) % (1 << 31)
    hostile = None if args.only is None else args.only == "hostile"
    fdc, runner = os.path.abspath(args.fdc), os.path.abspath(args.runner)
    for tool in (fdc, runner):
        if not os.access(tool, os.X_OK):
            print(f"ir_fuzz: {tool} is not an executable", file=sys.stderr)
            return 2
    os.makedirs(args.out, exist_ok=True)
    print(f"ir_fuzz: seed {seed}, {args.seconds:g} s, failing cases go to {args.out}", flush=True)
    start = time.monotonic()
    cases = compiled = ran = 0
    failures: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="fdc-ir-fuzz-") as tmp:
        i = 0
        while True:
            if args.cases and cases >= args.cases:
                break
            if not args.cases and time.monotonic() - start >= args.seconds:
                break
            case_seed = seed + i
            i += 1
            case = generate(case_seed, hostile)
            if args.inputs == "valid":
                case.steps = [step for step in case.steps if step[0]]
            scratch = os.path.join(tmp, "case")
            shutil.rmtree(scratch, ignore_errors=True)
            outcome = check(case, scratch, fdc, runner)
            cases += 1
            compiled += outcome.compiled
            ran += outcome.ran_steps
            if outcome.failure:
                dest = save_failure(case, outcome, scratch, args.out, fdc, runner)
                failures.setdefault(outcome.failure, []).append(dest)
                print(f"FAIL seed {case_seed}: {outcome.failure}: {outcome.detail}\n"
                      f"     saved to {dest}", flush=True)
            elif args.one:
                print(case.mlir)
            if args.one:
                break
            shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - start
    print(f"ir_fuzz: {cases} cases in {elapsed:.0f} s ({compiled} compiled, {ran} steps ran), "
          f"{sum(map(len, failures.values()))} failures in {len(failures)} classes", flush=True)
    for failure, dests in sorted(failures.items()):
        print(f"  {len(dests):4d} x {failure}  e.g. {dests[0]}")
    if not args.one and cases >= 10 and (compiled == 0 or ran == 0):
        # A regression that refuses every model (or every step) must not pass
        # as "found nothing".
        print("ir_fuzz: nothing compiled or no step ran: the fuzzer tested nothing",
              file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
