"""`speedpatch bench gemmini --paper` on a small problem of the paper's kind (library file + explicit start)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PAPER = Path(__file__).resolve().parents[2] / "examples" / "gemmini" / "paper"


def _shrunk(name: str, size: int) -> str:
    text = (PAPER / name).read_text(encoding="utf-8")
    for axis in "IJK":
        text = text.replace(f"#define MAT_DIM_{axis} 512", f"#define MAT_DIM_{axis} {size}")
    return text


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_paper_bench_reports_the_library_the_best_found_and_whether_the_winner_was_re_verified(tmp_path):
    folder = tmp_path / "paper"
    folder.mkdir()
    (folder / "matmul_64x64x64.c").write_text(_shrunk("matmul_512x512x512.c", 64))
    (folder / "matmul_64x64x64_explicit.c").write_text(_shrunk("matmul_512x512x512_explicit.c", 64))
    env = {k: v for k, v in os.environ.items() if k not in ("SPEEDPATCH_API_KEY", "OPENAI_API_KEY")}
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "bench", "gemmini", "--paper", "--examples",
                           str(folder), "-T", "1", "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert proc.stdout.lstrip().startswith("["), proc.stdout[:2000] + proc.stderr[-2000:]
    (row,) = json.loads(proc.stdout)
    assert row["problem"] == "matmul_64x64x64" and row["status"] == "finished", row
    assert row["library"] > 0 and row["best"] > 0 and row["vs_library"] == pytest.approx(row["library"] / row["best"])
    # The winner is the explicit start itself or a re-verified rewrite; either way the row says which.
    assert row["reverified"] != "" and (row["best"] == row["start"] or row["reverified"] != "-"), row
