"""fdc's benchmark suite: every decode kernel and the whole decode step
against cuBLAS, torch SDPA, cuSPARSE and Hugging Face transformers, and
against the measured HBM bandwidth, in one call on a GPU machine.

Two halves, on two machines:

- ``python -m fdc.bench.prepare`` (where fdc is built; no GPU, no torch)
  writes the benchmark models (decode IR, ``models``) and compiles them with
  ``fdc compile --target=cuda:...`` into ``.bench-artifacts/``.
- ``python -m fdc.bench.suite`` (on the GPU machine; torch, no MLIR) loads
  those libraries, launches their kernels itself (``launcher``), checks every
  benchmarked kernel against a float64 reference, times fdc and its peer the
  same way (``timing``) and writes the table, JSON and plots (``report``).

``scripts/bench.sh`` wraps both; docs/perf.md has the latest tables.
"""
