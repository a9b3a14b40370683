"""Offline moves for convolutions: footprint-filling tiled_conv tiles ranked by an analytic cost of the
LOOP_CONV_WS schedule, offered before local steps."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch.model import OK
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext
from speedpatch.targets.gemmini import moves
from speedpatch.targets.gemmini.schedules import HALF_ACC_ROWS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
KEYS = ("batch", "out_row", "out_col", "out_ch", "in_ch", "kdim", "stride", "k_dil")
SHAPES = [  # the paper's three convs, a strided one with odd channel counts, a dilated one
    (4, 56, 56, 64, 64, 3, 1, 1), (4, 28, 28, 128, 128, 3, 1, 1), (4, 14, 14, 256, 256, 3, 1, 1),
    (2, 14, 14, 96, 200, 3, 2, 1), (1, 20, 20, 80, 70, 3, 1, 2),
]


def _dims(shape: tuple[int, ...]) -> dict[str, int]:
    return dict(zip(KEYS, shape, strict=True))


def _acc_rows(t: dict[str, int]) -> int:
    return moves.blocks(t["pochs"]) * t["batches"] * t["porows"] * t["pocols"]


@pytest.mark.parametrize("shape", SHAPES)
def test_good_conv_tiles_all_fit_and_fill_the_accumulator_half(shape: tuple[int, ...]) -> None:
    dims = _dims(shape)
    good = moves.conv_good_tiles(dims)
    assert good, shape
    assert all(moves.conv_fits(t, dims) for t in good)
    assert all(_acc_rows(t) >= HALF_ACC_ROWS * 3 // 4 for t in good), [(t, _acc_rows(t)) for t in good]
    # no tile larger than the problem
    assert all(t["batches"] <= dims["batch"] and t["porows"] <= dims["out_row"] and t["pocols"] <= dims["out_col"]
               and t["pochs"] <= dims["out_ch"] and t["kchs"] <= dims["in_ch"] for t in good)


def test_good_conv_tiles_come_cheapest_first_and_beat_the_library_tiles_by_the_estimate() -> None:
    for shape in SHAPES[:3]:
        dims = _dims(shape)
        costs = [moves.conv_cost(t, dims) for t in moves.conv_good_tiles(dims)]
        assert costs == sorted(costs)
        assert costs[0] < moves.conv_cost(moves.conv_auto_tiles(dims), dims)


def test_conv_cost_of_a_single_loop_is_compute_plus_loads_plus_stores() -> None:
    # 1 image, 16x16 outputs, 16 -> 16 channels, 1x1 kernel, one tile: one LOOP_CONV_WS.
    # compute: 16 rows x 16 pixels streamed once = 256; bias: 256 pixels x 1 channel block = 256;
    # input: 16 x 16 pixels of 16 channels (one scratchpad row each) = 256; weights: 16 rows of one line = 16;
    # stores: 16 mvouts (16 rows x 1 column block x 1 channel block) x STORE_CYCLES.
    dims = _dims((1, 16, 16, 16, 16, 1, 1, 1))
    t = {"batches": 1, "porows": 16, "pocols": 16, "pochs": 16, "krows": 1, "kcols": 1, "kchs": 16}
    assert moves.conv_cost(t, dims) == 256 + 256 + 256 + 16 + 16 * moves.STORE_CYCLES


def test_conv_cost_overlaps_the_next_loops_loads_with_this_loops_computes_and_keeps_the_input() -> None:
    # Two output-channel tiles of one spatial tile, 1x1 kernel: two loops. tiled_conv keeps the input in place
    # (one spatial x one reduction tile), so loop 1 moves in only its bias (256 rows) and weights (16 lines).
    # loop 0 loads 256 bias + 256 input + 16 weights = 528 before anything computes; its 256 compute rows overlap
    # loop 1's 272 load cycles (the longer counts whole, the shorter half); loop 1 computes 256; the last loop's
    # 16 mvouts are stored at the end (loop 0's stores overlap loop 1's computes, which have no next loads).
    dims = _dims((1, 16, 16, 32, 16, 1, 1, 1))
    halves = {"batches": 1, "porows": 16, "pocols": 16, "pochs": 16, "krows": 1, "kcols": 1, "kchs": 16}
    stores = 16 * moves.STORE_CYCLES
    expected = 528 + (272 + moves.OVERLAP_LEFT * 256) + 256 + stores
    assert moves.conv_cost(halves, dims) == int(expected)


def test_the_library_conv_call_is_offered_good_tiles_first() -> None:
    target = get_target("gemmini")
    source = (EXAMPLES / "paper" / "conv_28x28_128.c").read_text()
    (k,) = target.find_kernels(source)
    offered = target.offline_moves(source, k)
    dims = _dims((4, 28, 28, 128, 128, 3, 1, 1))
    first = moves.conv_good_tiles(dims)[0]
    assert "fill the accumulator half" in offered[0].plan
    assert ", ".join(str(v) for v in first.values()) in offered[0].source


def test_a_pooled_conv_gets_no_footprint_tiles() -> None:
    call = moves.Call("tiled_conv_auto", 0, 0, ["4", "56", "56", "64", "64", "56", "56", "1", "1", "1", "1", "3",
                                                "false", "false", "false", "false", "false", "in", "w", "b", "out",
                                                "0", "1.0f", "3", "2", "1", "WS"])
    assert all("fill the accumulator half" not in plan for plan, _ in moves.conv_moves(call, {}))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_the_first_good_tile_move_is_much_faster_than_the_library_conv(tmp_path: Path) -> None:
    target = get_target("gemmini")
    path = EXAMPLES / "paper" / "conv_56x56_64.c"
    source = path.read_text()
    (k,) = target.find_kernels(source)
    first = target.offline_moves(source, k)[0]

    def run(text: str, where: str):
        (tmp_path / where).mkdir()
        ctx = EvalContext(kernel=k, path=str(path), workdir=tmp_path / where, timeout=300, seed=3)
        return target.backend("gemmini-native").evaluate(text, ctx)

    library, moved = run(source, "library"), run(first.source, "moved")
    assert library.status == OK and moved.status == OK, (library.message, moved.message)
    assert moved.value * 1.3 < library.value, (moved.value, library.value)  # ~3.32M -> ~2.2M cycles today


def test_conv_neighbours_split_one_kernel_axis_at_a_time() -> None:
    # one kernel row per loop (three loops per output tile, each loading a third of the input window's rows)
    dims = _dims((4, 56, 56, 64, 64, 3, 1, 1))
    t = {"batches": 1, "porows": 2, "pocols": 56, "pochs": 64, "krows": 3, "kcols": 3, "kchs": 32}
    steps = [c for _, c in moves.conv_neighbours(t, dims)]
    assert dict(t, krows=1) in steps and dict(t, kcols=1) in steps
    assert all(moves.conv_fits(c, dims) for c in steps)
