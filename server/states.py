"""The words for states, one enum per thing that has a state, side by side because several share a word
with different meanings ("failed" run, "failed" re-verification; "running" run, "running" job).

Every enum is a str enum: a member equals its value, so the store's rows, the CLI's --json output and the
language server's JSON carry exactly the same strings as before these types existed, and code that still
compares with the literal keeps working.
"""

from __future__ import annotations

import sys
from enum import Enum

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # Python 3.10 (still supported by pyproject): the same behaviour, str() and format() give the value

    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)


class EvalStatus(StrEnum):
    """What one evaluation of one candidate came to (Evaluation.status). Only OK is correct and measured."""

    OK = "ok"
    INCORRECT = "incorrect"  # ran, but output differs from the reference
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"  # crash, non-zero exit, model/emulator error
    TIMEOUT = "timeout"
    REJECTED = "rejected"  # static guard: a known cheat, harness touched, kernel missing
    INFRA_ERROR = "infra_error"  # the backend itself failed (tool missing, host unreachable)
    NOT_MEASURED = "not_measured"  # correct but the backend cannot time (compile-only)

    @property
    def correct(self) -> bool:
        """Passed the correctness check (measured or not)."""
        return self in (EvalStatus.OK, EvalStatus.NOT_MEASURED)


class RunStatus(StrEnum):
    """Where one stored search stands (RunRecord.status, the store's runs.status column)."""

    QUEUED = "queued"  # waiting for its turn in the process that will drive it (the language server's queue)
    RUNNING = "running"  # a live process drives it
    FINISHED = "finished"  # ran to its end (all iterations, early stop, budget, no plans left)
    CANCELLED = "cancelled"  # stopped by the user; the best so far is kept; resumable
    FAILED = "failed"  # cannot go on: the baseline is wrong or unmeasurable, or an internal error
    INTERRUPTED = "interrupted"  # stopped from outside (process gone, LLM or cluster down); resumable

    @property
    def live(self) -> bool:
        """Driven, or about to be, by some process: QUEUED or RUNNING (read as INTERRUPTED once it is gone)."""
        return self in (RunStatus.QUEUED, RunStatus.RUNNING)

    @property
    def resumable(self) -> bool:
        """A stored run `resume` continues in place."""
        return self in (RunStatus.INTERRUPTED, RunStatus.CANCELLED)

    @property
    def ended(self) -> bool:
        """Replaying it would only repeat what is stored."""
        return self in (RunStatus.FINISHED, RunStatus.FAILED)


class JobStatus(StrEnum):
    """Where a search stands in the language server's queue (its Job.state), as opposed to the stored
    run's RunStatus."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class VerificationState(StrEnum):
    """The re-verification of an applied and saved rewrite."""

    VERIFYING = "verifying"
    HOLDS = "holds"  # correct again, and still faster when the backend times
    FAILED = "failed"  # wrong, slower, or could not run


class Freshness(StrEnum):
    """How a kernel's text now relates to its latest run."""

    NONE = "none"  # no run
    FRESH = "fresh"  # the text the run started from: its winner can be applied
    APPLIED = "applied"  # the winner's text
    STALE = "stale"  # edited since (or gone): the run's result no longer applies
