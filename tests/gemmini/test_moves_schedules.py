"""Offline moves that write a Gemmini schedule out: what lands in the user's file is plain, readable C (a
comment in words, no machine data, no block of its own when the library call stood alone), and the next
move reads the schedule back from that code to retune it, or leaves code it cannot read alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch.targets import get_target
from speedpatch.targets.gemmini import moves
from speedpatch.targets.gemmini.schedules import Operands, Schedule, find_schedules, join, render_schedule

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK = (EXAMPLES / "matmul_128.c").read_text()
CALL = QUICK[QUICK.index("  tiled_matmul_auto("):QUICK.index("WS);\n") + len("WS);\n")]
OPS = Operands(A="A", B="B", D="bias", C="C", sA="MAT_DIM_K", sB="MAT_DIM_J", sC="MAT_DIM_J", act="MATMUL_ACT",
               scale="MATMUL_SCALE")


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


def _kernel(target, source: str):
    (k,) = [k for k in target.find_kernels(source) if k.name == "matmul_kernel"]
    return k


def _with_schedule(s: Schedule) -> str:
    """The quick example with its library call replaced by the schedule, as a move writes it."""
    return QUICK.replace(CALL, "  " + join(render_schedule(s), "  ") + "\n")


def _schedule_moves(target, source: str) -> list:
    return [m for m in target.offline_moves(source, _kernel(target, source)) if find_schedules(m.source)]


def _bare_blocks(source: str) -> int:
    """How many `{ ... }` blocks stand as statements directly in matmul_kernel's body."""
    import tree_sitter_c
    from tree_sitter import Language, Parser

    tree = Parser(Language(tree_sitter_c.language())).parse(source.encode())
    (fn,) = [n for n in tree.root_node.children if n.type == "function_definition"
             and b"matmul_kernel" in n.child_by_field_name("declarator").text]
    return sum(child.type == "compound_statement" for child in fn.child_by_field_name("body").named_children)


def test_a_schedule_that_replaces_a_lone_library_call_is_the_function_body_in_words(target) -> None:
    written = _schedule_moves(target, QUICK)
    assert len(written) >= 4  # per-tile LOOP_WS and core-issued schedules
    for move in written:
        kernel = _kernel(target, move.source).text
        assert "speedpatch-schedule" not in kernel and '{"' not in kernel, move.plan
        assert _bare_blocks(move.source) == 0, move.plan
        assert kernel.split("{", 1)[1].lstrip().startswith(("/* Weight-stationary schedule for 128x128x128",
                                                             "/* LOOP_WS schedule for 128x128x128"))


def test_a_library_call_among_other_statements_becomes_a_block_of_its_own(target) -> None:
    source = QUICK.replace(CALL, "  gemmini_flush(0);\n" + CALL)
    written = _schedule_moves(target, source)
    assert written and all(_bare_blocks(m.source) == 1 for m in written)
    assert all("gemmini_flush(0);" in _kernel(target, m.source).text for m in written)


def test_a_name_the_schedule_declares_that_is_also_a_parameter_keeps_the_block(target) -> None:
    source = QUICK.replace("elem_t *C)", "elem_t *C, int tile)")
    written = _schedule_moves(target, source)
    loops = [m for m in written if "gemmini_loop_ws(" in m.source]
    assert loops and all(_bare_blocks(m.source) == 1 for m in loops)  # its `unsigned tile` in a block of its own
    assert all(_bare_blocks(m.source) == 0 for m in written if m not in loops)


@pytest.mark.parametrize("schedule", [
    Schedule((128, 128, 128), (4, 8, 8), OPS, loop=True),
    Schedule((128, 128, 128), (8, 8, 8), OPS, acc_double=False),
    Schedule((512, 512, 512), (4, 8, 8), OPS, dataflow="OS", acc_double=True),
    Schedule((128, 64, 256), (2, 4, 1), OPS, dataflow="OS", acc_double=False),
    Schedule((128, 128, 128), (8, 4, 8), Operands("A", "B", "NULL", "C", "(MAT_DIM_K)", "MAT_DIM_J", "MAT_DIM_J",
                                                  "RELU", "(1.0f / 32)"), acc_double=True),
], ids=["loop", "ws", "os-512", "os-k1", "no-bias"])
def test_a_rendered_schedule_reads_back_as_the_same_schedule(schedule: Schedule) -> None:
    text = "void k(void) {\n  " + join(render_schedule(schedule), "  ") + "\n}\n"
    ((found, start, end),) = find_schedules(text)
    assert found == schedule
    assert text[start:end].rstrip().endswith(("}", ";")) and text[end:].strip() == "}"


