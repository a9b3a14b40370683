"""The engine's offline search finds a modeled speedup on an NKI example; the bench table reads well."""

from __future__ import annotations

import pytest
from speedpatch.targets.nki.bench import bench_example, format_table

from .conftest import EXAMPLES


@pytest.mark.slow
def test_offline_search_on_softmax_finds_a_modeled_speedup():
    row = bench_example(EXAMPLES / "softmax.py", iterations=2)
    assert row["status"] == "finished"
    assert row["unit"] == "us"
    assert row["best"] < row["baseline"] and row["speedup"] > 1.5
    assert "affine_range" in row["plan"] or "Fuse" in row["plan"]


def test_bench_table_has_one_line_per_example_with_speedup_and_unit():
    rows = [
        {"example": "matmul", "baseline": 46.34, "best": 26.48, "unit": "us", "speedup": 1.75, "plan": "Retile"},
        {"example": "broken", "baseline": None, "best": None, "unit": "", "speedup": None, "status": "error: x"},
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["example", "baseline", "best", "speedup", "steps"]
    assert lines[2].split()[:6] == ["matmul", "46.34", "us", "26.48", "us", "1.75x"]
    assert "error: x" in lines[3]
    assert "deterministic" in lines[-1]
