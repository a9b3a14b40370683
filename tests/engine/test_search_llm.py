"""The search through the real `openai` client against a real local OpenAI-compatible server."""

from __future__ import annotations

import socket

import toy_target
from speedpatch import api
from speedpatch.engine import events as ev
from speedpatch.engine.prompts import REPAIR_MARK
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


def test_code_is_the_block_that_defines_the_kernel_not_a_sketch_before_it(tmp_path):
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


def test_a_plug_in_target_ships_its_own_menu(tmp_path, monkeypatch):
    shipped = tmp_path / "plugin-menus"
    shipped.mkdir()
    (shipped / "toy.toml").write_text('knowledge = "Toy kernels are counted in Python lines."\n')
    (shipped / "toy.api.txt").write_text("sum(xs): the builtin sum\n")
    monkeypatch.setattr(toy_target.ToyTarget, "menu_dir", shipped)
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    plan = next(r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan")
    assert "Toy kernels are counted in Python lines." in plan
    assert "sum(xs): the builtin sum" in plan


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
        # two samples per plan: the repair takes the second one's place (fix_within_samples)
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=2)
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
    assert record.message.startswith("LLM failed: ") and record.message.endswith(". The run is stored")


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


# replies of every shape, and the one repair an unusable reply gets ------------------------------------


def repairing(first: str, second: str = FAST_REPLY):
    """Code prompts get `first`; the repair prompt of a code prompt gets `second`."""

    def script(request):
        text = request["messages"][-1]["content"]
        if phase_of(request) == "plan":
            return "Use the builtin sum instead of the index loop."
        return second if REPAIR_MARK in text else first

    return script


def one_sample(tmp_path, server, **search):
    return llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1, fix_on_failure=False, **search)


def test_a_whole_file_reply_with_other_inputs_is_measured_on_the_original_inputs(tmp_path):
    original = toy_target.EXAMPLE
    hostile = original.replace("list(range(30))", "[1]").replace(
        original[original.index("def kernel_sum"): original.index("\n\n\nMOVES")], "def kernel_sum(xs):\n    return sum(xs)")
    with FakeOpenAI(scripted(code=f"The whole file:\n```python\n{hostile}```\n")) as server:
        config = one_sample(tmp_path, server)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert "list(range(30))" in record.best.source and "[1]" not in record.best.source
    assert record.best.source.count("INPUTS = ") == 1 and record.best.evaluation.value == 3


def test_a_kernel_region_that_rebinds_the_inputs_is_rejected_naming_them(tmp_path):
    reply = "```python\ndef kernel_sum(xs):\n    global INPUTS\n    INPUTS = []\n    return sum(xs)\n```"
    with FakeOpenAI(scripted(code=reply)) as server:
        config = one_sample(tmp_path, server)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    (child,) = [c for c in store.candidates(record.run_id) if c.iteration == 1]
    assert child.evaluation.status == "rejected" and "redefines INPUTS" in child.evaluation.message
    assert record.best.id == "base" and record.speedup == 1.0


def test_an_unfenced_reply_that_parses_is_used_without_a_repair(tmp_path):
    reply = "Here it is:\n\ndef kernel_sum(xs):\n    return sum(xs)\n\nThe builtin is faster."
    with FakeOpenAI(scripted(code=reply)) as server:
        config = one_sample(tmp_path, server)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.best.evaluation.value == 3 and "return sum(xs)" in record.best.source
    assert not [r for r in server.requests if REPAIR_MARK in r["messages"][-1]["content"]]


def test_an_unusable_reply_gets_one_repair_prompt_that_says_what_was_wrong(tmp_path):
    with FakeOpenAI(repairing("I would call the builtin sum.")) as server:
        config = one_sample(tmp_path, server)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    repairs = [r["messages"][-1]["content"] for r in server.requests if REPAIR_MARK in r["messages"][-1]["content"]]
    assert len(repairs) == 1
    assert "no fenced code block" in repairs[0] and "I would call the builtin sum." in repairs[0]
    assert record.best.evaluation.value == 3
    assert {u["phase"] for u in store.llm_usage(record.run_id)} == {"plan", "code", "repair"}
    assert record.llm["calls"] == len(server.requests) == 3


