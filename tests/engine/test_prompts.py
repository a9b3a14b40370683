"""The method's prompts (speedpatch.engine.prompts): menu dropout, plan/code/fix prompt contents."""

from __future__ import annotations

import random
from collections import Counter

import toy_target
from speedpatch.config import Config
from speedpatch.engine.budget import Budget
from speedpatch.engine.prompts import (
    DIFFERENT,
    INVENT,
    NORMAL,
    PlanChoice,
    code_prompt,
    draw_menu,
    fix_prompt,
    plan_prompt,
)
from speedpatch.engine.proposer import Plan, Slot
from speedpatch.llm.client import Reply
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import OTHER, Menu
from speedpatch.model import RUNTIME_ERROR, Candidate, Evaluation, Problem, source_hash
from speedpatch.store import Store

ITEMS = [f"optimization number {i}" for i in range(10)]
MENU = Menu(
    target="toy",
    knowledge="KNOWLEDGE: the systolic array is 16x16.",
    optimizations=ITEMS,
    plan_rules=["PLAN-RULE: respect the scratchpad size."],
    code_rules=["CODE-RULE: keep the pragmas."],
)
SOURCE = "def kernel_sum(xs):\n    return sum(xs)\n"
DRAWS = 4000


def draws(keep: float = 0.25, invent: float = 0.1, different: float = 0.1, count: int = DRAWS) -> list[PlanChoice]:
    return [draw_menu(MENU, random.Random(i), keep, invent, different) for i in range(count)]


# menu dropout and prompt variants ---------------------------------------------------------------

def test_dropout_keeps_each_item_with_probability_p():
    counts = Counter(item for choice in draws(keep=0.25) for item in choice.items)
    for item in ITEMS:
        assert abs(counts[item] / DRAWS - 0.25) < 0.03, item


def test_dropout_probability_is_the_configured_one():
    counts = Counter(item for choice in draws(keep=0.6) for item in choice.items)
    for item in ITEMS:
        assert abs(counts[item] / DRAWS - 0.6) < 0.03, item


def test_other_methods_is_always_offered_last():
    for choice in draws(keep=0.0, count=200):
        assert choice.items == [OTHER]
    for choice in draws(keep=0.5, count=200):
        assert choice.items[-1] == OTHER


def test_dropout_keeps_menu_order():
    for choice in draws(keep=0.5, count=200):
        kept = choice.items[:-1]
        assert kept == [item for item in ITEMS if item in kept]


def test_about_ten_percent_of_plan_prompts_invent_and_ten_percent_ask_for_a_different_one():
    modes = Counter(choice.mode for choice in draws())
    assert abs(modes[INVENT] / DRAWS - 0.1) < 0.02
    assert abs(modes[DIFFERENT] / DRAWS - 0.1) < 0.02
    assert abs(modes[NORMAL] / DRAWS - 0.8) < 0.03


def test_every_plan_prompt_has_its_own_draw():
    slots = [Slot(1, 8, baseline(), n, f"i1.b0.p{n}") for n in range(12)]
    menus = [tuple(draw_menu(MENU, s.rng(0), 0.5, 0.1, 0.1).items) for s in slots]
    assert len(set(menus)) > 6  # 12 independent draws of 10 coin flips: nearly all differ


def test_the_same_slot_and_seed_draw_the_same_menu_again():
    slot = Slot(3, 8, baseline(), 2, "i3.b1.p2")
    first = draw_menu(MENU, slot.rng(7), 0.5, 0.1, 0.1)
    assert draw_menu(MENU, slot.rng(7), 0.5, 0.1, 0.1) == first


# plan prompt ------------------------------------------------------------------------------------

def a_plan_prompt(mode: str = NORMAL, feedback: str = "scratchpad: 12 KB of 256 KB used", value: float | None = 1234.0) -> str:
    choice = PlanChoice(mode, ["Tile the loops.", OTHER])
    return plan_prompt(MENU, "python", SOURCE, "kernel_sum", value, "cycles", feedback, choice, 3, 8).text()


def test_plan_prompt_assembles_its_parts_in_the_method_order():
    prompt = a_plan_prompt()
    order = [
        "KNOWLEDGE: the systolic array is 16x16.",
        "```python\n" + SOURCE,
        "latency was 1,234 cycles",
        "scratchpad: 12 KB of 256 KB used",
        "1. Tile the loops.",
        "PLAN-RULE: respect the scratchpad size.",
        "Keep the scope to the selected optimization",
        "phase 3 of 8",
    ]
    positions = [prompt.find(part) for part in order]
    assert -1 not in positions, [p for p, pos in zip(order, positions, strict=True) if pos == -1]
    assert positions == sorted(positions)


def test_plan_prompt_asks_for_exactly_one_menu_optimization():
    prompt = a_plan_prompt()
    assert "exactly ONE of these optimizations" in prompt
    assert f"2. {OTHER}" in prompt


def test_plan_prompt_shows_small_latencies_with_significant_digits():
    assert "latency was 0.0123 ms" in plan_prompt(
        MENU, "python", SOURCE, "kernel_sum", 0.0123, "ms", "", PlanChoice(NORMAL, [OTHER]), 1, 8
    ).text()


def test_plan_prompt_for_an_unmeasured_parent_says_so():
    assert "has not been measured" in a_plan_prompt(value=None)


def test_plan_prompt_without_feedback_has_no_feedback_section():
    assert "Hardware feedback" not in a_plan_prompt(feedback="  ")


def test_invent_prompt_asks_for_a_new_strategy_inspired_by_the_menu():
    prompt = a_plan_prompt(INVENT)
    assert "Invent a NEW optimization strategy" in prompt and "1. Tile the loops." in prompt


