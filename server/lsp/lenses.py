"""Code lenses over each kernel: its state, and the commands that fit it."""

from __future__ import annotations

import re

from lsprotocol import types
from speedpatch.states import EvalStatus, Freshness, JobStatus, RunStatus, VerificationState
from speedpatch.store import RunRecord

from .arguments import CancelArgs, CandidateArgs, DocumentArgs, OptimizeArgs, RunArgs, to_wire
from .documents import Detection
from .formatting import faster_text, measured, speedup_text
from .gpu import CONFIGURE_GPU
from .hints import receipt_text
from .runs import Job
from .views import KernelView

# stored runs that speedpatch.resume continues in place (a set of members: a plain str status matches too)
RESUMABLE = frozenset(s for s in RunStatus if s.resumable)

OPTIMIZE, CANCEL, SHOW_DIFF, APPLY, RESUME = (
    "speedpatch.optimize",
    "speedpatch.cancel",
    "speedpatch.showDiff",
    "speedpatch.apply",
    "speedpatch.resume",
)


def _lens(
    line: int, title: str, command: str = "", args: list | None = None, tooltip: str | None = None
) -> types.CodeLens:
    # A lens whose command is "" renders as plain text in VS Code: used for states that have no action.
    where = types.Range(
        start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)
    )
    return types.CodeLens(
        range=where, command=types.Command(title=title, command=command, arguments=args, tooltip=tooltip)
    )


def optimize_title(view: KernelView) -> str:
    return f"Optimize {view.kernel.name} ({view.backend})"


_GLOBAL = re.compile(r"__global__\s+(?:[\w:<>,]+\s+)*?(\w+)\s*\(")


def shown_name(view: KernelView) -> str:
    """The name the user knows the kernel by: a CUDA solution region is named for its host function
    (`launch`), but what it optimizes are its `__global__` kernels."""
    kernels = list(dict.fromkeys(_GLOBAL.findall(view.kernel.text))) if view.kernel.target == "cuda" else []
    if not kernels:
        return view.kernel.name
    return ", ".join(kernels[:2]) + (f" (+{len(kernels) - 2})" if len(kernels) > 2 else "")


def baseline_failure(record: RunRecord) -> str:
    """'does not compile' when the run's starting code failed its own evaluation ("" when it passed)."""
    ev = record.baseline.evaluation if record.baseline is not None else None
    if ev is None or ev.status == EvalStatus.OK:
        return ""
    return {
        EvalStatus.COMPILE_ERROR: "does not compile",
        EvalStatus.INCORRECT: "gives wrong results",
        EvalStatus.RUNTIME_ERROR: "crashes when run",
        EvalStatus.TIMEOUT: "timed out",
        EvalStatus.REJECTED: "was refused",
        EvalStatus.INFRA_ERROR: "could not be run",
        EvalStatus.NOT_MEASURED: "could not be timed",
    }.get(ev.status, ev.status.replace("_", " "))


def _search_title(iteration: int, iterations: int, speedup: float | None, queued: bool, cli: bool) -> str:
    if queued:
        return "speedpatch: queued"
    best = f", best {speedup_text(speedup)}" if speedup else ""
    where = " (CLI)" if cli else ""
    step = f"iteration {iteration} of {iterations}" if iteration else "measuring the original"
    return f"speedpatch: searching, {step}{best}{where}"


def winner_title(record: RunRecord) -> str:
    base, unit = measured(record.baseline)
    best, _ = measured(record.best)
    verdict = record.verdict
    if verdict.kind == "no_difference":
        return f"{verdict.text} ({record.backend})"
    return faster_text(record.speedup, base, best, unit, record.backend, verdict.source)


