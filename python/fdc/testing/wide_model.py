"""The 7B-wide Llama of the GPU test and the benchmark suite: hidden 4096,
32 query / 8 kv heads of 128, 2 layers, vocab 32000, bf16.

  header-only DIR --config-out FILE   (compile side, no torch) a safetensors
                                      file with the real header and no data
  build DIR --config FILE --seed S    (GPU side) transformers builds
                                      LlamaForCausalLM from the seed and saves it
"""
import argparse
import json
import os
import struct

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 2,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 32000,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "max_position_embeddings": 4096,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    # Larger than Hugging Face's 0.02 so that logits are spread out and greedy
    # decoding is not a string of near-ties.
    "initializer_range": 0.05,
    "attention_bias": False,
    "mlp_bias": False,
}


# A small model with the 7B-wide head layout (head_dim 128, GQA), for
# locating a difference between the two.
HEAD128 = dict(CONFIG, hidden_size=512, intermediate_size=1024,
               num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
               max_position_embeddings=2048, rope_theta=10000.0,
               initializer_range=0.1)
# All 32 layers of the 7B-wide model, and a 13B-wide one (Llama-2-13B's
# shapes: 40 heads of 128, MHA): per-token latency (tensor parallel).
WIDE32 = dict(CONFIG, num_hidden_layers=32)
WIDE13B = dict(CONFIG, hidden_size=5120, intermediate_size=13824,
               num_hidden_layers=40, num_attention_heads=40,
               num_key_value_heads=40)
# One rank's share of WIDE32 split over 2 ranks (half the heads, MLP columns
# and vocabulary), on one GPU: what a tensor-parallel rank computes, without
# the collectives.
WIDE32_SHARE = dict(WIDE32, intermediate_size=7168, num_attention_heads=16,
                    num_key_value_heads=4, vocab_size=16000)
PRESETS = {"wide": CONFIG, "head128": HEAD128, "wide32": WIDE32,
           "wide13b": WIDE13B, "wide32-share": WIDE32_SHARE}


def tensor_shapes(cfg):
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    d = cfg["head_dim"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    shapes = {"model.embed_tokens.weight": [v, h]}
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes.update({
            p + "input_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [q, h],
            p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h],
            p + "self_attn.o_proj.weight": [h, q],
            p + "post_attention_layernorm.weight": [h],
            p + "mlp.gate_proj.weight": [i, h],
            p + "mlp.up_proj.weight": [i, h],
            p + "mlp.down_proj.weight": [h, i],
        })
    shapes["model.norm.weight"] = [h]
    shapes["lm_head.weight"] = [v, h]
    return shapes


def write_header_only(out_dir, config_out, cfg=CONFIG):
    os.makedirs(out_dir, exist_ok=True)
    header, offset = {}, 0
    f32 = cfg["torch_dtype"] == "float32"
    for name, shape in tensor_shapes(cfg).items():
        size = 4 if f32 else 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32" if f32 else "BF16", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path = os.path.join(out_dir, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + offset)  # sparse: no data written
    targets = [os.path.join(out_dir, "config.json")]
    if config_out:
        targets.append(config_out)
    for target in targets:
        with open(target, "w") as f:
            json.dump(cfg, f, indent=2)


def build(out_dir, config_path, seed, dtype="bfloat16"):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig.from_json_file(config_path)
    torch.manual_seed(seed)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    keep_rotary_frequencies_in_f32(model)
    model.save_pretrained(out_dir, safe_serialization=True,
                          max_shard_size="20GB")
    return model


def keep_rotary_frequencies_in_f32(model):
    """`.to(bfloat16)` also rounds the rotary inv_freq buffer to bf16, which
    shifts every angle by up to 0.4 % (radians at long positions). Loading a
    checkpoint with from_pretrained computes it in f32, as fdc does: restore
    that. Call again after every dtype cast of the model."""
    import torch

    for module in model.modules():
        original = getattr(module, "original_inv_freq", None)
        if original is not None and hasattr(module, "inv_freq"):
            module.inv_freq = original.to(module.inv_freq.device, torch.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("header-only", "build"))
    ap.add_argument("out_dir")
    ap.add_argument("--config-out", help="where to also write config.json")
    ap.add_argument("--config", help="a config.json to use instead of --preset")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preset", choices=tuple(PRESETS), default="wide")
    ap.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    args = ap.parse_args()
    if args.mode == "header-only":
        if args.config:
            with open(args.config) as f:
                cfg = json.load(f)
        else:
            cfg = dict(PRESETS[args.preset])
        if args.dtype == "float32":
            cfg["torch_dtype"] = "float32"
        write_header_only(args.out_dir, args.config_out, cfg)
    else:
        build(args.out_dir, args.config, args.seed)


if __name__ == "__main__":
    main()
