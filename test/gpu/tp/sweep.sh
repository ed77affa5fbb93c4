#!/usr/bin/env bash
# NCCL settings against TP 2 step graphs of the 7B-wide model (2 GPUs; after
# test/gpu/tp/prepare.sh): one process per setting. Arguments: settings, each
# a space-separated VAR=VALUE list ("" for the runtime's defaults, which set
# NCCL_GRAPH_MIXING_SUPPORT=0 unless it is set).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
if [ -z "${FDC_NCCL_LIBRARY:-}" ]; then
  FDC_NCCL_LIBRARY=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
  export FDC_NCCL_LIBRARY
fi
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 PYTHONPATH=$repo/python:$repo/test/gpu/tp
export FDC_RUNTIME_LIB=$repo/.gpu-artifacts-tp/lib/libfdc_runtime.so
ckpt=${SWEEP_CKPT:-/tmp/fdc-sweep-wide32}
[ -f "$ckpt/config.json" ] || python3 -m fdc.testing.wide_model build "$ckpt" \
  --config "$repo/.gpu-artifacts-tp/models/wide32-config.json" >/dev/null
for setting in "$@"; do
  # shellcheck disable=SC2086
  env $setting python3 "$repo/test/gpu/tp/nccl_sweep.py" "${setting:-default}" "$ckpt" \
    2>&1 | grep -E "^sweep|Error|error" | head -5
done
