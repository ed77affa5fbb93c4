"""End to end on the host target: checkpoint -> frontend -> `fdc compile
--target=host` -> run (Python binding and `fdc run`) -> compare with the
float64 reference (fdc.reference.llama).

Needs a build: build/bin/fdc and build/lib/libfdc_runtime.so (or the build
directory named by FDC_BUILD_DIR). Without them every test here is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC = BUILD / "bin" / "fdc"
RUNTIME = BUILD / "lib" / "libfdc_runtime.so"

_missing = [str(p) for p in (FDC, RUNTIME) if not p.exists()]
if _missing:
    pytest.skip(f"fdc is not built (missing {', '.join(_missing)}); build it with "
                "`ninja -C build fdc fdc_runtime` to run the end-to-end tests",
                allow_module_level=True)

# The binding finds the runtime through FDC_RUNTIME_LIB; point it at this build.
os.environ.setdefault("FDC_RUNTIME_LIB", str(RUNTIME))

from fdc.frontend import model_ir  # noqa: E402
from fdc.frontend.emit import Softmax  # noqa: E402
from fdc.reference.llama import ReferenceLlama, sample  # noqa: E402
from fdc.runtime import Model  # noqa: E402
from fdc.testing.tiny_checkpoint import make_tiny_checkpoint  # noqa: E402

PROMPT = [1, 2, 3, 4]
STEPS = 32
VOCAB = 512


def rel_err(got: np.ndarray, ref: np.ndarray) -> float:
    """||got - ref|| / ||ref|| over every step's logits."""
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def run_tool(*args, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(FDC), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        pytest.fail(f"fdc {' '.join(map(str, args))} exited {proc.returncode}:\n"
                    f"{proc.stdout}{proc.stderr}")
    return proc


class Artifacts:
    """Checkpoints, model IR and model libraries, each built once per session."""

    def __init__(self, root: Path):
        self.root = root
        self._checkpoints: dict[tuple, Path] = {}
        self._libraries: dict[tuple, Path] = {}
        self._references: dict[Path, ReferenceLlama] = {}
        self._greedy: dict[Path, tuple] = {}

    def checkpoint(self, variant="gqa", dtype="f32", tied=False) -> Path:
        key = (variant, dtype, tied)
        if key not in self._checkpoints:
            path = self.root / f"ckpt_{variant}_{dtype}{'_tied' if tied else ''}"
            make_tiny_checkpoint(str(path), variant, dtype, seed=0, tied=tied)
            self._checkpoints[key] = path
        return self._checkpoints[key]

    def library(self, ckpt: Path, softmax: Softmax = Softmax()) -> Path:
        key = (ckpt, softmax)
        if key not in self._libraries:
            tag = softmax.kind if softmax.kind == "online" else \
                f"um_{softmax.phi:g}_{softmax.lo:g}_{softmax.hi:g}"
            mlir = self.root / f"{ckpt.name}.{tag}.mlir"
            mlir.write_text(model_ir(str(ckpt), "tiny", softmax))
            so = mlir.with_suffix(".so")
            run_tool("compile", mlir, "--target=host", "-o", so)
            self._libraries[key] = so
        return self._libraries[key]

    def reference(self, ckpt: Path) -> ReferenceLlama:
        if ckpt not in self._references:
            self._references[ckpt] = ReferenceLlama(str(ckpt))
        return self._references[ckpt]

    def reference_greedy(self, ckpt: Path):
        """(ids, logits) of the float64 reference's greedy decoding of PROMPT."""
        if ckpt not in self._greedy:
            self._greedy[ckpt] = self.reference(ckpt).generate(PROMPT, STEPS)
        return self._greedy[ckpt]


@pytest.fixture(scope="session")
def artifacts(tmp_path_factory) -> Artifacts:
    return Artifacts(tmp_path_factory.mktemp("e2e_host"))


def run_binding(so: Path, ckpt: Path, prompt=PROMPT, steps=STEPS, **sampling):
    with Model(so, ckpt, max_context=256) as model:
        assert model.vocab_size == VOCAB
        ids, logits = model.generate(prompt, steps, return_logits=True, **sampling)
    return ids, logits


def run_cli(so: Path, ckpt: Path, tmp_path: Path, prompt=PROMPT, steps=STEPS, *extra):
    dump = tmp_path / f"logits_{so.stem}.bin"
    proc = run_tool("run", so, "--weights", ckpt,
                    "--prompt-ids", ",".join(map(str, prompt)),
                    "--max-new-tokens", steps, "--max-context", 256,
                    "--dump-logits", dump, *extra)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("ids: ")]
    assert len(lines) == 1, proc.stdout
    ids = [int(x) for x in lines[0][len("ids: "):].split(",") if x]
    logits = np.fromfile(dump, dtype="<f4").reshape(-1, VOCAB)
    assert logits.shape[0] == len(ids)
    return ids, logits


