"""The GPU test: fdc's CUDA model libraries against float64 references and
Hugging Face transformers, on fresh random inputs, with every step's outputs
and scratch poisoned first (FDC_CUDA_POISON=1: NaN floats, -1 ids).

Run on a GPU machine by test/gpu/run.sh, after test/gpu/prepare.sh built
.gpu-artifacts/ where MLIR is. Prints a table last; writes JSON to $OUT (or
.gpu-artifacts/) when set.
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaForCausalLM

REPO = Path(__file__).resolve().parents[2]
ART = REPO / ".gpu-artifacts"
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("FDC_RUNTIME_LIB", str(ART / "lib" / "libfdc_runtime.so"))
# Poisoned outputs unless the caller says otherwise (FDC_CUDA_POISON=0 runs
# the step graphs and overlapped steps that poisoning turns off).
os.environ.setdefault("FDC_CUDA_POISON", "1")

from fdc.runtime import Model  # noqa: E402
from fdc.testing.tiny_checkpoint import make_tiny_checkpoint  # noqa: E402

ROWS = []


def rel_err(got, ref):
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def record(name, ok, **fields):
    ROWS.append({"check": name, "ok": bool(ok), **fields})
    status = "PASS" if ok else "FAIL"
    print(f"[{status}] {name} {json.dumps(fields)}", flush=True)


def teacher_forced(model, prompt, ids):
    """The reference's logits for every generated position, fed our ids."""
    sequence = torch.tensor([list(prompt) + list(ids[:-1])], device="cuda")
    with torch.no_grad():
        logits = model(sequence).logits[0, len(prompt) - 1:]
    return logits.double().cpu().numpy()


def check_requests(name, model, reference, requests, tolerance, rng):
    """Runs `requests` as one batch; compares every generated step."""
    start = time.time()
    results = model.generate_batch(requests)
    seconds = time.time() - start
    worst, mismatched, steps, errors = 0.0, 0, 0, []
    # Each greedy mismatch: (step, its top-2 margin in units of the noise),
    # so a failure tells a near-threshold flip from a wrong token.
    flips = []
    for spec, result in zip(requests, results):
        if result["error"]:
            errors.append(result["error"])
            continue
        logits = result["logits"]
        if not np.all(np.isfinite(logits)):
            errors.append("non-finite logits (an output not written?)")
            continue
        ref = teacher_forced(reference, spec["prompt_ids"], result["ids"])
        err = rel_err(logits, ref)
        worst = max(worst, err)
        for step, token in enumerate(result["ids"]):
            steps += 1
            if spec.get("temperature", 0) > 0:
                # Sampled: the token must be among the top-k of its logits.
                kth = np.sort(logits[step])[-spec["top_k"]]
                mismatched += int(logits[step][token] < kth)
                continue
            # A greedy token must match the reference's argmax wherever the
            # top-2 margin is clear of this run's measured noise.
            top2 = np.sort(ref[step])[-2:]
            noise = err * np.sqrt(np.mean(ref[step] ** 2))
            clear = top2[1] - top2[0] > 4 * noise
            if clear and token != int(np.argmax(ref[step])):
                mismatched += 1
                flips.append((step, round(float((top2[1] - top2[0]) / noise), 1)))
    longest = max(len(r["prompt_ids"]) + r["max_new_tokens"] for r in requests)
    ok = not errors and worst < tolerance and mismatched == 0
    record(name, ok, batch=len(requests), max_context=longest,
           rel_err=f"{worst:.2e}", token_mismatches=mismatched, steps=steps,
           seconds=round(seconds, 2), errors=errors[:2],
           **({"mismatch_margins": flips[:4]} if flips else {}))


