"""Diagnostics: a ready rewrite (Information, with a quick fix), kernels that cannot run here and failed
re-verifications (Warnings), a kernel file that does not parse (Warning at the line), a run whose starting
code failed (the compiler's errors at the user's lines), and files we did not scan (Information)."""

from __future__ import annotations

from lsprotocol import types
from speedpatch.states import Freshness, VerificationState

from .compiler import compiler_errors, relabel
from .documents import Detection
from .lenses import baseline_failure, winner_title
from .positions import line_column, line_end
from .views import KernelView

SOURCE = "speedpatch"
READY = "ready-rewrite"
NOT_RUNNABLE = "not-runnable"
VERIFY_FAILED = "verify-failed"
NOT_SCANNED = "not-scanned"
DOES_NOT_PARSE = "does-not-parse"
BASELINE_FAILED = "baseline-failed"


def signature_range(view: KernelView, text: str, encoding: str) -> types.Range:
    line = view.kernel.signature_line
    return types.Range(start=types.Position(line=line, character=0), end=line_end(text, line, encoding))


def diagnostics_for(
    views: list[KernelView], detection: Detection, text: str, encoding: str
) -> list[types.Diagnostic]:
    out: list[types.Diagnostic] = []
    if detection.note:
        top = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0))
        out.append(_diag(top, detection.note, types.DiagnosticSeverity.Information, NOT_SCANNED))
    for finding in detection.findings:
        start = line_column(text, finding.line, finding.column, encoding)
        where = types.Range(start=start, end=line_end(text, start.line, encoding))
        out.append(
            _diag(where, f"speedpatch: {finding.message}", types.DiagnosticSeverity.Warning, finding.rule)
        )
    if detection.syntax:
        start = types.Position(line=detection.syntax_line, character=0)
        where = types.Range(start=start, end=line_end(text, detection.syntax_line, encoding))
        kernels = [v.kernel.name for v in views] + detection.hidden
        message = f"speedpatch: {detection.syntax}" + (
            f" ({', '.join(kernels)} cannot be optimized until it does)" if kernels else ""
        )
        out.append(_diag(where, message, types.DiagnosticSeverity.Warning, DOES_NOT_PARSE))
    for view in views:
        where = signature_range(view, text, encoding)
        name = view.kernel.name
        if view.job is None and view.record is not None and baseline_failure(view.record):
            out += _baseline_diagnostics(view, text, encoding)
        if not view.runnable:
            message = f"speedpatch cannot optimize {name} here: {view.reason}"
            out.append(_diag(where, message, types.DiagnosticSeverity.Warning, NOT_RUNNABLE))
        elif view.ready and view.record is not None:
            message = f"{name}: a rewrite is ready, {winner_title(view.record)}"
            data = {"runId": view.record.run_id, "speedup": view.record.speedup}
            out.append(_diag(where, message, types.DiagnosticSeverity.Information, READY, data))
        elif (
            view.freshness == Freshness.APPLIED
            and view.verification is not None
            and view.verification.state == VerificationState.FAILED
        ):
            message = f"{name}: the applied rewrite does not hold: {view.verification.message}"
            out.append(_diag(where, message, types.DiagnosticSeverity.Warning, VERIFY_FAILED))
    return out


def _baseline_diagnostics(view: KernelView, text: str, encoding: str) -> list[types.Diagnostic]:
    """The run's starting code failed: the compiler's errors at the user's lines while the file is still
    what was compiled, else one diagnostic on the kernel with the (relabelled) message."""
    record = view.record
    assert record is not None and record.baseline is not None and record.baseline.evaluation is not None
    ev = record.baseline.evaluation
    path = record.path
    header = f"speedpatch: {view.kernel.name} {baseline_failure(record)} (run {record.run_id})"
    if text.rstrip() == record.problem.source.rstrip():
        found = compiler_errors(f"{ev.message}\n{ev.log or ''}", path)
        out = []
        for error in found:
            start = line_column(text, error.line, error.column, encoding)
            where = types.Range(start=start, end=line_end(text, start.line, encoding))
            out.append(_diag(where, f"{header}: {error.message}", types.DiagnosticSeverity.Error, BASELINE_FAILED))
        if out:
            return out
    message = f"{header}: {relabel(ev.message or ev.status, path)}"
    return [_diag(signature_range(view, text, encoding), message, types.DiagnosticSeverity.Error, BASELINE_FAILED)]


def _diag(
    where: types.Range, message: str, severity: types.DiagnosticSeverity, code: str, data: dict | None = None
) -> types.Diagnostic:
    return types.Diagnostic(
        range=where, message=message, severity=severity, source=SOURCE, code=code, data=data
    )
