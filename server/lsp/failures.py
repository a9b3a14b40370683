"""Failed candidates, counted by why they failed, for the editor: the run report, the Runs view and the
message at the end of a search ("3 of 12 candidates failed: 2 incorrect, 1 rejected").

Read from the evaluations the engine stored; nothing is re-run. The baseline is the user's own code, not a
candidate, and is never counted here (a failing baseline is reported as such, see lenses.baseline_failure).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from speedpatch.model import Candidate
from speedpatch.states import EvalStatus

# Failed statuses in the order they are listed, each with its word in a count ("2 incorrect") and what it
# means, for the report. NOT_MEASURED is correct (only not timed), so it is not a failure.
_KINDS: dict[EvalStatus, tuple[str, str]] = {
    EvalStatus.COMPILE_ERROR: ("did not compile", "the compiler refused it"),
    EvalStatus.INCORRECT: ("incorrect", "it ran, but its output differs from the reference"),
    EvalStatus.RUNTIME_ERROR: ("crashed", "it compiled, then crashed or exited with an error"),
    EvalStatus.TIMEOUT: ("timed out", "it ran past the evaluation's time limit"),
    EvalStatus.REJECTED: (
        "rejected",
        "refused before it ran: the trust boundary's checks (a known cheat, the harness touched), or no "
        "usable code in the model's reply",
    ),
    EvalStatus.INFRA_ERROR: ("could not be run", "the backend itself failed (a tool missing, a host unreachable)"),
}
_EXAMPLE_CHARS = 240


@dataclass(frozen=True)
class Failures:
    evaluated: int = 0  # candidates with an evaluation, the baseline not counted
    counts: dict[str, int] = field(default_factory=dict)  # failed status -> how many, in _KINDS order
    examples: dict[str, str] = field(default_factory=dict)  # failed status -> the first one's message

    @property
    def failed(self) -> int:
        return sum(self.counts.values())

    def text(self) -> str:
        """'3 of 12 candidates failed: 2 incorrect, 1 rejected' ('' when none failed)."""
        if not self.failed:
            return ""
        parts = ", ".join(f"{n} {_KINDS[EvalStatus(s)][0]}" for s, n in self.counts.items())
        noun = "candidate" if self.evaluated == 1 else "candidates"
        return f"{self.failed} of {self.evaluated} {noun} failed: {parts}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of docs/lsp-protocol.md's `failures`."""
        return {
            "evaluated": self.evaluated,
            "failed": self.failed,
            "text": self.text(),
            "byStatus": [
                {
                    "status": status,
                    "label": _KINDS[EvalStatus(status)][0],
                    "meaning": _KINDS[EvalStatus(status)][1],
                    "count": count,
                    "example": self.examples.get(status, ""),
                }
                for status, count in self.counts.items()
            ],
        }


def tally(candidates: Iterable[Candidate]) -> Failures:
    """Count the evaluated candidates (not the baseline) and the failed ones by status."""
    evaluated = 0
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for cand in candidates:
        if cand.parent_id is None or cand.evaluation is None:
            continue
        evaluated += 1
        status = cand.evaluation.status
        if status in _KINDS:
            counts[status.value] = counts.get(status.value, 0) + 1
            examples.setdefault(status.value, first_line(cand.evaluation.message))
    ordered: dict[str, int] = {s.value: counts[s.value] for s in _KINDS if s.value in counts}
    return Failures(evaluated=evaluated, counts=ordered, examples=examples)


def first_line(message: str, limit: int = _EXAMPLE_CHARS) -> str:
    """A message's first non-empty line, cut to fit one row of a view."""
    line = next((part.strip() for part in (message or "").splitlines() if part.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
