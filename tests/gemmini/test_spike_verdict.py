"""What the Spike backend accepts from the model's log of the harness's timed regions. On Spike the harness's
data is writable by the kernel (one address space), so the counts the harness reports are checked against
what its build runs and what the model measured."""

from __future__ import annotations

from speedpatch.targets.gemmini.backends import spike, trusted

FIRST = [14_162, 2_097_152, 98_304, 16_384, 1_000]  # cycles, array MACs, DRAM read, written, host


def stats(regions: int) -> dict:
    return {"harness_regions": regions, "harness_region_figures": [FIRST] * regions, "dim": 16}


def verdict(trials: int) -> str:
    return f"speedpatch-verdict nonce=abc correct=1 cycles=14162 trials={trials} required_macs=2097152 macs=2097152"


def test_the_first_region_of_a_full_harness_run_is_the_figure():
    first = spike._first_region(stats(trusted.TRIALS), verdict(trusted.TRIALS))
    assert isinstance(first, dict) and first["cycles"] == 14_162


def test_a_harness_that_ran_fewer_trials_than_its_build_is_refused_even_when_the_model_agrees():
    why = spike._first_region(stats(1), verdict(1))
    assert isinstance(why, str) and "ran 1 trials, its build runs 2" in why


def test_a_harness_whose_regions_do_not_match_its_trials_is_refused():
    why = spike._first_region(stats(3), verdict(trusted.TRIALS))
    assert isinstance(why, str) and "3 timed regions" in why
