"""The one verdict on a run, shared by the CLI, the language server and the extension."""

from __future__ import annotations

from speedpatch.model import INCORRECT, OK, Candidate, Evaluation
from speedpatch.verdict import FASTER, NO_DIFFERENCE, NOT_FASTER, UNMEASURED, verdict


def cand(cid: str, status: str = OK, value: float | None = 100.0, spread: float | None = None,
         receipt: dict | None = None) -> Candidate:
    ev = Evaluation(status=status, value=value, unit="cycles", spread=spread,
                    receipt=receipt if receipt is not None else {"measured_on": "model", "backend": "gemmini-native"})
    return Candidate(cid, "run", None, 0, "", "src", "h", evaluation=ev)


def test_a_faster_model_figure_says_so_and_names_the_model():
    v = verdict(cand("base", value=200.0), cand("w", value=100.0))
    assert v.kind == FASTER and v.text == "2.00x faster"
    assert v.short == "2.00x faster (cycle model)"
    assert v.detail == "200 -> 100 cycles"


def test_a_hardware_figure_carries_no_source_label():
    rec = {"measured_on": "hardware", "backend": "cuda-local"}
    v = verdict(cand("base", value=2.0, receipt=rec), cand("w", value=1.0, receipt=rec))
    assert v.short == "2.00x faster"


def test_a_difference_inside_the_noise_band_is_no_measurable_difference():
    rec = {"measured_on": "hardware"}
    v = verdict(cand("base", value=1.00, spread=0.03, receipt=rec), cand("w", value=0.98, spread=0.02, receipt=rec))
    assert v.kind == NO_DIFFERENCE
    assert v.text.startswith("no measurable difference (1.02x, noise ±3.0%")


def test_a_deterministic_figure_has_no_noise_band():
    v = verdict(cand("base", value=1000.0), cand("w", value=999.0))
    assert v.kind == FASTER


def test_the_baseline_as_winner_is_no_faster_version():
    base = cand("base")
    v = verdict(base, base)
    assert v.kind == NOT_FASTER and v.text == "no faster version found"


def test_an_incorrect_winner_is_never_a_speedup():
    v = verdict(cand("base", value=200.0), cand("w", status=INCORRECT, value=1.0))
    assert v.kind == NOT_FASTER and v.speedup is None


def test_without_a_measured_baseline_nothing_is_claimed():
    v = verdict(cand("base", status=INCORRECT), None)
    assert v.kind == UNMEASURED and v.text == "not measured"


def test_over_ten_times_is_flagged_for_review():
    v = verdict(cand("base", value=1100.0), cand("w", value=100.0))
    assert v.flags and "review" in v.flags[0]


def test_how_it_was_measured_lists_the_receipt_known_keys_first():
    rec = {"date": "2026-12-01", "backend": "gemmini-native", "measured_on": "model", "trials": 2, "extra_key": "x"}
    v = verdict(cand("base", value=2.0, receipt=rec), cand("w", value=1.0, receipt=rec))
    assert [row[0] for row in v.how] == ["backend", "figures from", "trials", "date", "extra key"]
