"""Inlay hint at each kernel's signature: the last measured metric for the code as it is."""

from __future__ import annotations

from lsprotocol import types

from .formatting import measured, speedup_text, value_text
from .verify import FAILED, HOLDS, VERIFYING
from .views import APPLIED, FRESH, KernelView


def hint_label(view: KernelView) -> str | None:
    if view.job is not None:
        if view.job.baseline_value is None:
            return None
        return (
            f"{value_text(view.job.baseline_value, view.job.unit)} (baseline, {view.backend}); searching..."
        )
    record = view.record
    if record is None or record.baseline is None:
        return None
    base, unit = measured(record.baseline)
    if view.freshness == FRESH:
        if view.has_winner:
            best, _ = measured(record.best)
            return (
                f"{value_text(base, unit)} now; {value_text(best, unit)} possible "
                f"({speedup_text(record.speedup)}, {record.backend})"
            )
        return f"{value_text(base, unit)} ({record.backend})"
    if view.freshness == APPLIED:
        v = view.verification
        if v is None:
            best, _ = measured(record.best)
            return f"{value_text(best, unit)} in the run (unsaved; saving re-verifies)"
        if v.state == VERIFYING:
            return "re-verifying..."
        if v.state == HOLDS:
            return f"{value_text(v.value, v.unit)} re-measured ({speedup_text(v.speedup)}, {v.backend})"
        if v.state == FAILED:
            return f"re-verification failed: {v.message}"
    return None


def hint_for(view: KernelView, position: types.Position) -> types.InlayHint | None:
    label = hint_label(view)
    if label is None:
        return None
    return types.InlayHint(
        position=position,
        label=f"⏱ {label}",
        kind=None,
        padding_left=True,
        tooltip="speedpatch: last measurement of this kernel",
    )
