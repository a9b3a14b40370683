"""The search through the real `openai` client against a real local OpenAI-compatible server."""

from __future__ import annotations

import socket

from speedpatch import api
from speedpatch.engine import events as ev
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of
from support.toys import toy_config, toy_problem

FAST_REPLY = "Here it is.\n```python\ndef kernel_sum(xs):\n    return sum(xs)\n```\n"
FOREACH_REPLY = (
    "First a sketch:\n```python\nfor x in xs: ...\n```\nThe final code:\n"
    "```python\ndef kernel_sum(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n```"
)
WRONG_REPLY = "```python\ndef kernel_sum(xs):\n    return sum(xs) + 1\n```"


def llm_config(tmp_path, server, **search):
    return toy_config(
        tmp_path,
        llm={"base_url": server.base_url, "models": ["model-a", "model-b"], "retries": 0},
        search={"iterations": 2, "beam": 2, "plans": 2, "codes": 2, **search},
    )


def scripted(plan="Use the builtin sum instead of the index loop.", code=FAST_REPLY, fix=FAST_REPLY):
    def script(request):
        return {"plan": plan, "code": code, "fix": fix}[phase_of(request)]

    return script


def test_llm_search_finds_the_faster_kernel(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished"
    assert "return sum(xs)" in record.best.source
    assert record.speedup > 1
    assert record.llm["calls"] == len(server.requests)
    assert record.llm["prompt_tokens"] > 0 and record.llm["completion_tokens"] > 0


def test_code_is_the_last_fenced_block_of_the_reply(tmp_path):
    with FakeOpenAI(scripted(code=FOREACH_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert "for x in xs:\n        total += x" in record.best.source
    assert "INPUTS" in record.best.source  # spliced into the harness, not replacing it


def test_plans_and_code_are_split_across_the_ensemble(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    by_phase: dict[str, set[str]] = {}
    for request in server.requests:
        by_phase.setdefault(phase_of(request), set()).add(request["model"])
    assert by_phase["plan"] == {"model-a", "model-b"}
    assert by_phase["code"] == {"model-a", "model-b"}


def test_too_few_plans_for_the_ensemble_is_warned(tmp_path):
    warnings = []
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=2)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path),
                     on_event=lambda e: e.kind == ev.WARNING and warnings.append(e.data["message"]))
    assert any("model-b will never plan" in w for w in warnings)


def test_plan_prompt_carries_metric_and_phase(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    plan = next(r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan")
    assert "Its latency was 174 lines." in plan
    assert "This is phase 1 of 1" in plan
    assert "def kernel_sum(xs):" in plan


def test_reply_without_code_is_a_rejected_candidate(tmp_path):
    with FakeOpenAI(scripted(code="I would rather not write code today.")) as server:
        config = llm_config(tmp_path, server, iterations=1)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    children = [c for c in store.candidates(record.run_id) if c.iteration == 1]
    assert children and all(c.evaluation.status == "rejected" for c in children)
    assert all("no code" in c.evaluation.message for c in children)
    assert record.status == "finished" and record.best.id == "base"


def test_failed_candidate_gets_one_repair_with_its_output(tmp_path):
    with FakeOpenAI(scripted(code=WRONG_REPLY, fix=FAST_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    fixes = [r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "fix"]
    assert len(fixes) == 1 and "mismatch" in fixes[0]
    assert record.best.fixed and record.best.evaluation.status == "ok"


def test_fix_on_failure_can_be_turned_off(tmp_path):
    with FakeOpenAI(scripted(code=WRONG_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1, fix_on_failure=False)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert not [r for r in server.requests if phase_of(r) == "fix"]


def test_llm_call_budget_ends_the_run_cleanly(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=4)
        config.budget.max_llm_calls = 3
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished"
    assert "3 LLM calls" in record.message
    assert len(server.requests) == 3


def _closed_port_url() -> str:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


def test_endpoint_down_stops_the_run_resumable(tmp_path):
    config = toy_config(tmp_path, llm={"base_url": _closed_port_url(), "models": ["m"], "retries": 0},
                        search={"iterations": 1})
    record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "interrupted"
    assert f"speedpatch resume {record.run_id}" in record.message


def test_resume_replays_stored_replies_and_asks_only_for_the_rest(tmp_path):
    # reference: the same search uninterrupted
    (tmp_path / "a").mkdir()
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path / "a", server)
        full = api.optimize(toy_problem(tmp_path / "a", config), config, Store(tmp_path / "a"))
        needed = len(server.requests)

    answered = []

    def flaky(request):
        if len(answered) >= 5:
            return (500, {"error": {"message": "overloaded"}})
        answered.append(1)
        return scripted()(request)

    (tmp_path / "b").mkdir()
    store = Store(tmp_path / "b")
    with FakeOpenAI(flaky) as server:
        config = llm_config(tmp_path / "b", server)
        config.llm.max_concurrency = 1
        broken = api.optimize(toy_problem(tmp_path / "b", config), config, store)
    assert broken.status == "interrupted"
    stored_calls = broken.llm["calls"]
    assert stored_calls >= 1

    with FakeOpenAI(scripted()) as server:
        # the stored run remembers the old endpoint; resume uses the one configured now
        record = api.resume(broken.run_id, store, llm_config(tmp_path / "b", server))
    assert record.status == "finished", record.message
    assert len(server.requests) == needed - stored_calls
    assert record.best.evaluation.value == full.best.evaluation.value


def test_api_key_is_sent_but_never_stored(tmp_path, monkeypatch):
    secret = "sk-test-very-secret-123"
    monkeypatch.setenv("SPEEDPATCH_API_KEY", secret)
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert all(h.get("authorization") == f"Bearer {secret}" for h in server.headers)
    for path in (tmp_path / ".speedpatch").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