def tiny_checks(work, rng):
    for variant in ("gqa", "mha", "mqa"):
        ckpt = work / f"tiny-{variant}"
        make_tiny_checkpoint(str(ckpt), variant, "f32", 0,
                             max_position_embeddings=8192)
        reference = LlamaForCausalLM.from_pretrained(
            ckpt, torch_dtype=torch.float64).cuda().eval()
        for scheme in ("online", "unified", "fallback"):
            lib = ART / "models" / f"tiny-{variant}-f32-{scheme}.so"
            model = Model(lib, ckpt, max_context=8192, num_slots=64)
            for batch, longest in ((64, 1024), (8, 4096), (1, 8192)):
                if scheme != "online" and batch == 1:
                    continue  # the long single sequence once per variant
                requests = []
                for b in range(batch):
                    length = (longest - 4 if b == 0 else
                              int(rng.integers(1, longest - 4)))
                    requests.append({
                        "prompt_ids": rng.integers(0, 512, length).tolist(),
                        "max_new_tokens": 4, "return_logits": True})
                if batch == 8:  # one sampled request in the batch
                    requests[1].update(temperature=0.8, top_k=20, top_p=0.9,
                                       seed=int(rng.integers(1 << 30)))
                check_requests(f"tiny {variant} f32 {scheme} B={batch}", model,
                               reference, requests, 1e-3, rng)
            model.close()
        if variant == "gqa":
            # Chunked prefill: prompts read up to 256 tokens per step, rows
            # of one slot at consecutive positions beside other requests.
            lib = ART / "models" / "tiny-gqa-f32-online.so"
            model = Model(lib, ckpt, max_context=8192, num_slots=4,
                          max_step_rows=256)
            requests = [{"prompt_ids": rng.integers(0, 512, int(n)).tolist(),
                         "max_new_tokens": 6, "return_logits": True}
                        for n in (2000, 1, 300, 777)]
            check_requests("tiny gqa f32 online chunked prefill (256 rows) "
                           "B=4", model, reference, requests, 1e-3, rng)
            model.close()
        del reference
        torch.cuda.empty_cache()

    # bf16 storage, and the PTX JIT path (a library with only an sm_80 cubin).
    ckpt = work / "tiny-gqa-bf16"
    make_tiny_checkpoint(str(ckpt), "gqa", "bf16", 0,
                         max_position_embeddings=8192)
    reference = LlamaForCausalLM.from_pretrained(
        ckpt, torch_dtype=torch.float64).cuda().eval()
    model = Model(ART / "models" / "tiny-gqa-bf16-online.so", ckpt,
                  max_context=8192, num_slots=8)
    requests = [{"prompt_ids": rng.integers(0, 512, int(n)).tolist(),
                 "max_new_tokens": 8, "return_logits": True}
                for n in rng.integers(1, 2048, 8)]
    check_requests("tiny gqa bf16 online B=8", model, reference, requests,
                   3e-2, rng)
    model.close()
    ckpt = work / "tiny-gqa"
    reference = LlamaForCausalLM.from_pretrained(
        ckpt, torch_dtype=torch.float64).cuda().eval()
    model = Model(ART / "models" / "tiny-gqa-ptx.so", ckpt, max_context=2048,
                  num_slots=4)
    requests = [{"prompt_ids": rng.integers(0, 512, 100).tolist(),
                 "max_new_tokens": 8, "return_logits": True}]
    check_requests("tiny gqa f32 PTX-JIT (sm_80 image) B=1", model, reference,
                   requests, 1e-3, rng)
    model.close()


def wide_checks(work, rng):
    from fdc.testing import wide_model

    prompt = rng.integers(0, 32000, 16).tolist()
    for dtype, torch_dtype, tolerance in (("f32", torch.float32, 1e-3),
                                          ("bf16", torch.bfloat16, 5e-2)):
        ckpt = work / f"wide-{dtype}"
        config = ART / "models" / ("wide-f32-config.json" if dtype == "f32"
                                   else "wide-config.json")
        del_model = wide_model.build(str(ckpt), str(config), seed=0,
                                     dtype=str(torch_dtype).split(".")[1])
        del del_model
        # The references load the saved checkpoint as any user of transformers
        # would (rotary frequencies computed in f32 at load).
        hf = LlamaForCausalLM.from_pretrained(ckpt, torch_dtype=torch_dtype)
        hf = hf.cuda().eval()
        with torch.no_grad():
            hf_ids = hf.generate(torch.tensor([prompt], device="cuda"),
                                 max_new_tokens=32, do_sample=False,
                                 min_new_tokens=32)[0, len(prompt):].tolist()
        schemes = ("online", "unified") if dtype == "bf16" else ("online",)
        for scheme in schemes:
            model = Model(ART / "models" / f"wide-{dtype}-{scheme}.so", ckpt,
                          max_context=1024, num_slots=8)
            start = time.time()
            ids, logits = model.generate(prompt, 32, return_logits=True)
            seconds = time.time() - start
            err = rel_err(logits, teacher_forced(hf, prompt, ids))
            same = sum(int(a == b) for a, b in zip(ids, hf_ids))
            identical = ids == hf_ids
            record(f"7B-wide {dtype} {scheme} vs transformers {dtype}: greedy 32 steps",
                   (identical or dtype == "bf16") and err < tolerance
                   and bool(np.all(np.isfinite(logits))),
                   identical_tokens=f"{same}/32",
                   rel_err_vs_transformers=f"{err:.2e}",
                   seconds=round(seconds, 2))
            if scheme == "online":
                requests = [{"prompt_ids": rng.integers(0, 32000, int(n)).tolist(),
                             "max_new_tokens": 4, "return_logits": True}
                            for n in rng.integers(1, 900, 8)]
                results = model.generate_batch(requests)
                worst = max(rel_err(r["logits"],
                                    teacher_forced(hf, q["prompt_ids"], r["ids"]))
                            for q, r in zip(requests, results))
                record(f"7B-wide {dtype} online B=8 (contexts to 900) vs "
                       f"transformers {dtype}",
                       worst < tolerance and not any(r["error"] for r in results),
                       rel_err=f"{worst:.2e}")
            if dtype == "bf16":
                # bf16 greedy paths part at near-ties: judge the tokens against
                # float64 where its top-2 margin is clear of bf16 noise.
                hf64 = LlamaForCausalLM.from_pretrained(
                    ckpt, torch_dtype=torch.float64).cuda().eval()
                check_requests(f"7B-wide bf16 {scheme} vs float64 (clear-margin tokens)",
                               model, hf64,
                               [{"prompt_ids": prompt, "max_new_tokens": 32,
                                 "return_logits": True}], tolerance, rng)
                if scheme == "online":
                    ref_bf16 = teacher_forced(hf, prompt, hf_ids)
                    err_hf = rel_err(ref_bf16, teacher_forced(hf64, prompt, hf_ids))
                    record("yardstick: transformers bf16 vs float64", True,
                           rel_err=f"{err_hf:.2e}")
                del hf64
            model.close()
        del hf
        torch.cuda.empty_cache()


