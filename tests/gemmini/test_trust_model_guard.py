"""The model's clock and counters are sealed with a per-run secret: a program that writes them outside the
model's own entry points stops with a tampering error (exit status 4) instead of producing a figure."""

from __future__ import annotations

PROGRAM = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include <stdint.h>
extern struct { uint64_t host, next_issue, all_done, busy[3]; } T;
extern struct { uint64_t host_issued[128], executed[128], macs; } S;
int main(void) {
  gemmini_flush(0);
  gemmini_fence();
  %s
  printf("cycles %%llu\n", (unsigned long long)read_cycles());
  return 0;
}
"""


def test_an_untouched_run_reads_its_clock(gemmini_c):
    run = gemmini_c(PROGRAM % "")()
    assert run.returncode == 0 and "cycles " in run.output


def test_writing_the_host_clock_stops_the_run_as_tampering(gemmini_c):
    run = gemmini_c(PROGRAM % "T.host = 0;")()
    assert run.returncode == 4
    assert "gemmini-model: error: tampering: the host clock changed outside the model" in run.output
    assert "cycles " not in run.output


def test_writing_the_accelerators_completion_time_stops_the_run(gemmini_c):
    run = gemmini_c(PROGRAM % "T.all_done = 0; gemmini_fence();")()
    assert run.returncode == 4 and "the accelerator's clock or work counters changed" in run.output


def test_writing_the_mac_counter_stops_the_run(gemmini_c):
    run = gemmini_c(PROGRAM % "S.macs += 1000000;")()
    assert run.returncode == 4 and "tampering" in run.output


def test_accelerator_dma_into_the_models_clock_is_an_error(gemmini_c):
    # The accelerator writes host memory natively: an mvout aimed at the model's own state would rewrite it
    # from inside the model, where no seal can tell. The model refuses the address.
    body = ("static elem_t zeros[DIM][DIM];\n  gemmini_config_ld(DIM);\n  gemmini_mvin(zeros, 0);\n"
            "  gemmini_config_st(DIM);\n  gemmini_extended_mvout((uintptr_t)&T, 0, DIM, 1);\n  gemmini_fence();")
    run = gemmini_c(PROGRAM % body)()
    assert run.returncode == 3 and "aimed at the model's own memory" in run.output and "cycles " not in run.output


def test_accelerator_dma_that_reads_the_seal_key_is_an_error(gemmini_c):
    body = ("extern uint64_t gm_guard_key;\n  gemmini_config_ld(8);\n"
            "  gemmini_extended_mvin((uintptr_t)&gm_guard_key, 0, 8, 1);\n  gemmini_fence();")
    run = gemmini_c(PROGRAM % body)()
    assert run.returncode == 3 and "aimed at the model's own memory" in run.output
