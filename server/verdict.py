"""The one verdict on a run: what its figures say, in the same words in the CLI, the server and the editor.

A speedup is a claim about measurements (see the design's principles), so the verdict carries what the
claim rests on: where the figures come from (hardware, a model, an emulator), how they were measured (the
receipt of the winner), and the honesty rules — a difference inside the measured noise is "no measurable
difference", a ratio over 10x is flagged for review, a winner that is not a correct, measured candidate
is never a speedup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from speedpatch.figures import speedup_text, value_text  # value_text: also imported from here by the server
from speedpatch.model import OK, Candidate, Evaluation, _Record, speedup

SUSPICIOUS = 10.0  # speedups above this are flagged for review (the measurement notes)

# Verdict.kind values
FASTER = "faster"
NO_DIFFERENCE = "no_difference"  # inside the noise band of the measurements
NOT_FASTER = "not_faster"  # measured, and no candidate beat the original
UNMEASURED = "unmeasured"  # no correct, measured baseline or winner

SOURCE_LABEL = {
    "hardware": "hardware",
    "model": "cycle model",
    "emulator": "emulator",
    "simulator": "simulator",
    "compile-only": "compile-only",
}
# receipt keys shown in "How it was measured", in this order, with their labels; the rest follow as they are
RECEIPT_ORDER = (
    ("backend", "backend"), ("measured_on", "figures from"), ("model", "model"), ("device", "device"),
    ("params", "configuration"), ("compiler", "compiler"), ("flags", "flags"), ("inputs", "inputs"),
    ("seed", "seed"), ("seeds", "seeds"), ("trials", "trials"), ("warmups", "warm-ups"),
    ("statistic", "statistic"), ("timed_region", "timed region"), ("checks", "checks passed"),
    ("reverified", "re-verified"),
    ("node", "measured on node"), ("date", "date"),
)


@dataclass(frozen=True)
class Verdict(_Record):
    kind: str
    speedup: float | None
    text: str  # "1.24x faster", "no measurable difference (1.01x, noise ±2.0%)", "no faster version found"
    detail: str  # "24,119 -> 19,484 cycles"
    source: str  # "hardware" | "model" | "emulator" | "simulator" | "compile-only"
    source_label: str  # how `source` reads in one word or two ("cycle model")
    flags: list[str] = field(default_factory=list)  # "over 10x: review it"
    how: list[list[str]] = field(default_factory=list)  # [label, value] rows of the winner's receipt

    @property
    def short(self) -> str:
        """The verdict in a few words, with where the figure comes from unless it is hardware."""
        text = self.text
        if self.source != "hardware" and self.kind in (FASTER, NO_DIFFERENCE):
            text += f" ({self.source_label})"
        return text


def noise_band(*evaluations: Evaluation | None) -> float | None:
    """Relative half-width within which two figures are indistinguishable; None for deterministic figures."""
    spreads = [ev.spread for ev in evaluations if ev is not None and ev.spread is not None]
    return max(spreads) if spreads else None


def source_of(ev: Evaluation | None) -> str:
    receipt = (ev.receipt if ev else None) or {}
    return str(receipt.get("measured_on") or "hardware")


def how_measured(ev: Evaluation | None) -> list[list[str]]:
    """The receipt as labelled rows, known keys first."""
    receipt = dict((ev.receipt if ev else None) or {})
    rows: list[list[str]] = []
    for key, label in RECEIPT_ORDER:
        if key in receipt:
            rows.append([label, _text(receipt.pop(key))])
    rows.extend([key.replace("_", " "), _text(value)] for key, value in receipt.items())
    if ev is not None and ev.spread is not None:
        rows.append(["noise", f"±{ev.spread * 100:.1f}% (relative half-width of the confidence interval)"])
    return rows


def _text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def verdict(baseline: Candidate | None, best: Candidate | None) -> Verdict:
    """The verdict on `best` against `baseline` (a run's winner, or any candidate against the baseline)."""
    base_ev = baseline.evaluation if baseline else None
    best_ev = best.evaluation if best else None
    source = source_of(best_ev or base_ev)
    label = SOURCE_LABEL.get(source, source)
    ratio = speedup(baseline, best)
    if ratio is None or best_ev is None or best_ev.status != OK:
        text = "not measured" if base_ev is None or base_ev.status != OK else "no faster version found"
        return Verdict(UNMEASURED if text == "not measured" else NOT_FASTER, None, text, "", source, label, [],
                       how_measured(base_ev))
    detail = f"{value_text(base_ev.value if base_ev else None)} -> {value_text(best_ev.value, best_ev.unit)}"
    how = how_measured(best_ev)
    if baseline is not None and best is not None and best.id == baseline.id:
        return Verdict(NOT_FASTER, 1.0, "no faster version found", detail, source, label, [], how)
    band = noise_band(base_ev, best_ev)
    if band is not None and abs(ratio - 1.0) <= band:
        text = f"no measurable difference ({speedup_text(ratio)}, noise ±{band * 100:.1f}%)"
        return Verdict(NO_DIFFERENCE, ratio, text, detail, source, label, [], how)
    if ratio <= 1.0:
        return Verdict(NOT_FASTER, ratio, "no faster version found", detail, source, label, [], how)
    flags = [f"over {SUSPICIOUS:.0f}x: review it before trusting it"] if ratio > SUSPICIOUS else []
    return Verdict(FASTER, ratio, f"{speedup_text(ratio)} faster", detail, source, label, flags, how)
