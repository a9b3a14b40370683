"""read_cycles() in programs that include only gemmini.h and never define it.

Upstream's early headers (include/systolic.h, which gemmini.h grew from) defined read_cycles() themselves, so
programs of that time (bareMetalC/tiled_matmul_os.c of the 12-argument tiled_matmul_auto) call it with only
gemmini.h included; today's headers define it in gemmini_testutils.h and many programs define their own. Both
kinds must build and time the same region."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# Moves N blocks through the scratchpad between two read_cycles() calls and checks them.
PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini.h"
@OWN@
#define N 4
static elem_t In[N][DIM][DIM] row_align(1);
static elem_t Out[N][DIM][DIM] row_align(1);

int main() {
  for (size_t n = 0; n < N; n++)
    for (size_t i = 0; i < DIM; i++)
      for (size_t j = 0; j < DIM; j++) In[n][i][j] = (elem_t)(i * 3 + j + n);
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  unsigned long start = read_cycles();
  for (size_t n = 0; n < N; n++) {
    gemmini_mvin(In[n], n * DIM);
    gemmini_mvout(Out[n], n * DIM);
  }
  gemmini_fence();
  unsigned long end = read_cycles();
  printf("%lu\n", end - start);
  for (size_t n = 0; n < N; n++)
    for (size_t i = 0; i < DIM; i++)
      for (size_t j = 0; j < DIM; j++)
        if (Out[n][i][j] != In[n][i][j]) return 1;
  return 0;
}
"""

# A program's own static counter, as many programs define one (theirs reads rdcycle; natively the counter is
# the model's, which is what their rdcycle becomes when speedpatch adapts upstream headers).
OWN = r"""
static uint64_t read_cycles() { return gemmini_model_cycles(); }
"""


def evaluate(path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          capture_output=True, text=True, timeout=300, cwd=path.parent)
    return json.loads(proc.stdout)


def test_a_program_calling_read_cycles_with_only_gemmini_h_builds_and_times_its_region(gemmini_c) -> None:
    result = gemmini_c(PROGRAM.replace("@OWN@", ""))()
    assert result.returncode == 0, result.output
    cycles = int(result.output.strip())
    assert cycles > 4 * DIM_ROWS  # at least the four blocks' rows moved in and out
    assert result.stats["cycle_reads"] == 2, result.stats


def test_a_program_with_its_own_read_cycles_still_builds_and_reads_the_same_counter(gemmini_c) -> None:
    undefined = gemmini_c(PROGRAM.replace("@OWN@", ""))()
    own = gemmini_c(PROGRAM.replace("@OWN@", OWN))()
    assert own.returncode == 0, own.output
    # The same region either way, give or take a few host instructions: the program's own function is
    # inlined and its model call splits the caller's basic block; the archived one does not split it, so
    # the rest of the block after `end = read_cycles()` is charged before the counter is read.
    assert abs(int(own.output) - int(undefined.output)) < 32, (own.output, undefined.output)


def test_the_evaluation_figure_is_the_programs_read_cycles_region(tmp_path: Path) -> None:
    src = tmp_path / "old_style.c"
    src.write_text(PROGRAM.replace("@OWN@", ""))
    result = evaluate(src)
    assert result["status"] == "ok", result
    assert "the program's own read_cycles() pairs" in result["message"], result["message"]


DIM_ROWS = 16


def test_work_still_running_at_the_closing_read_is_timed_until_it_finishes(tmp_path: Path) -> None:
    # Upstream's conv tests read the clock right after tiled_conv_auto, without a fence: the pair then spans
    # only the time to issue the work. The figure runs until the work is done, as if the program had fenced.
    fenced, unfenced = tmp_path / "fenced.c", tmp_path / "unfenced.c"
    fenced.write_text(PROGRAM.replace("@OWN@", ""))
    unfenced.write_text(PROGRAM.replace("@OWN@", "").replace("  gemmini_fence();\n  unsigned long end", "  unsigned long end"))
    with_fence, without = evaluate(fenced), evaluate(unfenced)
    assert with_fence["status"] == "ok" and without["status"] == "ok", (with_fence, without)
    # the fence itself costs the host its 2 cycles and the call's few instructions; nothing else differs
    assert 0 <= with_fence["value"] - without["value"] <= 32, (with_fence["value"], without["value"])
    assert "still running at the closing read_cycles()" in without["message"], without["message"]
    assert "still running" not in with_fence["message"], with_fence["message"]
