#!/usr/bin/env bash
# The GPU test, one call on a GPU machine (needs torch + transformers there,
# no MLIR): first `bash test/gpu/prepare.sh` where fdc is built, then carry
# .gpu-artifacts/ and run `bash test/gpu/run.sh`. Skips without a GPU.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU on this machine (test/gpu/run.sh needs one)"
  exit 0
fi
if [ ! -f "$repo/.gpu-artifacts/lib/libfdc_runtime.so" ]; then
  echo "error: .gpu-artifacts/ is missing: run test/gpu/prepare.sh where fdc is built" >&2
  exit 1
fi
nvidia-smi -L
export PYTHONUNBUFFERED=1
python3 "$repo/test/gpu/gpu_check.py"
status=$?
# The runtime checks again as users run them: unpoisoned, so with the step
# graphs and overlapped steps (results in $OUT/unpoisoned/gpu_check.json).
unpoisoned=${OUT:-$repo/.gpu-artifacts}/unpoisoned
mkdir -p "$unpoisoned"
OUT=$unpoisoned FDC_CUDA_POISON=0 FDC_GPU_STAGES=tiny_checks,wide_checks \
  python3 "$repo/test/gpu/gpu_check.py" || status=1
# fdc tune on the real kernels (tiny and 7B-wide tuning libraries).
bash "$repo/test/gpu/tune.sh" || status=1
exit $status