def test_different_prompt_asks_for_one_different_from_the_menu():
    prompt = a_plan_prompt(DIFFERENT)
    assert "DIFFERENT from all of those" in prompt and "1. Tile the loops." in prompt


# code and fix prompts ---------------------------------------------------------------------------

def test_code_prompt_contains_knowledge_code_plan_and_the_fenced_block_rule():
    prompt = code_prompt(MENU, "python", SOURCE, "kernel_sum", "Use the builtin sum.\n").text()
    order = ["KNOWLEDGE", "```python\n" + SOURCE, "following this plan:\nUse the builtin sum.", "CODE-RULE"]
    positions = [prompt.find(part) for part in order]
    assert -1 not in positions and positions == sorted(positions)
    assert "semantically equivalent" in prompt
    assert "ONE fenced ```python code block" in prompt


def test_fix_prompt_contains_the_failed_code_plan_status_and_output():
    prompt = fix_prompt(MENU, "python", SOURCE, "kernel_sum", "Use the builtin sum.", RUNTIME_ERROR,
                        "Traceback: NameError: name 'x' is not defined").text()
    for part in ("```python\n" + SOURCE, "Use the builtin sum.", f"failed ({RUNTIME_ERROR})",
                 "NameError: name 'x' is not defined", "ONE fenced ```python code block"):
        assert part in prompt


def test_in_edits_mode_the_code_and_fix_prompts_ask_for_a_json_list_of_old_new_edits():
    for prompt in (code_prompt(MENU, "python", SOURCE, "kernel_sum", "Use the builtin sum.", edits=True),
                   fix_prompt(MENU, "python", SOURCE, "kernel_sum", "Use the builtin sum.", RUNTIME_ERROR, "E",
                              edits=True)):
        text = prompt.text()
        assert 'a JSON list of {"old": "exact current text", "new": "its replacement"} objects' in text
        assert "ONE fenced ```json block" in text and "exactly once" in text
        assert "complete new definition" not in text
        assert "CODE-RULE" in text and "semantically equivalent" in text


# the prompts the LLM proposer actually sends -------------------------------------------------------

class RecordingClient:
    """Stands in for ChatClient: records prompts and answers with a fixed reply."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def chat(self, model: str, prompt: str, temperature: float | None = None) -> Reply:
        self.prompts.append(prompt)
        return Reply(self.reply, model, 1, 1, 0.0)


def baseline(source: str = SOURCE, evaluation: Evaluation | None = None) -> Candidate:
    return Candidate("c0", "run", None, 0, "", source, source_hash(source), evaluation=evaluation)


def proposer(tmp_path, client: RecordingClient, code_format: str = "rewrite") -> LLMProposer:
    config = Config()
    config.search.code_format = code_format
    config.llm.models = ["model-a"]
    kernel = toy_target.ToyTarget().find_kernels(SOURCE)[0]
    problem = Problem(path="sum.toy", source=SOURCE, kernel=kernel, target="toy", backend="toy-count")
    return LLMProposer(config, toy_target.ToyTarget(), problem, MENU, Store(tmp_path), "run",
                       Budget(config.budget), lambda: False, client=client)


def test_fix_prompt_sent_by_the_proposer_cuts_output_lines_to_400_characters(tmp_path):
    client = RecordingClient("```python\ndef kernel_sum(xs):\n    return sum(xs)\n```")
    long_line = "E" * 1000
    failed = baseline(evaluation=Evaluation(status=RUNTIME_ERROR, message="crashed", log=f"{long_line}\nlast line"))
    slot = Slot(1, 8, baseline(), 0, "i1.b0.p0")
    proposer(tmp_path, client).fix(slot, Plan("Use the builtin sum.", "model-a"), 0, failed)
    prompt = client.prompts[-1]
    assert "E" * 400 in prompt and "E" * 401 not in prompt
    assert "last line" in prompt


def test_plan_prompts_of_one_parent_each_get_their_own_menu_draw(tmp_path):
    client = RecordingClient("Use the builtin sum.")
    llm = proposer(tmp_path, client)
    llm.config.search.dropout_keep = 0.5
    parent = baseline(evaluation=Evaluation(status="ok", value=50.0, unit="lines"))
    for n in range(8):
        llm.plan(Slot(1, 8, parent, n, f"i1.b0.p{n}"))
    menus = {tuple(line for line in p.splitlines() if "optimization number" in line) for p in client.prompts}
    assert len(menus) > 4


def test_in_edits_mode_the_proposer_applies_the_replys_edits_to_the_parents_kernel(tmp_path):
    client = RecordingClient('```json\n[{"old": "return sum(xs)", "new": "return sum(list(xs))"}]\n```')
    slot = Slot(1, 8, baseline(), 0, "i1.b0.p0")
    code = proposer(tmp_path, client, "edits").code(slot, Plan("Copy the input first.", "model-a"), 0)
    assert code.source == SOURCE.replace("return sum(xs)", "return sum(list(xs))")
    assert len(client.prompts) == 1 and "ONE fenced ```json block" in client.prompts[0]


def test_in_edits_mode_an_edit_that_does_not_apply_gets_one_repair_prompt_saying_why(tmp_path):
    client = RecordingClient('```json\n[{"old": "return total", "new": "return sum(xs)"}]\n```')
    slot = Slot(1, 8, baseline(), 0, "i1.b0.p0")
    code = proposer(tmp_path, client, "edits").code(slot, Plan("Use the builtin sum.", "model-a"), 0)
    assert code.source is None and 'the "old" text of edit 1 is not in the current code' in code.error
    assert len(client.prompts) == 2 and "Reply again with the edits in ONE fenced ```json block" in client.prompts[1]
