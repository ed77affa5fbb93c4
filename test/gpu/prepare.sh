#!/usr/bin/env bash
# Builds, on the machine with MLIR (no GPU needed), everything the GPU test
# runs: the CUDA model libraries, the runtime, and the model descriptions.
# Output: .gpu-artifacts/ (git-ignored), carried to the GPU machine.
#   bash test/gpu/prepare.sh
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${FDC_BUILD_DIR:-$repo/build}
py=${FDC_PYTHON:-$repo/.venv/bin/python}
out=$repo/.gpu-artifacts
rm -rf "$out" && mkdir -p "$out/lib" "$out/models"
export PYTHONPATH=$repo/python

cp "$build/lib/libfdc_runtime.so" "$out/lib/"
cp "$build/bin/fdc-run" "$out/lib/"
# fdc tune / fdc inspect without LLVM (test/gpu/tune.sh).
cp "$build/bin/fdc-tune" "$build/bin/fdc-inspect" "$build/bin/fdc-pack" "$out/lib/"

compile() { # name checkpoint-dir frontend-flags... ; compiles for sm_90
  local name=$1 ckpt=$2; shift 2
  "$py" -m fdc.frontend "$ckpt" -o "$out/models/$name.mlir" "$@"
  "$build/bin/fdc" compile "$out/models/$name.mlir" --target=cuda:sm_90 \
    -o "$out/models/$name.so"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Tiny models: the device regenerates the same checkpoints from the seed.
for variant in gqa mha mqa; do
  "$py" -m fdc.testing.tiny_checkpoint "$tmp/$variant" --variant "$variant" \
    --max-position-embeddings 8192
  compile "tiny-$variant-f32-online" "$tmp/$variant"
  compile "tiny-$variant-f32-unified" "$tmp/$variant" \
    --softmax unified_max --phi 0 --lo -60 --hi 60
  # Every score far below phi: every row is flagged and recomputed online.
  compile "tiny-$variant-f32-fallback" "$tmp/$variant" \
    --softmax unified_max --phi 100 --lo -1 --hi 1
done
"$py" -m fdc.testing.tiny_checkpoint "$tmp/gqa-bf16" --dtype bf16 \
  --max-position-embeddings 8192
compile tiny-gqa-bf16-online "$tmp/gqa-bf16"
# Tuning libraries (test/gpu/tune.sh): every candidate of every linear.
tuning_library() { # name model.mlir
  "$build/bin/fdc" compile "$2" --target=cuda:sm_90 --tuning-candidates \
    -o "$out/models/$1-tune.so"
}
tuning_library tiny-gqa-bf16 "$out/models/tiny-gqa-bf16-online.mlir"
# Packed layouts, for the GPU and the host (the numerics reference).
compile_both() { # name checkpoint-dir frontend-flags...
  local name=$1 ckpt=$2; shift 2
  compile "$name" "$ckpt" "$@"
  "$build/bin/fdc" compile "$out/models/$name.mlir" --target=host \
    -o "$out/models/$name-host.so"
}
compile_both tiny-gqa-int4kv "$tmp/gqa" --kv-cache int4 --kv-groups 4
compile_both tiny-gqa-int4w "$tmp/gqa" --linear-weights int4 --group-size 64
"$py" -m fdc.testing.tiny_checkpoint "$tmp/gqa-bf16-sparse" --dtype bf16 \
  --sparsity 0.8 --max-position-embeddings 8192
compile_both tiny-gqa-bf16-sparse "$tmp/gqa-bf16-sparse" --sparse-mlp
# sm_80 only: on an H100 the runtime must JIT the PTX.
"$py" -m fdc.frontend "$tmp/gqa" -o "$out/models/tiny-gqa-ptx.mlir"
"$build/bin/fdc" compile "$out/models/tiny-gqa-ptx.mlir" --target=cuda:sm_80 \
  -o "$out/models/tiny-gqa-ptx.so"

# The 7B-wide model: the device builds it with transformers from a seed; the
# IR depends only on the config and the tensor names / shapes, so compile it
# from a header-only twin (sparse file, no data).
"$py" -m fdc.testing.wide_model header-only "$tmp/wide" \
  --config-out "$out/models/wide-config.json"
compile wide-bf16-online "$tmp/wide"
tuning_library wide-bf16 "$out/models/wide-bf16-online.mlir"
compile wide-bf16-unified "$tmp/wide" --softmax unified_max --phi 0 --lo -60 --hi 60
# The same model in f32: greedy decoding then has no bf16 near-ties.
"$py" -m fdc.testing.wide_model header-only "$tmp/wide-f32" --dtype float32 \
  --config-out "$out/models/wide-f32-config.json"
compile wide-f32-online "$tmp/wide-f32"
# The 7B-wide head layout on a small model, f32 and bf16.
for dtype in float32 bfloat16; do
  "$py" -m fdc.testing.wide_model header-only "$tmp/head128-$dtype" \
    --preset head128 --dtype "$dtype" --config-out "$out/models/head128-$dtype.json"
  compile "head128-$dtype" "$tmp/head128-$dtype"
done
# One decode.linear per model: every epilogue, f16 / bf16, pinned kernels,
# each for its arch (sm_90a for the group MMA).
"$py" -m fdc.testing.linear_models "$out/models" --archs |
  while read -r name arch; do
    "$build/bin/fdc" compile "$out/models/$name.mlir" --target=cuda:$arch \
      -o "$out/models/$name.so"
  done
# One decode.sparse_linear per model: every epilogue, f16 / bf16, partial
# tiles, pinned flash_spmm and group_spmm configs, each for its arch (sm_90a
# for the group MMA; the weights are made on the device).
"$py" -m fdc.testing.sparse_models "$out/models" --archs |
  while read -r name arch; do
    "$build/bin/fdc" compile "$out/models/$name.mlir" --target=cuda:$arch \
      -o "$out/models/$name.so" --emit-ptx="$tmp/$name.ptx"
    # The kernels on the group MMA, for the check of the family that ran.
    awk '/\.entry /{split($0, a, ".entry "); split(a[2], b, "("); k = b[1]}
         /wgmma\.mma_async/{print k}' "$tmp/$name.ptx" | sort -u \
      >"$out/models/$name.wgmma"
  done
# One decode.attention per model: each kernel, scheme and head layout.
"$py" -m fdc.testing.attention_models "$out/models"
for ir in "$out"/models/attention-*.mlir; do
  "$build/bin/fdc" compile "$ir" --target=cuda:sm_90 -o "${ir%.mlir}.so"
done
du -sh "$out"
