"""The engine's trust boundary (speedpatch.engine.boundary) on the toy target: a candidate is the problem
file with only its kernel region replaced, and the region redefines no problem name."""

from __future__ import annotations

import pytest
from speedpatch import api
from speedpatch.engine import boundary
from speedpatch.errors import UserError
from speedpatch.store import Store
from support.toys import toy_config, toy_problem
from toy_target import ToyTarget

FAST = "def kernel_sum(xs):\n    return sum(xs)\n"


@pytest.fixture
def config(tmp_path):
    return toy_config(tmp_path, offline=True, search={"iterations": 1})


@pytest.fixture
def problem(tmp_path, config):
    return toy_problem(tmp_path, config)


def test_the_problem_itself_passes(problem):
    assert boundary.check(ToyTarget(), problem, problem.source) == []


def test_a_new_kernel_region_passes_and_is_found_again(problem):
    candidate = boundary.compose(problem, FAST)
    assert boundary.check(ToyTarget(), problem, candidate) == []
    assert boundary.region_of(problem, candidate) == FAST


def test_a_changed_input_outside_the_region_is_rejected_with_the_line(problem):
    candidate = boundary.compose(problem, FAST).replace("list(range(30))", "[1]")
    (reason,) = boundary.check(ToyTarget(), problem, candidate)
    assert reason.startswith("the candidate changes the problem outside the kernel kernel_sum (before the kernel")
    assert "line 1:" in reason and "[1]" in reason


def test_a_line_added_after_the_region_is_rejected(problem):
    candidate = boundary.compose(problem, FAST) + "\nreference = lambda xs: 0\n"
    (reason,) = boundary.check(ToyTarget(), problem, candidate)
    assert "after the kernel region" in reason and "reference = lambda xs: 0" in reason


def test_a_region_that_rebinds_the_reference_is_rejected_naming_it(problem):
    (reason,) = boundary.check(ToyTarget(), problem, boundary.compose(problem, FAST + "\n\nreference = sum\n"))
    assert "redefines reference" in reason


def test_a_region_that_shadows_a_builtin_the_reference_calls_is_rejected_naming_it(problem):
    region = "def sum(xs):\n    return 0\n\n\n" + FAST
    (reason,) = boundary.check(ToyTarget(), problem, boundary.compose(problem, region))
    assert "redefines sum" in reason


def test_the_evaluation_pool_rejects_a_candidate_changed_outside_the_region(problem, config):
    candidate = boundary.compose(problem, FAST).replace("list(range(30))", "[1]")
    evaluation = api.evaluate(problem, candidate, config)
    assert evaluation.status == "rejected" and "outside the kernel" in evaluation.message


def test_apply_refuses_a_stored_winner_that_changes_the_file_outside_the_region(tmp_path, problem, config):
    record = api.optimize(problem, config, Store(tmp_path))
    assert record.best.id != "base"
    record.best.source = record.best.source.replace("list(range(30))", "[1]")  # a tampered store
    with pytest.raises(UserError, match="outside the kernel"):
        api.apply_text(record, problem.source)


def test_apply_writes_the_winning_region_and_nothing_else(tmp_path, problem, config):
    record = api.optimize(problem, config, Store(tmp_path))
    edited = "# the user's own comment\n" + problem.source
    applied = api.apply_text(record, edited)
    assert applied == "# the user's own comment\n" + record.best.source
