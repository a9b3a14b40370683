"""Inlay hint at each kernel's signature: the verdict in two or three words ("1.32x faster (model)"),
placed before the signature's first character, so it is seen however long the line is (at the line's end
it ended under the minimap or off screen). How the figure was measured — the backend, the figures before
and after, the receipt — is the hint's tooltip and the hover on the signature line."""

from __future__ import annotations

from lsprotocol import types
from speedpatch.states import EvalStatus, Freshness, VerificationState
from speedpatch.store import RunRecord
from speedpatch.verdict import SOURCE_LABEL

from .formatting import measured, speedup_text, value_text
from .views import KernelView

_SHORT_SOURCE = {"model": "model", "emulator": "emulator", "simulator": "simulator"}


def _from(source: str) -> str:
    """' (model)' for figures that are not from hardware ('' when they are); the tooltip says which model."""
    if not source or source == "hardware":
        return ""
    return f" ({_SHORT_SOURCE.get(source, SOURCE_LABEL.get(source, source))})"


def hint_label(view: KernelView) -> str | None:
    """A few words on the code as it is (a hint before the code pushes the signature right by its width);
    None when nothing was measured (the lens and the diagnostics say why)."""
    if view.job is not None:
        return None if view.job.baseline_value is None else "searching…"
    record = view.record
    if record is None or record.baseline is None or record.baseline.evaluation is None:
        return None
    if record.baseline.evaluation.status != EvalStatus.OK:
        return None  # nothing was measured; the lens and the diagnostics say why
    base, unit = measured(record.baseline)
    if view.freshness == Freshness.FRESH:
        if view.has_winner:
            return f"{speedup_text(record.speedup)} faster{_from(record.verdict.source)}"
        return f"{value_text(base, unit)}{_from(record.verdict.source)}"
    if view.freshness == Freshness.APPLIED:
        v = view.verification
        if v is None:
            return "save to re-verify"
        if v.state == VerificationState.VERIFYING:
            return "re-verifying…"
        if v.state == VerificationState.HOLDS:
            return f"{speedup_text(v.speedup)} faster, re-measured" if v.speedup else "verified"
        if v.state == VerificationState.FAILED:
            return "re-verification failed"
    return None


def hint_tooltip(view: KernelView) -> str | None:
    """Markdown saying what the label does not: while searching the original's figure, else the verdict
    with the backend, the figures before and after, and the receipt (explain)."""
    job = view.job
    if job is not None:
        if job.baseline_value is None:
            return None
        return (f"speedpatch: searching for a faster `{view.kernel.name}` on {view.backend}; the original "
                f"measures {value_text(job.baseline_value, job.unit)}")
    return explain(view)


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
    """The hint placed at `position` (the start of the signature's text), padded from the code after it."""
    label = hint_label(view)
    tooltip = hint_tooltip(view)
    if label is None or tooltip is None:
        return None
    markdown = types.MarkupContent(kind=types.MarkupKind.Markdown, value=tooltip)
    return types.InlayHint(position=position, label=label, kind=None, padding_right=True, tooltip=markdown)
