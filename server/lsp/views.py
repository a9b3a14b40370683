"""What the editor should show for one kernel: derived from the document, the live job, the latest stored
run and its re-verification. Lenses, hints, diagnostics and code actions all read this one view."""

from __future__ import annotations

from dataclasses import dataclass

from speedpatch.model import Kernel, source_hash
from speedpatch.states import EvalStatus, Freshness
from speedpatch.store import RunRecord

from .formatting import measured
from .runs import Job
from .verify import Verification


@dataclass
class KernelView:
    kernel: Kernel
    backend: str
    runnable: bool
    reason: str  # why not runnable
    untimed: bool = False  # not runnable because the chosen backend only compiles (no GPU here, say)
    job: Job | None = None  # queued or running search for this kernel
    record: RunRecord | None = None  # latest stored run for this kernel
    freshness: Freshness = Freshness.NONE
    stale_reason: str = ""
    verification: Verification | None = None  # for the applied winner, when it matches this text
    saved: bool = False  # the file on disk holds the kernel as the document does (applied and saved)

    @property
    def has_winner(self) -> bool:
        return has_winner(self.record)

    @property
    def ready(self) -> bool:
        """A rewrite that can be applied to the text as it is now."""
        return self.job is None and self.has_winner and self.freshness == Freshness.FRESH


def has_winner(record: RunRecord | None) -> bool:
    """A correct, measured candidate other than the baseline that beats it."""
    if record is None or record.best is None or record.baseline is None:
        return False
    if record.best.id == record.baseline.id or record.best.evaluation is None:
        return False
    if record.best.evaluation.status != EvalStatus.OK:
        return False
    base, _ = measured(record.baseline)
    best, _ = measured(record.best)
    return base is not None and best is not None and best < base


def freshness(
    record: RunRecord, current: Kernel | None, winner_text: str | None, external: str = ""
) -> tuple[Freshness, str]:
    """Compare the kernel as it is now with what the run started from and with its winner."""
    if current is None:
        return Freshness.STALE, f"kernel {record.kernel} is no longer in the file"
    if external:
        return Freshness.STALE, external
    if winner_text is not None and _same(current.text, winner_text):
        return Freshness.APPLIED, ""
    if _same(current.text, record.problem.kernel.text):
        return Freshness.FRESH, ""
    return Freshness.STALE, "the kernel was edited since the run started"


def _same(a: str, b: str) -> bool:
    # trailing whitespace differences (an editor trimming on save) do not change the kernel
    return a.rstrip() == b.rstrip()


def verification_for(v: Verification | None, current: Kernel | None) -> Verification | None:
    if v is None or current is None:
        return None
    return v if v.kernel_hash == source_hash(current.text.rstrip()) else None


def disk_staleness(
    record: RunRecord, disk: str | None, current: Kernel | None, winner_text: str | None
) -> str:
    """Why a run no longer describes its file as it is on disk ("" when it still does): the measurement
    was of the whole file, so a changed harness makes it stale as much as a changed kernel."""
    if disk is None:
        return "the file was deleted or is unreadable"
    if disk == record.problem.source or (record.best is not None and disk == record.best.source):
        return ""
    state, why = freshness(record, current, winner_text)
    if state == Freshness.STALE:
        return f"changed on disk outside the editor: {why}"
    return "its file (the harness) changed on disk outside the editor"
