"""RunRecord: one search over one kernel, as stored."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from speedpatch.model import Candidate, Problem, speedup
from speedpatch.states import RunStatus
from speedpatch.verdict import Verdict, verdict

# RunRecord.status values (speedpatch.states.RunStatus), by the names the engine and the server import
RUNNING, FINISHED, CANCELLED = RunStatus.RUNNING, RunStatus.FINISHED, RunStatus.CANCELLED
FAILED, INTERRUPTED, QUEUED = RunStatus.FAILED, RunStatus.INTERRUPTED, RunStatus.QUEUED


@dataclass
class RunRecord:
    """A run as the store returns it: its problem, state, baseline and best, and what it spent."""

    run_id: str
    path: str
    kernel: str
    target: str
    backend: str
    status: RunStatus
    message: str
    iteration: int
    iterations: int
    problem: Problem
    baseline: Candidate | None
    best: Candidate | None
    created: str
    updated: str
    config: dict[str, Any] = field(default_factory=dict)
    llm: dict[str, int] = field(default_factory=dict)
    evaluations: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0  # wall-clock time spent searching, all attempts, up to the last checkpoint

    @property
    def speedup(self) -> float | None:
        """Baseline over best, None without two valid measurements."""
        return speedup(self.baseline, self.best)

    @property
    def verdict(self) -> Verdict:
        """What the run's figures say (speedup, noise, where they come from), worded once for every client."""
        return verdict(self.baseline, self.best)

    @property
    def unit(self) -> str:
        """The unit of the run's figures ("cycles", "ms", ...), "" before the baseline is measured."""
        ev = self.baseline.evaluation if self.baseline else None
        return ev.unit if ev else ""

    def to_dict(self) -> dict[str, Any]:
        """The record as plain data, with its speedup and verdict."""
        data = asdict(self)
        data["speedup"] = self.speedup
        data["verdict"] = self.verdict.to_dict()
        return data
