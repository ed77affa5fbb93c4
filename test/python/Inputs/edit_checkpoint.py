"""Copy a single-file checkpoint, breaking it on purpose (for error tests).

    python edit_checkpoint.py SRC DST [--drop NAME] [--reshape NAME D0,D1,...]
        [--set-config KEY JSON] [--del-config KEY]
"""

import argparse
import json
import os

import numpy as np

from fdc.safetensors import load_tensor, read_header, save_file


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--drop", action="append", default=[], metavar="NAME")
    ap.add_argument("--reshape", nargs=2, action="append", default=[], metavar=("NAME", "SHAPE"))
    ap.add_argument("--set-config", nargs=2, action="append", default=[], metavar=("KEY", "JSON"))
    ap.add_argument("--del-config", action="append", default=[], metavar="KEY")
    args = ap.parse_args()

    with open(os.path.join(args.src, "config.json")) as f:
        config = json.load(f)
    for key, value in args.set_config:
        config[key] = json.loads(value)
    for key in args.del_config:
        del config[key]

    path = os.path.join(args.src, "model.safetensors")
    weights = {name: load_tensor(path, name) for name in read_header(path).tensors}
    for name in args.drop:
        del weights[name]
    for name, shape in args.reshape:
        weights[name] = np.zeros([int(d) for d in shape.split(",")], np.float32)

    os.makedirs(args.dst, exist_ok=True)
    with open(os.path.join(args.dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    save_file(weights, os.path.join(args.dst, "model.safetensors"))


if __name__ == "__main__":
    main()
