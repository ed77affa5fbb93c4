"""docs/perf.md = its hand-written head + the tables of docs/perf/results.json.

    python -m fdc.bench.docs [--check]

rewrites (or, with --check, compares) the generated part of docs/perf.md
from docs/perf/results.json, the results of the run the page reports.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import report

REPO = Path(__file__).resolve().parents[3]
PAGE = REPO / "docs" / "perf.md"
RESULTS = REPO / "docs" / "perf" / "results.json"
TUNING = REPO / "docs" / "perf" / "tuning"
MARKER = ("<!-- Generated from docs/perf/results.json by "
          "`python -m fdc.bench.docs`; edit above this line only. -->")
PLOTS = ("linear", "attention", "int4", "sparse", "step", "serving")


def generated(results: dict) -> str:
    plots = "\n".join(f"![{name}](perf/{name}.png)" for name in PLOTS)
    text = f"{MARKER}\n\n{report.markdown(results)}\n"
    files = sorted(TUNING.glob("*.json"))
    if files:
        text += ("### Measured dispatch tables (fdc tune)\n\n"
                 "The tuning files in docs/perf/tuning, each measured for the "
                 "arch it names; `bash scripts/bench.sh prepare` compiles "
                 "those of the arch it prepares into the tuned libraries "
                 "the tables above time (flat: row tiles, batch tiles, "
                 "subgroups, k unroll; tiled: subgroups over N × over M, row "
                 "tiles, batch tiles, k tile, stages; group: groups, row "
                 "tiles, batch columns, stages; and the ways K is split where "
                 "it is).\n\n"
                 f"{report.tuning_md(files)}\n\n")
    return f"{text}### Plots\n\n{plots}\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="exit 1 if docs/perf.md is not up to date")
    args = ap.parse_args(argv)
    text = PAGE.read_text()
    head = text.split(MARKER)[0]
    expected = head + generated(json.loads(RESULTS.read_text()))
    if args.check:
        if text != expected:
            print(f"{PAGE} is stale: run `python -m fdc.bench.docs`",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(expected)
    return 0


if __name__ == "__main__":
    sys.exit(main())
