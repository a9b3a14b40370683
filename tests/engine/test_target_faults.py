"""A bug in a target (or the proposer asking it) costs the slot it happened in, never the run."""

from __future__ import annotations

from speedpatch import api, targets
from speedpatch.engine import events as ev
from speedpatch.store import Store
from support.toys import toy_config, toy_problem


def test_a_target_whose_moves_raise_ends_the_run_finished_and_names_the_slot(tmp_path, monkeypatch):
    def broken(self, source, kernel):
        raise RuntimeError("moves table corrupt")

    monkeypatch.setattr(type(targets.get_target("toy")), "offline_moves", broken)
    config = toy_config(tmp_path, offline=True, search={"iterations": 1})
    events: list[ev.Event] = []
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path), on_event=events.append)
    assert record.status == "finished"
    assert record.best.id == record.baseline.id
    warnings = [e.data["message"] for e in events if e.kind == ev.WARNING]
    assert any("the proposer failed (RuntimeError: moves table corrupt)" in w for w in warnings), warnings


def test_the_engine_does_not_import_the_llm_package():
    import ast
    from pathlib import Path

    engine = Path(api.__file__).resolve().parent / "engine"
    for path in engine.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("speedpatch.llm"), f"{path.name} imports {node.module}"


def test_a_proposer_that_raises_while_planning_loses_that_slot_only(tmp_path, monkeypatch):
    from speedpatch.llm.offline import OfflineProposer

    real = OfflineProposer.plan

    def flaky(self, slot):
        if slot.index == 0:
            raise ValueError("bad move")
        return real(self, slot)

    monkeypatch.setattr(OfflineProposer, "plan", flaky)
    config = toy_config(tmp_path, offline=True, search={"iterations": 2})
    events: list[ev.Event] = []
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path), on_event=events.append)
    assert record.status == "finished"
    assert any("skipped: the proposer failed (ValueError: bad move)" in e.data["message"]
               for e in events if e.kind == ev.WARNING)
    assert record.evaluations["total"] > 1  # the other slots still proposed and were measured
