"""How measurements read in lenses, hints, diagnostics and progress: one place, so they agree."""

from __future__ import annotations

from speedpatch.model import Candidate
from speedpatch.verdict import SOURCE_LABEL
from speedpatch.verdict import value_text as _value_text


def value_text(value: float | None, unit: str = "") -> str:
    return _value_text(value, unit)


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
    speedup: float | None, baseline: float | None, best: float | None, unit: str, backend: str, source: str = ""
) -> str:
    """'3.12x faster on the cycle model: 1,204,992 -> 386,048 cycles (gemmini-native)': where a figure
    comes from is said when it is not from hardware (see speedpatch.verdict)."""
    label = SOURCE_LABEL.get(source, source)
    where = f" on the {label}" if source and source != "hardware" else ""
    return (
        f"{speedup_text(speedup)} faster{where}: {value_text(baseline)} -> {value_text(best, unit)} ({backend})"
    ).replace("  ", " ")
