"""The suite's plain-read reference (fdc.bench.reads) without a GPU: the
fastest contender is reported with torch.sum's own time, and the ceilings
table shows both. (The reads themselves run on the GPU machine, in the
suite's ceilings and int4 families.)"""

from __future__ import annotations

import pytest

from fdc.bench import reads, report, timing


def test_fastest_read_names_its_contender_and_keeps_torch_sum():
    triton = "Triton, 1024 elements / 4 warps a program"
    times = {"torch.sum": {"us": 29.6, "spread": 0.01},
             triton: {"us": 23.1, "spread": 0.02},
             "Triton, 2048 elements / 8 warps a program": {"us": 23.4,
                                                          "spread": 0.0}}
    read = reads.fastest(times, 64 << 20)
    assert read["by"] == triton and read["us"] == 23.1
    assert read["spread"] == 0.02 and read["torch_sum_us"] == 29.6
    assert read["gbps"] == pytest.approx((64 << 20) / 23.1 / 1e3)
    # torch.sum wins where it is fastest.
    times["torch.sum"]["us"] = 20.0
    assert reads.fastest(times, 64 << 20)["by"] == "torch.sum"


def test_ceilings_table_shows_torch_sum_alone_where_measured():
    rows = [{"case": {"what": "streaming read (torch.sum)", "bytes": 1},
             "us": 1000.0, "gbps": 3000.0},
            {"case": {"what": "streaming read of 64 MiB, graph replay (x)",
                      "bytes": 64 << 20},
             "us": 23.1, "gbps": 2905.0, "torch_sum_us": 29.6}]
    lines = report.ceilings_md(rows).splitlines()
    assert lines[0].endswith("| torch.sum alone µs |")
    assert lines[2].endswith("| – |")
    assert lines[3].endswith("| 29.6 |")
    # Without sized reads (older runs), no such column.
    assert "torch.sum alone" not in report.ceilings_md(rows[:1])


def test_small_inputs_rotate_over_three_l2_with_a_call_per_set():
    l2 = 50 << 20
    # bf16 MQA, B = 1, S = 1024: a 0.5 MB cache takes 300 sets, one call
    # each, where the rotation used to stop at 20 (10 MB, inside L2).
    sets = timing.rotation(512 * 1024, l2)
    assert sets * 512 * 1024 >= 3 * l2 and sets == 300
    assert timing.calls_for(sets) == 300
    # Large inputs: a few sets, still 20 calls a replay.
    assert timing.rotation(64 << 20, l2) == 3
    assert timing.calls_for(3) == timing.CALLS == 20
    # One set that spans 3x L2 by itself.
    assert timing.rotation(1 << 30, l2) == 1
    assert timing.rotation(1, l2) == timing.MAX_SETS