def packed_checks(work, rng):
    """INT4 KV cache, INT4 linear weights and Tiled-CSL sparse MLP on the GPU
    against the host target (the numerics reference, itself checked against
    the emulating float64 reference by the host tests); the sparse model also
    against float64 transformers on the same pruned weights."""
    variants = (("int4kv", "f32", 0.0, 1e-3), ("int4w", "f32", 0.0, 1e-3),
                ("bf16-sparse", "bf16", 0.8, 3e-2))
    for name, dtype, sparsity, tolerance in variants:
        ckpt = work / f"packed-{name}"
        make_tiny_checkpoint(str(ckpt), "gqa", dtype, 0, sparsity=sparsity,
                             max_position_embeddings=8192)
        lib = ART / "models" / f"tiny-gqa-{name}"
        gpu = Model(f"{lib}.so", ckpt, max_context=2048, num_slots=8)
        host = Model(f"{lib}-host.so", ckpt, max_context=2048, num_slots=8)
        requests = [{"prompt_ids": rng.integers(0, 512, int(n)).tolist(),
                     "max_new_tokens": 4, "return_logits": True}
                    for n in rng.integers(1, 1000, 8)]
        got, want = gpu.generate_batch(requests), host.generate_batch(requests)
        worst, differing, not_ties, errors = 0.0, 0, 0, []
        for g_result, h_result in zip(got, want):
            if g_result["error"] or h_result["error"]:
                errors.append(g_result["error"] or h_result["error"])
                continue
            same = 0  # compare the steps both saw the same tokens for
            while (same < len(h_result["ids"]) and
                   g_result["ids"][same] == h_result["ids"][same]):
                same += 1
            differing += int(same < len(h_result["ids"]))
            if same < len(h_result["ids"]):
                # The GPU's pick must be a near-tie in the host's logits:
                # within the tolerance (of the largest logit) of its best.
                # (The INT4 KV cache quantises the GPU's and the host's K / V,
                # f32 sums added in other orders, so a value near a rounding
                # boundary may land one step apart: docs/gpu.md, 2026-11-27.)
                host_row = np.asarray(h_result["logits"][same])
                gap = host_row.max() - host_row[g_result["ids"][same]]
                not_ties += int(gap > tolerance * np.abs(host_row).max())
            steps = min(same + 1, len(h_result["ids"]))
            worst = max(worst, rel_err(g_result["logits"][:steps],
                                       h_result["logits"][:steps]))
            if not np.all(np.isfinite(g_result["logits"])):
                errors.append("non-finite logits")
        record(f"tiny gqa {name} GPU vs host target B=8",
               not errors and worst < tolerance and
               (not_ties == 0 or dtype != "f32"),
               rel_err=f"{worst:.2e}", sequences_with_different_ids=differing,
               divergences_not_near_ties=not_ties, errors=errors[:2])
        if sparsity or name == "int4w":
            packed_weights_check(name, lib, ckpt, gpu, requests, work)
        if name == "bf16-sparse":
            reference = LlamaForCausalLM.from_pretrained(
                ckpt, torch_dtype=torch.float64).cuda().eval()
            check_requests("tiny gqa bf16 sparse MLP (80% pruned) GPU vs float64",
                           gpu, reference, requests, tolerance, rng)
            del reference
        gpu.close()
        host.close()


