"""python3 -m fdc.frontend CHECKPOINT_DIR -o model.mlir [--name NAME]
       [--softmax online|unified_max --phi X --lo X --hi X]"""

from __future__ import annotations

import argparse
import math
import sys

from .. import FdcError
from . import model_ir
from .emit import Softmax


def parse_softmax(ap: argparse.ArgumentParser, args) -> Softmax:
    params = (args.phi, args.lo, args.hi)
    if args.softmax == "online":
        if any(x is not None for x in params):
            ap.error("--phi/--lo/--hi only apply to --softmax unified_max")
        return Softmax()
    if any(x is None for x in params):
        ap.error("--softmax unified_max needs --phi, --lo and --hi")
    if not all(math.isfinite(x) for x in params) or not args.lo < args.hi:
        ap.error("--phi, --lo and --hi must be finite with --lo < --hi")
    return Softmax("unified_max", *params)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m fdc.frontend",
                                 description="Emit the decode.model IR of a checkpoint.")
    ap.add_argument("checkpoint_dir")
    ap.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    ap.add_argument("--name", help="model symbol (default: the directory's basename, sanitised)")
    ap.add_argument("--softmax", choices=("online", "unified_max"), default="online")
    ap.add_argument("--phi", type=float)
    ap.add_argument("--lo", type=float)
    ap.add_argument("--hi", type=float)
    args = ap.parse_args(argv)
    softmax = parse_softmax(ap, args)
    try:
        text = model_ir(args.checkpoint_dir, args.name, softmax)
        if args.output == "-":
            sys.stdout.write(text)
        else:
            with open(args.output, "w") as f:
                f.write(text)
    except FdcError as e:
        print(f"fdc.frontend: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"fdc.frontend: error: {args.output}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
