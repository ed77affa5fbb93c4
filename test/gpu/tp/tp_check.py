"""Tensor parallelism on 2 GPUs (test/gpu/tp/run.sh): the CUDA libraries of
2 ranks decode as those of 1 rank (greedy ids identical in f32, logits
close), and the per-token latency of the 7B-wide model (32 layers, bf16) at
B = 1, 8 and 32 with 1 and 2 ranks, in the same run on the same machine.
Writes $OUT/tp.json when OUT is set."""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fdc.runtime import Model
from fdc.testing import wide_model
from fdc.testing.tiny_checkpoint import make_tiny_checkpoint

REPO = Path(__file__).resolve().parents[3]
MODELS = REPO / ".gpu-artifacts-tp" / "models"
failures = []
results = {"checks": [], "latency": []}


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)
    results["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
    if not ok:
        failures.append(name)


def generate(so, ckpt, prompt, steps, **kw):
    with Model(so, ckpt, max_context=512) as model:
        return model.generate(prompt, steps, return_logits=True, **kw)


def compare(name, ckpt, prompt=(1, 2, 3, 4), steps=32):
    one = MODELS / f"{name}-tp1.so"
    two = MODELS / f"{name}-tp2.so"
    try:
        ids, logits = generate(one, ckpt, list(prompt), steps)
        tp_ids, tp_logits = generate(two, ckpt, list(prompt), steps)
    except Exception as err:  # noqa: BLE001
        check(f"{name}: tp2 ids == tp1 ids", False, repr(err))
        return
    err = float(np.abs(np.asarray(tp_logits) - np.asarray(logits)).max())
    check(f"{name}: tp2 ids == tp1 ids (greedy, {steps} tokens)", tp_ids == ids,
          f"max |logit diff| {err:.2e}")
    check(f"{name}: tp2 logits within 1e-3 of tp1", err < 1e-3, f"{err:.2e}")
    sampled = dict(temperature=0.8, top_k=40, top_p=0.9, seed=3)
    ids, _ = generate(one, ckpt, list(prompt), steps, **sampled)
    tp_ids, _ = generate(two, ckpt, list(prompt), steps, **sampled)
    check(f"{name}: tp2 sampled ids == tp1", tp_ids == ids)


BATCHES = (1, 8, 32)


def latency(name, ckpt, ranks, graphs, steps=64):
    """us per token at each batch of BATCHES, one load of the model."""
    so = MODELS / f"{name}-tp{ranks}.so"
    # Read when the backend is created.
    os.environ["FDC_CUDA_GRAPHS"] = "1" if graphs else "0"
    mode = "graphs" if graphs else "eager"
    times = {}
    with Model(so, ckpt, max_context=256, num_slots=max(BATCHES)) as model:
        for batch in BATCHES:
            requests = [dict(prompt_ids=[1 + i], max_new_tokens=8) for i in range(batch)]
            model.generate_batch(requests)  # warm up (and capture)
            requests = [dict(prompt_ids=[1 + i], max_new_tokens=steps)
                        for i in range(batch)]
            start = time.perf_counter()
            out = model.generate_batch(requests)
            elapsed = time.perf_counter() - start
            assert all(r["error"] is None for r in out), out
            # `steps` steps of `batch` rows: the prompt token, then a step
            # per new token but the last.
            times[batch] = elapsed / steps * 1e6
            print(f"latency {name} ranks={ranks} B={batch} {mode}: "
                  f"{times[batch]:.0f} us/token", flush=True)
            results["latency"].append(dict(model=name, ranks=ranks, batch=batch,
                                           mode=mode, us_per_token=times[batch]))
    return times


def main():
    work = Path(tempfile.mkdtemp(prefix="fdc-tp-"))
    for variant in ("gqa", "mha"):
        ckpt = work / variant
        make_tiny_checkpoint(str(ckpt), variant, "f32", seed=0)
        compare(f"tiny-{variant}-f32", ckpt)
    wide = work / "wide-f32"
    wide_model.build(str(wide), str(MODELS / "wide-f32-config.json"), 0, dtype="float32")
    compare("wide-f32", wide, steps=24)
    if "--no-latency" not in sys.argv:
        import shutil
        import torch
        models = (("wide32-bf16", "wide32-config.json"),
                  ("wide13b-bf16", "wide13b-config.json"))
        if "--wide32-only" in sys.argv:
            models = models[:1]
        for name, config in models:
            ckpt = work / name
            wide_model.build(str(ckpt), str(MODELS / config), 0)
            torch.cuda.empty_cache()
            # 1 and 2 ranks, eager and replaying step graphs (a rank's graph
            # is cut at its collectives, which run between the segments).
            modes = ((1, False), (1, True), (2, False), (2, True))
            measured = {mode: latency(name, ckpt, *mode) for mode in modes}
            for graphs in (False, True):
                mode = "graphs" if graphs else "eager"
                for batch in BATCHES:
                    ratio = measured[(2, graphs)][batch] / measured[(1, graphs)][batch]
                    print(f"ratio {name} tp2/tp1 {mode} B={batch}: {ratio:.3f}",
                          flush=True)
                    results["latency"].append(dict(model=name, batch=batch,
                                                   mode=mode, ratio=ratio))
            shutil.rmtree(ckpt)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "tp.json").write_text(json.dumps(results, indent=1))
    print(f"{len(results['checks']) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