def packed_weights_check(name, lib, ckpt, gpu, requests, work):
    """fdc-pack's packed-weights file loaded on the GPU gives the logits of
    packing while loading (the weight arenas are byte-identical; the
    host tests compare them)."""
    packed = work / f"{name}.packed"
    proc = subprocess.run([str(ART / "lib" / "fdc-pack"), f"{lib}.so", "--weights",
                           str(ckpt), "-o", str(packed)], capture_output=True, text=True)
    if proc.returncode != 0:
        record(f"tiny gqa {name} packed weights (fdc-pack) on the GPU", False,
               errors=[proc.stderr.strip()[:300]])
        return
    with Model(f"{lib}.so", ckpt, max_context=2048, num_slots=8,
               packed_weights=packed) as loaded:
        got = loaded.generate_batch(requests)
    want = gpu.generate_batch(requests)
    same_ids = all(g["ids"] == w["ids"] for g, w in zip(got, want))
    worst = max(rel_err(g["logits"], w["logits"]) for g, w in zip(got, want))
    errors = [g["error"] for g in got if g["error"]]
    record(f"tiny gqa {name} packed weights (fdc-pack) on the GPU vs packing at load",
           not errors and same_ids and worst <= 1e-6, rel_err=f"{worst:.2e}",
           errors=errors[:2])


def head128_checks(work, rng):
    """The 7B-wide head layout (head_dim 128, GQA 4/2) on a small model, f32
    and bf16, batch 1..8, contexts to 1000, against float64."""
    from fdc.testing import wide_model

    for dtype, tolerance in (("float32", 1e-3), ("bfloat16", 5e-2)):
        ckpt = work / f"head128-{dtype}"
        built = wide_model.build(str(ckpt),
                                 str(ART / "models" / f"head128-{dtype}.json"),
                                 seed=0, dtype=dtype)
        del built
        reference = LlamaForCausalLM.from_pretrained(
            ckpt, torch_dtype=torch.float64).cuda().eval()
        model = Model(ART / "models" / f"head128-{dtype}.so", ckpt,
                      max_context=2048, num_slots=8)
        for batch, longest in ((1, 40), (1, 1000), (8, 1000)):
            requests = [{"prompt_ids": rng.integers(0, 1000, int(n)).tolist(),
                         "max_new_tokens": 4, "return_logits": True}
                        for n in rng.integers(max(1, longest - 900), longest,
                                              batch)]
            check_requests(f"head_dim-128 {dtype} B={batch}", model,
                           reference, requests, tolerance, rng)
        model.close()
        del reference
        torch.cuda.empty_cache()


LINEAR_BATCHES = (1, 2, 3, 5, 8, 9, 13, 16, 17, 31, 32, 33, 64, 100, 128)


