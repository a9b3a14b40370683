"""How measurements read in lenses, hints, diagnostics and progress: the figures' one formatter
(speedpatch.figures) and the editor's sentences built on it."""

from __future__ import annotations

from speedpatch.figures import speedup_text, value_text
from speedpatch.model import Candidate
from speedpatch.verdict import SOURCE_LABEL

__all__ = ["faster_text", "measured", "speedup_of", "speedup_text", "value_text"]  # the two from figures too


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
