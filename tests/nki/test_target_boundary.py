"""The trust boundary on NKI: a reply contributes its kernel (and helpers) only; INPUTS, reference, the
file's imports and the rest of the harness always come from the original file."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.engine import boundary
from speedpatch.targets import get_target
from support.replies import problem_of, propose

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "nki"
ADD_PATH = EXAMPLES / "tensor_add.py"
ADD = ADD_PATH.read_text()
KERNEL = ADD[ADD.index("@nki.jit"): ADD.index("INPUTS = ")].rstrip() + "\n"
FASTER = KERNEL.replace("TILE_F = 128", "TILE_F = 512")


@pytest.fixture(scope="module")
def target():
    return get_target("nki")


@pytest.fixture
def problem():
    return problem_of(ADD_PATH, "tensor_add")


def fenced(code: str) -> str:
    return f"```python\n{code}\n```\nThis moves 4x more data per DMA."


def test_problem_names_are_the_harness_and_imports_not_the_kernel(target, problem) -> None:
    names = target.problem_names(problem.source, problem.kernel)
    assert {"INPUTS", "reference", "nki", "nl", "TOLERANCE", "make_inputs"} <= names
    assert "tensor_add" not in names


def test_a_whole_file_reply_with_smaller_inputs_keeps_the_original_inputs(tmp_path, problem) -> None:
    reply = ADD.replace("(256, 2048)", "(128, 128)").replace(KERNEL, FASTER)
    code, _ = propose(tmp_path, problem, fenced(reply))
    assert code.source == ADD.replace(KERNEL, FASTER)


def test_module_level_helpers_of_a_reply_are_not_taken_only_the_kernel(tmp_path, problem) -> None:
    reply = f"import os\n\nFREE = 512\n\n\ndef spy():\n    return os.environ\n\n\n{FASTER}"
    code, _ = propose(tmp_path, problem, fenced(reply))
    assert boundary.region_of(problem, code.source) == FASTER


def test_a_usage_snippet_after_the_kernel_is_not_taken(tmp_path, problem) -> None:
    reply = fenced(FASTER) + "\nTry it:\n```python\nout = tensor_add(a, b)\nprint(out)\n```\n"
    code, _ = propose(tmp_path, problem, reply)
    assert code.source == ADD.replace(KERNEL, FASTER)


def test_a_kernel_that_declares_a_harness_name_global_is_rejected_naming_it(target, problem) -> None:
    body = FASTER.replace("    TILE_F = 512", "    global INPUTS\n    INPUTS = {}\n    TILE_F = 512")
    (reason,) = boundary.check(target, problem, ADD.replace(KERNEL, body))
    assert "redefines INPUTS" in reason


def test_a_kernel_that_patches_the_language_module_is_rejected_naming_it(target, problem) -> None:
    body = FASTER.replace("    TILE_F = 512", "    nl.add = nl.subtract\n    TILE_F = 512")
    (reason,) = boundary.check(target, problem, ADD.replace(KERNEL, body))
    assert "redefines nl" in reason


def test_a_region_that_sets_a_tolerance_the_problem_lacks_is_rejected_naming_it(target, problem) -> None:
    region = 'TOLERANCE = {"rtol": 1.0, "atol": 1.0}\n\n\n' + FASTER
    (reason,) = boundary.check(target, problem, ADD.replace(KERNEL, region))
    assert "redefines TOLERANCE" in reason


def test_a_change_to_the_reference_is_rejected_with_the_line(target, problem) -> None:
    (reason,) = boundary.check(target, problem, ADD.replace("return a + b", "return a + b + 0"))
    assert "after the kernel region" in reason and "`return a + b` became `return a + b + 0`" in reason


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.py")), ids=lambda p: p.name)
def test_offline_moves_of_every_example_stay_inside_the_kernel_region(target, path: Path) -> None:
    for kernel in target.find_kernels(path.read_text(), str(path)):
        problem = problem_of(path, kernel.name)
        for move in target.offline_moves(problem.source, kernel):
            assert boundary.check(target, problem, move.source) == [], move.plan


def test_a_region_that_declares_a_launch_grid_is_rejected_naming_it(target, problem) -> None:
    region = "GRID = (1,)\n\n\n" + FASTER
    (reason,) = boundary.check(target, problem, ADD.replace(KERNEL, region))
    assert "redefines GRID" in reason
