"""gemmini-spike: the harness program cross-compiled for RISC-V and checked on Spike with the model
extension (where scripts/setup/gemmini-spike.sh has installed the toolchain)."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import COMPILE_ERROR, INCORRECT, NOT_MEASURED
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext

QUICK_PATH = Path(__file__).resolve().parents[2] / "examples" / "gemmini" / "matmul_128.c"
# A small problem of the same shape keeps the Spike run short.
SMALL = QUICK_PATH.read_text().replace("MAT_DIM_I 128", "MAT_DIM_I 48").replace("MAT_DIM_J 128", "MAT_DIM_J 32") \
    .replace("MAT_DIM_K 128", "MAT_DIM_K 64")


def _ctx(tmp_path: Path) -> EvalContext:
    (k,) = get_target("gemmini").find_kernels(SMALL)
    return EvalContext(kernel=k, path=str(QUICK_PATH), workdir=tmp_path, timeout=240, seed=2)


def test_spike_does_not_rank_candidates(spike) -> None:
    assert spike.measures_speed is False


@pytest.mark.slow
def test_spike_checks_a_correct_program_and_reports_the_models_figure_and_host_instructions(spike, tmp_path: Path) -> None:
    ev = spike.evaluate(SMALL, _ctx(tmp_path))
    assert ev.status == NOT_MEASURED, ev.message + ev.log[-2000:]
    assert ev.correct and ev.unit == "cycles" and ev.value and ev.value > 0
    assert 0 < ev.feedback["host_instructions"] < ev.value
    assert "riscv64-unknown-elf-gcc" in ev.receipt["compiler"] or "riscv" in ev.receipt["compiler"]


@pytest.mark.slow
def test_spike_reports_wrong_results(spike, tmp_path: Path) -> None:
    wrong = SMALL.replace("MATMUL_ACT, MATMUL_SCALE, 0, true", "MATMUL_ACT, MATMUL_SCALE * 4, 0, true")
    assert spike.evaluate(wrong, _ctx(tmp_path)).status == INCORRECT


def test_spike_reports_cross_compile_errors(spike, tmp_path: Path) -> None:
    broken = SMALL.replace("tiled_matmul_auto(", "tiled_matmul_auto_typo(")
    ev = spike.evaluate(broken, _ctx(tmp_path))
    assert ev.status == COMPILE_ERROR and "tiled_matmul_auto_typo" in ev.log


@pytest.mark.slow
def test_an_offline_gemmini_winner_is_reverified_on_spike(spike, tmp_path: Path) -> None:
    from speedpatch import api
    from speedpatch.config import load_config
    from speedpatch.store import Store

    path = tmp_path / "matmul.c"
    path.write_text(SMALL)
    config = load_config(tmp_path, {"search": {"iterations": 1, "workers": 2}})
    config.offline = True
    problem = api.make_problem(str(path), SMALL, "matmul_kernel", config)
    record = api.optimize(problem, config, Store(tmp_path))
    assert record.speedup and record.speedup > 1, record.message
    note = record.best.evaluation.receipt["reverified"]
    assert note.startswith("correct on gemmini-spike (") and note.endswith(" cycles there)"), note
