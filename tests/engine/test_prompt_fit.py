"""Prompts that exceed a model's context are shortened before they are sent (speedpatch.engine.prompts.fit):
feedback first, then examples, the API listing and the target notes; the code never. A prompt whose code
alone does not fit fails its sample with the sizes named, and the run goes on."""

from __future__ import annotations

import pytest
from speedpatch import api
from speedpatch.config import Config, load_config
from speedpatch.engine.budget import Budget
from speedpatch.engine.prompts import (
    KEEP,
    NORMAL,
    PlanChoice,
    Prompt,
    PromptTooLong,
    Window,
    code_prompt,
    estimate_tokens,
    fit,
    fix_prompt,
    plan_prompt,
)
from speedpatch.engine.proposer import Slot
from speedpatch.errors import ConfigError
from speedpatch.llm.client import Reply
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import OTHER, Example, Menu
from speedpatch.model import Candidate, Evaluation, Problem, source_hash
from speedpatch.store import Store
from support.fake_openai import FakeOpenAI, phase_of
from support.toys import toy_config, toy_problem
from toy_target import ToyTarget

SOURCE = "def kernel_sum(xs):\n" + "".join(f"    step_{i} = {i}  # keep every line\n" for i in range(200)) + "    return sum(xs)\n"
NOTES = "NOTE: the systolic array is 16x16. " * 400  # ~14 KB of target notes
LISTING = "gemmini_mvin(dram, local): one block.\n" * 200  # ~8 KB
FEEDBACK = "scratchpad rows used: 1234 of 16384\n" * 300  # ~11 KB
MENU = Menu(target="toy", knowledge=NOTES, optimizations=["Tile the loops."], api=LISTING,
            examples=[Example("unroll", "def f():\n    pass\n" * 100, "def f():\n    return 1\n" * 100)])


def plan(feedback: str = FEEDBACK):
    return plan_prompt(MENU, "python", SOURCE, "kernel_sum", 1234.0, "cycles", feedback,
                       PlanChoice(NORMAL, ["Tile the loops.", OTHER]), 1, 8)


def window(limit: int) -> Window:
    return Window("model-a", limit + 1000, 1000)


def test_a_prompt_that_fits_is_sent_unchanged():
    prompt = plan()
    assert fit(prompt, window(estimate_tokens(prompt.text()))) == prompt.text()


def test_a_model_without_a_known_context_gets_the_whole_prompt():
    assert fit(plan(), Window("model-a", 0, 0)) == plan().text()


def test_feedback_is_cut_first_and_the_notes_and_code_stay_whole():
    whole = plan().text()
    text = fit(plan(), window(estimate_tokens(whole) - 1000))  # ~3 KB over: less than the feedback
    assert "characters of the hardware feedback cut to fit the model's context" in text
    assert NOTES.strip() in text and LISTING.strip() in text
    assert SOURCE in text
    assert estimate_tokens(text) <= estimate_tokens(whole) - 1000


def test_the_listing_goes_after_the_feedback_and_before_the_notes():
    whole = plan().text()
    text = fit(plan(), window(estimate_tokens(whole) - 5000))  # ~15 KB over: feedback and most of the listing
    assert "[hardware feedback left out to fit the model's context]" in text
    assert "API listing" in text and LISTING.strip() not in text
    assert NOTES.strip() in text and SOURCE in text


def test_when_every_note_is_cut_the_code_and_the_request_are_still_whole():
    kept = Prompt(tuple(p for p in plan().parts if p.cut == KEEP)).text()
    text = fit(plan(), window(estimate_tokens(kept) + 60))  # room for the three notes that say what was cut
    for name in ("hardware feedback", "API listing", "target notes"):
        assert f"[{name} left out to fit the model's context]" in text
    assert SOURCE in text
    assert "1. Tile the loops." in text and "phase 1 of 8" in text


def test_the_examples_of_a_code_prompt_are_cut_before_the_notes():
    prompt = code_prompt(MENU, "python", SOURCE, "kernel_sum", "Tile the loops.")
    text = fit(prompt, window(estimate_tokens(prompt.text()) - 500))  # ~1.5 KB over: less than the examples
    assert "characters of the examples cut to fit the model's context" in text
    assert NOTES.strip() in text and SOURCE in text


@pytest.mark.parametrize("limit", [2800, 2900, 3000, 4000, 6000, 9000, 12000])
def test_a_shortened_prompt_is_within_the_window_by_the_estimate(limit):
    assert estimate_tokens(fit(plan(), window(limit))) <= limit


def test_only_a_window_smaller_than_what_may_not_be_cut_refuses_the_prompt():
    kept = estimate_tokens(Prompt(tuple(p for p in plan().parts if p.cut == KEEP)).text())
    with pytest.raises(PromptTooLong):
        fit(plan(), window(kept - 1))
    assert fit(plan(), window(kept + 60))


def test_a_prompt_whose_code_alone_does_not_fit_names_the_sizes():
    with pytest.raises(PromptTooLong) as info:
        fit(plan(), Window("tiny-model", 2000, 500))
    message = str(info.value)
    code = next(p for p in plan().parts if p.name == "code")
    assert "does not fit tiny-model's context" in message
    assert "1,500 are available (2,000-token context minus 500 kept for the reply" in message
    assert f"the code alone ~{estimate_tokens(code.text):,})" in message
    assert '[llm.context_by_model] "tiny-model" = TOKENS' in message


# the window of a model comes from the configuration ----------------------------------------------

