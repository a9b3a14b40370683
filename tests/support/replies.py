"""Feed a scripted LLM reply through the real LLM proposer (extraction, boundary, splice) without a
search: what candidate file a reply makes from a parent, for any target."""

from __future__ import annotations

from pathlib import Path

from speedpatch import targets
from speedpatch.config import Config
from speedpatch.engine.budget import Budget
from speedpatch.engine.proposer import Code, Plan, Slot
from speedpatch.llm.client import Reply
from speedpatch.llm.proposer import LLMProposer
from speedpatch.menu import Menu
from speedpatch.model import Candidate, Problem, source_hash


class ScriptedClient:
    """Stands in for ChatClient: answers each call with the next scripted reply, records the prompts."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def chat(self, model: str, prompt: str, temperature: float | None = None) -> Reply:
        self.prompts.append(prompt)
        return Reply(self.replies.pop(0), model, 1, 1, 0.0)


def problem_of(path: Path, kernel: str, backend: str = "") -> Problem:
    source = path.read_text()
    found = [k for t in targets.targets_for_path(str(path)) for k in t.find_kernels(source, str(path))]
    chosen = next(k for k in found if k.name == kernel)
    return Problem(path=str(path), source=source, kernel=chosen, target=chosen.target, backend=backend)


def propose(store_dir: Path, problem: Problem, *replies: str, parent: str | None = None) -> tuple[Code, ScriptedClient]:
    """The Code the proposer makes of `replies` (the second one answers a repair prompt, if asked)."""
    from speedpatch.store import Store

    config = Config()
    config.llm.models = ["model-a"]
    client = ScriptedClient(*replies)
    target = targets.get_target(problem.target)
    llm = LLMProposer(config, target, problem, Menu(target=problem.target), Store(store_dir), "run",
                      Budget(config.budget), lambda: False, client=client)  # type: ignore[arg-type]
    source = problem.source if parent is None else parent
    base = Candidate("base", "run", None, 0, "", source, source_hash(source))
    return llm.code(Slot(1, 2, base, 0, "i1.b0.p0"), Plan("Make it faster.", "model-a"), 0), client
