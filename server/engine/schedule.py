"""Schedule reuse: the sequence of plans that made a related problem faster guides a new search.

A run's *schedule* is the list of plans on the lineage of its best candidate. A new search may follow the
schedule of a finished run on a related problem: the same target and operation, other shapes. Iteration i
follows step i: the LLM proposer adapts it in one plan slot (the best parent's first), the offline
proposer tries the move closest to it first on every parent; everything else is planned as usual, so the
sample budget is unchanged.

Donors are chosen by problem, not by kernel text: sizes usually live outside the kernel (#define
constants, INPUTS), so two GEMMs of different shapes have near-identical kernels. A problem's signature is
its target, its operation (the identifiers of the whole file) and its sizes (the integer literals outside
the kernel region). A run on the same problem (same operation and sizes) is never its own donor.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from speedpatch.figures import speedup_text
from speedpatch.model import Problem
from speedpatch.states import RunStatus
from speedpatch.store import Store

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+")
_INT = re.compile(r"(?<![\w.])\d+(?![\w.])")
_C_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_PY_COMMENT = re.compile(r"(?m)#(?!\s*(?:define|include|if|endif|else|pragma|undef)\b)[^\n]*$")
_PY_DOCSTRING = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')
MIN_SIMILARITY = 0.6
AUTO, OFF = "auto", "off"


@dataclass
class Schedule:
    run_id: str
    kernel: str
    path: str
    steps: list[str]
    speedup: float
    similarity: float
    sizes: str = ""  # the donor problem's sizes, for the line that shows the choice
    chosen: str = ""  # how it was chosen: "auto" or "--reuse RUN"

    def step(self, iteration: int) -> str:
        """The step guiding iteration `iteration` (1-based), or "" when the schedule is used up."""
        return self.steps[iteration - 1] if 0 < iteration <= len(self.steps) else ""

    def describe(self) -> str:
        shape = f", sizes {self.sizes}" if self.sizes else ""
        how = f", {self.chosen}" if self.chosen else ""
        return (
            f"run {self.run_id} ({self.kernel} in {self.path}{shape}, {speedup_text(self.speedup)}, {len(self.steps)} steps, "
            f"similarity {self.similarity:.2f}{how})"
        )


def _strip_comments(text: str) -> str:
    text = _C_COMMENT.sub(" ", text)
    return _PY_COMMENT.sub(" ", _PY_DOCSTRING.sub(" ", text))


def _tokens(text: str) -> set[str]:
    # identifiers and API names carry the operation; literal sizes are exactly what differs between shapes
    return {t for t in _TOKEN.findall(_strip_comments(text)) if not t.isdigit()}


def similarity(a: str, b: str) -> float:
    ta, tb = _tokens(a), _tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


def problem_sizes(problem: Problem) -> tuple[int, ...]:
    """The integer literals of the file outside the kernel region (the problem's shapes and constants),
    in order of appearance; comments and #include lines are left out."""
    k = problem.kernel
    outside = problem.source[: k.start] + "\n" + problem.source[k.end:]
    outside = re.sub(r"(?m)^\s*#\s*include[^\n]*$", " ", _strip_comments(outside))
    return tuple(int(n) for n in _INT.findall(outside))


def size_distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """0 for the same sizes; otherwise the mean |log2 ratio| of sizes in the same places (a missing or
    extra size counts 4, i.e. a factor of 16)."""
    if a == b:
        return 0.0
    n = max(len(a), len(b))
    total = 0.0
    for i in range(n):
        if i >= len(a) or i >= len(b):
            total += 4.0
        else:
            total += abs(math.log2(max(a[i], 1)) - math.log2(max(b[i], 1)))
    return total / n


def _sizes_text(sizes: tuple[int, ...]) -> str:
    return "x".join(str(s) for s in sizes[:6]) + ("..." if len(sizes) > 6 else "")


def _steps(store: Store, run_id: str, best_id: str) -> list[str]:
    return [c.plan for c in store.lineage(run_id, best_id) if c.plan]


def same_problem(a: Problem, b: Problem) -> bool:
    """The same target, operation and sizes: a run of it teaches nothing transferable to itself."""
    return (a.target == b.target and problem_sizes(a) == problem_sizes(b)
            and similarity(a.source, b.source) >= MIN_SIMILARITY)


def find_schedule(store: Store, problem: Problem, min_similarity: float = MIN_SIMILARITY,
                  exclude: set[str] | None = None) -> Schedule | None:
    """The donor for `problem`: a finished run of the same target and a similar operation on other sizes
    that found a real speedup; the most similar operation first, then the closest sizes, then the larger
    speedup."""
    best: tuple[tuple[float, float, float], Schedule] | None = None
    sizes = problem_sizes(problem)
    for record in store.list_runs():
        if record.run_id in (exclude or set()) or record.target != problem.target:
            continue
        if record.status not in (RunStatus.FINISHED, RunStatus.CANCELLED) or not record.best or not record.speedup or record.speedup <= 1.0:
            continue
        if same_problem(record.problem, problem):
            continue
        score = similarity(record.problem.source, problem.source)
        if score < min_similarity:
            continue
        donor_sizes = problem_sizes(record.problem)
        key = (score, -size_distance(donor_sizes, sizes), record.speedup)
        if best is not None and key <= best[0]:
            continue
        steps = _steps(store, record.run_id, record.best.id)
        if steps:
            best = (key, Schedule(record.run_id, record.kernel, record.path, steps, record.speedup, score,
                                  _sizes_text(donor_sizes), AUTO))
    return best[1] if best else None


def schedule_of_run(store: Store, run_id: str, problem: Problem) -> Schedule:
    """The schedule of run `run_id`, chosen by the user (--reuse RUN). ValueError says why it cannot be."""
    try:
        record = store.get_run(run_id)
    except Exception as exc:  # the store's own not-found error, whatever its class
        raise ValueError(f"--reuse {run_id}: no such run ({exc})") from exc
    if record.target != problem.target:
        raise ValueError(f"--reuse {run_id}: that run optimized a {record.target} kernel, this is {problem.target}")
    if same_problem(record.problem, problem):
        raise ValueError(f"--reuse {run_id}: that run is on the same problem (same operation and sizes "
                         f"{_sizes_text(problem_sizes(problem))}); reuse needs a related, different problem")
    if not record.best or not record.speedup or record.speedup <= 1.0:
        raise ValueError(f"--reuse {run_id}: that run found no speedup (status {record.status}); nothing to reuse")
    steps = _steps(store, record.run_id, record.best.id)
    if not steps:
        raise ValueError(f"--reuse {run_id}: its best candidate has no plans on its lineage")
    return Schedule(record.run_id, record.kernel, record.path, steps, record.speedup,
                    similarity(record.problem.source, problem.source), _sizes_text(problem_sizes(record.problem)),
                    f"--reuse {run_id}")


def choose_schedule(store: Store, problem: Problem, reuse: str) -> Schedule | None:
    """reuse = "auto" (find a donor), "off" (none) or a run id (that run's schedule, checked)."""
    if reuse == OFF:
        return None
    if reuse == AUTO:
        return find_schedule(store, problem)
    return schedule_of_run(store, reuse, problem)
