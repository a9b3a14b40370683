"""The model's clock and counters are sealed with a per-run secret: a program that writes them outside the
model's own entry points stops with a tampering error (exit status 4) instead of producing a figure."""

from __future__ import annotations

import subprocess

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


BLOCK_TABLE_SCAN = r"""
#include "include/gemmini.h"
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(void) {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 8);
  memcpy(path + n, ".blocks", 8);
  FILE *f = fopen(path, "r");
  unsigned long long key = 0;
  unsigned count;
  if (!f || fscanf(f, "%llx %u", &key, &count) != 2) return 2;
  fclose(f);
  const uint64_t want = key + 1; /* the table stores offset + 1 */
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, maps)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[0] != 'r' || strstr(line, "[stack]") ||
        strstr(line, "[v")) continue;
    for (const uint64_t *p = (const uint64_t *)lo; p < (const uint64_t *)hi; p++)
      if (*p == want && p != &want) { printf("found in %s\n", perms); found++; }
  }
  printf("occurrences %d\n", found);
  gemmini_fence();
  return 0;
}
"""


def test_the_host_work_block_table_is_read_only_while_the_program_runs(gemmini_c):
    # A kernel that finds its blocks' entries could zero them while it runs (each block then costs a constant)
    # and restore them before the region's digest check; the table's pages do not take the write.
    run = gemmini_c(BLOCK_TABLE_SCAN)()
    assert run.returncode == 0, run.output
    perms = [line.split()[-1] for line in run.output.splitlines() if line.startswith("found in ")]
    assert perms, run.output
    assert all("w" not in p for p in perms), run.output


RESTART = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include <stdint.h>
int main(void) {
  long from_main = 0;
  if (scanf("%ld", &from_main) != 1) return 2;
  const unsigned long where = (unsigned long)&main + (unsigned long)from_main;
  gemmini_flush(0);
  gemmini_fence();
  *(volatile int *)where = 0; /* the runtime's `initialized` */
  gemmini_fence();
  printf("cycles %llu\n", (unsigned long long)read_cycles());
  return 0;
}
"""


def test_clearing_the_models_start_up_flag_stops_the_run_as_tampering(gemmini_c, tmp_path):
    # Cleared, the flag would have the next Gemmini call start the model again (clock and counters from zero)
    # in the middle of a timed region. Its place relative to main() comes from the symbol table.
    run = gemmini_c(RESTART)
    (exe,) = tmp_path.glob("prog*/prog.native")
    symbols = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    address = {line.split()[2]: int(line.split()[0], 16) for line in symbols.splitlines() if len(line.split()) == 3}
    out = run(f"{address['initialized'] - address['main']}\n")
    assert out.returncode == 4, out.output
    assert "tampering: the model's start-up flag changed" in out.output and "cycles " not in out.output


FREE_COPY = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include <stdint.h>
#include <string.h>
static char src[1 << 20], dst[1 << 20];
int main(void) {
  long from_main = 0;
  if (scanf("%ld", &from_main) != 1) return 2;
  volatile int *in_model = (volatile int *)((unsigned long)&main + (unsigned long)from_main);
  gemmini_flush(0);
  gemmini_fence();
  const uint64_t start = read_cycles();
  if (from_main) *in_model = 1;
  memcpy(dst, src, sizeof dst);
  if (from_main) *in_model = 0;
  const uint64_t end = read_cycles();
  printf("cycles %llu %d\n", (unsigned long long)(end - start), dst[5]);
  return 0;
}
"""


def test_a_copy_made_while_pretending_to_be_the_model_is_still_charged(gemmini_c, tmp_path):
    # The runtime's `in_model` flag (writable) exempts the model's own copies from the host charge; set by
    # the program around its memcpy, it made a 1 MiB copy cost 14 cycles instead of 262,165.
    run = gemmini_c(FREE_COPY)
    (exe,) = tmp_path.glob("prog*/prog.native")
    symbols = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    address = {line.split()[2]: int(line.split()[0], 16) for line in symbols.splitlines() if len(line.split()) == 3}
    honest, flagged = run("0\n"), run(f"{address['in_model'] - address['main']}\n")
    assert honest.returncode == 0 and flagged.returncode == 0, honest.output + flagged.output
    cycles = [int(r.output.split("cycles ")[1].split()[0]) for r in (honest, flagged)]
    assert cycles[0] > 10_000, cycles  # a 1 MiB copy is charged by its bytes
    assert cycles[1] >= cycles[0], cycles


REDIRECTED_DMA = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include <stdint.h>
#include <string.h>
extern struct { uint64_t host, next_issue, all_done, busy[3]; } T;
typedef void (*write_fn)(uint64_t addr, const void *src, uint64_t n);
static void unchecked_write(uint64_t addr, const void *src, uint64_t n) { memcpy((void *)(uintptr_t)addr, src, n); }
static elem_t zeros[DIM][DIM];
int main(void) {
  long from_main = 0;
  if (scanf("%ld", &from_main) != 1) return 2;
  *(write_fn *)((unsigned long)&main + (unsigned long)from_main) = unchecked_write; /* the model's dram_write */
  gemmini_config_ld(DIM);
  gemmini_mvin(zeros, 0);
  gemmini_config_st(DIM);
  gemmini_extended_mvout((uintptr_t)&T, 0, DIM, 1);
  gemmini_fence();
  printf("cycles %llu\n", (unsigned long long)read_cycles());
  return 0;
}
"""


def test_the_models_dma_cannot_be_pointed_past_its_own_memory_check(gemmini_c, tmp_path):
    # The model's DRAM write goes through a pointer in writable memory; pointed at a copy without the check,
    # an mvout would have the model itself write its clock and seal it.
    run = gemmini_c(REDIRECTED_DMA)
    (exe,) = tmp_path.glob("prog*/prog.native")
    symbols = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    address = {line.split()[2]: int(line.split()[0], 16) for line in symbols.splitlines() if len(line.split()) == 3}
    if "dram_write" not in address:  # natively the model calls its checked writer directly: nothing to redirect
        assert "host_write" in address or "gm_dram_write" in address, symbols
        return
    out = run(f"{address['dram_write'] - address['main']}\n")
    assert out.returncode == 3 and "aimed at the model's own memory" in out.output, out.output
    assert "cycles " not in out.output


def test_starting_the_timed_region_twice_stops_the_run(gemmini_c):
    # a second start would restart the region's clock in the middle of the measurement
    body = "void gemmini_model_region_begin(void);\n  gemmini_model_region_begin();\n  gemmini_model_region_begin();"
    run = gemmini_c(PROGRAM % body)()
    assert run.returncode == 4 and "the timed region changed outside the model" in run.output


def test_ending_the_timed_region_with_accelerator_work_outstanding_stops_the_run(gemmini_c):
    # the harness fences right before the end: work still outstanding means its fence was jumped over
    body = ("void gemmini_model_region_begin(void);\n  void gemmini_model_region_end(void *);\n"
            "  static elem_t zeros[DIM][DIM];\n  char figures[64];\n  gemmini_model_region_begin();\n"
            "  gemmini_config_ld(DIM);\n  gemmini_mvin(zeros, 0);\n  gemmini_model_region_end(figures);")
    run = gemmini_c(PROGRAM % body)()
    assert run.returncode == 4 and "its fence before the region's end was skipped" in run.output
