"""The search, end to end with the offline proposer on the toy target."""

from __future__ import annotations

import os
import threading

from speedpatch import api
from speedpatch.engine import events as ev
from speedpatch.store import Store
from support.toys import toy_config, toy_problem

FAST = "def kernel_sum(xs):\n    return sum(xs)\n"
WRONG = "def kernel_sum(xs):\n    return sum(xs[:-1])\n"


def test_offline_search_finds_a_faster_correct_kernel(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 2})
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished"
    assert record.best.evaluation.status == "ok"
    assert record.best.plan == "Use the builtin sum."
    assert record.best.evaluation.value < record.baseline.evaluation.value
    assert record.speedup > 1


def test_incorrect_candidates_are_stored_but_never_selected(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 2})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store)
    wrong = [c for c in store.candidates(record.run_id) if c.plan.startswith("Drop the last")]
    assert wrong and all(c.evaluation.status == "incorrect" for c in wrong)
    in_beams = {cid for members in store.beams(record.run_id).values() for cid in members}
    assert not in_beams & {c.id for c in wrong}


def test_initial_incorrect_code_stops_the_run_with_the_harness_output(tmp_path):
    config = toy_config(tmp_path, offline=True)
    record = api.optimize(toy_problem(tmp_path, config, reference="sum(xs) + 1"), config, Store(tmp_path))
    assert record.status == "failed"
    assert record.message.startswith("initial code is incorrect")
    assert "mismatch" in record.message
    assert record.iteration == 0


def test_cancel_ends_the_run_with_its_best_so_far_stored(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 8})
    cancel = threading.Event()

    def on_event(event):
        if event.kind == ev.ITERATION_FINISHED:
            cancel.set()

    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store, on_event=on_event, cancel=cancel)
    assert record.status == "cancelled"
    assert record.iteration == 1
    assert store.get_run(record.run_id).best.plan == "Use the builtin sum."


def test_evaluation_budget_ends_the_run_cleanly(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 8}, budget={"max_evaluations": 3})
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished"
    assert "budget of 3 evaluations" in record.message
    assert record.evaluations["total"] <= 3


def test_early_stop_after_iterations_without_improvement(tmp_path):
    slow = "def kernel_sum(xs):\n    total = 0\n    for x in xs:\n        total += x\n        total += 0\n    return total\n"
    slower = slow.replace("total += 0\n", "total += 0\n        total -= 0\n")
    moves = {"Use the builtin sum.": FAST, "Add a no-op.": slow, "Add two no-ops.": slower}
    # one move per parent and iteration, so that moves are left when the search stops improving
    config = toy_config(tmp_path, offline=True, search={"iterations": 8, "early_stop": 1, "plans": 1, "codes": 1})
    record = api.optimize(toy_problem(tmp_path, config, moves=moves), config, Store(tmp_path))
    assert record.status == "finished"
    assert "no improvement" in record.message
    assert record.iteration == 2


def test_hanging_candidate_is_a_timeout_result(tmp_path):
    moves = {"Spin.": "def kernel_sum(xs):\n    while True:\n        pass\n", "Use the builtin sum.": FAST}
    config = toy_config(tmp_path, offline=True, search={"iterations": 1, "eval_timeout": 2.0})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config, moves=moves), config, store)
    spin = next(c for c in store.candidates(record.run_id) if c.plan == "Spin.")
    assert spin.evaluation.status == "timeout"
    assert record.best.plan == "Use the builtin sum."


def test_crashing_candidate_is_a_runtime_error_result(tmp_path):
    moves = {"Crash.": "def kernel_sum(xs):\n    raise RuntimeError('boom')\n"}
    config = toy_config(tmp_path, offline=True, search={"iterations": 1})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config, moves=moves), config, store)
    crash = next(c for c in store.candidates(record.run_id) if c.plan == "Crash.")
    assert crash.evaluation.status == "runtime_error"
    assert "boom" in crash.evaluation.message + crash.evaluation.log
    assert record.status == "finished"


