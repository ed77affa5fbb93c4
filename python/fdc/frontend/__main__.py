"""python3 -m fdc.frontend CHECKPOINT_DIR -o model.mlir [--name NAME]
       [--softmax online|unified_max --phi X --lo X --hi X]
       [--kv-cache checkpoint|int4 --kv-groups G]
       [--linear-weights dense|int4 --group-size G] [--sparse-mlp]"""

from __future__ import annotations

import argparse
import sys

from .. import FdcError
from . import model_ir
from .emit import Quantisation, Softmax


def parse_softmax(ap: argparse.ArgumentParser, args) -> Softmax:
    params = (args.phi, args.lo, args.hi)
    if args.softmax == "online":
        if any(x is not None for x in params):
            ap.error("--phi/--lo/--hi only apply to --softmax unified_max")
        return Softmax()
    if any(x is None for x in params):
        ap.error("--softmax unified_max needs --phi, --lo and --hi")
    return Softmax("unified_max", *params)


def parse_quantisation(ap: argparse.ArgumentParser, args) -> Quantisation:
    if args.kv_cache == "int4":
        if args.kv_groups is None:
            ap.error("--kv-cache int4 needs --kv-groups G (groups per head vector)")
        if args.kv_groups <= 0:
            ap.error(f"--kv-groups must be positive, got {args.kv_groups}")
    elif args.kv_groups is not None:
        ap.error("--kv-groups only applies to --kv-cache int4")
    if args.linear_weights == "int4":
        if args.group_size <= 0:
            ap.error(f"--group-size must be positive, got {args.group_size}")
    elif args.group_size_given:
        ap.error("--group-size only applies to --linear-weights int4")
    return Quantisation(
        kv_int4_groups=args.kv_groups if args.kv_cache == "int4" else 0,
        linear_int4_group_size=args.group_size if args.linear_weights == "int4" else 0,
        sparse_mlp=args.sparse_mlp)


class _GroupSize(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.group_size_given = True


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
    ap.add_argument("--kv-cache", choices=("checkpoint", "int4"), default="checkpoint",
                    help="KV-cache element type: the checkpoint's dtype (default) or "
                         "!decode.int4<groups = G>")
    ap.add_argument("--kv-groups", type=int, metavar="G",
                    help="with --kv-cache int4: quantisation groups per head vector")
    ap.add_argument("--linear-weights", choices=("dense", "int4"), default="dense",
                    help="decoder-layer linear weights: dense (default) or "
                         "!decode.qtensor<NxKxi4, group_size = G, scale = f16>; the "
                         "embedding and lm_head stay dense")
    ap.add_argument("--group-size", type=int, default=128, metavar="G", action=_GroupSize,
                    help="with --linear-weights int4: elements per scale along K "
                         "(default 128)")
    ap.add_argument("--sparse-mlp", action="store_true",
                    help="decoder-layer MLP weights (fused gate_up, down) as "
                         "!decode.tiled_csl<NxKxT, tile = 128x64> (T: the checkpoint's f16 or "
                         "bf16) used by decode.sparse_linear; with --linear-weights int4, "
                         "INT4 then applies to the attention projections only")
    ap.set_defaults(group_size_given=False)
    args = ap.parse_args(argv)
    softmax = parse_softmax(ap, args)
    quant = parse_quantisation(ap, args)
    try:
        text = model_ir(args.checkpoint_dir, args.name, softmax, quant)
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
