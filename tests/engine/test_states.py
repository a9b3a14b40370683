"""The status words (speedpatch.states): typed in Python, the same plain strings in the store and in JSON."""

from __future__ import annotations

import json
import sqlite3

import pytest
from speedpatch.model import Candidate, Evaluation, Kernel, Problem, source_hash
from speedpatch.states import EvalStatus, RunStatus
from speedpatch.store import Store

SOURCE = "def kernel_sum(xs):\n    return sum(xs)\n"


def problem() -> Problem:
    kernel = Kernel("kernel_sum", "toy", 0, len(SOURCE), 0, 2, 0, SOURCE)
    return Problem(path="/ws/sum.toy", source=SOURCE, kernel=kernel, target="toy", backend="toy-count")


def test_a_status_formats_and_serialises_as_its_plain_word():
    assert f"{RunStatus.INTERRUPTED}" == str(RunStatus.INTERRUPTED) == "interrupted"
    assert json.dumps({"status": EvalStatus.COMPILE_ERROR}) == '{"status": "compile_error"}'


def test_an_evaluation_read_from_json_holds_the_member_not_a_string():
    ev = Evaluation.from_dict(json.loads(json.dumps(Evaluation(status=EvalStatus.TIMEOUT).to_dict())))
    assert ev.status is EvalStatus.TIMEOUT


def test_an_evaluation_with_a_word_that_is_not_a_status_is_refused():
    with pytest.raises(ValueError, match="'passed' is not a valid EvalStatus"):
        Evaluation(status="passed")  # type: ignore[arg-type]  # the point: a plain string from outside


def test_only_ok_and_not_measured_count_as_correct():
    assert {s for s in EvalStatus if s.correct} == {EvalStatus.OK, EvalStatus.NOT_MEASURED}


def test_run_statuses_split_into_live_resumable_and_ended_without_overlap():
    live = {s for s in RunStatus if s.live}
    resumable = {s for s in RunStatus if s.resumable}
    ended = {s for s in RunStatus if s.ended}
    assert live == {RunStatus.QUEUED, RunStatus.RUNNING}
    assert resumable == {RunStatus.INTERRUPTED, RunStatus.CANCELLED}
    assert ended == {RunStatus.FINISHED, RunStatus.FAILED}
    assert live | resumable | ended == set(RunStatus)


def test_the_store_writes_the_plain_words_and_reads_back_members(tmp_path):
    store = Store(tmp_path)
    store.create_run("r1", problem(), 1, {})
    ev = Evaluation(status=EvalStatus.NOT_MEASURED, value=3.0, unit="lines")
    store.save_candidate(Candidate("base", "r1", None, 0, "", SOURCE, source_hash(SOURCE), evaluation=ev))
    store.set_status("r1", RunStatus.CANCELLED, "stopped")
    raw = sqlite3.connect(store.path)
    assert raw.execute("SELECT status, typeof(status) FROM runs").fetchone() == ("cancelled", "text")
    assert raw.execute("SELECT status, typeof(status) FROM candidates").fetchone() == ("not_measured", "text")
    record = store.get_run("r1")
    assert record.status is RunStatus.CANCELLED
    assert store.get_candidate("r1", "base").evaluation.status is EvalStatus.NOT_MEASURED
    assert record.evaluations == {"total": 1, "correct": 1}
