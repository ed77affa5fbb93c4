#!/usr/bin/env bash
# The tensor-parallel GPU check, on a machine with at least 2 GPUs (torch +
# transformers there, no MLIR): `bash test/gpu/tp/prepare.sh` where fdc is
# built, carry .gpu-artifacts-tp/, then `bash test/gpu/tp/run.sh`.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 2 ]; then
  echo "SKIP: test/gpu/tp/run.sh needs 2 GPUs, found $gpus"
  exit 0
fi
nvidia-smi -L
# NCCL from the wheel torch depends on, unless named already.
if [ -z "${FDC_NCCL_LIBRARY:-}" ]; then
  nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
  [ -n "$nccl" ] && [ -f "$nccl" ] && export FDC_NCCL_LIBRARY=$nccl
fi
echo "FDC_NCCL_LIBRARY=${FDC_NCCL_LIBRARY:-<default search>}"
# The lent machines ask for NVLink multicast (NVLS) off.
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
export PYTHONUNBUFFERED=1 PYTHONPATH=$repo/python
export FDC_RUNTIME_LIB=$repo/.gpu-artifacts-tp/lib/libfdc_runtime.so
python3 "$repo/test/gpu/tp/tp_check.py" "$@"