def lenses_for(view: KernelView, uri: str) -> list[types.CodeLens]:
    line = view.kernel.signature_line
    name = view.kernel.name
    target = to_wire(OptimizeArgs(uri=uri, kernel=name))
    if not view.runnable:
        if view.untimed:  # the full reason (which backends could time it) is the diagnostic's
            return [
                _lens(line, f"speedpatch: no GPU here to time {shown_name(view)}"),
                _lens(line, "Configure a GPU backend…", CONFIGURE_GPU, [to_wire(DocumentArgs(uri=uri))]),
            ]
        return [_lens(line, _short(f"speedpatch: cannot optimize {name}: {view.reason}"))]
    job: Job | None = view.job
    if job is not None:
        queued = job.state == JobStatus.QUEUED
        title = _search_title(job.iteration, job.iterations, job.speedup, queued, cli=False)
        return [_lens(line, title), _lens(line, "Cancel", CANCEL, [to_wire(CancelArgs(run_id=job.run_id))])]
    record = view.record
    optimize = _lens(line, optimize_title(view), OPTIMIZE, [target])
    if record is None:
        return [optimize]
    run = to_wire(RunArgs(run_id=record.run_id))
    best = to_wire(CandidateArgs(run_id=record.run_id))  # Show diff: the best candidate
    if record.status == RunStatus.RUNNING:  # driven by another process (the CLI)
        title = _search_title(record.iteration, record.iterations, record.speedup, False, cli=True)
        return [_lens(line, title)]
    if view.freshness == Freshness.STALE:
        return [_lens(line, f"speedpatch: last result is stale ({view.stale_reason})"), optimize]
    if view.freshness == Freshness.APPLIED:
        if view.saved or view.verification is not None:  # the file holds the winner: the diff is history
            return [_applied_lens(view, line), optimize]
        return [_applied_lens(view, line), _lens(line, "Show diff", SHOW_DIFF, [best]), optimize]
    if view.freshness == Freshness.FRESH and view.has_winner:
        suffix = "" if record.status == RunStatus.FINISHED else f" ({record.status})"
        return [
            _lens(line, winner_title(record) + suffix, tooltip=receipt_text(record)),
            _lens(line, "Show diff", SHOW_DIFF, [best]),
            _lens(line, f"Apply ({speedup_text(record.speedup)} faster)", APPLY, [run]),
        ]
    failure = baseline_failure(record)
    if failure:
        # the search never started: the user's own code is the problem (the diagnostics show where)
        return [_lens(line, f"speedpatch: {name} {failure} (run {record.run_id}); see Problems"), optimize]
    why = _short(record.message or record.status)
    # a run stopped before its baseline was measured (e.g. queued when the server stopped) found nothing
    # yet: say what happened to it rather than "no faster version found"
    if record.baseline is None:
        title = f"speedpatch: {why}"
    elif record.status in RESUMABLE:
        # a cancel is the user's own doing; an interruption's cause (the LLM endpoint failing...) is news
        cause = f" ({why})" if record.status != RunStatus.CANCELLED and record.message else ""
        title = f"speedpatch: {record.status} before a faster version was found{cause}"
    else:
        title = f"speedpatch: no faster version found ({why})"
    if record.status in RESUMABLE and view.freshness == Freshness.FRESH:
        return [_lens(line, title), _lens(line, "Resume", RESUME, [run]), optimize]
    return [_lens(line, title), optimize]


def syntax_lenses(detection: Detection) -> list[types.CodeLens]:
    """Where the file stopped parsing, when that made kernels disappear (their lenses went with them)."""
    if not detection.syntax or not detection.hidden:
        return []
    names = ", ".join(detection.hidden)
    return [_lens(detection.syntax_line, _short(f"speedpatch: {names} not shown: {detection.syntax}"))]


def _short(text: str, limit: int = 90) -> str:
    # a lens is one line above the code: the full message is in the run report and the showMessage
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _applied_lens(view: KernelView, line: int) -> types.CodeLens:
    v = view.verification
    record = view.record
    assert record is not None
    if v is None:
        return _lens(line, f"applied: {winner_title(record)}, save to re-verify", tooltip=receipt_text(record))
    if v.state == VerificationState.VERIFYING:
        return _lens(line, "applied rewrite: re-verifying the saved kernel...")
    if v.state == VerificationState.HOLDS:
        if v.speedup:
            return _lens(
                line, "verified " + faster_text(v.speedup, v.baseline_value, v.value, v.unit, v.backend, v.source)
            )
        return _lens(line, f"verified: {v.message}")
    assert v.state == VerificationState.FAILED
    return _lens(line, f"speedpatch warning: {v.message}")
