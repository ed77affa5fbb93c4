#!/usr/bin/env bash
# Builds, where fdc is built (no GPU needed), what the tensor-parallel GPU
# check (test/gpu/tp/run.sh, on a machine with 2 GPUs) runs: the runtime and
# CUDA libraries of 1 and 2 ranks of the tiny models and the 7B-wide model
# (2 layers f32 for the ids, 32 layers bf16 for the latency, and one rank's
# share of the latter for 1 rank) and a 13B-wide model (40 layers, bf16).
# Output: .gpu-artifacts-tp/ (git-ignored).
#   bash test/gpu/tp/prepare.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../../.." && pwd)
build=${FDC_BUILD_DIR:-$repo/build}
py=${FDC_PYTHON:-$repo/.venv/bin/python}
arch=${FDC_TP_ARCH:-sm_90a}
out=$repo/.gpu-artifacts-tp
rm -rf "$out" && mkdir -p "$out/lib" "$out/models"
export PYTHONPATH=$repo/python
cp "$build/lib/libfdc_runtime.so" "$build/bin/fdc-run" "$out/lib/" # fdc-run: probe.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
compile() { # name checkpoint-dir: 1 and 2 ranks
  "$py" -m fdc.frontend "$2" -o "$out/models/$1.mlir"
  for ranks in 1 2; do
    "$build/bin/fdc" compile "$out/models/$1.mlir" --target=cuda:$arch \
      --tensor-parallel $ranks -o "$out/models/$1-tp$ranks.so"
  done
}
for variant in gqa mha; do
  "$py" -m fdc.testing.tiny_checkpoint "$tmp/$variant" --variant "$variant"
  compile "tiny-$variant-f32" "$tmp/$variant"
done
"$py" -m fdc.testing.wide_model header-only "$tmp/wide-f32" --dtype float32 \
  --config-out "$out/models/wide-f32-config.json"
compile wide-f32 "$tmp/wide-f32"
"$py" -m fdc.testing.wide_model header-only "$tmp/wide32" --preset wide32 \
  --config-out "$out/models/wide32-config.json"
compile wide32-bf16 "$tmp/wide32"
# One rank's share of it on one GPU (1 rank only).
"$py" -m fdc.testing.wide_model header-only "$tmp/share" --preset wide32-share \
  --config-out "$out/models/wide32-share-config.json"
"$py" -m fdc.frontend "$tmp/share" -o "$out/models/wide32-share-bf16.mlir"
"$build/bin/fdc" compile "$out/models/wide32-share-bf16.mlir" \
  --target=cuda:$arch -o "$out/models/wide32-share-bf16-tp1.so"
"$py" -m fdc.testing.wide_model header-only "$tmp/wide13b" --preset wide13b \
  --config-out "$out/models/wide13b-config.json"
compile wide13b-bf16 "$tmp/wide13b"
ls -la "$out/models"
