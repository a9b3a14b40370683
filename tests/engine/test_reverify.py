"""The run's winner is re-verified on the backend's independent backend before it is reported."""

from __future__ import annotations

from typing import Any

import pytest
from speedpatch import api, targets
from speedpatch.engine import events as ev
from speedpatch.model import INCORRECT, INFRA_ERROR, OK, Evaluation
from speedpatch.store import Store
from speedpatch.targets.base import Availability, Backend, EvalContext
from support.toys import toy_config, toy_problem


class SecondOpinion(Backend):
    """A functional check that disagrees with toy-count about kernels calling the builtin sum (as an
    independent model would about a kernel the first model's bug lets through)."""

    name = "toy-second-opinion"
    target = "toy"
    measures_speed = False
    usable = True
    infra = False

    def availability(self, settings: dict[str, Any] | None = None) -> Availability:
        return Availability(self.usable, "here" if self.usable else "no second model on this machine")

    def evaluate(self, source: str, ctx: EvalContext) -> Evaluation:
        if self.infra:
            return Evaluation(status=INFRA_ERROR, message="the simulator crashed on start-up")
        kernel = source.split("def kernel_sum", 1)[1].split("\n\n\n", 1)[0]
        if "return sum(xs)" in kernel:
            return Evaluation(status=INCORRECT, message="output differs from the reference at index 3")
        return Evaluation(status=OK, message="same outputs")


@pytest.fixture
def second(monkeypatch):
    toy = targets.get_target("toy")
    backend = SecondOpinion()
    monkeypatch.setattr(toy, "_backends", [*toy.backends(), backend])
    monkeypatch.setattr(type(toy.backend("toy-count")), "reverify_with", backend.name)
    return backend


def _run(tmp_path, **search):
    config = toy_config(tmp_path, offline=True, search={"iterations": 2, **search})
    events: list[ev.Event] = []
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store, on_event=events.append)
    return record, store, events


def test_a_winner_the_second_backend_rejects_is_replaced_by_the_next_best(tmp_path, second):
    record, store, events = _run(tmp_path)
    assert record.best.plan != "Use the builtin sum."
    assert record.best.evaluation.receipt["reverified"] == "correct on toy-second-opinion"
    rejected = [c for c in store.candidates(record.run_id) if c.plan == "Use the builtin sum."]
    assert rejected and rejected[0].evaluation.status == "rejected"
    assert "re-verification on toy-second-opinion failed (incorrect)" in rejected[0].evaluation.message
    warnings = [e.data["message"] for e in events if e.kind == ev.WARNING]
    assert any("was the fastest but is rejected" in w for w in warnings)


