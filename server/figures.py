"""How figures read, in the CLI, the language server and the editor alike: a measured value with its unit,
and a speedup. One place, so the same measurement never reads two ways."""

from __future__ import annotations

UNIT_TEXT = {"us": "µs"}  # units as backends report them -> as people read them


def value_text(value: float | None, unit: str = "", missing: str = "?") -> str:
    """'1,204,992 cycles', '0.0123 ms', '12.5 µs'; `missing` when there is no value ('-' in a table)."""
    if value is None:
        return missing
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif float(value).is_integer():
        text = f"{value:.0f}"
    else:
        text = f"{value:.4g}"
    return f"{text} {UNIT_TEXT.get(unit, unit)}".strip()


def speedup_text(ratio: float | None, missing: str = "?") -> str:
    """'1.24x' (baseline over candidate); `missing` when there is no ratio."""
    return missing if ratio is None else f"{ratio:.2f}x"
