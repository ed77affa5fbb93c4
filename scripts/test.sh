#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (ctest: lit + unit tests + doc check; pytest: python/tests).
# Exits non-zero if any step or any test fails.
#
# Environment: FDC_BUILD_DIR, FDC_JOBS (see scripts/build.sh);
# FDC_SKIP_DETERMINISM=1 skips the GCC build of scripts/check-determinism.sh.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build="${FDC_BUILD_DIR:-$repo/build}"
jobs="${FDC_JOBS:-$(nproc)}"
start=$SECONDS

bash scripts/setup.sh
bash scripts/build.sh

failed=()
echo "test: ctest"
ctest --test-dir "$build" --output-on-failure -j "$jobs" || failed+=(ctest)
echo "test: pytest"
FDC_BUILD_DIR="$build" .venv/bin/python -m pytest -q python/tests || failed+=(pytest)
if [[ "${FDC_SKIP_DETERMINISM:-0}" != 1 ]]; then
  echo "test: determinism (fdc-opt built with GCC emits clang's IR)"
  FDC_BUILD_DIR="$build" bash scripts/check-determinism.sh || failed+=(determinism)
fi

elapsed=$((SECONDS - start))
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test: FAILED: ${failed[*]} (${elapsed}s)" >&2
  exit 1
fi
echo "test: all passed (${elapsed}s)"