def linear_checks(work, rng):
    """Every linear kernel the default dispatch table runs (batch 1..128,
    crossing each bound) and kernels pinned by hand, on every epilogue, f16
    and bf16, N and K no multiple of a tile, against float64. The library's
    own step runs through the benchmark launcher: the logits start NaN and
    the scratch (which holds the linear's output) 0xFF bytes, so anything
    left unwritten fails."""
    from fdc.bench.launcher import CudaLauncher, ModelLibrary
    from fdc.testing import linear_models

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(rng.integers(0, 2**31)))
    for v in linear_models.VARIANTS:
        library = ModelLibrary(ART / "models" / f"{v.name}.so")
        launcher = CudaLauncher(library)
        storage = torch.bfloat16 if v.dtype == "bf16" else torch.float16
        data = torch.empty(library.weights_bytes, dtype=torch.uint8,
                           device="cuda")
        weights = {}
        for name, shape in v.weight_shapes().items():
            entry = library.weight(name)
            view = data[entry["offset"]:entry["offset"] + entry["bytes"]]
            view = view.view(storage).view(shape)
            fan_in = shape[-1] if len(shape) > 1 and name != "table" else 1
            view.copy_(torch.randn(shape, generator=gen, device="cuda")
                       * fan_in ** -0.5)
            weights[name] = view
        cache = torch.zeros(max(library.kv_cache_bytes(1, 1), 256),
                            dtype=torch.uint8, device="cuda")
        worst, kernels, failures = 0.0, set(), []
        for m in LINEAR_BATCHES:
            cuda = dict(device="cuda")
            tokens = torch.randint(0, linear_models.TABLE_ROWS, (m,),
                                   generator=gen, **cuda).to(torch.int32)
            logits = torch.full((m, linear_models.HEAD_ROWS), float("nan"),
                                **cuda)
            next_tokens = torch.full((m,), -1, dtype=torch.int32, **cuda)
            scratch = torch.full((max(library.scratch_bytes(m), 1),), 0xFF,
                                 dtype=torch.uint8, **cuda)
            launch_greedy_step(launcher, m, data, cache, tokens, logits,
                               next_tokens, scratch)
            torch.cuda.synchronize()
            kernels.add(next(k for k in launcher.launched
                             if k.startswith("linear_")))
            ref = linear_models.reference(v, weights, tokens)
            err = float(torch.linalg.norm(logits.double() - ref)
                        / torch.linalg.norm(ref))
            # Worst seen 1.1e-4 (y rounded to f16/bf16 on both sides); a lost
            # tile or word moves whole rows by percents. NaN fails too.
            if not err <= 1e-3:
                failures.append(f"M={m}: rel_err={err:.2e}")
            # The argmax of the logits the step wrote (first index on ties).
            if not torch.equal(next_tokens.long(), torch.argmax(logits, 1)):
                failures.append(f"M={m}: next_tokens are not the logits' argmax")
            worst = max(worst, err) if err == err else float("nan")
        # sm_90a's default tables must have run group GEMMs (wgmma).
        if v.arch == "sm_90a" and not v.kernel and "group_gemm" not in \
                json.dumps(library.manifest.get("linears", [])):
            failures.append("the default table has no group_gemm")
        record(f"{v.name} vs float64, M = 1..128", not failures,
               worst_rel_err=f"{worst:.2e}", kernels=len(kernels),
               errors="; ".join(failures[:4]))
        if v is linear_models.VARIANTS[0]:
            argmax_check(launcher, library, data, cache)
        del launcher, data, weights
        torch.cuda.empty_cache()


def launch_step(launcher, batch, weights, cache, tokens, logits, next_tokens,
                scratch, positions, slots, num_slots, max_context, only=None):
    """One greedy step of `batch` rows (`positions`, `slots`: int32 tensors)
    through the benchmark launcher; `only`: the kernels to run."""
    from fdc.bench.launcher import step_args

    cuda = dict(device="cuda")
    inputs = dict(positions=positions, slots=slots,
                  temperature=torch.zeros(batch, **cuda),
                  top_k=torch.zeros(batch, dtype=torch.int32, **cuda),
                  top_p=torch.ones(batch, **cuda),
                  uniform=torch.full((batch,), 0.5, **cuda))
    launcher.step(step_args(
        batch=batch, num_slots=num_slots, max_context=max_context,
        weights=weights.data_ptr(), kv_cache=cache.data_ptr(),
        tokens=tokens.data_ptr(), logits=logits.data_ptr(),
        next_tokens=next_tokens.data_ptr(), scratch=scratch.data_ptr(),
        **{k: t.data_ptr() for k, t in inputs.items()}), only=only)


def launch_greedy_step(launcher, m, weights, cache, tokens, logits,
                       next_tokens, scratch, only=None):
    """One step of `m` greedy rows at position 0 of slot 0 (max_context
    1); `only`: the kernels to run."""
    zeros = torch.zeros(m, dtype=torch.int32, device="cuda")
    launch_step(launcher, m, weights, cache, tokens, logits, next_tokens,
                scratch, positions=zeros, slots=zeros, num_slots=1,
                max_context=1, only=only)


def argmax_check(launcher, library, weights, cache):
    """The greedy head alone (the library's argmax or sample kernel) on
    logits written by hand: ties keep the first index, NaN never wins, a row
    of -inf gives 0, the maximum in the last column is found."""
    from fdc.testing import linear_models

    head = next(k for k in library.kernels
                if k.startswith(("argmax_", "sample_")))
    vocab, m = linear_models.HEAD_ROWS, 8
    cuda = dict(device="cuda")
    logits = torch.randn(m, vocab, **cuda)
    logits[0] = 0.0                                   # all equal: 0
    logits[1, 5] = logits[1, 77] = 9.0                # tie: 5
    logits[2] = float("-inf")                         # nothing finite: 0
    logits[3, 3], logits[3, 100] = float("nan"), 9.0  # NaN ignored: 100
    logits[4, vocab - 1] = 9.0                        # the last column
    want = [0, 5, 0, 100, vocab - 1] + torch.argmax(logits[5:], 1).tolist()
    next_tokens = torch.full((m,), -1, dtype=torch.int32, **cuda)
    scratch = torch.zeros(max(library.scratch_bytes(m), 1), dtype=torch.uint8,
                          **cuda)
    launch_greedy_step(launcher, m, weights, cache,
                       torch.zeros(m, dtype=torch.int32, **cuda), logits,
                       next_tokens, scratch, only={head})
    torch.cuda.synchronize()
    got = next_tokens.tolist()
    record(f"greedy head ({head}) on written logits: ties, NaN, -inf",
           got == want, got=got[:5], want=want[:5])


