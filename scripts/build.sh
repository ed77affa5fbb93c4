#!/usr/bin/env bash
# Configures and builds fdc (Release, clang-22, MLIR 22) with ninja.
# Expects scripts/setup.sh to have run (it creates .venv).
#
# Environment:
#   FDC_BUILD_DIR   build directory (default: build/ in the repo)
#   FDC_JOBS        parallel jobs (default: nproc)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${FDC_BUILD_DIR:-$repo/build}"
jobs="${FDC_JOBS:-$(nproc)}"

if [[ ! -x "$repo/.venv/bin/python" ]]; then
  echo "build: error: $repo/.venv is missing; run scripts/setup.sh first" >&2
  exit 1
fi

cmake -G Ninja -S "$repo" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_C_COMPILER=clang-22 \
  -DCMAKE_CXX_COMPILER=clang++-22 \
  -DPython3_EXECUTABLE="$repo/.venv/bin/python" \
  -DFDC_ENABLE_FUZZERS=ON

ninja -C "$build" -j "$jobs"
