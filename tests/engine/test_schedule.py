"""Schedule reuse: the plans that sped up a similar kernel guide one plan slot per iteration."""

from __future__ import annotations

from speedpatch import api
from speedpatch.engine import events as ev
from speedpatch.engine.schedule import find_schedule, similarity
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of
from support.toys import toy_config, toy_problem

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


def test_no_schedule_without_an_earlier_faster_run(tmp_path):
    config = toy_config(tmp_path)
    assert find_schedule(Store(tmp_path), toy_problem(tmp_path, config)) is None


def test_the_plans_of_a_similar_faster_run_guide_the_next_search(tmp_path):
    store = Store(tmp_path)
    with FakeOpenAI(script("Replace the loop by the builtin sum.")) as server:
        config = llm_config(tmp_path, server)
        first = api.optimize(toy_problem(tmp_path, config), config, store)
    assert first.speedup > 1

    started = []
    with FakeOpenAI(script("Some other plan.")) as server:
        config = llm_config(tmp_path, server)
        api.optimize(toy_problem(tmp_path, config), config, store,
                     on_event=lambda e: e.kind == ev.RUN_STARTED and started.append(e.data))
    plans = [r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan"]
    guided = [p for p in plans if GUIDED in p]
    assert len(guided) == 1 and len(plans) == 2  # one slot of the same budget, the other from the menu
    assert "Replace the loop by the builtin sum." in guided[0]
    assert first.run_id in started[0]["schedule"]


def test_schedule_reuse_can_be_turned_off(tmp_path):
    store = Store(tmp_path)
    with FakeOpenAI(script("Replace the loop by the builtin sum.")) as server:
        config = llm_config(tmp_path, server)
        api.optimize(toy_problem(tmp_path, config), config, store)
    with FakeOpenAI(script("Some other plan.")) as server:
        config = llm_config(tmp_path, server, reuse_schedules=False)
        api.optimize(toy_problem(tmp_path, config), config, store)
    assert not [r for r in server.requests if GUIDED in r["messages"][-1]["content"]]