def attention_checks(work, rng):
    """Every attention kernel (the defaults and kernels pinned by hand) on
    MHA, GQA, MQA and a group of 16, head dims 64 and 128, bf16, f16, f32
    and INT4 caches (against the dequantised cache), each softmax scheme and
    the forced fallback, batches of 1 to 256
    with lengths of 1 to 32768 that are no multiple of a tile, against
    float64, per sequence. The logits start NaN; the scratch (the partial
    results) starts NaN for online softmax and -6.02 (0xC0 bytes) for
    unified max, whose reduce recomputes a row with a NaN sum, so that a
    partial row left unwritten is wrong either way."""
    from fdc.bench.launcher import CudaLauncher, ModelLibrary
    from fdc.testing import attention_models

    gen = torch.Generator(device="cuda")
    gen.manual_seed(int(rng.integers(0, 2**31)))
    cuda = dict(device="cuda")
    for v in attention_models.VARIANTS:
        library = ModelLibrary(ART / "models" / f"{v.name}.so")
        launcher = CudaLauncher(library)
        storage = {"bf16": torch.bfloat16, "f16": torch.float16,
                   "f32": torch.float32}[v.dtype]
        data = torch.empty(library.weights_bytes, dtype=torch.uint8, **cuda)
        views = {}
        for name, shape in v.weight_shapes().items():
            entry = library.weight(name)
            view = data[entry["offset"]:entry["offset"] + entry["bytes"]]
            views[name] = view.view(storage).view(shape)
        views["table"].copy_(torch.randn(views["table"].shape, generator=gen,
                                         **cuda) * v.query_scale)
        views["head"].copy_(torch.eye(v.width, **cuda))
        poison = 0xFF if v.softmax == "online" else 0xC0
        worst, kernels, launched, failures = 0.0, set(), set(), []
        for batch, max_context in v.cases:
            slots = torch.randperm(batch, generator=gen, **cuda).to(torch.int32)
            lengths = torch.randint(1, max_context + 1, (batch,), generator=gen,
                                    **cuda)
            for i, forced in enumerate((max_context, 1, 17, 16)):
                if i < batch:
                    lengths[i] = min(forced, max_context)
            positions = (lengths - 1).to(torch.int32)
            cache_bytes = library.kv_cache_bytes(batch, max_context)
            if v.cache == "int4":
                cache = torch.empty(cache_bytes, dtype=torch.uint8, **cuda)
                rows = cache.view(batch, 1, 2, v.hkv, max_context, -1)
                attention_models.fill_int4_rows(rows, v.int4_groups,
                                                v.head_dim, gen)
            else:
                cache = torch.randn(cache_bytes // storage.itemsize,
                                    generator=gen, **cuda).to(storage)
                rows = cache.view(batch, 1, 2, v.hkv, max_context, v.head_dim)

            def cache_values(i, kv):
                part = rows[int(slots[i]), 0, kv, :, :int(lengths[i])]
                if v.cache == "int4":
                    return attention_models.int4_rows_to_float(
                        part, v.int4_groups, v.head_dim)
                return part.double()
            tokens = torch.randint(0, v.width, (batch,), generator=gen,
                                   **cuda).to(torch.int32)
            logits = torch.full((batch, v.width), float("nan"), **cuda)
            next_tokens = torch.full((batch,), -1, dtype=torch.int32, **cuda)
            scratch = torch.full((max(library.scratch_bytes(batch), 1),),
                                 poison, dtype=torch.uint8, **cuda)
            launch_step(launcher, batch, data, cache, tokens, logits,
                        next_tokens, scratch, positions=positions, slots=slots,
                        num_slots=batch, max_context=max_context)
            torch.cuda.synchronize()
            launched.update(k for k in launcher.launched if "attention" in k)
            kernels.update(k.rsplit("_", 1)[0] for k in launcher.launched
                           if "attention" in k)
            table = views["table"].double()
            ref = torch.stack([
                attention_models.reference(
                    v, table[int(tokens[i])].view(v.hq, v.head_dim),
                    cache_values(i, 0), cache_values(i, 1))
                for i in range(batch)])
            err = float((torch.linalg.norm(logits.double() - ref, dim=1)
                         / torch.linalg.norm(ref, dim=1)).max())
            if not err <= v.tolerance:  # NaN fails too
                failures.append(f"B={batch} S={max_context}: rel_err={err:.2e}")
            worst = max(worst, err) if err == err else float("nan")
            del cache, rows
        missing = [k for k in v.expect.split(",")
                   if k not in kernels and k not in launched]
        if missing:
            failures.append(f"ran {sorted(kernels)}, not {missing}")
        record(f"{v.name} vs float64", not failures,
               worst_rel_err=f"{worst:.2e}", kernels=",".join(sorted(kernels)),
               errors="; ".join(failures[:4]))
        del launcher, data, views
        torch.cuda.empty_cache()


