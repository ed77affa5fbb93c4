#!/usr/bin/env bash
# Short diagnostics of the tensor-parallel path on 2 GPUs: each run is
# bounded; a run still going after its time gets its threads' stacks.
set -u
repo=$(cd "$(dirname "$0")/../../.." && pwd)
art=$repo/.gpu-artifacts-tp
export PYTHONPATH=$repo/python
nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))')
export FDC_NCCL_LIBRARY=$nccl
ckpt=$(mktemp -d)/gqa
python3 -m fdc.testing.tiny_checkpoint "$ckpt" --variant gqa >/dev/null
run() { # label seconds env... -- args
  local label=$1 secs=$2; shift 2
  echo "== $label"
  env "$@" "$art/lib/fdc-run" "$art/models/tiny-gqa-f32-tp${TP}.so" --weights "$ckpt" \
    --prompt-ids 1,2,3 --max-new-tokens 6 --max-context 64 > /tmp/probe.out 2>&1 &
  local pid=$!
  for _ in $(seq "$secs"); do kill -0 $pid 2>/dev/null || break; sleep 1; done
  if kill -0 $pid 2>/dev/null; then
    echo "HUNG after ${secs}s"
    command -v gdb >/dev/null && gdb -p $pid -batch -ex "thread apply all bt 12" 2>/dev/null \
      | grep -E "^#|^Thread" | head -80
    kill -9 $pid
  fi
  wait $pid; echo "exit $?"; tail -${PROBE_TAIL:-5} /tmp/probe.out
}
export NCCL_NVLS_ENABLE=0
if [ $# -eq 0 ]; then
  TP=1 run "tp1 graphs" 30 FDC_CUDA_GRAPHS=1
  TP=2 run "tp2 eager" 30 FDC_CUDA_GRAPHS=0
  TP=2 run "tp2 graphs" 30 FDC_CUDA_GRAPHS=1
else
  # Each argument: a space-separated list of VAR=VALUE for one graphed run.
  for variant in "$@"; do
    # shellcheck disable=SC2086
    TP=2 run "tp2 graphs $variant" 20 FDC_CUDA_GRAPHS=1 $variant
  done
fi