def teacher_forced_logits(ref: ReferenceLlama, prompt, ids) -> np.ndarray:
    """The reference's logits for each generated id, fed the given ids."""
    cache = ref.new_cache(len(prompt) + len(ids))
    tokens = list(prompt) + list(ids[:-1])
    out = []
    for pos, tok in enumerate(tokens):
        logits = ref.step(tok, pos, cache)
        if pos >= len(prompt) - 1:
            out.append(logits)
    return np.array(out)


# --- greedy decoding, f32 ----------------------------------------------------

F32_VARIANTS = [
    pytest.param(("gqa", False), id="gqa"),
    pytest.param(("mha", False), id="mha"),
    pytest.param(("gqa", True), id="gqa-tied"),
    pytest.param(("mha", True), id="mha-tied"),
]


@pytest.mark.parametrize("variant", F32_VARIANTS)
def test_f32_greedy_matches_reference(artifacts, tmp_path, variant):
    ckpt = artifacts.checkpoint(variant[0], "f32", tied=variant[1])
    so = artifacts.library(ckpt)
    ref_ids, ref_logits = artifacts.reference_greedy(ckpt)

    ids, logits = run_binding(so, ckpt)
    assert ids == ref_ids
    assert rel_err(logits, ref_logits) < 1e-3

    cli_ids, cli_logits = run_cli(so, ckpt, tmp_path)
    assert cli_ids == ref_ids
    assert rel_err(cli_logits, ref_logits) < 1e-3
    # Same library, same inputs: the binding and the tool run the same steps.
    np.testing.assert_array_equal(cli_logits, logits)


def test_reference_is_not_degenerate(artifacts):
    """The greedy comparisons mean something only if the ids vary. (The tied
    checkpoints settle into repeating one token after a few steps, so
    test_f32_sampled_logits_match_reference covers them with varied inputs.)"""
    for variant in ("gqa", "mha"):
        ids, _ = artifacts.reference_greedy(artifacts.checkpoint(variant, "f32"))
        assert len(set(ids)) >= 8, (variant, ids)


@pytest.mark.parametrize("variant", F32_VARIANTS)
def test_f32_sampled_logits_match_reference(artifacts, variant):
    """Sampling visits many different tokens; the logits of each step match
    the reference fed the same tokens."""
    ckpt = artifacts.checkpoint(variant[0], "f32", tied=variant[1])
    so = artifacts.library(ckpt)
    ids, logits = run_binding(so, ckpt, temperature=1.0, seed=5)
    assert len(set(ids)) >= 8, ids
    forced = teacher_forced_logits(artifacts.reference(ckpt), PROMPT, ids)
    assert rel_err(logits, forced) < 1e-3


# --- bf16 -------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["gqa", "mha"])
def test_bf16_within_tolerance(artifacts, tmp_path, variant):
    """bf16 activations round every op's output to 8 bits of mantissa, so the
    logits move by ~1e-2 relative and a near-tie between the two best logits
    may flip, after which the two decodings see different inputs. So the
    logits are compared with the reference fed the runtime's own ids
    (teacher forcing), and the ids must agree with the reference wherever its
    best logit leads the runner-up by a clear margin, and over the first steps.
    """
    ckpt = artifacts.checkpoint(variant, "bf16")
    so = artifacts.library(ckpt)
    ref = artifacts.reference(ckpt)

    ids, logits = run_binding(so, ckpt)
    assert len(ids) == STEPS
    assert np.all(np.isfinite(logits))
    forced = teacher_forced_logits(ref, PROMPT, ids)
    assert rel_err(logits, forced) < 3e-2

    ref_ids, _ = artifacts.reference_greedy(ckpt)
    assert ids[:4] == ref_ids[:4]
    top2 = np.sort(forced, axis=1)[:, -2:]
    margin = (top2[:, 1] - top2[:, 0]) / np.abs(forced).max(axis=1)
    clear = margin > 0.05
    assert clear.sum() >= STEPS // 2
    np.testing.assert_array_equal(np.array(ids)[clear], forced.argmax(axis=1)[clear])

    cli_ids, cli_logits = run_cli(so, ckpt, tmp_path)
    assert cli_ids == ids
    np.testing.assert_array_equal(cli_logits, logits)


