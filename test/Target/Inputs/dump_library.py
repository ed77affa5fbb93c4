"""Opens a model library with dlopen (ctypes) and prints its ABI symbols:
fdc_abi_version, fdc_target, whether fdc_manifest_hash is the FNV-1a hash of
the manifest, and the fdc_manifest JSON one entry per line (compact, sorted
keys), for FileCheck.

    dump_library.py MODEL.so
"""

import ctypes
import json
import os
import sys


def fnv1a64(data: bytes) -> int:
    """fdc_manifest_hash_of (runtime/include/fdc_model_abi.h)."""
    h = 14695981039346656037
    for byte in data:
        h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def compact(value):
    return json.dumps(value, sort_keys=True, separators=(", ", ": "))


lib = ctypes.CDLL(os.path.abspath(sys.argv[1]))
abi = ctypes.c_uint32.in_dll(lib, "fdc_abi_version").value
target = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "fdc_target")))
raw = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, "fdc_manifest")))
manifest = json.loads(raw)
stored_hash = ctypes.c_uint64.in_dll(lib, "fdc_manifest_hash").value
print(f"fdc_abi_version: {abi}")
print(f"fdc_target: {target.decode()}")
print("fdc_manifest_hash:",
      "matches" if stored_hash == fnv1a64(raw) else f"MISMATCH {stored_hash:#x}")
weights = manifest.get("weights", [])
ends = [w["offset"] + w["bytes"] for w in weights]
print("weights_layout:",
      "aligned_256" if all(w["offset"] % 256 == 0 for w in weights) else "UNALIGNED",
      "ordered" if all(w["offset"] >= e for w, e in zip(weights[1:], ends)) else "OVERLAPPING",
      "fits" if all(e <= manifest["weights_bytes"] for e in ends) else "OVERFLOWS")
for key in sorted(manifest):
    value = manifest[key]
    if isinstance(value, list):
        print(f"{key}: {len(value)} entries")
        for entry in value:
            print(f"  {compact(entry)}")
    else:
        print(f"{key}: {compact(value)}")
