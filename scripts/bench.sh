#!/usr/bin/env bash
# The benchmark suite (python/fdc/bench), in two halves:
#   bash scripts/bench.sh prepare        where fdc is built (no GPU): compiles
#                                        the benchmark models into .bench-artifacts/
#   bash scripts/bench.sh run [ARGS...]  on the GPU machine (torch, transformers;
#                                        no MLIR): checks and times everything,
#                                        writes results.json, perf.md and plots
#                                        to $OUT (default out/bench), prints the
#                                        tables last. ARGS go to fdc.bench.suite
#                                        (--quick, --families linear,step, ...).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
case "${1:-}" in
  prepare)
    shift
    exec "${FDC_PYTHON:-$repo/.venv/bin/python}" -m fdc.bench.prepare "$@" ;;
  run)
    shift
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
      echo "SKIP: no NVIDIA GPU on this machine (the benchmark suite needs one)"
      exit 0
    fi
    nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw \
      --format=csv,noheader || true
    export PYTHONUNBUFFERED=1
    exec python3 -m fdc.bench.suite --artifacts "$repo/.bench-artifacts" \
      --out "${OUT:-$repo/out/bench}" "$@" ;;
  *)
    echo "usage: bash scripts/bench.sh prepare | run [suite args]" >&2
    exit 2 ;;
esac
