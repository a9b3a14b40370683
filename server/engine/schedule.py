"""Schedule reuse: the sequence of plans that made a similar kernel faster guides a new search.

A run's *schedule* is the list of plans on the lineage of its best candidate. When a new search starts on
a kernel of the same target whose text is similar to one a finished run already sped up, iteration i
dedicates ONE of its plan slots (the best parent's first) to adapting step i of that schedule; every
other slot plans from the menu as usual, so the sample budget is unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from speedpatch.model import Problem
from speedpatch.store import Store
from speedpatch.store.records import CANCELLED, FINISHED

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
MIN_SIMILARITY = 0.6


@dataclass
class Schedule:
    run_id: str
    kernel: str
    path: str
    steps: list[str]
    speedup: float
    similarity: float

    def step(self, iteration: int) -> str:
        """The step guiding iteration `iteration` (1-based), or "" when the schedule is used up."""
        return self.steps[iteration - 1] if 0 < iteration <= len(self.steps) else ""

    def describe(self) -> str:
        return (
            f"run {self.run_id} ({self.kernel}, {self.speedup:.2f}x, {len(self.steps)} steps, "
            f"similarity {self.similarity:.2f})"
        )


def _tokens(text: str) -> set[str]:
    # identifiers and API names carry the operation; literal sizes are exactly what differs between shapes
    return {t for t in _TOKEN.findall(text) if not t.isdigit()}


def similarity(a: str, b: str) -> float:
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def find_schedule(store: Store, problem: Problem, min_similarity: float = MIN_SIMILARITY) -> Schedule | None:
    """The most similar earlier run of the same target that found a real speedup, if any."""
    best: Schedule | None = None
    for record in store.list_runs():
        if record.target != problem.target or record.status not in (FINISHED, CANCELLED):
            continue
        if not record.best or not record.speedup or record.speedup <= 1.0:
            continue
        score = similarity(record.problem.kernel.text, problem.kernel.text)
        if score < min_similarity or (best and score <= best.similarity):
            continue
        steps = [c.plan for c in store.lineage(record.run_id, record.best.id) if c.plan]
        if steps:
            best = Schedule(record.run_id, record.kernel, record.path, steps, record.speedup, score)
    return best