def sparse_checks(work, rng):
    """decode.sparse_linear on the GPU against float64: every epilogue (none,
    bias, residual, bias + residual, SiLU-gate-up with and without a
    residual), f16 and bf16, N and K no multiple of the 128x64 tile, the
    default dispatch (sm_90 and sm_90a) and flash_spmm and group_spmm
    configs pinned by hand; each library on
    weights pruned at random to 50..95 % and on one with empty rows, empty
    tiles and a dense tile, at M = 1, 3, 8, 9, 16, 17, 32, 64; the family
    that ran must be the one expected. The weights are made
    here from a seed and packed into the arena by fdc.bench.tiled_csl's torch
    packer, checked word for word against fdc.packing (the runtime's packer
    mirrored in numpy). The logits
    start NaN, the scratch (the sparse op's output and any split-K partial
    sums) 0xFF bytes, and the arena's words past the packed runs 0xFF too,
    so that a value left unwritten or a word read past its tile's run
    fails."""
    from fdc.testing import sparse_models

    seed = int(rng.integers(0, 2**31))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    for v in sparse_models.VARIANTS:
        try:
            _sparse_variant(v, gen, seed)
        except Exception as e:  # report and go on to the next library
            record(f"{v.name} crashed", False,
                   error=f"{type(e).__name__}: {e}"[:400])
        torch.cuda.empty_cache()


