"""The SQLite run store (speedpatch.store): what a run leaves behind survives, and others see writes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from speedpatch.model import INCORRECT, OK, Candidate, Evaluation, Kernel, Problem, source_hash
from speedpatch.store import Store

SOURCE = "def kernel_sum(xs):\n    return sum(xs)\n"


def problem(path: str = "/ws/sum.toy") -> Problem:
    kernel = Kernel("kernel_sum", "toy", 0, len(SOURCE), 0, 2, 0, SOURCE)
    return Problem(path=path, source=SOURCE, kernel=kernel, target="toy", backend="toy-count")


def cand(cid: str, parent: str | None, iteration: int, value: float | None, status: str = OK,
         run_id: str = "run1") -> Candidate:
    source = f"# {cid}\n{SOURCE}"
    ev = Evaluation(status=status, value=value, unit="lines", log="output", receipt={"backend": "toy-count"})
    return Candidate(cid, run_id, parent, iteration, f"plan of {cid}" if parent else "", source,
                     source_hash(source), model="m1", fixed=cid.endswith("f"), evaluation=ev)


def fill(store: Store, run_id: str = "run1") -> None:
    """A small finished run: baseline -> a -> b (best), plus an incorrect child."""
    store.create_run(run_id, problem(), iterations=2, config={"search": {"beam": 2}})
    for c in (cand("c0", None, 0, 100.0, run_id=run_id), cand("a", "c0", 1, 80.0, run_id=run_id),
              cand("wrongf", "c0", 1, None, INCORRECT, run_id=run_id), cand("b", "a", 2, 60.0, run_id=run_id)):
        store.save_candidate(c)
    store.save_plan(run_id, "p1", "c0", 1, "m1", "plan of a")
    store.save_plan(run_id, "p2", "a", 2, "m2", "plan of b")
    store.save_beam(run_id, 1, ["a", "c0"], "a")
    store.save_beam(run_id, 2, ["b", "a"], "b")
    store.save_llm_call(run_id, "i1.b0.p0:plan", "plan", "m1", "prompt 1", "reply 1", 100, 10, 1.5)
    store.save_llm_call(run_id, "i1.b0.p0:code0", "code", "m1", "prompt 2", "reply 2", 200, 20, 2.0)
    store.save_llm_call(run_id, "i1.b0.p0:code1", "code", "m2", "prompt 3", "reply 3", 300, 30, 2.5)
    store.save_llm_call(run_id, "i2.b0.p0:code0", "code", "m1", "prompt 4", "reply 4", 400, 40, 3.0)
    store.update_run(run_id, baseline_id="c0", best_id="b", iteration=2, status="finished", message="done")


def test_a_run_survives_reopening_the_store(tmp_path):
    fill(Store(tmp_path))
    record = Store(tmp_path).get_run("run1")
    assert (record.status, record.message, record.iteration, record.iterations) == ("finished", "done", 2, 2)
    assert record.problem == problem()
    assert record.config == {"search": {"beam": 2}}
    assert record.baseline.id == "c0" and record.best.id == "b"
    assert record.speedup == pytest.approx(100 / 60)
    assert record.unit == "lines"
    assert record.llm == {"calls": 4, "prompt_tokens": 1000, "completion_tokens": 100}
    assert record.evaluations == {"total": 4, "correct": 3}


def test_candidates_with_their_evaluations_survive_reopening(tmp_path):
    fill(Store(tmp_path))
    stored = {c.id: c for c in Store(tmp_path).candidates("run1")}
    assert set(stored) == {"c0", "a", "wrongf", "b"}
    assert stored["b"] == cand("b", "a", 2, 60.0)
    assert stored["wrongf"].fixed is True and stored["wrongf"].evaluation.status == INCORRECT


def test_lineage_runs_from_the_baseline_to_the_candidate(tmp_path):
    fill(Store(tmp_path))
    assert [c.id for c in Store(tmp_path).lineage("run1", "b")] == ["c0", "a", "b"]


def test_beams_and_plans_survive_reopening(tmp_path):
    fill(Store(tmp_path))
    store = Store(tmp_path)
    assert store.beams("run1") == {1: ["a", "c0"], 2: ["b", "a"]}
    plans = store.plans("run1")
    assert [(p["id"], p["parent_id"], p["iteration"], p["model"], p["text"]) for p in plans] == [
        ("p1", "c0", 1, "m1", "plan of a"), ("p2", "a", 2, "m2", "plan of b")
    ]


def test_a_stored_llm_call_is_found_by_its_key(tmp_path):
    fill(Store(tmp_path))
    call = Store(tmp_path).get_llm_call("run1", "i1.b0.p0:code1")
    assert (call["prompt"], call["reply"], call["model"]) == ("prompt 3", "reply 3", "m2")
    assert Store(tmp_path).get_llm_call("run1", "nope") is None


def test_llm_usage_groups_by_phase_and_model(tmp_path):
    fill(Store(tmp_path))
    usage = Store(tmp_path).llm_usage("run1")
    assert usage == [
        {"phase": "code", "model": "m1", "calls": 2, "prompt_tokens": 600, "completion_tokens": 60,
         "seconds": pytest.approx(5.0)},
        {"phase": "code", "model": "m2", "calls": 1, "prompt_tokens": 300, "completion_tokens": 30,
         "seconds": pytest.approx(2.5)},
        {"phase": "plan", "model": "m1", "calls": 1, "prompt_tokens": 100, "completion_tokens": 10,
         "seconds": pytest.approx(1.5)},
    ]


def test_find_by_hash_returns_an_evaluated_candidate_with_that_source(tmp_path):
    store = Store(tmp_path)
    fill(store)
    a = cand("a", "c0", 1, 80.0)
    assert store.find_by_hash("run1", a.source_hash).id == "a"
    assert store.find_by_hash("run1", source_hash("something else")) is None


def test_data_version_changes_after_a_write_from_another_store_object(tmp_path):
    reader, writer = Store(tmp_path), Store(tmp_path)
    before = reader.data_version()
    writer.create_run("run1", problem(), 2, {})
    after_create = reader.data_version()
    writer.set_status("run1", "finished")
    assert before < after_create < reader.data_version()


def test_reads_do_not_change_data_version(tmp_path):
    store = Store(tmp_path)
    fill(store)
    before = store.data_version()
    store.get_run("run1")
    store.candidates("run1")
    assert store.data_version() == before


def in_dead_process(tmp_path, statements: str) -> Store:
    """Run store statements in a real other process that then exits, so any pid it stored is dead."""
    script = textwrap.dedent("""
        import json, sys
        from speedpatch.model import Problem
        from speedpatch.store import Store
        problem = Problem.from_dict(json.loads(sys.argv[1]))
        store = Store(sys.argv[2])
    """) + textwrap.dedent(statements)
    subprocess.run([sys.executable, "-c", script, json.dumps(problem().to_dict()), str(tmp_path)],
                   check=True, timeout=60)
    return Store(tmp_path)


def dead_run(tmp_path, run_id: str = "run-dead") -> Store:
    return in_dead_process(tmp_path, f"store.create_run({run_id!r}, problem, 2, {{}})")


def test_a_running_run_whose_process_is_gone_reads_as_interrupted_and_says_why(tmp_path):
    record = dead_run(tmp_path).get_run("run-dead")
    assert record.status == "interrupted"
    assert record.message == "interrupted (its process is gone)"  # how to resume is each client's to say


def test_a_running_run_of_a_live_process_reads_as_running(tmp_path):
    store = Store(tmp_path)
    store.create_run("run-live", problem(), 2, {})  # this test process is alive
    assert store.get_run("run-live").status == "running"


def test_claim_makes_an_interrupted_run_running_again(tmp_path):
    store = dead_run(tmp_path)
    store.claim("run-dead")
    assert store.get_run("run-dead").status == "running"


def test_a_resumed_run_whose_process_dies_again_reads_as_interrupted_again(tmp_path):
    store = dead_run(tmp_path)
    store.set_status("run-dead", "cancelled", "cancelled by the user")
    store = in_dead_process(tmp_path, 'store.claim("run-dead")')  # a resume that then crashed
    record = store.get_run("run-dead")
    assert record.status == "interrupted"
    assert record.message == "interrupted (its process is gone)"


def test_get_run_accepts_a_unique_id_prefix(tmp_path):
    store = Store(tmp_path)
    store.create_run("20261130-abc", problem(), 2, {})
    store.create_run("20261130-xyz", problem(), 2, {})
    assert store.get_run("20261130-a").run_id == "20261130-abc"


def test_get_run_refuses_an_ambiguous_prefix(tmp_path):
    store = Store(tmp_path)
    store.create_run("20261130-abc", problem(), 2, {})
    store.create_run("20261130-xyz", problem(), 2, {})
    with pytest.raises(KeyError, match="no run '20261130-'"):
        store.get_run("20261130-")


def test_get_run_of_an_unknown_id_names_it(tmp_path):
    with pytest.raises(KeyError, match="no run 'nope'"):
        Store(tmp_path).get_run("nope")


def test_list_runs_shows_the_newest_first(tmp_path):
    store = Store(tmp_path)
    for run_id in ("first", "second", "third"):
        store.create_run(run_id, problem(), 2, {})
    assert [r.run_id for r in Store(tmp_path).list_runs()] == ["third", "second", "first"]


def test_update_run_refuses_unknown_fields(tmp_path):
    store = Store(tmp_path)
    store.create_run("run1", problem(), 2, {})
    with pytest.raises(ValueError, match="pid"):
        store.update_run("run1", pid=1)


def test_the_store_lives_under_dot_speedpatch(tmp_path):
    assert Store(tmp_path).path == tmp_path / ".speedpatch" / "runs.sqlite3"


def test_a_store_written_before_runs_kept_their_search_time_is_upgraded_in_place(tmp_path):
    import sqlite3

    (tmp_path / ".speedpatch").mkdir()
    old = sqlite3.connect(tmp_path / ".speedpatch" / "runs.sqlite3")
    old.executescript(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, created TEXT NOT NULL, updated TEXT NOT NULL, path TEXT NOT NULL,"
        " kernel TEXT NOT NULL, target TEXT NOT NULL, backend TEXT NOT NULL, status TEXT NOT NULL,"
        " message TEXT NOT NULL DEFAULT '', iteration INTEGER NOT NULL DEFAULT 0, iterations INTEGER NOT NULL,"
        " problem TEXT NOT NULL, config TEXT NOT NULL, baseline_id TEXT, best_id TEXT, pid INTEGER, host TEXT);"
    )
    old.execute("INSERT INTO runs (id, created, updated, path, kernel, target, backend, status, iterations, problem,"
                " config) VALUES ('old1', 't', 't', '/ws/sum.toy', 'kernel_sum', 'toy', 'toy-count', 'finished', 2,"
                " ?, '{}')", (json.dumps(problem().to_dict()),))
    old.commit()
    old.close()
    store = Store(tmp_path)
    assert store.get_run("old1").seconds == 0.0
    store.update_run("old1", seconds=12.5)
    assert Store(tmp_path).get_run("old1").seconds == 12.5


def test_a_queued_run_of_a_live_process_reads_as_queued(tmp_path):
    store = Store(tmp_path)
    store.queue_run("run-q", problem(), 2, {"search": {"beam": 1}})  # this test process is alive
    record = Store(tmp_path).get_run("run-q")
    assert (record.status, record.iterations, record.config) == ("queued", 2, {"search": {"beam": 1}})
    assert record.baseline is None


def test_a_queued_run_whose_process_is_gone_reads_as_interrupted_with_the_queued_hint(tmp_path):
    store = in_dead_process(tmp_path, 'store.queue_run("run-q", problem, 2, {})')
    record = store.get_run("run-q")
    assert record.status == "interrupted"
    assert record.message == "queued when the server stopped; resume it to run: speedpatch resume run-q"


def test_starting_a_run_this_process_queued_turns_the_placeholder_into_the_run(tmp_path):
    store = Store(tmp_path)
    store.queue_run("run-q", problem(), 2, {"search": {"beam": 1}})
    created = store.get_run("run-q").created
    store.create_run("run-q", problem(), 3, {"search": {"beam": 2}})
    record = store.get_run("run-q")
    assert (record.status, record.iterations, record.config) == ("running", 3, {"search": {"beam": 2}})
    assert record.created == created
    assert [r.run_id for r in store.list_runs()] == ["run-q"]


def test_create_run_refuses_an_id_taken_by_a_run_that_is_not_queued(tmp_path):
    import sqlite3

    store = Store(tmp_path)
    store.create_run("run1", problem(), 2, {})
    store.set_status("run1", "cancelled", "cancelled by the user")
    with pytest.raises(sqlite3.IntegrityError, match="run1"):
        store.create_run("run1", problem(), 2, {})
    assert store.get_run("run1").status == "cancelled"


def test_create_run_refuses_a_run_queued_by_another_process(tmp_path):
    import sqlite3

    store = in_dead_process(tmp_path, 'store.queue_run("run-q", problem, 2, {})')
    with pytest.raises(sqlite3.IntegrityError, match="run-q"):
        store.create_run("run-q", problem(), 2, {})


def test_a_cancelled_queued_run_keeps_its_cancel_after_its_process_is_gone(tmp_path):
    store = in_dead_process(
        tmp_path, 'store.queue_run("run-q", problem, 2, {})\nstore.set_status("run-q", "cancelled", "cancelled before it started")'
    )
    record = store.get_run("run-q")
    assert (record.status, record.message) == ("cancelled", "cancelled before it started")
