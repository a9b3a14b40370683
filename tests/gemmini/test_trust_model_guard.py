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