def test_a_reply_still_unusable_after_its_repair_is_rejected_with_both_reasons(tmp_path):
    with FakeOpenAI(repairing("No code.", "```python\ndef helper(xs):\n    return 0\n```")) as server:
        config = one_sample(tmp_path, server)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    (child,) = [c for c in store.candidates(record.run_id) if c.iteration == 1]
    assert child.evaluation.status == "rejected"
    assert "no fenced code block" in child.evaluation.message
    assert "after one repair prompt: none of the reply's 1 code block(s) defines `kernel_sum`" in child.evaluation.message
    assert len([r for r in server.requests if REPAIR_MARK in r["messages"][-1]["content"]]) == 1


def test_repair_prompts_count_against_the_llm_call_budget(tmp_path):
    with FakeOpenAI(repairing("No code.")) as server:
        config = one_sample(tmp_path, server)
        config.budget.max_llm_calls = 2
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert len(server.requests) == 2 and record.llm["calls"] == 2
    assert "2 LLM calls" in record.message


TOO_LONG = (400, {"error": {"message": "This model's maximum context length is 8192 tokens",
                            "type": "invalid_request_error"}})


def test_a_request_refused_as_too_long_fails_its_sample_and_the_run_goes_on(tmp_path):
    calls = {"code": 0}

    def script(request):
        phase = phase_of(request)
        if phase == "code":
            calls["code"] += 1
            if calls["code"] == 1:
                return TOO_LONG
        return scripted()(request)

    with FakeOpenAI(script) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=2, codes=1)
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    assert record.status == "finished" and record.speedup > 1
    failed = [c for c in store.candidates(record.run_id) if c.evaluation and c.evaluation.status == "rejected"]
    assert any("the LLM request failed" in c.evaluation.message and "context" in c.evaluation.message
               for c in failed)


def test_a_model_whose_endpoint_refuses_it_for_good_hands_its_turns_to_the_others(tmp_path):
    def script(request):
        if request["model"] == "model-b":
            return (404, {"error": {"message": "model-b does not exist", "type": "not_found"}})
        return scripted()(request)

    with FakeOpenAI(script) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "finished" and record.speedup > 1


def test_only_a_dead_ensemble_interrupts_the_run(tmp_path):
    with FakeOpenAI(lambda request: (404, {"error": {"message": "no such model"}})) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1)
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    assert record.status == "interrupted"
    assert "every model of the ensemble failed" in record.message


def test_with_one_sample_per_plan_code_requests_still_reach_every_model(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=2, codes=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    code_models = {r["model"] for r in server.requests if phase_of(r) == "code"}
    assert code_models == {"model-a", "model-b"}


def test_a_repair_takes_the_place_of_one_of_the_plans_samples(tmp_path):
    with FakeOpenAI(scripted(code=WRONG_REPLY, fix=WRONG_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=2)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    phases = [phase_of(r) for r in server.requests]
    assert phases.count("code") + phases.count("fix") == 2 and phases.count("fix") == 1


def test_repairs_outside_the_samples_when_asked(tmp_path):
    with FakeOpenAI(scripted(code=WRONG_REPLY, fix=WRONG_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=2, fix_within_samples=False)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    phases = [phase_of(r) for r in server.requests]
    assert phases.count("code") == 2 and phases.count("fix") == 2


def test_plan_prompts_carry_the_parents_hardware_feedback_by_default(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    plan = next(r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan")
    assert "Hardware feedback from its last run:\n- executed lines: 174" in plan


def test_hardware_feedback_in_plan_prompts_can_be_turned_off(tmp_path):
    with FakeOpenAI(scripted()) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1, hardware_feedback=False)
        api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    plan = next(r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "plan")
    assert "Its latency was 174 lines." in plan
    assert "Hardware feedback" not in plan and "executed lines" not in plan


EDITS_REPLY = (
    "```json\n"
    '[{"old": "    total = 0\\n    i = 0\\n    while i < len(xs):\\n        total = total + xs[i]\\n'
    '        i = i + 1\\n    return total", "new": "    return sum(xs)"}]\n```'
)


def test_in_edits_mode_a_reply_of_old_new_edits_makes_the_faster_kernel(tmp_path):
    with FakeOpenAI(scripted(code=EDITS_REPLY)) as server:
        config = llm_config(tmp_path, server, iterations=1, beam=1, plans=1, codes=1, code_format="edits")
        record = api.optimize(toy_problem(tmp_path, config), config, Store(tmp_path))
    code = next(r["messages"][-1]["content"] for r in server.requests if phase_of(r) == "code")
    assert "ONE fenced ```json block" in code
    assert record.speedup > 1 and "def kernel_sum(xs):\n    return sum(xs)\n" in record.best.source
    assert "INPUTS" in record.best.source  # the edited kernel is spliced into the trusted problem
