"""The calibration benchmark on the model (benchmarks/gemmini_calibration.py).

The cycle model follows the structure and numbers of Berkeley's RTL-calibrated performance model (gperf,
FireSim preset), plus the DMA's address translation under Linux (the paper's FireSim runs; gperf has none):
one shared TLB entry of four pages and a last-page filter per DMA client (FrontendTLB.scala, rocket-chip
TLB.scala), whose miss cost is the one value fitted to a published FireSim figure. These tests hold it to
the two FireSim cycle counts Autocomp publishes for real kernels, and pin the rest of today's ordering so
that a change which moves it has to say so here. It does NOT yet reproduce the paper's library figures:
the library reaches 35-82% (GEMM) / 54-65% (conv) here where the paper implies at most ~18% / ~37%.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import gemmini_calibration as cal  # noqa: E402

GEMM = ("gemm", cal.gemm_name((512, 512, 512)), (512, 512, 512))
CONV = ("conv", cal.conv_name(cal.PAPER_CONVS[2]), cal.PAPER_CONVS[2])


@pytest.fixture(scope="module")
def results() -> dict[tuple[str, str], cal.Result]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    return {(r.problem, r.kind): r for r in cal.run_all([GEMM, CONV], workers=2)}


def _get(results, problem: tuple, kind: str) -> cal.Result:
    r = results[(problem[1], kind)]
    assert r.correct, f"{problem[1]} {kind}: {r.note}"
    return r


@pytest.mark.parametrize("kind", cal.KINDS)
@pytest.mark.parametrize("problem", [GEMM, CONV], ids=["gemm", "conv"])
def test_every_calibration_kernel_is_correct_and_does_all_the_work(results, problem, kind):
    if kind not in cal.KINDS_OF[problem[0]]:
        pytest.skip(f"no {kind} kernel for {problem[0]}")
    r = _get(results, problem, kind)
    macs = 512**3 if problem is GEMM else cal.conv_macs(problem[2])
    assert r.macs == macs


@pytest.mark.parametrize("problem", [GEMM, CONV], ids=["gemm", "conv"])
def test_unoptimized_explicit_code_is_at_least_three_times_slower_than_the_library(results, problem):
    assert _get(results, problem, "naive").cycles >= 3 * _get(results, problem, "library").cycles


@pytest.mark.parametrize("problem", [GEMM, CONV], ids=["gemm", "conv"])
def test_software_pipelining_makes_explicit_code_at_least_two_and_a_half_times_faster(results, problem):
    assert 2.5 * _get(results, problem, "tuned").cycles <= _get(results, problem, "naive").cycles


@pytest.fixture(scope="module")
def anchors() -> dict[str, tuple[int, cal.Result]]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    return {kind: (published, r) for kind, published, r in cal.run_anchors(workers=2)}


@pytest.mark.parametrize("kind", list(cal.ANCHORS))
def test_the_model_reproduces_autocomps_published_firesim_cycles_within_ten_percent(anchors, kind):
    # unoptimized: 3,435,455 cycles on FireSim; if-gated: 1,519,076. The TLB miss cost was fitted to the
    # first; the second is an independent check.
    published, r = anchors[kind]
    assert r.correct, r.note
    assert r.macs == 12544 * 256 * 64
    assert abs(r.cycles / published - 1) <= 0.10, (kind, r.cycles, published)


def test_gating_redundant_loads_beats_the_library_on_its_shape(anchors):
    # what hand-tuned code does on the hardware: each piece of A and B moved in once, so the DMA does not
    # thrash the TLB as the library's re-loads do
    from speedpatch.targets.gemmini.build import build_native  # noqa: F401  (gcc and the model are here)

    library = cal.run_all([("gemm", cal.gemm_name(cal.ANCHOR_SHAPE), cal.ANCHOR_SHAPE)], ("library",), 1)[0]
    assert library.correct, library.note
    assert anchors["if-gated"][1].cycles < library.cycles


def test_the_hardware_loop_with_hand_chosen_tiles_beats_the_library_on_a_large_gemm(results):
    assert _get(results, GEMM, "tuned-loop").cycles < _get(results, GEMM, "library").cycles


def test_hand_written_code_that_moves_each_operand_once_beats_the_library_by_half_again(results):
    # a resident panel of B and A streamed in order: 600,721 vs 1,074,974 cycles on the 512^3 GEMM today
    assert 1.5 * _get(results, GEMM, "resident").cycles <= _get(results, GEMM, "library").cycles


def test_a_tuned_convolution_beats_the_library_where_the_library_tiles_poorly(results):
    # conv 14x14x256: tiled_conv_auto picks upstream's tiles (4 batches x 9 x 14 pixels x 16 output channels x
    # 144 input channels), so every tile moves its input window in again and the loop's computes wait for its
    # loads; keeping the weights resident and each input row moved in once (tuned explicit) is faster:
    # 2,432,293 vs 2,774,839 cycles today. (The hardware loop with all input channels per loop, tuned-loop,
    # is not: 3,585,950.)
    assert _get(results, CONV, "tuned").cycles < _get(results, CONV, "library").cycles