def test_megabytes_of_output_are_cut_not_kept(tmp_path):
    moves = {"Chatter.": "def kernel_sum(xs):\n    print('x' * 3_000_000)\n    return sum(xs)\n"}
    config = toy_config(tmp_path, offline=True, search={"iterations": 1})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config, moves=moves), config, store)
    chatter = next(c for c in store.candidates(record.run_id) if c.plan == "Chatter.")
    assert len(chatter.evaluation.log) < 30_000


def test_candidates_run_in_another_process(tmp_path):
    # the candidate reports its pid in its output: the sandbox lets it write nowhere but its scratch folder
    body = "def kernel_sum(xs):\n    print('PID', __import__('os').getpid())\n    return sum(xs)\n"
    config = toy_config(tmp_path, offline=True, search={"iterations": 1})
    record = api.optimize(toy_problem(tmp_path, config, moves={"Spy.": body}), config, Store(tmp_path))
    logs = [c.evaluation.log for c in Store(tmp_path).candidates(record.run_id) if c.evaluation]
    pids = {int(line.split()[1]) for log in logs for line in log.splitlines() if line.startswith("PID ")}
    assert pids and os.getpid() not in pids


def test_identical_sources_are_evaluated_once(tmp_path, monkeypatch):
    import toy_target

    calls = []
    original = toy_target.ToyCountBackend.evaluate

    def counting(self, source, ctx):
        calls.append(source)
        return original(self, source, ctx)

    monkeypatch.setattr(toy_target.ToyCountBackend, "evaluate", counting)
    moves = {"Use the builtin sum.": FAST, "Same thing in other words.": FAST}
    config = toy_config(tmp_path, offline=True, search={"iterations": 3})
    api.optimize(toy_problem(tmp_path, config, moves=moves), config, Store(tmp_path))
    assert len(calls) == len(set(calls)) == 2  # the baseline and the one distinct rewrite


def test_events_follow_the_run(tmp_path):
    kinds = []
    # two moves per parent and iteration: the toy's four moves last for two iterations
    config = toy_config(tmp_path, offline=True, search={"iterations": 2, "plans": 2, "codes": 1})
    api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path), on_event=lambda e: kinds.append(e.kind))
    assert kinds[:3] == [ev.RUN_STARTED, ev.BASELINE, ev.ITERATION_STARTED]
    assert kinds.count(ev.ITERATION_FINISHED) == 2
    assert kinds[-1] == ev.RUN_FINISHED


def test_a_broken_event_sink_does_not_stop_the_search(tmp_path):
    def broken(event):
        raise ValueError("display bug")

    config = toy_config(tmp_path, offline=True, search={"iterations": 1})
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path), on_event=broken)
    assert record.status == "finished"


def test_a_run_records_the_wall_clock_time_it_searched(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 2})
    store = Store(tmp_path)
    record = api.optimize(toy_problem(tmp_path, config), config, store)
    assert record.seconds > 0
    assert store.get_run(record.run_id).seconds == record.seconds


def test_resume_does_not_restart_the_wall_clock_budget(tmp_path):
    config = toy_config(tmp_path, offline=True, search={"iterations": 8}, budget={"max_seconds": 600})
    cancel = threading.Event()
    store = Store(tmp_path)
    first = api.optimize(toy_problem(tmp_path, config), config, store,
                         on_event=lambda e: cancel.set() if e.kind == ev.BASELINE else None, cancel=cancel)
    assert first.status == "cancelled" and first.evaluations["total"] == 1
    store.update_run(first.run_id, seconds=600.0)  # as if the first attempt had used all ten minutes
    record = api.resume(first.run_id, store)
    assert "wall-clock budget of 600 s used up" in record.message
    assert record.seconds >= 600.0
    assert {c.source_hash for c in store.candidates(record.run_id)} == {record.baseline.source_hash}