def test_a_schedule_written_by_one_move_is_retuned_by_the_next(target) -> None:
    first = next(m for m in _schedule_moves(target, QUICK) if "Write the schedule out explicitly" in m.plan)
    ((written, _, _),) = find_schedules(first.source)
    assert written.ops == OPS and not written.loop and written.dims == (128, 128, 128)
    retunes = target.offline_moves(first.source, _kernel(target, first.source))
    assert [m.plan.split(":")[0] for m in retunes[:1]] == ["Retune the explicit schedule"]
    for move in retunes:
        ((retuned, _, _),) = find_schedules(move.source)
        assert retuned.ops == written.ops and retuned.dims == written.dims  # only the schedule changed
        assert (retuned.tiles, retuned.dataflow, retuned.acc_double) != (written.tiles, written.dataflow,
                                                                         written.acc_double)
        assert _bare_blocks(move.source) == 0
    switched = [find_schedules(m.source)[0][0] for m in retunes if m.plan.startswith("Switch")]
    assert [s.dataflow for s in switched] == ["OS"]


def test_a_reformatted_schedule_is_still_recognised(target) -> None:
    source = _with_schedule(Schedule((128, 128, 128), (4, 8, 8), OPS, acc_double=True))
    reflowed = source.replace("\n      ", "\n\t").replace("(MAT_DIM_K) * sizeof", "( MAT_DIM_K )*sizeof")
    assert moves.schedule_moves(_kernel(target, reflowed).text)


@pytest.mark.parametrize("edit", [
    ("i0 += 4", "i0 += 2"),  # a bound no longer what the comment says
    ("spad_half ^= 8192;", "spad_half ^= 4096;"),
    ("gemmini_extended_mvin2(", "gemmini_extended_mvin("),
    ("tiles of 4x8x8 blocks", "tiles of 4x8 blocks"),
    ("(MAT_DIM_J) * sizeof(elem_t), MATMUL_ACT", "(MAT_DIM_J) * sizeof(elem_t), MATMUL_ACT + 1, 0"),
])
def test_an_edited_schedule_gets_no_schedule_moves(target, edit: tuple[str, str]) -> None:
    source = _with_schedule(Schedule((128, 128, 128), (4, 8, 8), OPS, acc_double=True))
    assert moves.schedule_moves(_kernel(target, source).text)  # as written, it is recognised
    edited = source.replace(*edit)
    assert edited != source
    assert moves.schedule_moves(_kernel(target, edited).text) == []
    offered = [m.plan for m in target.offline_moves(edited, _kernel(target, edited))]
    assert not [p for p in offered if p.startswith(("Retune", "Switch the explicit"))]


def test_an_operand_named_like_a_schedule_variable_gets_no_schedule_that_would_shadow_it(target) -> None:
    source = QUICK.replace("const elem_t *A,", "const elem_t *a,").replace("MAT_DIM_K, A, B,", "MAT_DIM_K, a, B,")
    loops = [m for m in _schedule_moves(target, source) if "gemmini_loop_ws(" in m.source]
    assert loops == []  # the per-tile loop declares its own `a`
    assert _schedule_moves(target, source)  # the core-issued schedules do not


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="gemmini-native needs gcc")
def test_an_applied_offline_winner_is_plain_code_in_the_function_body(target, tmp_path: Path) -> None:
    from speedpatch import api
    from speedpatch.config import load_config
    from speedpatch.store import Store

    # a poor schedule (tiles of one block) that a retune beats by far: the winner is a rewritten schedule
    start = _with_schedule(Schedule((128, 128, 128), (1, 1, 1), OPS, acc_double=True))
    path = tmp_path / "matmul.c"
    path.write_text(start)
    config = load_config(tmp_path, {"search": {"iterations": 1, "workers": 2, "reverify": False}})
    config.offline = True
    problem = api.make_problem(str(path), start, "matmul_kernel", config)
    record = api.optimize(problem, config, Store(tmp_path))
    assert record.speedup and record.speedup > 1.1, record.message
    applied = api.apply_text(record, start)
    kernel = _kernel(target, applied)
    ((winner, _, _),) = find_schedules(kernel.text)
    assert winner.tiles != (1, 1, 1) and winner.ops == OPS
    assert "speedpatch-schedule" not in applied and _bare_blocks(applied) == 0
    before = _kernel(target, start)
    assert applied[:kernel.start] == start[:before.start] and applied[kernel.end:] == start[before.end:]
