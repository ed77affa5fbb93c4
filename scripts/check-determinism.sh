#!/usr/bin/env bash
# Generated IR must not depend on the C++ compiler that built fdc: GCC and
# clang evaluate a call's arguments in different orders, so two builder calls
# in one argument list emit ops in different orders. This builds fdc-opt with
# GCC and checks that its host and GPU lowerings of the frontend's models
# (f32 and bf16, MHA/GQA, unified max, INT4 KV and weights, Tiled-CSL; the
# sm_90a tuning candidates build every linear family, group GEMMs too) are
# byte-identical to the clang build's, then runs the dialect and lowering lit
# tests with the GCC build.
#
# Environment: FDC_BUILD_DIR (the clang build, default build/),
# FDC_GCC_BUILD_DIR (default build-gcc/), FDC_JOBS.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
clang_build="${FDC_BUILD_DIR:-$repo/build}"
gcc_build="${FDC_GCC_BUILD_DIR:-$repo/build-gcc}"
jobs="${FDC_JOBS:-$(nproc)}"
py="$repo/.venv/bin/python"

cmake -G Ninja -S "$repo" -B "$gcc_build" -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
  -DPython3_EXECUTABLE="$py" >/dev/null
ninja -C "$gcc_build" -j "$jobs" fdc-opt

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH="$repo/python"
"$py" -m fdc.testing.tiny_checkpoint "$tmp/gqa" >/dev/null
"$py" -m fdc.testing.tiny_checkpoint "$tmp/mha" --variant mha >/dev/null
"$py" -m fdc.testing.tiny_checkpoint "$tmp/sparse" --dtype bf16 --sparsity 0.8 >/dev/null
"$py" -m fdc.frontend "$tmp/gqa" -o "$tmp/gqa.mlir"
"$py" -m fdc.frontend "$tmp/mha" -o "$tmp/mha-unified.mlir" \
  --softmax unified_max --phi 0 --lo -20 --hi 20
"$py" -m fdc.frontend "$tmp/gqa" -o "$tmp/gqa-int4.mlir" \
  --kv-cache int4 --kv-groups 4 --linear-weights int4 --group-size 32
"$py" -m fdc.frontend "$tmp/sparse" -o "$tmp/sparse.mlir" --sparse-mlp

status=0
for model in "$tmp"/*.mlir; do
  for lowering in convert-decode-to-host convert-decode-to-gpu=target=sm_90 \
      convert-decode-to-gpu=target=sm_90a \
      convert-decode-to-gpu=target=gfx942 convert-decode-to-gpu=target=gfx1100 \
      "convert-decode-to-gpu=target=sm_90a tuning-candidates=1"; do
    name="$(basename "$model" .mlir).${lowering//=/-}"
    name="${name// /-}"
    for compiler in clang gcc; do
      build="$clang_build"
      [[ "$compiler" == gcc ]] && build="$gcc_build"
      "$build/bin/fdc-opt" "$model" --decode-assign-weight-layout \
        "--$lowering" -o "$tmp/$name.$compiler.mlir"
    done
    if cmp -s "$tmp/$name.clang.mlir" "$tmp/$name.gcc.mlir"; then
      echo "determinism: $name: identical"
    else
      echo "determinism: $name: GCC and clang builds emit different IR:" >&2
      diff "$tmp/$name.clang.mlir" "$tmp/$name.gcc.mlir" | head -20 >&2
      status=1
    fi
  done
done

/usr/lib/llvm-22/bin/lit -q "$gcc_build/test/Dialect" "$gcc_build/test/Conversion" || status=1
exit "$status"
