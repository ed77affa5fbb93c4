"""Makes a broken copy of a tiny checkpoint for the `fdc run` error tests.

    edit_checkpoint.py SRC_DIR DST_DIR rename OLD NEW   # tensor OLD is stored as NEW
    edit_checkpoint.py SRC_DIR DST_DIR drop NAME        # tensor NAME is left out
    edit_checkpoint.py SRC_DIR DST_DIR truncate         # model.safetensors cut short
    edit_checkpoint.py SRC_DIR DST_DIR bad-header       # header is not JSON

SRC_DIR holds config.json and one model.safetensors (F32).
"""

import os
import shutil
import sys

from fdc.safetensors import load_tensor, read_header, save_file


def main(src, dst, action, *args):
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), os.path.join(dst, "config.json"))
    src_file = os.path.join(src, "model.safetensors")
    dst_file = os.path.join(dst, "model.safetensors")
    if action in ("rename", "drop"):
        names = list(read_header(src_file).tensors)
        tensors = {}
        for name in names:
            if action == "drop" and name == args[0]:
                continue
            new = args[1] if action == "rename" and name == args[0] else name
            tensors[new] = load_tensor(src_file, name)
        assert len(tensors) == len(names) - (action == "drop"), "no such tensor"
        save_file(tensors, dst_file)
    elif action == "truncate":
        data = open(src_file, "rb").read()
        open(dst_file, "wb").write(data[: len(data) // 2])
    elif action == "bad-header":
        data = open(src_file, "rb").read()
        size = int.from_bytes(data[:8], "little")
        open(dst_file, "wb").write(data[:8] + b"#" * size + data[8 + size:])
    else:
        sys.exit(f"unknown action {action!r}")


if __name__ == "__main__":
    main(*sys.argv[1:])
