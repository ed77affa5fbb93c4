"""Write a tiny Llama-shaped checkpoint in the Hugging Face layout.

    python3 -m fdc.testing.tiny_checkpoint OUT_DIR [--variant gqa|mha|mqa]
        [--dtype f32|bf16|f16] [--seed N] [--tied] [--shards N] [--sparsity S]

Weights are random but deterministic from the seed, and scaled so that
activations stay O(1): projections N(0, 1/fan_in) (std 1/sqrt(fan_in)),
norm weights uniform in [0.9, 1.1], embeddings N(0, 1). lm_head uses std
4/sqrt(hidden) so logits (std ~4) are well separated and greedy decoding does
not hinge on rounding.

--sparsity S magnitude-prunes every MLP weight (gate, up, down): the
round(S * size) entries of smallest magnitude become exact zeros.

With tied embeddings the logits are E @ norm(h) where h = E[token] + ..., so
N(0, 1) embeddings make every token predict itself. The tied variant
therefore uses embeddings of std TIED_EMBEDDING_STD, small beside the block
outputs, and a final norm weight scaled up to keep the logits spread.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from ..config import ModelConfig
from ..safetensors import save_file

TIED_EMBEDDING_STD = 0.05
TORCH_DTYPE = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}
SAFETENSORS_DTYPE = {"f32": "F32", "bf16": "BF16", "f16": "F16"}
MLP_WEIGHTS = (".mlp.gate_proj.weight", ".mlp.up_proj.weight", ".mlp.down_proj.weight")


KV_HEADS = {"gqa": 2, "mha": 8, "mqa": 1}


def tiny_config(variant: str = "gqa", dtype: str = "f32", tied: bool = False,
                max_position_embeddings: int = 2048) -> dict:
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": KV_HEADS[variant],
        "vocab_size": 512,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "max_position_embeddings": max_position_embeddings,
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "torch_dtype": TORCH_DTYPE[dtype],
    }


def tiny_weights(config: dict, seed: int = 0) -> dict[str, np.ndarray]:
    """float32 weights for ``config``, in checkpoint order."""
    rng = np.random.default_rng(seed)
    cfg = ModelConfig.from_dict(config)
    tied = cfg.tie_word_embeddings
    weights = {}
    for name, shape in cfg.tensor_shapes().items():
        if name == "model.embed_tokens.weight":
            w = rng.standard_normal(shape) * (TIED_EMBEDDING_STD if tied else 1.0)
        elif len(shape) == 1:
            w = rng.uniform(0.9, 1.1, shape)
            if tied and name == "model.norm.weight":
                w *= 0.2 / TIED_EMBEDDING_STD
        else:
            scale = 4.0 if name == "lm_head.weight" else 1.0
            w = rng.standard_normal(shape) * (scale / np.sqrt(shape[1]))
        weights[name] = w.astype(np.float32)
    return weights


def magnitude_prune(w: np.ndarray, sparsity: float) -> np.ndarray:
    """A copy of ``w`` whose round(sparsity * size) smallest-magnitude entries
    are zero (ties broken by position, so the result is deterministic)."""
    if not 0.0 <= sparsity <= 1.0:
        raise ValueError(f"sparsity must be in [0, 1], got {sparsity}")
    flat = np.array(w, copy=True).reshape(-1)
    count = int(round(sparsity * flat.size))
    flat[np.argsort(np.abs(flat), kind="stable")[:count]] = 0
    return flat.reshape(np.shape(w))


def prune_mlp(weights: dict[str, np.ndarray], sparsity: float) -> dict[str, np.ndarray]:
    """``weights`` with every MLP weight magnitude-pruned to ``sparsity``."""
    return {name: magnitude_prune(w, sparsity) if name.endswith(MLP_WEIGHTS) else w
            for name, w in weights.items()}


def write_checkpoint(out_dir: str, config: dict, weights: dict[str, np.ndarray],
                     dtype: str = "f32", shards: int = 1) -> None:
    """Write config.json and the weights as one file or ``shards`` files plus an index."""
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    st_dtype = SAFETENSORS_DTYPE[dtype]
    if shards == 1:
        save_file(weights, os.path.join(out_dir, "model.safetensors"), st_dtype,
                  metadata={"format": "pt"})
        return
    names = list(weights)
    if shards > len(names):
        raise ValueError(f"{shards} shards for only {len(names)} tensors")
    chunks = np.array_split(np.arange(len(names)), shards)
    weight_map, total = {}, 0
    for i, chunk in enumerate(chunks):
        file = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {names[j]: weights[names[j]] for j in chunk}
        save_file(part, os.path.join(out_dir, file), st_dtype, metadata={"format": "pt"})
        weight_map.update({name: file for name in part})
        total += sum(w.size * (4 if dtype == "f32" else 2) for w in part.values())
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")


def make_tiny_checkpoint(out_dir: str, variant: str = "gqa", dtype: str = "f32",
                         seed: int = 0, tied: bool = False, shards: int = 1,
                         sparsity: float = 0.0,
                         max_position_embeddings: int = 2048) -> None:
    config = tiny_config(variant, dtype, tied, max_position_embeddings)
    weights = tiny_weights(config, seed)
    if sparsity:
        weights = prune_mlp(weights, sparsity)
    write_checkpoint(out_dir, config, weights, dtype, shards)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python3 -m fdc.testing.tiny_checkpoint",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--variant", choices=tuple(KV_HEADS), default="gqa",
                    help="8 query heads over 2 (gqa), 8 (mha) or 1 (mqa) kv heads")
    ap.add_argument("--dtype", choices=("f32", "bf16", "f16"), default="f32")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tied", action="store_true", help="tie lm_head to the embedding")
    ap.add_argument("--shards", type=int, default=1, help="number of safetensors files")
    ap.add_argument("--sparsity", type=float, default=0.0, metavar="S",
                    help="magnitude-prune each MLP weight to a fraction S of zeros")
    ap.add_argument("--max-position-embeddings", type=int, default=2048, metavar="N",
                    help="longest context the model (and a runtime KV slot) supports")
    args = ap.parse_args(argv)
    if args.shards < 1:
        ap.error("--shards must be at least 1")
    if not 0.0 <= args.sparsity <= 1.0:
        ap.error(f"--sparsity must be in [0, 1], got {args.sparsity}")
    try:
        make_tiny_checkpoint(args.out_dir, args.variant, args.dtype, args.seed, args.tied,
                             args.shards, args.sparsity, args.max_position_embeddings)
    except ValueError as e:
        ap.error(str(e))


if __name__ == "__main__":
    main()
