#!/usr/bin/env bash
# The main job, end to end: make the tiny Llama-shaped checkpoint, import it
# into the decode dialect, compile it into a model library and generate
# tokens with the runtime. Everything lands in out/.
#
# Environment:
#   FDC_BUILD_DIR     build directory (default: build/ in the repo)
#   FDC_DEMO_TARGET   compile target (default: host)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
build="${FDC_BUILD_DIR:-$repo/build}"

bash scripts/setup.sh
bash scripts/build.sh

python="$repo/.venv/bin/python"
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p out

# On a machine with an NVIDIA GPU (and a CUDA toolkit for ptxas/libdevice),
# compile for the GPU's arch; otherwise for the host. FDC_DEMO_TARGET
# overrides either.
target="${FDC_DEMO_TARGET:-host}"
if [[ -z "${FDC_DEMO_TARGET:-}" ]] && command -v nvidia-smi >/dev/null 2>&1; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
        head -n 1 | tr -d ' .')
  cuda="${CUDA_HOME:-/usr/local/cuda}"
  if [[ -n "$cap" && -f "$cuda/nvvm/libdevice/libdevice.10.bc" ]]; then
    target="cuda:sm_$cap"
  elif [[ -n "$cap" ]]; then
    echo "demo: a GPU is present but no CUDA toolkit at $cuda; using host"
  fi
fi
echo "demo: target $target"

set -x
"$python" -m fdc.testing.tiny_checkpoint out/tiny
"$python" -m fdc.frontend out/tiny -o out/tiny.mlir
"$build/bin/fdc" compile out/tiny.mlir --target="$target" -o out/tiny.so
"$build/bin/fdc" run out/tiny.so --weights out/tiny --prompt-ids 1,2,3,4 \
  --max-new-tokens 16
