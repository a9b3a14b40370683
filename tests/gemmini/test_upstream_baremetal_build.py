"""gemmini-native builds a program as gemmini-rocc-tests' Makefile builds its bare-metal binaries (BAREMETAL
defined), the binaries FireSim measures and gemmini-spike runs here. Many upstream programs size their
problem by it (`#ifndef BAREMETAL` a Linux size `#else` the bare-metal one; Exo's fork of the repository runs
the paper's 12544x256x64 GEMM only under BAREMETAL), so the figure must be the bare-metal problem's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# I x J x K is 32 x 48 x 64 bare-metal, 64 x 64 x 64 otherwise; the program checks its result against the CPU.
SIZED_BY_BAREMETAL = r"""
#include <stdio.h>
#include <stdlib.h>
#ifndef BAREMETAL
#include <sys/mman.h>
#endif
#include "include/gemmini_testutils.h"

#ifndef BAREMETAL
#define I 64
#define J 64
#define K 64
#else
#define I 32
#define J 48
#define K 64
#endif

static elem_t A[I][K] row_align(1), B[K][J] row_align(1), C[I][J] row_align(1);

int main(void) {
#ifndef BAREMETAL
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    perror("mlockall failed");
    exit(1);
  }
#endif
  for (int i = 0; i < I; i++)
    for (int k = 0; k < K; k++) A[i][k] = (elem_t)((i + 2 * k) % 3 - 1);
  for (int k = 0; k < K; k++)
    for (int j = 0; j < J; j++) B[k][j] = (elem_t)((3 * k + j) % 5 - 2);
  gemmini_flush(0);
  uint64_t start = read_cycles();
  tiled_matmul_auto(I, J, K, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, K, J, J, J, MVIN_SCALE_IDENTITY,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, ACC_SCALE_IDENTITY, 0, false, false,
                    false, false, false, 0, WS);
  uint64_t end = read_cycles();
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      int32_t sum = 0;
      for (int k = 0; k < K; k++) sum += A[i][k] * B[k][j];
      if (C[i][j] != (elem_t)(sum > 127 ? 127 : sum < -128 ? -128 : sum)) exit(1);
    }
  printf("%llu cycles\n", (unsigned long long)(end - start));
  exit(0);
}
"""


def test_a_program_sized_by_baremetal_is_measured_on_its_bare_metal_problem(tmp_path: Path) -> None:
    path = tmp_path / "sized.c"
    path.write_text(SIZED_BY_BAREMETAL)
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    assert result["status"] == "ok", result
    assert result["feedback"]["macs"] == 32 * 48 * 64, result["feedback"]
    assert "-DBAREMETAL=1" in result["receipt"]["flags"]
