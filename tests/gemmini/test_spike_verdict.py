"""What the Spike backend accepts from the model's log of the harness's timed regions. On Spike the harness's
data is writable by the kernel (one address space), so the counts the harness reports are checked against
what its build runs and what the model measured."""

from __future__ import annotations

from speedpatch.targets.gemmini.backends import spike, trusted

FIRST = [14_162, 2_097_152, 98_304, 16_384, 1_000]  # cycles, array MACs, DRAM read, written, host


def stats(regions: int, figures: list[int] = FIRST) -> dict:
    return {"harness_regions": regions, "harness_region_figures": [figures] * regions, "dim": 16,
            "dram_bytes_per_cycle": 8}


def verdict(trials: int, macs: int = 2_097_152) -> str:
    """The Spike harness's line for matmul_128 (inputs 32,768 bytes, output 16,384)."""
    return (f"speedpatch: correct=1 cycles=14162 macs={macs} trials={trials} min_read_bytes=32768 "
            "min_write_bytes=16384 nonce=abc\n")


def test_the_first_region_of_a_full_harness_run_is_the_figure():
    first = spike._first_region(stats(trusted.TRIALS), verdict(trusted.TRIALS))
    assert isinstance(first, dict) and first["cycles"] == 14_162


def test_a_harness_that_ran_fewer_trials_than_its_build_is_refused_even_when_the_model_agrees():
    why = spike._first_region(stats(1), verdict(1))
    assert isinstance(why, str) and "ran 1 trials, its build runs 2" in why


def test_a_harness_whose_regions_do_not_match_its_trials_is_refused():
    why = spike._first_region(stats(3), verdict(trusted.TRIALS))
    assert isinstance(why, str) and "3 timed regions" in why


def test_a_trial_whose_dma_read_less_than_the_inputs_is_refused():
    # the array did all the MACs, on data that did not come through the DMA (the host computed the output)
    why = spike._first_region(stats(trusted.TRIALS, [2_000_000, 2_097_152, 0, 0, 1_900_000]), verdict(trusted.TRIALS))
    assert isinstance(why, str) and "read 0 bytes of DRAM, the problem's inputs are 32768 bytes" in why, why
    assert "written 0 bytes of DRAM, the problem's output are 16384 bytes" in why, why


def test_a_region_faster_than_the_dram_can_move_the_problems_bytes_is_refused():
    # 32,768 bytes at the model's 8 bytes per cycle take 4,096 cycles; 16 MACs bound nothing
    why = spike._first_region(stats(trusted.TRIALS, [3_000, 16, 32_768, 16_384, 100]), verdict(trusted.TRIALS, macs=16))
    assert isinstance(why, str) and "below the DRAM bound: at least 32768 bytes must be read at 8 bytes/cycle" in why, why


def test_a_verdict_without_the_problems_work_is_refused():
    why = spike._first_region(stats(trusted.TRIALS), "speedpatch: correct=1 cycles=14162 macs=2097152 trials=2 nonce=abc\n")
    assert isinstance(why, str) and "does not state the problem's work" in why, why