# --- unified-max softmax ------------------------------------------------------

def test_unified_max_matches_online(artifacts):
    ckpt = artifacts.checkpoint("gqa", "f32")
    ref_ids, ref_logits = artifacts.reference_greedy(ckpt)
    online_ids, online_logits = run_binding(artifacts.library(ckpt), ckpt)

    so = artifacts.library(ckpt, Softmax("unified_max", 0.0, -60.0, 60.0))
    ids, logits = run_binding(so, ckpt)
    assert ids == online_ids == ref_ids
    assert rel_err(logits, ref_logits) < 1e-3
    assert rel_err(logits, online_logits) < 1e-5
    # No row leaves the window, so the fixed-phi path produced these logits,
    # not the online fallback (which would round exactly as online does).
    assert not np.array_equal(logits, online_logits)


@pytest.mark.parametrize("softmax, every_row_flagged", [
    # Every score is ~100 below phi: outside [phi + lo, phi + hi], and exp
    # underflows to (sub)normals, so only the recomputation gives good rows.
    pytest.param(Softmax("unified_max", 100.0, -1.0, 1.0), True, id="phi-above"),
    # Every score is ~100 above phi: exp(score - phi) overflows to inf.
    pytest.param(Softmax("unified_max", -100.0, -60.0, 60.0), True,
                 id="phi-below-overflow"),
    # Every score is inside the window (hi <= 88 passes the verifier), but
    # exp(score - phi) ~ e^86 per term: where the sum or the accumulator
    # overflows the row is flagged and recomputed; the other rows stay on the
    # unified path.
    pytest.param(Softmax("unified_max", -86.0, -88.0, 88.0), False,
                 id="sum-overflow"),
])
def test_unified_max_falls_back_to_online(artifacts, softmax, every_row_flagged):
    ckpt = artifacts.checkpoint("gqa", "f32")
    online_ids, online_logits = run_binding(artifacts.library(ckpt), ckpt)
    ids, logits = run_binding(artifacts.library(ckpt, softmax), ckpt)
    assert ids == online_ids
    assert np.all(np.isfinite(logits))
    if every_row_flagged:
        # Recomputed by the online scheme: the same roundings.
        np.testing.assert_array_equal(logits, online_logits)
    else:
        assert rel_err(logits, online_logits) < 1e-5


# --- sampling -------------------------------------------------------------------

MASK64 = (1 << 64) - 1


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & MASK64