def test_a_winner_the_second_backend_accepts_is_reported_with_its_receipt(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate", lambda self, source, ctx: Evaluation(status=OK))
    record, _, events = _run(tmp_path)
    assert record.best.plan == "Use the builtin sum."
    assert record.best.evaluation.receipt["reverified"] == "correct on toy-second-opinion"
    assert any(e.kind == ev.REVERIFYING and e.data["backend"] == "toy-second-opinion" for e in events)


def test_an_unusable_second_backend_keeps_the_winner_and_says_it_was_not_reverified(tmp_path, second):
    second.usable = False
    record, _, events = _run(tmp_path)
    assert record.best.plan == "Use the builtin sum."
    assert record.best.evaluation.receipt["reverified"].startswith("not re-verified: toy-second-opinion")
    assert any("was not re-verified" in e.data["message"] for e in events if e.kind == ev.WARNING)


def test_an_infrastructure_failure_is_not_held_against_the_winner(tmp_path, second):
    second.infra = True
    record, _, _ = _run(tmp_path)
    assert record.best.plan == "Use the builtin sum."
    assert "simulator crashed" in record.best.evaluation.receipt["reverified"]


def test_a_winner_that_runs_out_of_time_on_the_second_backend_is_rejected(tmp_path, second, monkeypatch):
    # its own run did not finish there: a kernel that spins only on the second platform keeps no figure
    from speedpatch.model import TIMEOUT

    slow = "Use the builtin sum."
    monkeypatch.setattr(SecondOpinion, "evaluate", lambda self, source, ctx: Evaluation(
        status=TIMEOUT, message="timed out after 480 s") if "return sum(xs)" in source.split("def kernel_sum", 1)[1]
        .split("\n\n\n", 1)[0] else Evaluation(status=OK))
    record, store, _ = _run(tmp_path)
    assert record.best.plan != slow
    (rejected, *_) = [c for c in store.candidates(record.run_id) if c.plan == slow]
    assert rejected.evaluation.status == "rejected" and "did not finish (timed out after 480 s)" in \
        rejected.evaluation.message and "reverify = false" in rejected.evaluation.message


def test_reverify_off_reports_the_winner_unchecked(tmp_path, second):
    record, _, events = _run(tmp_path, reverify=False)
    assert record.best.plan == "Use the builtin sum."
    assert "reverified" not in record.best.evaluation.receipt
    assert not any(e.kind == ev.REVERIFYING for e in events)


def test_no_winner_passing_keeps_the_original(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate",
                        lambda self, source, ctx: Evaluation(status=INCORRECT, message="differs"))
    record, _, events = _run(tmp_path)
    assert record.best.id == record.baseline.id
    assert record.speedup in (None, 1.0)
    assert any("no winner passed re-verification" in e.data["message"] for e in events if e.kind == ev.WARNING)


def _measured_there(factor_for):
    """A second backend that also measures: toy-count's own figure for the same source, times a factor
    chosen per kernel (1 = the first backend's figure is reproduced)."""
    def evaluate(self, source, ctx):
        first = targets.get_target("toy").backend("toy-count").evaluate(source, ctx)
        factor = factor_for("return sum(xs)" in source.split("def kernel_sum", 1)[1].split("\n\n\n", 1)[0])
        return Evaluation(status=OK, value=first.value * factor, unit=first.unit, message="same outputs")
    return evaluate


def test_a_winner_whose_figure_the_second_backend_reproduces_is_reported_with_both(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate", _measured_there(lambda builtin: 1.02))
    record, _, _ = _run(tmp_path)
    assert record.best.plan == "Use the builtin sum."
    note = record.best.evaluation.receipt["reverified"]
    assert note.startswith("correct on toy-second-opinion (") and note.endswith(f" {record.best.evaluation.unit} there)")


def test_a_winner_whose_figure_the_second_backend_measures_far_slower_is_rejected(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate", _measured_there(lambda builtin: 1.5 if builtin else 1.0))
    record, store, events = _run(tmp_path)
    assert record.best.plan != "Use the builtin sum."
    (rejected, *_) = [c for c in store.candidates(record.run_id) if c.plan == "Use the builtin sum."]
    assert rejected.evaluation.status == "rejected"
    assert "33.3% below" in rejected.evaluation.message and "at most 3% is allowed" in rejected.evaluation.message
    assert any("was the fastest but is rejected" in e.data["message"] for e in events if e.kind == ev.WARNING)


def test_a_single_evaluation_says_it_was_not_re_verified_and_where_it_would_be(tmp_path, second):
    config = toy_config(tmp_path, offline=True)
    ev_ = api.evaluate(toy_problem(tmp_path, config), None, config)
    assert ev_.correct
    assert ev_.receipt["reverified"].startswith("not re-verified: one evaluation on toy-count only")
    assert "toy-second-opinion" in ev_.receipt["reverified"] and "--reverify" in ev_.receipt["reverified"]


def test_a_single_evaluation_asked_to_reverify_reports_the_figure_there(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate", _measured_there(lambda builtin: 1.02))
    config = toy_config(tmp_path, offline=True)
    ev_ = api.evaluate(toy_problem(tmp_path, config), None, config, reverify_figure=True)
    assert ev_.correct
    assert ev_.receipt["reverified"].startswith("correct on toy-second-opinion (")


def test_a_single_evaluation_whose_figure_is_not_reproduced_there_is_rejected(tmp_path, second, monkeypatch):
    monkeypatch.setattr(SecondOpinion, "evaluate", _measured_there(lambda builtin: 1.5))
    config = toy_config(tmp_path, offline=True)
    ev_ = api.evaluate(toy_problem(tmp_path, config), None, config, reverify_figure=True)
    assert ev_.status == "rejected" and not ev_.correct
    assert "33.3% below" in ev_.message and "toy-second-opinion measured" in ev_.message
