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
#   bash scripts/bench.sh tune           on the GPU machine (no MLIR): fdc tune on
#                                        every tuning library prepare built;
#                                        tuning files to $OUT/tuning (default
#                                        out/tuning). Copy them to docs/perf/tuning
#                                        and prepare again: the suite then also
#                                        times the tuned libraries.
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
  tune)
    shift
    if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
      echo "SKIP: no NVIDIA GPU on this machine (fdc tune needs one)"
      exit 0
    fi
    art=$repo/.bench-artifacts
    out=${OUT:-$repo/out}/tuning
    mkdir -p "$out"
    export LD_LIBRARY_PATH=$art/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    start=$SECONDS
    shopt -s nullglob
    libraries=("$art"/models/*-tune.so)
    if [[ ${#libraries[@]} -eq 0 ]]; then
      echo "error: no tuning libraries in $art/models: run bash scripts/bench.sh prepare" >&2
      exit 1
    fi
    for library in "${libraries[@]}"; do
      name=$(basename "$library" -tune.so)
      "$art/lib/fdc-tune" "$library" -o "$out/$name.json" "$@"
    done
    echo "tuned every library in $((SECONDS - start)) s; files in $out" ;;
  *)
    echo "usage: bash scripts/bench.sh prepare | run [suite args] | tune [fdc-tune args]" >&2
    exit 2 ;;
esac
