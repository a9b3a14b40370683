"""Inlay hint at each kernel's signature: the last measured figure for the code as it is, in a few words
(it sits at the end of a code line and is cut where the minimap starts). How the figure was measured —
the verdict and the winner's receipt — is the hover, on the hint and on the signature line."""

from __future__ import annotations

from lsprotocol import types
from speedpatch.states import EvalStatus, Freshness, VerificationState
from speedpatch.store import RunRecord
from speedpatch.verdict import SOURCE_LABEL

from .formatting import measured, speedup_text, value_text
from .views import KernelView

# VS Code cuts inlay hints longer than this (editor.inlayHints.maximumLength, default 43) with an ellipsis
MAX_LABEL = 43
_SHORT_SOURCE = {"model": "model", "emulator": "emulator", "simulator": "simulator"}


def _from(source: str) -> str:
    """', model' for figures that are not from hardware ('' when they are); the hover says which model."""
    if not source or source == "hardware":
        return ""
    return f", {_SHORT_SOURCE.get(source, SOURCE_LABEL.get(source, source))}"


def hint_label(view: KernelView) -> str | None:
    if view.job is not None:
        if view.job.baseline_value is None:
            return None
        return f"{value_text(view.job.baseline_value, view.job.unit)} now; searching…"
    record = view.record
    if record is None or record.baseline is None or record.baseline.evaluation is None:
        return None
    if record.baseline.evaluation.status != EvalStatus.OK:
        return None  # nothing was measured; the lens and the diagnostics say why
    base, unit = measured(record.baseline)
    source = _from(record.verdict.source)
    if view.freshness == Freshness.FRESH:
        if view.has_winner:
            best, _ = measured(record.best)
            label = f"{value_text(base)} -> {value_text(best, unit)} ({speedup_text(record.speedup)}{source})"
            # too long to show whole: the new figure and the ratio matter most (the hover has the rest)
            return label if len(label) <= MAX_LABEL else f"-> {value_text(best, unit)} ({speedup_text(record.speedup)}{source})"
        return f"{value_text(base, unit)}{f' ({source[2:]})' if source else ''}"
    if view.freshness == Freshness.APPLIED:
        v = view.verification
        if v is None:
            best, _ = measured(record.best)
            return f"{value_text(best, unit)}; save to re-verify"
        if v.state == VerificationState.VERIFYING:
            return "re-verifying…"
        if v.state == VerificationState.HOLDS:
            if v.speedup:
                return f"{value_text(v.value, v.unit)} re-measured ({speedup_text(v.speedup)}{_from(v.source)})"
            return "verified"
        if v.state == VerificationState.FAILED:
            return "re-verification failed"
    return None


def explain(view: KernelView) -> str | None:
    """Markdown: what the figures say and how they were measured (the verdict's receipt rows)."""
    record = view.record
    if view.job is not None or record is None:
        return None
    return explain_record(record, view)


def explain_record(record: RunRecord, view: KernelView | None = None) -> str | None:
    if record.baseline is None:
        return None
    verdict = record.verdict
    lines = [f"**speedpatch: {record.kernel} — {verdict.short}**", ""]
    if verdict.detail:
        lines += [f"{verdict.detail} ({record.backend}, run `{record.run_id}`)", ""]
    else:
        lines += [f"{record.backend}, run `{record.run_id}`", ""]
    if verdict.source != "hardware":
        lines += [f"These figures come from the **{verdict.source_label}**, not from hardware.", ""]
    lines += [f"- {flag}" for flag in verdict.flags]
    v = view.verification if view is not None and view.freshness == Freshness.APPLIED else None
    if v is not None and v.state in (VerificationState.HOLDS, VerificationState.FAILED):
        lines += [f"Re-verified after save: {v.message or v.state}", ""]
    if verdict.how:
        lines += ["How it was measured:", "", "| | |", "|---|---|"]
        lines += [f"| {_cell(label)} | {_cell(value)} |" for label, value in verdict.how]
    return "\n".join(lines).strip()


def receipt_text(record: RunRecord) -> str:
    """The same as plain text, for a code lens's tooltip (VS Code shows it when hovering the lens)."""
    verdict = record.verdict
    lines = [f"{verdict.short}: {verdict.detail}" if verdict.detail else verdict.short]
    if verdict.source != "hardware":
        lines.append(f"figures from the {verdict.source_label}, not from hardware")
    lines += verdict.flags
    lines += [f"{label}: {' '.join(str(value).split())}" for label, value in verdict.how]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def hint_for(view: KernelView, position: types.Position) -> types.InlayHint | None:
    label = hint_label(view)
    if label is None:
        return None
    detail = explain(view)
    tooltip = (
        types.MarkupContent(kind=types.MarkupKind.Markdown, value=detail)
        if detail
        else "speedpatch: the last measurement of this kernel"
    )
    return types.InlayHint(position=position, label=label, kind=None, padding_left=True, tooltip=tooltip)
