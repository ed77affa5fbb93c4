"""Makes a damaged copy of a model library (an ELF64 little-endian shared
object) for the `fdc run` tests of libraries the runtime must refuse.

    patch_library.py IN.so OUT.so symbol NAME HEX    # overwrite the bytes of
                                                     # dynamic symbol NAME
    patch_library.py IN.so OUT.so replace OLD NEW    # replace every
                                                     # occurrence of string OLD
                                                     # by NEW (same length)
"""

import struct
import sys


def symbol_offset(data: bytes, symbol: str) -> tuple[int, int]:
    """(file offset, size) of the dynamic symbol's bytes."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not ELF64 LE"
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        (_, kind, _, addr, offset, size, link, _, _,
         entsize) = struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((kind, addr, offset, size, link, entsize))
    SHT_DYNSYM, SHT_NOBITS = 11, 8
    dynsym = next(s for s in sections if s[0] == SHT_DYNSYM)
    strtab = sections[dynsym[4]]
    for off in range(dynsym[2], dynsym[2] + dynsym[3], dynsym[5]):
        st_name, _, _, _, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off)
        start = strtab[2] + st_name
        if data[start:data.index(b"\0", start)].decode() != symbol:
            continue
        for kind, addr, offset, size, _, _ in sections:
            if kind != SHT_NOBITS and addr <= st_value < addr + size:
                return offset + st_value - addr, st_size
        sys.exit(f"{symbol}: no section holds address {st_value:#x}")
    sys.exit(f"no dynamic symbol {symbol}")


def main(src, dst, mode, *args):
    data = bytearray(open(src, "rb").read())
    if mode == "symbol":
        offset, size = symbol_offset(data, args[0])
        new = bytes.fromhex(args[1])
        assert len(new) <= size, f"{args[0]} holds {size} bytes"
        data[offset:offset + len(new)] = new
    elif mode == "replace":
        old, new = args[0].encode(), args[1].encode()
        assert len(old) == len(new), "OLD and NEW must have the same length"
        assert old in data, f"{args[0]!r} does not occur"
        data = bytearray(bytes(data).replace(old, new))
    else:
        sys.exit(f"unknown mode {mode!r}")
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main(*sys.argv[1:])
