"""TP 2 step graphs of the 7B-wide model (32 layers, bf16) at B = 1 and 8
under one NCCL setting, for comparing NCCL's environment variables (they are
read once per process): `NCCL_X=Y python3 nccl_sweep.py LABEL CKPT`, run by
test/gpu/tp/sweep.sh, which builds CKPT once."""

import sys

import tp_check

tp_check.BATCHES = (1, 8)
label, ckpt = sys.argv[1], sys.argv[2]
times = tp_check.latency("wide32-bf16", ckpt, 2, "graphs")
print(f"sweep {label}: " + ", ".join(f"B={b} {t:.0f} us" for b, t in times.items()),
      flush=True)
