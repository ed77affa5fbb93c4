"""Reads the kernel images of a GPU model library through dlopen (ctypes):
for each arch of fdc_target, fdc_hsaco_<arch> (rocm) or fdc_cubin_<arch>
(cuda) and its _size symbol, and prints one line per image for FileCheck:
its symbol, size, ELF machine, and whether it equals PREFIX.<arch>.hsaco
(the file `fdc compile --emit-hsaco=PREFIX` wrote) when --dumps PREFIX is
given.

    kernel_images.py MODEL.so [--dumps PREFIX]
"""

import argparse
import ctypes
import os
import struct

ELF_MACHINES = {190: "EM_CUDA", 224: "EM_AMDGPU"}

ap = argparse.ArgumentParser()
ap.add_argument("library")
ap.add_argument("--dumps")
args = ap.parse_args()

lib = ctypes.CDLL(os.path.abspath(args.library))
target = ctypes.string_at(
    ctypes.addressof(ctypes.c_char.in_dll(lib, "fdc_target"))).decode()
platform, _, archs = target.partition(":")
kind = {"rocm": "hsaco", "cuda": "cubin"}[platform]
for arch in archs.split(","):
    symbol = f"fdc_{kind}_{arch}"
    size = ctypes.c_uint64.in_dll(lib, symbol + "_size").value
    data = ctypes.string_at(ctypes.addressof(ctypes.c_char.in_dll(lib, symbol)), size)
    machine = struct.unpack_from("<H", data, 18)[0] if data[:4] == b"\x7fELF" else None
    line = f"{symbol}: {size} bytes, {ELF_MACHINES.get(machine, machine)}"
    if args.dumps:
        path = f"{args.dumps}.{arch}.{kind}"
        with open(path, "rb") as dumped:
            line += ", matches dump" if dumped.read() == data else ", DIFFERS from dump"
    print(line)
