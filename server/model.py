"""Records that cross boundaries (engine <-> targets/backends <-> store <-> CLI/LSP).

Everything here is plain data: JSON-serialisable through `to_dict` / `from_dict`, so it can be stored in
SQLite, sent over LSP, and passed to evaluation worker processes.
"""

from __future__ import annotations

import hashlib
from dataclasses import Field, asdict, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

from speedpatch.states import EvalStatus


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


R = TypeVar("R", bound="_Record")


class _Record:
    """Base of the records below, each a dataclass."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by @dataclass on every subclass

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls: type[R], data: dict[str, Any]) -> R:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Kernel(_Record):
    """A named region of a source file that a target can optimize.

    Offsets are character offsets into the file text; lines are 0-based (LSP convention), end exclusive.
    """

    name: str
    target: str
    start: int
    end: int
    start_line: int
    end_line: int
    signature_line: int
    text: str
    runnable: bool = True
    reason: str = ""  # why it cannot be optimized here (e.g. no harness in the file, backend missing)


# Evaluation.status values (speedpatch.states.EvalStatus), by the names targets and backends import.
OK = EvalStatus.OK
INCORRECT = EvalStatus.INCORRECT
COMPILE_ERROR = EvalStatus.COMPILE_ERROR
RUNTIME_ERROR = EvalStatus.RUNTIME_ERROR
TIMEOUT = EvalStatus.TIMEOUT
REJECTED = EvalStatus.REJECTED
INFRA_ERROR = EvalStatus.INFRA_ERROR
NOT_MEASURED = EvalStatus.NOT_MEASURED


@dataclass
class Evaluation(_Record):
    status: EvalStatus  # a plain string naming one is taken too (from JSON): it becomes the member
    value: float | None = None  # the metric; lower is better
    unit: str = ""  # "cycles", "ms", "us", ...
    message: str = ""  # one line: what went wrong, or a summary
    log: str = ""  # compiler/program output, already truncated
    feedback: dict[str, Any] = field(default_factory=dict)  # hardware feedback for the plan prompt
    receipt: dict[str, Any] = field(default_factory=dict)  # how it was measured
    seconds: float = 0.0  # wall time spent evaluating
    spread: float | None = None  # relative half-width of the CI, None for deterministic models

    def __post_init__(self) -> None:
        self.status = EvalStatus(self.status)  # ValueError for a word that is not a status

    @property
    def correct(self) -> bool:
        return self.status.correct

    @property
    def score(self) -> float:
        """What the search minimises; failed or unmeasured candidates never win."""
        if self.status != OK or self.value is None:
            return float("inf")
        return float(self.value)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["correct"] = self.correct
        return data


@dataclass
class Candidate(_Record):
    id: str
    run_id: str
    parent_id: str | None
    iteration: int  # 0 = the baseline
    plan: str  # the plan text that produced it ("" for the baseline)
    source: str  # the whole candidate file
    source_hash: str
    model: str = ""  # which proposer/model wrote the code
    fixed: bool = False  # produced by a fix-on-failure attempt
    evaluation: Evaluation | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Candidate:
        data = dict(data)
        ev = data.get("evaluation")
        if isinstance(ev, dict):
            data["evaluation"] = Evaluation.from_dict(ev)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def score(self) -> float:
        return self.evaluation.score if self.evaluation else float("inf")


def speedup(baseline: Candidate | None, best: Candidate | None) -> float | None:
    """baseline score / best score, or None when either has no valid measurement."""
    if baseline is None or best is None:
        return None
    base, fast = baseline.score, best.score
    if base == float("inf") or fast == float("inf") or fast <= 0:
        return None
    return base / fast


@dataclass
class Problem(_Record):
    """One kernel in one file, to be optimized or evaluated."""

    path: str
    source: str  # the whole file as the run started
    kernel: Kernel
    target: str
    backend: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Problem:
        data = dict(data)
        if isinstance(data.get("kernel"), dict):
            data["kernel"] = Kernel.from_dict(data["kernel"])
        return cls(**data)