def runtime_uniforms(seed: int, count: int) -> list[float]:
    """The draws the runtime makes for a request with this seed, one per
    generated token: xoshiro256** seeded through splitmix64, 24-bit floats
    (runtime/include/fdc/runtime/Random.h)."""
    state, sm = [], seed & MASK64
    for _ in range(4):
        sm = (sm + 0x9E3779B97F4A7C15) & MASK64
        z = sm
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        state.append(z ^ (z >> 31))
    out = []
    for _ in range(count):
        result = (_rotl((state[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (state[1] << 17) & MASK64
        state[2] ^= state[0]
        state[3] ^= state[1]
        state[1] ^= state[2]
        state[0] ^= state[3]
        state[2] ^= t
        state[3] = _rotl(state[3], 45)
        out.append(float(np.float32(result >> 40) * np.float32(1.0 / 16777216.0)))
    return out


def test_runtime_uniforms_replica():
    """Sanity of the replica: values in [0, 1), deterministic, seed dependent."""
    a = runtime_uniforms(1234, 64)
    assert a == runtime_uniforms(1234, 64)
    assert a != runtime_uniforms(1235, 64)
    assert all(0.0 <= u < 1.0 for u in a)
    assert 0.3 < np.mean(a) < 0.7


SAMPLING = dict(temperature=0.8, top_k=20, top_p=0.9)


@pytest.mark.parametrize("variant", ["gqa", "mha"])
def test_sampling_matches_reference_rule(artifacts, tmp_path, variant):
    """The runtime does not return its draws, but they are a documented,
    deterministic function of the seed (Random.h); replaying them, every
    sampled id must be `sample(step_logits, T, k, p, u)` of the logits the
    runtime returned."""
    ckpt = artifacts.checkpoint(variant, "f32")
    so = artifacts.library(ckpt)
    seed = 1234

    ids, logits = run_binding(so, ckpt, seed=seed, **SAMPLING)
    assert len(ids) == STEPS
    # Reproducible run to run, and the same through `fdc run`.
    again, again_logits = run_binding(so, ckpt, seed=seed, **SAMPLING)
    assert again == ids
    np.testing.assert_array_equal(again_logits, logits)
    cli_ids, _ = run_cli(so, ckpt, tmp_path, PROMPT, STEPS,
                         "--temperature", 0.8, "--top-k", 20, "--top-p", 0.9,
                         "--seed", seed)
    assert cli_ids == ids

    # Each sampled id is inside the top_k of its step's logits ...
    for step, token in enumerate(ids):
        kth = np.sort(logits[step])[-SAMPLING["top_k"]]
        assert logits[step, token] >= kth, step
    # ... and is exactly what the sampling rule picks with the runtime's draw.
    draws = runtime_uniforms(seed, STEPS)
    expected = [sample(logits[i], SAMPLING["temperature"], SAMPLING["top_k"],
                       SAMPLING["top_p"], draws[i]) for i in range(STEPS)]
    assert ids == expected

    # Sampling actually samples: it leaves the greedy path, and another seed
    # gives another sequence.
    greedy_ids, _ = artifacts.reference_greedy(ckpt)
    assert ids != greedy_ids
    other, _ = run_binding(so, ckpt, seed=seed + 1, **SAMPLING)
    assert other != ids


def test_sampling_filters_alone(artifacts):
    """top_k = 1 is greedy; top_p alone and temperature alone follow the rule."""
    ckpt = artifacts.checkpoint("gqa", "f32")
    so = artifacts.library(ckpt)
    greedy_ids, _ = artifacts.reference_greedy(ckpt)
    ids, _ = run_binding(so, ckpt, temperature=1.0, top_k=1, seed=7)
    assert ids == greedy_ids
    for params in (dict(temperature=1.0, top_p=0.5), dict(temperature=1.5),
                   dict(temperature=0.5, top_k=3)):
        ids, logits = run_binding(so, ckpt, seed=99, **params)
        draws = runtime_uniforms(99, STEPS)
        expected = [sample(logits[i], params["temperature"], params.get("top_k", 0),
                           params.get("top_p", 1.0), draws[i]) for i in range(STEPS)]
        assert ids == expected, params


# --- batching -------------------------------------------------------------------

def test_batch_matches_single_requests(artifacts):
    ckpt = artifacts.checkpoint("gqa", "f32")
    so = artifacts.library(ckpt)
    requests = [
        dict(prompt_ids=[5], max_new_tokens=20, return_logits=True),
        dict(prompt_ids=[1, 2, 3, 4, 5, 6, 7], max_new_tokens=12, return_logits=True),
        dict(prompt_ids=[9, 8, 7, 6], max_new_tokens=16, seed=42, return_logits=True,
             **SAMPLING),
    ]
    with Model(so, ckpt, max_context=256, num_slots=3) as model:
        batch = model.generate_batch(requests)
        alone = []
        for spec in requests:
            kwargs = {k: v for k, v in spec.items()
                      if k not in ("prompt_ids", "max_new_tokens", "return_logits")}
            alone.append(model.generate(spec["prompt_ids"], spec["max_new_tokens"],
                                        return_logits=True, **kwargs))
    for spec, got, (ids, logits) in zip(requests, batch, alone):
        assert got["error"] is None
        assert got["finish_reason"] == "length"
        assert len(got["ids"]) == spec["max_new_tokens"]
        assert got["ids"] == ids
        np.testing.assert_allclose(got["logits"], logits, rtol=1e-5, atol=1e-5)
    # The greedy requests also match the reference.
    ref = artifacts.reference(ckpt)
    for spec, got in zip(requests[:2], batch[:2]):
        ref_ids, ref_logits = ref.generate(spec["prompt_ids"], spec["max_new_tokens"])
        assert got["ids"] == ref_ids
        assert rel_err(got["logits"], ref_logits) < 1e-3


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_chunked_prefill_matches_token_by_token(artifacts, dtype):
    """A 37-token prompt read up to 16 tokens per step (chunked prefill:
    rows of one slot at consecutive positions, whose K/V the step writes
    before attention reads it) decodes as the same prompt read one token per
    step, alone and beside another request: identical ids in f32 (and the
    float64 reference's), logits within bf16's tolerance in bf16."""
    ckpt = artifacts.checkpoint("gqa", dtype)
    so = artifacts.library(ckpt)
    prompt = [(37 * i + 11) % VOCAB for i in range(37)]
    with Model(so, ckpt, max_context=256) as model:  # one row per step
        assert model.max_step_rows == 1
        ids, logits = model.generate(prompt, 12, return_logits=True)
    with Model(so, ckpt, max_context=256, num_slots=2, max_step_rows=16) as model:
        assert model.max_step_rows == 16
        chunked_ids, chunked_logits = model.generate(prompt, 12, return_logits=True)
        batch = model.generate_batch([
            dict(prompt_ids=[3, 1, 4], max_new_tokens=20, return_logits=True),
            dict(prompt_ids=prompt, max_new_tokens=12, return_logits=True)])
    assert batch[1]["error"] is None and batch[1]["finish_reason"] == "length"
    if dtype == "f32":
        assert chunked_ids == ids
        assert batch[1]["ids"] == ids
        np.testing.assert_allclose(chunked_logits, logits, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(batch[1]["logits"], logits, rtol=1e-5, atol=1e-5)
        ref_ids, ref_logits = artifacts.reference(ckpt).generate(prompt, 12)
        assert ids == ref_ids
        assert rel_err(chunked_logits, ref_logits) < 1e-3
    else:
        assert chunked_ids[:4] == ids[:4]
        assert rel_err(chunked_logits[:4], logits[:4]) < 1e-2
        assert rel_err(np.asarray(batch[1]["logits"])[:4], logits[:4]) < 1e-2


def test_batch_more_requests_than_slots(artifacts):
    """Requests wait for a free KV-cache slot; a reused slot's stale rows
    beyond the new sequence's position are never read."""
    ckpt = artifacts.checkpoint("mha", "f32")
    so = artifacts.library(ckpt)
    requests = [dict(prompt_ids=[i + 1] * (1 + i % 3), max_new_tokens=6 + i)
                for i in range(5)]
    with Model(so, ckpt, max_context=64, num_slots=2) as model:
        batch = model.generate_batch(requests)
    ref = artifacts.reference(ckpt)
    for spec, got in zip(requests, batch):
        assert got["error"] is None, got
        ids, _ = ref.generate(spec["prompt_ids"], spec["max_new_tokens"])
        assert got["ids"] == ids


def test_batch_calls_on_token_per_generated_token(artifacts):
    ckpt = artifacts.checkpoint("gqa", "f32")
    so = artifacts.library(ckpt)
    seen = {0: [], 1: []}
    requests = [dict(prompt_ids=[1, 2, 3], max_new_tokens=5,
                     on_token=lambda step, token: seen[0].append((step, token))),
                dict(prompt_ids=[4], max_new_tokens=3,
                     on_token=lambda step, token: seen[1].append((step, token)))]
    with Model(so, ckpt, max_context=64, num_slots=2) as model:
        batch = model.generate_batch(requests)
    for i, got in enumerate(batch):
        assert seen[i] == list(enumerate(got["ids"]))
    assert [len(seen[0]), len(seen[1])] == [5, 3]


def test_batch_refuses_a_bad_request_alone(artifacts):
    ckpt = artifacts.checkpoint("gqa", "f32")
    so = artifacts.library(ckpt)
    requests = [dict(prompt_ids=[1, 2], max_new_tokens=4),
                dict(prompt_ids=[1, VOCAB], max_new_tokens=4),
                dict(prompt_ids=[3], max_new_tokens=4, temperature=1.0, top_p=0.0)]
    with Model(so, ckpt, max_context=64, num_slots=3) as model:
        batch = model.generate_batch(requests)
        alone = model.generate([1, 2], 4)
    assert batch[0]["error"] is None and batch[0]["ids"] == alone
    assert batch[1]["finish_reason"] == "rejected"
    assert f"is {VOCAB}, outside the vocabulary [0, {VOCAB})" in batch[1]["error"]
    assert batch[1]["ids"] == []
    assert batch[2]["finish_reason"] == "rejected"
    assert "top_p must be in (0, 1]" in batch[2]["error"]


def test_eos_stops_generation(artifacts):
    ckpt = artifacts.checkpoint("gqa", "f32")
    so = artifacts.library(ckpt)
    ref_ids, ref_logits = artifacts.reference_greedy(ckpt)
    eos = ref_ids[5]
    stop = ref_ids.index(eos)
    with Model(so, ckpt, max_context=256) as model:
        ids, logits = model.generate(PROMPT, STEPS, eos_id=eos, return_logits=True)
        [result] = model.generate_batch([dict(prompt_ids=PROMPT, max_new_tokens=STEPS,
                                              eos_id=eos)])
    assert ids == ref_ids[:stop + 1]
    assert rel_err(logits, ref_logits[:stop + 1]) < 1e-3
    assert result["ids"] == ids and result["finish_reason"] == "eos"


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
