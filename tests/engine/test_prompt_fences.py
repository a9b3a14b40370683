"""The LLM proposer fences code in the language its target declares (Target.fence_language, else the
target's name): it keeps no table of targets, so a new target needs no edit there."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch import targets
from speedpatch.config import Config
from speedpatch.engine.budget import Budget
from speedpatch.engine.proposer import Plan, Slot
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import Menu
from speedpatch.model import Candidate, Problem, source_hash
from speedpatch.store import Store
from speedpatch.targets.base import Target
from support.replies import ScriptedClient
from toy_target import ToyTarget, example


class FencedToyTarget(ToyTarget):
    """A target the proposer has never heard of, declaring its own fence language."""

    name = "toy-fenced"
    fence_language = "python"


def code_prompt(tmp_path: Path, target: Target) -> str:
    """The code prompt the real proposer sends for the toy kernel under `target`."""
    path = example(tmp_path)
    source = path.read_text()
    kernel = target.find_kernels(source, str(path))[0]
    problem = Problem(path=str(path), source=source, kernel=kernel, target=target.name, backend="")
    config = Config()
    config.llm.models = ["model-a"]
    client = ScriptedClient("def kernel_sum(xs):\n    return sum(xs)\n")
    llm = LLMProposer(config, target, problem, Menu(target=target.name), Store(tmp_path / "store"), "run",
                      Budget(config.budget), lambda: False, client=client)  # type: ignore[arg-type]
    parent = Candidate("base", "run", None, 0, "", source, source_hash(source))
    llm.code(Slot(1, 2, parent, 0, "i1.b0.p0"), Plan("Make it faster.", "model-a"), 0)
    return client.prompts[0]


def test_a_target_that_declares_a_fence_language_gets_its_code_in_that_fence(tmp_path):
    prompt = code_prompt(tmp_path, FencedToyTarget())
    assert "```python\n" in prompt and "```toy" not in prompt


def test_a_target_that_declares_none_gets_its_name_as_the_fence(tmp_path):
    prompt = code_prompt(tmp_path, ToyTarget())
    assert "```toy\n" in prompt


@pytest.mark.parametrize("name", sorted(targets.BUILTIN))
def test_every_builtin_target_declares_its_fence_language(name):
    # a declared tag, not the name fallback: "gemmini" or "nki" would not be a language an LLM knows
    target = targets.get_target(name)
    assert target.fence_language and target.prompt_language() == target.fence_language
