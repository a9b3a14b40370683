"""Schedule reuse: the plans that sped up a similar kernel guide one plan slot per iteration."""

from __future__ import annotations

import pytest
from speedpatch import api
from speedpatch.engine import events as ev
from speedpatch.engine.schedule import find_schedule, similarity
from speedpatch.errors import UserError
from speedpatch.llm.offline import GUIDED_MODEL
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of
from support.toys import toy_config, toy_problem, write_toy

FAST_REPLY = "```python\ndef kernel_sum(xs):\n    return sum(xs)\n```"
GUIDED = "The step of that schedule to reuse now was:"
GEMM_512 = "void k() { tiled_matmul_auto(512, 512, 512, A, B, D, C, 512, 512, 512, 512, WS); }"
GEMM_1024 = "void k() { tiled_matmul_auto(1024, 1024, 1024, A, B, D, C, 1024, 1024, 1024, 1024, WS); }"
CONV = "void k() { tiled_conv_auto(4, 56, 56, 64, 64, 56, 56, 1, 1, 1, 1, 3, in, w, bias, out, WS); }"


def script(plan):
    return lambda request: plan if phase_of(request) == "plan" else FAST_REPLY


def llm_config(folder, server, **search):
    return toy_config(folder, llm={"base_url": server.base_url, "models": ["m"], "retries": 0},
                      search={"iterations": 1, "beam": 1, "plans": 2, "codes": 1, **search})


def test_similarity_ignores_sizes_but_not_operations():
    assert similarity(GEMM_512, GEMM_1024) == 1.0
    assert similarity(GEMM_512, CONV) < 0.6


def related_problem(folder, config):
    """The toy sum on other sizes: the same operation, another problem."""
    path = write_toy(folder)
    path = path.rename(folder / "sum_big.toy")
    path.write_text(path.read_text().replace("[5] * 16", "[5] * 64").replace("range(30)", "range(90)"))
    return api.make_problem(str(path), path.read_text(), "kernel_sum", config)


def test_no_schedule_without_an_earlier_faster_run(tmp_path):
    config = toy_config(tmp_path)
    assert find_schedule(Store(tmp_path), toy_problem(tmp_path, config)) is None


def test_the_plans_of_a_faster_run_on_related_sizes_guide_the_next_search(tmp_path):
    store = Store(tmp_path)
    with FakeOpenAI(script("Replace the loop by the builtin sum.")) as server:
        config = llm_config(tmp_path, server)
        first = api.optimize(toy_problem(tmp_path, config), config, store)
    assert first.speedup > 1

    started = []
    with FakeOpenAI(script("Some other plan.")) as server:
        config = llm_config(tmp_path, server)
        api.optimize(related_problem(tmp_path, config), config, store,
                     on_event=lambda e: e.kind == ev.RUN_STARTED and started.append(e.data))
    plans = [r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan"]
    guided = [p for p in plans if GUIDED in p]
    assert len(guided) == 1 and len(plans) == 2  # one slot of the same budget, the other from the menu
    assert "Replace the loop by the builtin sum." in guided[0]
    assert first.run_id in started[0]["schedule"]


def test_schedule_reuse_can_be_turned_off_by_its_older_key(tmp_path):
    store = Store(tmp_path)
    with FakeOpenAI(script("Replace the loop by the builtin sum.")) as server:
        config = llm_config(tmp_path, server)
        api.optimize(toy_problem(tmp_path, config), config, store)
    with FakeOpenAI(script("Some other plan.")) as server:
        config = llm_config(tmp_path, server, reuse_schedules=False)
        api.optimize(related_problem(tmp_path, config), config, store)
    assert not [r for r in server.requests if GUIDED in r["messages"][-1]["content"]]


def offline_config(folder, **search):
    return toy_config(folder, offline=True, search={"iterations": 1, "beam": 1, "plans": 1, "codes": 1, **search})


def donor_run(folder, store):
    config = toy_config(folder, offline=True, search={"iterations": 1, "beam": 1, "plans": 4, "codes": 1})
    first = api.optimize(toy_problem(folder, config), config, store)
    assert first.speedup > 1
    return first


def test_a_run_on_the_same_problem_is_never_its_own_donor(tmp_path):
    store = Store(tmp_path)
    donor_run(tmp_path, store)
    config = offline_config(tmp_path)
    assert find_schedule(store, toy_problem(tmp_path, config)) is None
    assert find_schedule(store, related_problem(tmp_path, config)) is not None


def test_the_donor_with_the_closest_sizes_is_chosen(tmp_path):
    store = Store(tmp_path)
    first = donor_run(tmp_path, store)
    config = offline_config(tmp_path)
    far = related_problem(tmp_path, config)
    far_run = api.optimize(far, toy_config(tmp_path, offline=True, search={"iterations": 1, "plans": 4, "codes": 1,
                                                                             "reuse": "off"}), store)
    assert far_run.speedup > 1
    near_path = tmp_path / "near" / "sum.toy"
    near_path.parent.mkdir()
    write_toy(near_path.parent)
    near_path.write_text(near_path.read_text().replace("range(30)", "range(31)"))
    near = api.make_problem(str(near_path), near_path.read_text(), "kernel_sum", config)
    chosen = find_schedule(store, near)
    assert chosen is not None and chosen.run_id == first.run_id


def test_reuse_off_searches_without_a_schedule(tmp_path):
    store = Store(tmp_path)
    donor_run(tmp_path, store)
    started = []
    config = offline_config(tmp_path, reuse="off")
    api.optimize(related_problem(tmp_path, config), config, store,
                 on_event=lambda e: e.kind == ev.RUN_STARTED and started.append(e.data))
    assert started[0]["schedule"] is None


def test_reuse_of_a_named_run_on_the_same_problem_is_refused(tmp_path):
    store = Store(tmp_path)
    first = donor_run(tmp_path, store)
    config = offline_config(tmp_path, reuse=first.run_id)
    with pytest.raises(UserError, match="same problem"):
        api.optimize(toy_problem(tmp_path, config), config, store)


def test_a_named_run_is_followed_and_stored_with_the_run(tmp_path):
    store = Store(tmp_path)
    first = donor_run(tmp_path, store)
    config = offline_config(tmp_path, reuse=first.run_id)
    record = api.optimize(related_problem(tmp_path, config), config, store)
    assert record.config["schedule"]["run_id"] == first.run_id
    assert record.config["schedule"]["chosen"] == f"--reuse {first.run_id}"


def test_the_offline_proposer_tries_the_donors_step_first(tmp_path):
    store = Store(tmp_path)
    first = donor_run(tmp_path, store)
    donor_step = store.get_run(first.run_id).best.plan
    # one move per iteration: without guidance the toy's first move (the for-each loop) would be tried
    config = offline_config(tmp_path)
    record = api.optimize(related_problem(tmp_path, config), config, store)
    plans = store.plans(record.run_id)
    assert [(p["text"], p["model"]) for p in plans] == [(donor_step, GUIDED_MODEL)]
    assert record.best.plan == donor_step


def test_without_reuse_the_offline_proposer_keeps_the_targets_order(tmp_path):
    store = Store(tmp_path)
    donor_run(tmp_path, store)
    config = offline_config(tmp_path, reuse="off")
    record = api.optimize(related_problem(tmp_path, config), config, store)
    assert [p["text"] for p in store.plans(record.run_id)] == ["Replace the index loop by a for-each loop."]
