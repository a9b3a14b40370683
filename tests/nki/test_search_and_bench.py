"""The engine's offline search finds a modeled speedup on an NKI example, through `speedpatch bench nki`
(server/cli/bench.py), which also reports how many evaluations per minute the emulator sustained."""

from __future__ import annotations

import json

import pytest
from speedpatch.cli.main import main


@pytest.mark.slow
def test_bench_nki_finds_a_modeled_speedup_on_softmax_and_reports_evaluations_per_minute(capsys):
    code = main(["bench", "nki", "--only", "softmax", "--iterations", "2", "--json"])
    (row,) = json.loads(capsys.readouterr().out)
    assert code == 0
    assert row["status"] == "finished" and row["unit"] == "us"
    # fusing the max-subtraction into the exp activation saves one VectorE pass per tile (about 8% here)
    assert row["best"] < row["baseline"] and row["speedup"] > 1.05
    assert "Fuse" in row["plan"] or "Hoist" in row["plan"] or "Retile" in row["plan"]
    assert row["evaluations"] >= 2  # the baseline and at least one candidate
    assert row["evals_per_min"] == pytest.approx(60 * row["evaluations"] / row["seconds"], rel=0.05)
