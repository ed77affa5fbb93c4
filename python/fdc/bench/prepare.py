"""Builds what the benchmark suite runs, where fdc is built (no GPU needed):

    python -m fdc.bench.prepare [--out .bench-artifacts] [--arch sm_90a]

writes the benchmark models' IR and compiles each with
``fdc compile --target=cuda:ARCH`` into OUT/models/ (the sparse family's
libraries too, one per weight shape: the suite makes their pruned weights
from a seed on the GPU and packs them there), compiles the GPU test's
7B-wide Llama (from a header-only checkpoint twin; also with --sparse-mlp,
for the pruned_step family), and copies the runtime
library and the runtime's tools to OUT/lib/. Carry OUT to the GPU machine and
run fdc.bench.suite.

Measured dispatch tables: each linear model and the 7B-wide model also get
a tuning library, ``NAME-tune.so`` (``--tuning-candidates``), which
``scripts/bench.sh tune`` times on the GPU with fdc-tune, writing
``NAME.json`` tuning files. For every ``NAME.json`` in ``--tuning-dir``
(default: docs/perf/tuning, the files of the last measured run), NAME is also
compiled with ``--tuning`` into ``NAME-tuned.so``, which the suite times
beside the heuristic table's library.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import models
from ..testing import wide_model

REPO = Path(__file__).resolve().parents[3]


def _run(cmd: list[str]) -> None:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"error: {' '.join(map(str, cmd))} exited "
                         f"{proc.returncode}:\n{proc.stdout}{proc.stderr}")


def _tuning_arch(path: Path) -> str:
    """The arch of the library a tuning file's candidates were compiled for
    (its "target", e.g. sm_90a: an sm_90 library has no wgmma candidates),
    else the arch it was measured on; "" if unreadable."""
    try:
        tuning = json.loads(path.read_text())
        target = str(tuning.get("target", ""))
        return target.split(":", 1)[1] if target.startswith("cuda:") \
            else str(tuning.get("arch", ""))
    except (OSError, ValueError, AttributeError, IndexError):
        return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=REPO / ".bench-artifacts")
    ap.add_argument("--build", type=Path,
                    default=Path(os.environ.get("FDC_BUILD_DIR", REPO / "build")))
    ap.add_argument("--arch", default="sm_90a",
                    help="cuda target architectures, comma-separated")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--tuning-dir", type=Path, default=REPO / "docs" / "perf" / "tuning",
                    help="tuning files (NAME.json) to compile NAME-tuned.so with")
    args = ap.parse_args(argv)
    fdc = args.build / "bin" / "fdc"
    runtime = args.build / "lib" / "libfdc_runtime.so"
    for path in (fdc, runtime):
        if not path.exists():
            print(f"error: {path} is missing: build fdc first", file=sys.stderr)
            return 1
    shutil.rmtree(args.out, ignore_errors=True)
    (args.out / "models").mkdir(parents=True)
    (args.out / "lib").mkdir()
    shutil.copy2(runtime, args.out / "lib")
    for tool in ("fdc-tune", "fdc-inspect"):
        shutil.copy2(args.build / "bin" / tool, args.out / "lib")
    target = f"--target=cuda:{args.arch}"

    jobs = []

    def compile_model(source: Path, tuned: bool) -> None:
        jobs.append([fdc, "compile", source, target, "-o", source.with_suffix(".so")])
        if not tuned:
            return
        name = source.stem
        jobs.append([fdc, "compile", source, target, "--tuning-candidates",
                     "-o", source.with_name(f"{name}-tune.so")])
        tuning = args.tuning_dir / f"{name}.json"
        # A tuning file is measured on one arch; the libraries of others
        # keep the heuristic table.
        if tuning.is_file() and _tuning_arch(tuning) in args.arch.split(","):
            jobs.append([fdc, "compile", source, target, "--tuning", tuning,
                         "-o", source.with_name(f"{name}-tuned.so")])

    for model in models.all_models() + models.sparse_models():
        source = args.out / "models" / f"{model.name}.mlir"
        source.write_text(model.ir)
        compile_model(source, model.name.startswith("linear_"))
    with tempfile.TemporaryDirectory() as tmp:
        wide_model.write_header_only(tmp, args.out / "models" / "wide-config.json")
        source = args.out / "models" / "wide-bf16-online.mlir"
        _run([sys.executable, "-m", "fdc.frontend", tmp, "-o", source])
        compile_model(source, True)
        # The same model with its MLP as decode.sparse_linear on Tiled-CSL
        # weights (the pruned_step family).
        source = args.out / "models" / "wide-bf16-sparse.mlir"
        _run([sys.executable, "-m", "fdc.frontend", tmp, "-o", source,
              "--sparse-mlp"])
        compile_model(source, False)
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            list(pool.map(_run, jobs))
    print(f"prepared {len(jobs)} model libraries in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