def test_the_default_context_and_a_per_model_context_are_configured(tmp_path):
    (tmp_path / "speedpatch.toml").write_text(
        '[llm]\ncontext_tokens = 16000\n[llm.context_by_model]\n"small-local" = 4096\n')
    config = load_config(tmp_path)
    assert config.llm.context_tokens == 16000
    assert config.llm.context_by_model == {"small-local": 4096}


@pytest.mark.parametrize("value", ['"4096"', "0", "-1", "true"])
def test_a_per_model_context_that_is_not_a_positive_count_is_refused_naming_the_model(tmp_path, value):
    (tmp_path / "speedpatch.toml").write_text(f'[llm.context_by_model]\n"small-local" = {value}\n')
    with pytest.raises(ConfigError, match=r"llm\.context_by_model\.small-local: expected a positive number of tokens"):
        load_config(tmp_path)


def test_a_stored_config_with_per_model_contexts_is_rebuilt_as_it_was(tmp_path):
    from speedpatch.config import config_from_dict

    config = load_config(tmp_path, {"llm": {"context_by_model": {"m": 8192}, "context_tokens": 0}})
    again = config_from_dict(config.to_dict())
    assert again.llm.context_by_model == {"m": 8192} and again.llm.context_tokens == 0


# through the real client against the scripted endpoint ---------------------------------------------

FAST = "```python\ndef kernel_sum(xs):\n    return sum(xs)\n```"


def script(request):
    return {"plan": "Use the builtin sum.", "code": FAST, "fix": FAST}[phase_of(request)]


def workspace_menu(tmp_path) -> None:
    folder = tmp_path / ".speedpatch" / "menus"
    folder.mkdir(parents=True)
    notes = ("NOTE " * 4000).strip()
    folder.joinpath("toy.toml").write_text(f'knowledge = "{notes}"\napi = "{notes}"\n')


def test_an_over_long_prompt_reaches_the_endpoint_shortened_with_the_code_intact(tmp_path):
    workspace_menu(tmp_path)
    with FakeOpenAI(script) as server:
        config = toy_config(tmp_path, llm={"base_url": server.base_url, "models": ["model-a"], "retries": 0,
                                          "context_tokens": 6000},
                            search={"iterations": 1, "beam": 1, "plans": 1, "codes": 1})
        problem = toy_problem(tmp_path, config)
        record = api.optimize(problem, config, Store(tmp_path))
    prompts = server.prompts()
    assert record.status == "finished" and record.speedup > 1
    assert {phase_of(r) for r in server.requests} == {"plan", "code"}
    for prompt in prompts:
        assert problem.source.rstrip() in prompt  # the whole problem file, not one character less
        assert "to fit the model's context" in prompt
        assert estimate_tokens(prompt) <= 6000 - 1500  # a quarter of the context is kept for the reply


def test_a_model_too_small_for_the_code_fails_its_samples_with_the_sizes_and_the_run_goes_on(tmp_path):
    with FakeOpenAI(script) as server:
        config = toy_config(tmp_path, llm={"base_url": server.base_url, "models": ["model-a", "model-b"],
                                          "retries": 0, "context_by_model": {"model-a": 300}},
                            search={"iterations": 1, "beam": 1, "plans": 2, "codes": 2})
        store = Store(tmp_path)
        record = api.optimize(toy_problem(tmp_path, config), config, store)
    assert record.status == "finished" and record.speedup > 1
    assert {r["model"] for r in server.requests} == {"model-b"}  # nothing too long was sent
    failed = [c.evaluation.message for c in store.candidates(record.run_id)
              if c.evaluation and c.evaluation.status == "rejected"]
    assert failed and all("does not fit model-a's context" in m and "are available" in m for m in failed)
    assert any(p["text"].startswith("(no plan: the plan request was not sent") for p in store.plans(record.run_id))


def test_the_output_of_a_fix_prompt_is_cut_after_the_notes():
    prompt = fix_prompt(MENU, "python", SOURCE, "kernel_sum", "Tile the loops.", "runtime error", "E" * 6000)
    text = fit(prompt, window(estimate_tokens(prompt.text()) - 4000))  # ~12 KB over: less than the notes
    assert "characters of the target notes cut" in text and "E" * 6000 in text


class CountingClient:
    """Stands in for ChatClient: counts the calls that reach it."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def chat(self, model: str, prompt: str, temperature: float | None = None) -> Reply:
        self.prompts.append(prompt)
        return Reply("Use the builtin sum.", model, 1, 1, 0.0)


def test_a_shortened_prompt_is_the_same_on_resume_so_its_stored_reply_is_replayed(tmp_path):
    config = Config()
    config.llm.models, config.llm.context_tokens = ["model-a"], 6000
    problem = Problem(path="sum.toy", source=SOURCE, kernel=ToyTarget().find_kernels(SOURCE)[0], target="toy",
                      backend="toy-count")
    parent = Candidate("c0", "run", None, 0, "", SOURCE, source_hash(SOURCE),
                       evaluation=Evaluation(status="ok", value=50.0, unit="lines", feedback={"log": FEEDBACK}))
    clients = [CountingClient(), CountingClient()]
    for client in clients:  # the run, then its resume: a new proposer on the same store
        llm = LLMProposer(config, ToyTarget(), problem, MENU, Store(tmp_path), "run", Budget(config.budget),
                          lambda: False, client=client)  # type: ignore[arg-type]
        assert llm.plan(Slot(1, 8, parent, 0, "i1.b0.p0")).text == "Use the builtin sum."
    assert len(clients[0].prompts) == 1 and "to fit the model's context" in clients[0].prompts[0]
    assert clients[1].prompts == []
