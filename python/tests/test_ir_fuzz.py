"""The IR fuzzer (fdc.testing.ir_fuzz, docs/fuzzing.md): the generator is
deterministic per seed, its unmutated models verify (fdc-opt), and the oracle
flags crashes, sanitizer reports and hangs of the runner.

The fdc-opt test needs build/bin/fdc-opt (or FDC_BUILD_DIR); the oracle tests
use fake tools written here and need nothing built.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fdc.testing import ir_fuzz
from fdc.testing.ir_fuzz import check, fault_buffer, generate, main

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FDC_BUILD_DIR") or REPO / "build")
FDC_OPT = BUILD / "bin" / "fdc-opt"


def test_deterministic_per_seed():
    for seed in (0, 1, 17, 12345):
        a, b = generate(seed), generate(seed)
        assert a.mlir == b.mlir
        assert a.mutations == b.mutations
        assert a.steps == b.steps
        assert a.weights.keys() == b.weights.keys()
        for name in a.weights:
            assert (a.weights[name].tobytes() == b.weights[name].tobytes())
    assert generate(1).mlir != generate(2).mlir


def test_valid_mode_has_no_mutations_and_hostile_mode_has_some():
    for seed in range(30):
        assert generate(seed, hostile=False).mutations == []
        assert generate(seed, hostile=True).mutations


def test_generator_covers_the_variants():
    text = "".join(generate(seed, hostile=False).mlir for seed in range(80))
    for needle in ("xbf16>", "xf16>", "!decode.int4<", "!decode.qtensor<", "!decode.tiled_csl<",
                   "unified_max", "softmax<online>", "decode.rope", "decode.sample",
                   "decode.argmax", "silu_gate_up", " bias ", " residual ", "= concat"):
        assert needle in text, needle


@pytest.mark.skipif(not FDC_OPT.exists(), reason=f"{FDC_OPT} is not built")
def test_valid_models_verify(tmp_path):
    for seed in range(12):
        path = tmp_path / f"m{seed}.mlir"
        path.write_text(generate(seed, hostile=False).mlir)
        result = subprocess.run([str(FDC_OPT), str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"seed {seed}:\n{result.stderr}"


def _tool(path: Path, body: str) -> str:
    path.write_text("#!" + sys.executable + "\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


FAKE_FDC = """import sys
out = sys.argv[sys.argv.index("-o") + 1]
open(out, "w").write("not a library")
"""


def test_oracle_flags_a_runner_that_segfaults(tmp_path):
    fdc = _tool(tmp_path / "fdc", FAKE_FDC)
    runner = _tool(tmp_path / "runner", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    outcome = check(generate(3), str(tmp_path / "case"), fdc, runner)
    assert outcome.failure == "run: SIGSEGV"


def test_oracle_flags_a_sanitizer_report(tmp_path):
    fdc = _tool(tmp_path / "fdc", FAKE_FDC)
    runner = _tool(tmp_path / "runner", """import sys
sys.stderr.write("fdc-ir-fuzz-runner: buffer weights 0x10000 0x10100\\n")
sys.stderr.write("fdc-ir-fuzz-runner: step 0\\n")
sys.stderr.write("fdc-ir-fuzz-runner: buffer tokens 0x20000 0x20008\\n")
sys.stderr.write("==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000020010\\n")
sys.exit(1)
""")
    outcome = check(generate(3), str(tmp_path / "case"), fdc, runner)
    assert outcome.failure == "run: SEGV past the end of tokens"
    assert "step 0" in outcome.detail


def test_oracle_flags_compiler_crashes_and_hangs(tmp_path, monkeypatch):
    runner = _tool(tmp_path / "runner", "pass\n")
    abort = _tool(tmp_path / "fdc-abort", "import os\nos.abort()\n")
    assert check(generate(3), str(tmp_path / "a"), abort, runner).failure == "compile: SIGABRT"
    llvm = _tool(tmp_path / "fdc-llvm", "import sys\nprint('LLVM ERROR: oops')\nsys.exit(1)\n")
    assert check(generate(3), str(tmp_path / "b"), llvm, runner).failure == "compile: LLVM ERROR"
    bare = _tool(tmp_path / "fdc-bare", "import sys\nsys.exit(1)\n")
    assert "without an error" in check(generate(3), str(tmp_path / "c"), bare, runner).failure
    monkeypatch.setattr(ir_fuzz, "COMPILE_TIMEOUT", 1)
    hang = _tool(tmp_path / "fdc-hang", "import time\ntime.sleep(60)\n")
    assert check(generate(3), str(tmp_path / "d"), hang, runner).failure == "compile: hang"


def test_oracle_accepts_clean_rejections(tmp_path):
    runner = _tool(tmp_path / "runner", "import sys\nsys.exit(2)\n")
    reject = _tool(tmp_path / "fdc", "import sys\nprint('m.mlir:3:5: error: bad')\nsys.exit(1)\n")
    case = generate(5, hostile=True)
    assert check(case, str(tmp_path / "a"), reject, runner).failure is None
    # A load refusal is clean for a mutated model, a failure for a valid one.
    fdc = _tool(tmp_path / "fdc-ok", FAKE_FDC)
    assert check(case, str(tmp_path / "b"), fdc, runner).failure is None
    assert (check(generate(5, hostile=False), str(tmp_path / "c"), fdc, runner).failure
            == "run: a well-typed model was refused at load")


def test_driver_saves_failing_cases_and_exits_1(tmp_path, capsys):
    fdc = _tool(tmp_path / "fdc", FAKE_FDC)
    runner = _tool(tmp_path / "runner", "import os\nos.abort()\n")
    out = tmp_path / "out"
    rc = main(["--cases", "2", "--seed", "7", "--fdc", fdc, "--runner", runner,
               "--out", str(out)])
    assert rc == 1
    saved = sorted(p.name for p in out.iterdir())
    assert saved == ["case-7", "case-8"]
    for name in ("model.mlir", "inputs.txt", "case.json", "repro.sh", "run.log",
                 "checkpoint/model.safetensors"):
        assert (out / "case-7" / name).exists(), name
    assert "2 failures in 1 classes" in capsys.readouterr().out


def test_fault_buffer_names_the_nearest_buffer():
    log = ("fdc-ir-fuzz-runner: buffer kv_cache 0x1000 0x2000\n"
           "fdc-ir-fuzz-runner: buffer logits 0x5000 0x5400\n"
           "AddressSanitizer: SEGV on unknown address 0x000000000ff8 (pc 0x1)\n")
    assert fault_buffer(log) == "address 0x000000000ff8 before kv_cache (offset -8 of 4096 bytes)"
