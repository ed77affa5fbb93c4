#!/usr/bin/env bash
# fdc tune on a GPU machine (no MLIR): times every candidate kernel of the
# tuning libraries test/gpu/prepare.sh built and checks the tuning files.
# Run by test/gpu/run.sh, or alone after prepare.sh:
#   bash test/gpu/tune.sh            # tuning files to $OUT/tuning (or out/tuning)
# Then, where fdc is built:
#   build/bin/fdc compile .gpu-artifacts/models/wide-bf16-online.mlir \
#     --target=cuda:sm_90 --tuning OUT/tuning/wide-bf16.json -o wide-tuned.so
#   build/bin/fdc inspect wide-tuned.so
# Skips without a GPU.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
art=$repo/.gpu-artifacts
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU on this machine (test/gpu/tune.sh needs one)"
  exit 0
fi
if [ ! -x "$art/lib/fdc-tune" ] || [ ! -f "$art/models/tiny-gqa-bf16-tune.so" ]; then
  echo "error: .gpu-artifacts/ has no fdc-tune or tuning libraries: run test/gpu/prepare.sh where fdc is built" >&2
  exit 1
fi
out=${OUT:-$repo/out}/tuning
mkdir -p "$out"
export LD_LIBRARY_PATH=$art/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
status=0
check() { # name seconds-limit
  local file=$out/$1.json
  python3 - "$file" "$2" "$out/$1.log" <<'PY' || status=1
import json, re, sys
path, limit, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
data = json.load(open(path))
assert data["fdc_tuning_version"] == 1 and data["arch"].startswith("sm_"), data
assert data["signatures"], "no signatures"
for s in data["signatures"]:
    d = s["dispatch"]
    assert len(d["kernels"]) == len(d["max_batch"]) + 1, s
    assert [t["batch"] for t in s["timings"]] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    for t in s["timings"]:
        us = t["us"][t["best"]]
        assert us is not None and us > 0, t
        assert min(u for u in t["us"] if u is not None) == us, t
seconds = float(re.search(r"tuned in ([0-9.]+) s", open(log).read()).group(1))
print("%s: %d signatures in %.1f s (limit %.0f s)" % (path, len(data["signatures"]), seconds, limit))
assert seconds <= limit, "fdc tune took %.1f s, more than %.0f s" % (seconds, limit)
PY
}
for name in tiny-gqa-bf16 wide-bf16; do
  echo "== fdc tune $name"
  "$art/lib/fdc-tune" "$art/models/$name-tune.so" -o "$out/$name.json" \
    | tee "$out/$name.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || { status=1; continue; }
  "$art/lib/fdc-inspect" "$art/models/$name-tune.so" | head -3
done
check tiny-gqa-bf16 60
# The 7B-wide model (its 6 distinct linear shapes, lm_head included): the
# issue's budget is 3 minutes on an H100.
check wide-bf16 180
[ $status -eq 0 ] && echo "tune: PASS" || echo "tune: FAIL"
exit $status
