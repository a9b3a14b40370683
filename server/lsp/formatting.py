"""How measurements read in lenses, hints, diagnostics and progress: one place, so they agree."""

from __future__ import annotations

from speedpatch.model import Candidate


def value_text(value: float | None, unit: str = "") -> str:
    if value is None:
        return "?"
    if float(value).is_integer() and abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif float(value).is_integer():
        text = f"{value:.0f}"
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}".strip()


def speedup_text(speedup: float | None) -> str:
    return "?" if speedup is None else f"{speedup:.2f}x"


def measured(candidate: Candidate | None) -> tuple[float | None, str]:
    """(value, unit) of a candidate's evaluation, (None, "") when it has none."""
    if candidate is None or candidate.evaluation is None:
        return None, ""
    return candidate.evaluation.value, candidate.evaluation.unit


def speedup_of(baseline: float | None, value: float | None) -> float | None:
    if baseline is None or value is None or value <= 0:
        return None
    return baseline / value


def faster_text(
    speedup: float | None, baseline: float | None, best: float | None, unit: str, backend: str
) -> str:
    """'3.12x faster: 1,204,992 -> 386,048 cycles (gemmini-native)'"""
    return (
        f"{speedup_text(speedup)} faster: {value_text(baseline)} -> {value_text(best)} {unit} ({backend})"
    ).replace("  ", " ")