def _sparse_variant(v, gen, seed):
    """sparse_checks for one library (sparse_models.SparseVariant v)."""
    from fdc import packing
    from fdc.bench import models as bench_models
    from fdc.bench import tiled_csl
    from fdc.bench.launcher import CudaLauncher, ModelLibrary
    from fdc.testing import sparse_models

    class Launcher(CudaLauncher):
        """Keeps each kernel's last launch geometry (for the record)."""
        geometry: dict = {}

        def _launch(self, name, grid, block, shared, params):
            self.geometry[name] = (tuple(grid), block[0], shared)
            return super()._launch(name, grid, block, shared, params)

    start = time.time()
    cuda = dict(device="cuda")
    library = ModelLibrary(ART / "models" / f"{v.name}.so")
    launcher = Launcher(library)
    storage = torch.bfloat16 if v.dtype == "bf16" else torch.float16
    data = torch.empty(library.weights_bytes, dtype=torch.uint8, **cuda)
    entry = library.weight("w")
    version = tiled_csl.layout_version(entry)
    w_raw = data[entry["offset"]:entry["offset"] + entry["bytes"]]
    weights = {}
    for name, shape in v.weight_shapes().items():
        if name == "w":
            continue
        e = library.weight(name)
        view = data[e["offset"]:e["offset"] + e["bytes"]]
        view = view.view(storage).view(shape)
        fan_in = shape[-1] if name == "head" else 1
        view.copy_(torch.randn(shape, generator=gen, **cuda) * fan_in ** -0.5)
        weights[name] = view
    cache = torch.zeros(max(library.kv_cache_bytes(1, 1), 256),
                        dtype=torch.uint8, **cuda)
    worst, kernels, failures = 0.0, set(), []
    for pattern in sparse_models.PATTERNS:
        w = sparse_models.make_weight(v, pattern, gen)
        packed = tiled_csl.pack_torch(w, v.tile)
        nbytes = packed.numel() * 4
        words = packed.cpu().numpy().view(np.uint32)
        dense = w.float().cpu().numpy()
        ref_words = np.frombuffer(packing.pack_tiled_csl(
            dense, v.tile, v.dtype, capacity=False), dtype="<u4")
        if not np.array_equal(words, ref_words):
            failures.append(f"{pattern}: pack_torch differs from fdc.packing")
        if nbytes > entry["bytes"]:
            failures.append(f"{pattern}: {nbytes} packed bytes, "
                            f"{entry['bytes']} reserved")
            continue
        w_raw.fill_(0xFF)
        w_raw[:nbytes].copy_(packed.view(torch.uint8))
        for m in sparse_models.BATCHES:
            tokens = torch.randint(0, sparse_models.TABLE_ROWS, (m,),
                                   generator=gen, **cuda).to(torch.int32)
            logits = torch.full((m, sparse_models.HEAD_ROWS), float("nan"),
                                **cuda)
            next_tokens = torch.full((m,), -1, dtype=torch.int32, **cuda)
            scratch = torch.full((max(library.scratch_bytes(m), 1),), 0xFF,
                                 dtype=torch.uint8, **cuda)
            launch_step(launcher, m, data, cache, tokens, logits, next_tokens,
                        scratch,
                        positions=torch.zeros(m, dtype=torch.int32, **cuda),
                        slots=torch.arange(m, dtype=torch.int32, **cuda),
                        num_slots=m, max_context=1)
            torch.cuda.synchronize()
            kernels.update(bench_models.sparse_op_kernels(launcher.launched))
            ref = sparse_models.reference(v, weights, w, tokens)
            err = float(torch.linalg.norm(logits.double() - ref)
                        / torch.linalg.norm(ref))
            # Worst seen 1.1e-4 (y rounded to f16/bf16 on both sides); a lost
            # tile or word moves whole rows by percents. NaN fails too.
            if not err <= 1e-3:
                failures.append(f"{pattern} M={m}: rel_err={err:.2e}")
            worst = max(worst, err) if err == err else float("nan")
    # Each sparse kernel's launch (grid, threads, dynamic shared bytes) at
    # the largest M: flash_spmm's grid is (batch blocks, tile rows, splits).
    launches = "; ".join(f"{k} {launcher.geometry[k]}" for k in sorted(kernels))
    # Which family ran: flash_spmm and group_spmm stage their tiles in
    # dynamic shared memory, the row scan takes none (the dispatch falls back
    # to it quietly); group_spmm's kernels are those whose PTX has wgmma
    # (prepare.sh lists them).
    on_group_mma = set((ART / "models" / f"{v.name}.wgmma").read_text().split())

    def family(kernel):
        if kernel in on_group_mma:
            return "group_spmm"
        return "flash_spmm" if launcher.geometry[kernel][2] > 0 else "sparse_row_scan"
    ran = {family(k) for k in kernels if k.startswith("sparse_linear_")}
    expected = "+".join(sorted(v.families))
    if ran != v.families:
        failures.append(f"expected {expected}, ran {launches}")
    record(f"{v.name} [{v.rows}x{v.k}] vs float64, "
           f"{len(sparse_models.PATTERNS)} weights x M = 1..64",
           not failures, worst_rel_err=f"{worst:.2e}",
           expected_family=expected,
           kernels=launches, csl_version=version, seed=seed,
           seconds=round(time.time() - start, 2), errors="; ".join(failures[:4]))


def main():
    if not torch.cuda.is_available():
        print("SKIP: no CUDA GPU here; run test/gpu/run.sh on a GPU machine")
        return 0
    print(f"device: {torch.cuda.get_device_name(0)}", flush=True)
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        stages = (attention_checks, linear_checks, sparse_checks, wide_checks,
                  head128_checks, packed_checks, tiny_checks)
        wanted = os.environ.get("FDC_GPU_STAGES")  # e.g. "wide_checks"
        if wanted:
            stages = [st for st in stages if st.__name__ in wanted.split(",")]
        for stage in stages:
            try:
                stage(work, rng)
            except Exception as e:  # report and go on to the next stage
                record(f"{stage.__name__} crashed", False,
                       error=f"{type(e).__name__}: {e}"[:400])
    out = Path(os.environ.get("OUT", ART))
    (out / "gpu_check.json").write_text(json.dumps(ROWS, indent=1))
    print("\n| check | ok | details |\n|---|---|---|")
    for row in ROWS:
        details = ", ".join(f"{k}={v}" for k, v in row.items()
                            if k not in ("check", "ok", "errors") or v)
        print(f"| {row['check']} | {'PASS' if row['ok'] else 'FAIL'} | {details} |")
    failed = sum(not r["ok"] for r in ROWS)
    print(f"\n{len(ROWS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
