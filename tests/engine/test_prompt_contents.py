"""What the shipped menus put into the prompts the LLM proposer really sends (real `openai` client, scripted
endpoint): the API listing in the plan prompt, the in-context examples in the code prompt, and no rule that
contradicts a plan variant without a menu list."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.config import Config
from speedpatch.engine.budget import Budget
from speedpatch.engine.prompts import DIFFERENT, INVENT, NORMAL, PlanChoice, plan_prompt
from speedpatch.engine.proposer import Plan, Slot
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import OTHER, load_menu
from speedpatch.model import Candidate, Evaluation, source_hash
from speedpatch.store import Store
from speedpatch.targets import get_target
from support.fake_openai import FakeOpenAI, phase_of
from support.replies import problem_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROBLEMS = {
    "gemmini": (EXAMPLES / "gemmini" / "matmul_128.c", "matmul_kernel"),
    "nki": (EXAMPLES / "nki" / "matmul.py", "matmul"),
    "cuda": (EXAMPLES / "cuda" / "matmul.cu", "launch"),
}
LISTING_HEAD = "Instructions and APIs the kernel may use (one line each):"
EXAMPLES_HEAD = "Examples of optimizations applied to other kernels of this target"
CONTRADICTION = "exactly ONE optimization from the list"


def sent_prompts(tmp_path, target: str, guidance: str = "") -> dict[str, str]:
    """The plan and code prompts the proposer sends for the target's example problem, as the endpoint got them."""
    path, kernel = PROBLEMS[target]
    problem = problem_of(path, kernel)
    replies = {"plan": "Reorder the loops.", "code": "I cannot help with that."}
    with FakeOpenAI(lambda request: replies["code" if phase_of(request) != "plan" else "plan"]) as server:
        config = Config()
        config.llm.base_url, config.llm.models, config.llm.retries = server.base_url, ["model-a"], 0
        llm = LLMProposer(config, get_target(target), problem, load_menu(target), Store(tmp_path), "run",
                          Budget(config.budget), lambda: False)
        evaluation = Evaluation(status="ok", value=1000.0, unit="cycles")
        parent = Candidate("base", "run", None, 0, "", problem.source, source_hash(problem.source),
                           evaluation=evaluation)
        slot = Slot(1, 4, parent, 0, "i1.b0.p0", guidance=guidance)
        plan = llm.plan(slot)
        assert plan is not None and plan.text == "Reorder the loops."
        llm.code(slot, Plan(plan.text, "model-a"), 0)
    prompts = [r["messages"][-1]["content"] for r in server.requests]
    return {"plan": prompts[0], "code": prompts[1]}


@pytest.mark.parametrize("target", ["gemmini", "nki", "cuda"])
def test_the_plan_prompt_carries_the_targets_api_listing_and_the_code_prompt_does_not(tmp_path, target):
    sent = sent_prompts(tmp_path, target)
    listing = load_menu(target).api.strip()
    assert listing and LISTING_HEAD + "\n" + listing in sent["plan"]
    assert LISTING_HEAD not in sent["code"]


def test_the_listing_comes_after_the_notes_and_before_the_code(tmp_path):
    plan = sent_prompts(tmp_path, "gemmini")["plan"]
    notes, listing, code = (plan.find(s) for s in ("Gemmini is a systolic-array", LISTING_HEAD, "```c\n"))
    assert -1 < notes < listing < code


def test_the_gemmini_code_prompt_carries_its_before_and_after_example_and_the_plan_prompt_does_not(tmp_path):
    sent = sent_prompts(tmp_path, "gemmini")
    example = load_menu("gemmini").examples[0]
    assert EXAMPLES_HEAD in sent["code"]
    assert f"Example: {example.title}" in sent["code"]
    assert f"Before:\n```c\n{example.before.strip()}\n```" in sent["code"]
    assert f"After:\n```c\n{example.after.strip()}\n```" in sent["code"]
    assert EXAMPLES_HEAD not in sent["plan"]
    # the example comes before the code to optimize, so the kernel the reply must define is the last shown
    assert sent["code"].find(EXAMPLES_HEAD) < sent["code"].find("The file below is a complete problem")


def test_a_target_without_examples_sends_no_examples_section(tmp_path):
    assert EXAMPLES_HEAD not in sent_prompts(tmp_path, "cuda")["code"]


def test_the_nki_code_prompt_carries_its_example_in_python_fences(tmp_path):
    example = load_menu("nki").examples[0]
    code = sent_prompts(tmp_path, "nki")["code"]
    assert f"Before:\n```python\n{example.before.strip()}\n```" in code
    assert f"After:\n```python\n{example.after.strip()}\n```" in code


def test_the_schedule_guided_plan_prompt_sent_has_no_list_and_no_rule_that_asks_for_one_from_it(tmp_path):
    plan = sent_prompts(tmp_path, "gemmini", guidance="Double-buffer the scratchpad.")["plan"]
    assert "Plan how to apply exactly this ONE optimization" in plan
    assert OTHER not in plan and CONTRADICTION not in plan


@pytest.mark.parametrize("target", ["gemmini", "nki", "cuda"])
@pytest.mark.parametrize("mode", [NORMAL, INVENT, DIFFERENT, "guided"])
def test_no_plan_variant_of_a_shipped_menu_says_plan_one_from_the_list(target, mode):
    menu = load_menu(target)
    choice = PlanChoice(NORMAL if mode == "guided" else mode, menu.optimizations[:3] + [OTHER])
    prompt = plan_prompt(menu, "c", "void k(void) {}", "k", 10.0, "cycles", "", choice, 1, 4,
                         guidance="Tile the loops." if mode == "guided" else "").text()
    assert CONTRADICTION not in prompt
    asks = prompt.count("exactly ONE") + prompt.count("exactly this ONE")
    assert asks == 1  # one request says how many to plan, in words that fit its variant
