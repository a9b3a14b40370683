"""The short instruction names Autocomp's and Exo's Gemmini kernels are written with (config_ld, config_ex,
config_st, mvin, mvin2, mvin3, preload, preload_zeros, compute_preloaded, compute_accumulated, mvout, fence)
come from our gemmini.h with upstream's argument orders, as on gemmini-rocc-tests' auto-comp branches.
Programs that define these names themselves keep working."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# C[16][16] = A[16][32] * B[32][16] (int8, saturated), written the way Exo-generated kernels are: the
# accumulator zeroed by an mvin from DRAM address 0, A and B moved in with the three load slots, preload and
# compute_preloaded per 16-deep K block accumulating (bit 30), one mvout. SHORT_KERNEL_BODY is its body.
SHORT_KERNEL = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t A[16][32] row_align(4);
static elem_t B[32][16] row_align(4);
static elem_t C[16][16] row_align(4);

void kernel(elem_t A[16][32], elem_t B[32][16], elem_t C[16][16]) {
  config_st(16);
  config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 1, false, false);
  config_ld(32, 1.0f, 16, 1);
  config_ld(16, 1.0f, 16, 2);
  config_ld(0, 1.0f, 16, 0);
  const uint32_t res = 1u << 31, a = 0, b = 64;
  mvin(0, res, 16, 16);
  mvin2(&A[0][0], a, 32, 16);
  mvin3(&B[0][0], b, 16, 16);
  mvin3(&B[16][0], b + 16, 16, 16);
  for (int k = 0; k < 2; k++) {
    preload(b + 16 * k, res | 0x40000000, 16, 16, 16, 16);
    compute_preloaded(a + 16 * k, ~((uint32_t)0), 16, 16, 16, 16);
  }
  mvout(&C[0][0], res, 16, 16);
  fence();
}

int main(void) {
  for (int i = 0; i < 16; i++)
    for (int k = 0; k < 32; k++) A[i][k] = (elem_t)((i * 7 + k * 3) % 9 - 4);
  for (int k = 0; k < 32; k++)
    for (int j = 0; j < 16; j++) B[k][j] = (elem_t)((k * 5 + j) % 7 - 3);
  uint64_t t0 = read_cycles();
  kernel(A, B, C);
  uint64_t t1 = read_cycles();
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      int32_t sum = 0;
      for (int k = 0; k < 32; k++) sum += A[i][k] * B[k][j];
      const elem_t want = (elem_t)(sum > 127 ? 127 : sum < -128 ? -128 : sum);
      if (C[i][j] != want) {
        printf("C[%d][%d] = %d, want %d\n", i, j, C[i][j], want);
        return 1;
      }
    }
  printf("kernel took %llu cycles\n", (unsigned long long)(t1 - t0));
  return 0;
}
"""


def test_a_kernel_written_with_the_short_names_computes_its_matmul(gemmini_c) -> None:
    run = gemmini_c(SHORT_KERNEL)()
    assert run.returncode == 0, run.output
    assert run.stats["instructions"]["MVIN3"] == 2 and run.stats["instructions"]["COMPUTE_PRELOADED"] == 2


def test_config_lds_third_argument_is_the_scratchpad_block_stride(gemmini_c) -> None:
    # A 32-column mvin with block stride 40 puts its second 16-column block at row 40, where the mvout reads it.
    program = r"""
#include "include/gemmini_testutils.h"
static elem_t In[16][32] row_align(4);
static elem_t Out[16][16] row_align(4);
int main(void) {
  for (int i = 0; i < 16; i++) for (int j = 0; j < 32; j++) In[i][j] = (elem_t)(i + 2 * j);
  config_ld(32, 1.0f, 40, 0);
  config_st(16);
  mvin(&In[0][0], 0, 32, 16);
  mvout(&Out[0][0], 40, 16, 16);
  fence();
  for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) if (Out[i][j] != In[i][16 + j]) return 1;
  return 0;
}
"""
    run = gemmini_c(program)()
    assert run.returncode == 0, run.output


def test_preload_zeros_and_compute_accumulated_are_there_too(gemmini_c) -> None:
    # Output-stationary: C = A * B with preload_zeros, then compute_accumulated adds A * B again (2 * A * B).
    program = r"""
#include "include/gemmini_testutils.h"
static elem_t A[16][16] row_align(4), B[16][16] row_align(4), C[16][16] row_align(4);
int main(void) {
  for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) { A[i][j] = (elem_t)(i == j); B[i][j] = (elem_t)(j - i); }
  config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 1, false, false);
  config_ld(16, 1.0f, 16, 0);
  config_st(16);
  mvin(&A[0][0], 0, 16, 16);
  mvin(&B[0][0], 16, 16, 16);
  preload_zeros(1u << 31);
  compute_preloaded(0, 16, 16, 16, 16, 16);
  compute_accumulated(0, 16, 16, 16, 16, 16);
  mvout(&C[0][0], 1u << 31, 16, 16);
  fence();
  for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) if (C[i][j] != 2 * (j - i)) return 1;
  return 0;
}
"""
    run = gemmini_c(program)()
    assert run.returncode == 0, run.output


def test_a_program_that_defines_a_short_name_first_keeps_its_own(gemmini_c) -> None:
    # Its two-argument mvin is defined before the header, so the header leaves that name alone.
    program = r"""
#define mvin(dram, spad) gemmini_extended_mvin(dram, spad, DIM, DIM)
#include "include/gemmini_testutils.h"
static elem_t In[16][16] row_align(4), Out[16][16] row_align(4);
int main(void) {
  for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) In[i][j] = (elem_t)(i * j);
  gemmini_config_ld(16);
  config_st(16);
  mvin(In, 0);
  mvout(Out, 0, 16, 16);
  fence();
  return is_equal(In, Out) ? 0 : 1;
}
"""
    run = gemmini_c(program)()
    assert run.returncode == 0, run.output


def test_gemmini_no_short_names_frees_the_names_for_wrapper_functions(gemmini_c) -> None:
    program = r"""
#define GEMMINI_NO_SHORT_NAMES
#include "include/gemmini_testutils.h"
static void mvin(const elem_t *dram, uint32_t spad) { gemmini_mvin(dram, spad); }
static void mvout(elem_t *dram, uint32_t spad) { gemmini_mvout(dram, spad); }
static elem_t In[16][16] row_align(4), Out[16][16] row_align(4);
int main(void) {
  for (int i = 0; i < 16; i++) for (int j = 0; j < 16; j++) In[i][j] = (elem_t)(i - j);
  gemmini_config_ld(16);
  gemmini_config_st(16);
  mvin(&In[0][0], 0);
  mvout(&Out[0][0], 0);
  gemmini_fence();
  return is_equal(In, Out) ? 0 : 1;
}
"""
    run = gemmini_c(program)()
    assert run.returncode == 0, run.output


def test_speedpatch_evaluate_runs_a_short_name_kernel_program_as_a_whole_program(tmp_path: Path) -> None:
    path = tmp_path / "short.c"
    path.write_text(SHORT_KERNEL)
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["correct"] and result["kernel"] == "kernel", proc.stdout + proc.stderr
    line = next(ln for ln in result["output"].splitlines() if ln.startswith("kernel took"))
    assert result["value"] == int(line.split()[2]) > 0
