"""Tensor parallelism on 2 GPUs (test/gpu/tp/run.sh): the CUDA libraries of
2 ranks decode as those of 1 rank (greedy ids identical in f32, logits
close), and the per-token latency of the 7B-wide model (32 layers, bf16) at
B = 1, 8 and 32 with 1 and 2 ranks, in the same run on the same machine:
eager steps, step graphs, and for 2 ranks step graphs cut at the
collectives (FDC_NCCL_GRAPHS=0) beside those that hold them, and step graphs
with the ranks' scratch in NCCL symmetric windows (FDC_NCCL_WINDOW=1)
beside those without; one rank's
share of the model (wide32-share: half the heads, MLP columns and
vocabulary) on one GPU, which TP 2's step exceeds by what its collectives
and their waits cost; and NCCL's all-reduce of one step's sizes alone.
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


def latency(name, ckpt, ranks, mode, steps=64):
    """us per token at each batch of BATCHES, one load of the model. `mode`:
    "eager", "graphs" (NCCL inside them), "graphs-cut" (cut at each
    collective, which runs between the segments) or "graphs-window" (the
    scratch in NCCL symmetric windows)."""
    so = MODELS / f"{name}-tp{ranks}.so"
    # Read when the backend and the group are created.
    os.environ["FDC_CUDA_GRAPHS"] = "0" if mode == "eager" else "1"
    os.environ["FDC_NCCL_GRAPHS"] = "0" if mode == "graphs-cut" else "1"
    os.environ["FDC_NCCL_WINDOW"] = "1" if mode == "graphs-window" else "0"
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


def share(tp2_graphs, work):
    """One rank's share of wide32 on one GPU, with step graphs; TP 2's
    step graphs minus it: the collectives and the ranks' waits."""
    import shutil
    ckpt = work / "wide32-share"
    wide_model.build(str(ckpt), str(MODELS / "wide32-share-config.json"), 0)
    alone = latency("wide32-share-bf16", ckpt, 1, "graphs")
    # The host's part of a step that overlapped steps hide (a tensor-parallel
    # model's steps do not overlap).
    os.environ["FDC_OVERLAP_STEPS"] = "0"
    serial = latency("wide32-share-bf16", ckpt, 1, "graphs, steps not overlapped")
    del os.environ["FDC_OVERLAP_STEPS"]
    for batch in BATCHES:
        print(f"share alone, steps not overlapped - overlapped B={batch}: "
              f"{serial[batch] - alone[batch]:.0f} us a step", flush=True)
    for batch in BATCHES:
        extra = tp2_graphs[batch] - alone[batch]
        print(f"tp2 graphs - one rank's share alone B={batch}: {extra:.0f} us "
              f"a step", flush=True)
        results["latency"].append(dict(model="wide32-bf16", batch=batch,
                                       mode="tp2 graphs - share alone",
                                       us_per_token=extra))
    shutil.rmtree(ckpt)


def all_reduce_alone(hidden, layers, iterations=200):
    """NCCL's all-reduce of a step's sizes ([B, hidden] bf16, two a layer) on
    2 GPUs, alone: torch.cuda.nccl from one thread (a group call over both
    devices, eager), timed between CUDA events on device 0."""
    import torch
    import torch.cuda.nccl as nccl
    for batch in BATCHES:
        tensors = [torch.ones(batch, hidden, dtype=torch.bfloat16, device=f"cuda:{d}")
                   for d in (0, 1)]
        if not nccl.is_available(tensors):
            print("all-reduce alone: torch.cuda.nccl is not available", flush=True)
            return
        for _ in range(20):
            nccl.all_reduce(tensors)
        for d in (0, 1):
            torch.cuda.synchronize(d)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(0):
            start.record()
        for _ in range(iterations):
            nccl.all_reduce(tensors)
        with torch.cuda.device(0):
            end.record()
        for d in (0, 1):
            torch.cuda.synchronize(d)
        per_call = start.elapsed_time(end) * 1e3 / iterations
        per_step = per_call * 2 * layers
        print(f"all-reduce alone B={batch}: {per_call:.1f} us a call, "
              f"{per_step:.0f} us a step ({2 * layers} calls)", flush=True)
        results["all_reduce"] = results.get("all_reduce", []) + [
            dict(batch=batch, hidden=hidden, us_per_call=per_call,
                 us_per_step=per_step, calls_per_step=2 * layers)]


def main():
    """Arguments: --no-latency (the ids only), --no-ids (the latency only),
    --wide32-only / --wide13b-only (one model's latency), --graphs-only
    (graphs and graphs-window only: no eager or cut steps, no share)."""
    work = Path(tempfile.mkdtemp(prefix="fdc-tp-"))
    if "--no-ids" not in sys.argv:
        for variant in ("gqa", "mha"):
            ckpt = work / variant
            make_tiny_checkpoint(str(ckpt), variant, "f32", seed=0)
            compare(f"tiny-{variant}-f32", ckpt)
        wide = work / "wide-f32"
        wide_model.build(str(wide), str(MODELS / "wide-f32-config.json"), 0,
                         dtype="float32")
        compare("wide-f32", wide, steps=24)
    if "--no-latency" not in sys.argv:
        import shutil
        import torch
        models = (("wide32-bf16", "wide32-config.json"),
                  ("wide13b-bf16", "wide13b-config.json"))
        if "--wide32-only" in sys.argv:
            models = models[:1]
        elif "--wide13b-only" in sys.argv:
            models = models[1:]
        for name, config in models:
            ckpt = work / name
            wide_model.build(str(ckpt), str(MODELS / config), 0)
            torch.cuda.empty_cache()
            # 1 and 2 ranks, eager and replaying step graphs; 2 ranks also
            # with graphs cut at the collectives.
            modes = ((1, "eager"), (1, "graphs"), (2, "eager"),
                     (2, "graphs-cut"), (2, "graphs"), (2, "graphs-window"))
            pairs = (("eager", "eager"), ("graphs", "graphs"),
                     ("graphs-cut", "graphs"), ("graphs-window", "graphs"))
            if "--graphs-only" in sys.argv:
                modes = ((1, "graphs"), (2, "graphs"), (2, "graphs-window"))
                pairs = (("graphs", "graphs"), ("graphs-window", "graphs"))
            measured = {mode: latency(name, ckpt, *mode) for mode in modes}
            for two, one in pairs:
                for batch in BATCHES:
                    ratio = measured[(2, two)][batch] / measured[(1, one)][batch]
                    print(f"ratio {name} tp2 {two} / tp1 {one} B={batch}: "
                          f"{ratio:.3f}", flush=True)
                    results["latency"].append(dict(model=name, batch=batch,
                                                   mode=two, ratio=ratio))
            if name == "wide32-bf16" and "--graphs-only" not in sys.argv:
                share(measured[(2, "graphs")], work)
            config = json.loads((MODELS / config).read_text())
            all_reduce_alone(config["hidden_size"], config["num_hidden_layers"])
            shutil.rmtree(ckpt)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "tp.json").write_text(json.dumps(results, indent=1))
    print(f"{len(results['checks']) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
