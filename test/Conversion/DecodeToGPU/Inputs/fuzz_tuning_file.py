"""Feeds decode-apply-tuning mutated tuning files: truncated, bytes changed,
every value replaced by one of the wrong type or range, deep nesting. Each
run must end with status 0 or 1 (never a crash, assertion or hang), and a
failure must be an error naming the tuning file.

usage: fuzz_tuning_file.py FDC_OPT MODEL.mlir VALID.json WORKDIR
"""
import json
import os
import random
import subprocess
import sys

fdc_opt, model, valid_path, work = sys.argv[1:5]
valid = open(valid_path, "rb").read()
os.makedirs(work, exist_ok=True)
rng = random.Random(1234)
cases = []

# Truncations.
for cut in sorted(rng.sample(range(len(valid)), 30)) + [0, 1]:
    cases.append(("truncated at %d" % cut, valid[:cut]))
# Random byte changes.
alphabet = b'{}[]":,0123456789-+.eE \\\x00\xff\xc3truefalsn'
for i in range(40):
    data = bytearray(valid)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = alphabet[rng.randrange(len(alphabet))]
    cases.append(("bytes changed #%d" % i, bytes(data)))

# Every value in turn replaced by a bad one.
bad_values = ["x", -1, 0, 2**63, 1e300, 1.5, None, True, [], {}, [1, "a"],
              {"family": 7}, "flat_gemm"]
root = json.loads(valid)


def paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, prefix + (index,))


def replaced(value, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


all_paths = list(paths(root))
for path in all_paths:
    for new in rng.sample(bad_values, 3):
        cases.append(("%s = %r" % ("/".join(map(str, path)), new),
                      json.dumps(replaced(root, path, new)).encode()))
# Deep nesting, and an empty or non-object document.
cases.append(("deep nesting", b"[" * 100000 + b"]" * 100000))
cases.append(("deep object", b'{"a":' * 50000 + b"1" + b"}" * 50000))
cases.append(("empty", b""))
cases.append(("array root", b"[]"))

failures = 0
for index, (name, data) in enumerate(cases):
    path = os.path.join(work, "case%d.json" % index)
    with open(path, "wb") as f:
        f.write(data)
    try:
        run = subprocess.run(
            [fdc_opt, model, "--decode-apply-tuning=file=%s target=sm_90" % path,
             "-o", os.devnull], capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        print("HANG: %s" % name)
        failures += 1
        continue
    stderr = run.stderr.decode(errors="replace")
    ok = run.returncode == 0 or (
        run.returncode == 1 and ("tuning file '%s'" % path) in stderr)
    if not ok:
        failures += 1
        print("FAIL: %s: status %d\n%s" % (name, run.returncode, stderr[-2000:]))
print("%d cases, %d failures" % (len(cases), failures))
sys.exit(1 if failures else 0)
