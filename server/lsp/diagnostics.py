"""Diagnostics: a ready rewrite (Information, with a quick fix), kernels that cannot run here and failed
re-verifications (Warnings), and files we did not scan (Information)."""

from __future__ import annotations

from lsprotocol import types

from .documents import Detection
from .lenses import winner_title
from .positions import line_column, line_end
from .verify import FAILED
from .views import APPLIED, KernelView

SOURCE = "speedpatch"
READY = "ready-rewrite"
NOT_RUNNABLE = "not-runnable"
VERIFY_FAILED = "verify-failed"
NOT_SCANNED = "not-scanned"


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
    for view in views:
        where = signature_range(view, text, encoding)
        name = view.kernel.name
        if not view.runnable:
            message = f"speedpatch cannot optimize {name} here: {view.reason}"
            out.append(_diag(where, message, types.DiagnosticSeverity.Warning, NOT_RUNNABLE))
        elif view.ready and view.record is not None:
            message = f"{name}: a rewrite is ready, {winner_title(view.record)}"
            data = {"runId": view.record.run_id, "speedup": view.record.speedup}
            out.append(_diag(where, message, types.DiagnosticSeverity.Information, READY, data))
        elif (
            view.freshness == APPLIED and view.verification is not None and view.verification.state == FAILED
        ):
            message = f"{name}: the applied rewrite does not hold: {view.verification.message}"
            out.append(_diag(where, message, types.DiagnosticSeverity.Warning, VERIFY_FAILED))
    return out


def _diag(
    where: types.Range, message: str, severity: types.DiagnosticSeverity, code: str, data: dict | None = None
) -> types.Diagnostic:
    return types.Diagnostic(
        range=where, message=message, severity=severity, source=SOURCE, code=code, data=data
    )
