"""Autocomp's Gemmini harnesses (ucb-bar/autocomp harnesses/{exo,gemm}/test*.c) compute their gold result with
tiled_matmul_outer_eigen / tiled_matmul_outer_eigen_bias, from the gemmini-rocc-tests branch they are built
against (auto-comp-v2), then time the substituted kernel between read_cycles() calls and compare. Our headers
define both as an exact CPU reference, so such a program runs through `speedpatch evaluate` as written.
The programs here are our own, shaped like those harnesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# A harness-shaped whole program: gold from tiled_matmul_outer_eigen[_bias], then a timed Gemmini kernel
# (tiled_matmul_auto), then full_is_equal against gold and exit 1 when they differ.
PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define I 48
#define K 64
#define J 32
#define A_TRANSPOSE %(at)d
#define B_TRANSPOSE %(bt)d
#define NO_BIAS %(no_bias)d
#define SUB_BIAS %(sub)d
#define BREAK %(brk)d

#if A_TRANSPOSE
static elem_t A[K][I] row_align(1);
#else
static elem_t A[I][K] row_align(1);
#endif
#if B_TRANSPOSE
static elem_t B[J][K] row_align(1);
#else
static elem_t B[K][J] row_align(1);
#endif
static elem_t D[I][J] row_align_acc(1);
static elem_t gold[I][J] row_align_acc(1);
static elem_t C[I][J] row_align_acc(1);

int full_is_equal(elem_t x[I][J], elem_t y[I][J]) {
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++)
      if (x[i][j] != y[i][j]) return 0;
  return 1;
}

int main(void) {
  for (int r = 0; r < (A_TRANSPOSE ? K : I); r++)
    for (int c = 0; c < (A_TRANSPOSE ? I : K); c++) (A_TRANSPOSE ? &A[0][0] : &A[0][0])[r * (A_TRANSPOSE ? I : K) + c] = (elem_t)((r * 7 + c * 3) %% 9 - 4);
  for (int r = 0; r < (B_TRANSPOSE ? J : K); r++)
    for (int c = 0; c < (B_TRANSPOSE ? K : J); c++) (&B[0][0])[r * (B_TRANSPOSE ? K : J) + c] = (elem_t)((r * 5 + c) %% 7 - 3);
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) D[i][j] = (elem_t)((i + 2 * j) %% 5 - 2);
#if NO_BIAS
  tiled_matmul_outer_eigen(A, B, gold, I, K, J, A_TRANSPOSE, B_TRANSPOSE);
#else
  tiled_matmul_outer_eigen_bias(A, B, D, gold, I, K, J, A_TRANSPOSE, B_TRANSPOSE, SUB_BIAS);
#endif
  /* the reference, written out: gold must be exactly this */
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      int32_t sum = 0;
      for (int k = 0; k < K; k++)
        sum += (A_TRANSPOSE ? (&A[0][0])[k * I + i] : (&A[0][0])[i * K + k]) *
               (B_TRANSPOSE ? (&B[0][0])[j * K + k] : (&B[0][0])[k * J + j]);
      if (!NO_BIAS) sum += SUB_BIAS ? -D[i][j] : D[i][j];
      const elem_t want = (elem_t)(sum > 127 ? 127 : sum < -128 ? -128 : sum);
      if (gold[i][j] != want) { printf("gold[%%d][%%d] = %%d, want %%d\n", i, j, gold[i][j], want); return 2; }
    }

  gemmini_flush(0);
  gemmini_fence();
  uint64_t start = read_cycles();
  tiled_matmul_auto(I, J, K, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, A_TRANSPOSE ? I : K,
                    B_TRANSPOSE ? K : J, J, J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY,
                    NO_ACTIVATION, ACC_SCALE_IDENTITY, 0, false, A_TRANSPOSE, B_TRANSPOSE, false, false, 0, WS);
  gemmini_fence();
  uint64_t end = read_cycles();
#if !NO_BIAS
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      int32_t v = C[i][j] + (SUB_BIAS ? -D[i][j] : D[i][j]);
      C[i][j] = (elem_t)(v > 127 ? 127 : v < -128 ? -128 : v);
    }
#endif
  if (BREAK) C[I - 1][J - 1] ^= 1;
  if (!full_is_equal(C, gold)) {
    printf("Incorrect result\n");
    exit(1);
  }
  printf("Generated implementation latency: %%d cycles\n", (int)(end - start));
  printf("Correct result\n");
  return 0;
}
"""


def source(at: int = 0, bt: int = 0, no_bias: int = 1, sub: int = 0, brk: int = 0) -> str:
    return PROGRAM % {"at": at, "bt": bt, "no_bias": no_bias, "sub": sub, "brk": brk}


def evaluate(tmp_path: Path, text: str) -> dict:
    path = tmp_path / "harness.c"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def test_the_gold_of_tiled_matmul_outer_eigen_is_the_exact_saturated_product(gemmini_c) -> None:
    for at, bt in [(0, 0), (1, 0), (0, 1)]:
        result = gemmini_c(source(at=at, bt=bt))()
        assert result.returncode == 0, (at, bt, result.output)
        assert "Correct result" in result.output


def test_tiled_matmul_outer_eigen_bias_adds_or_subtracts_d(gemmini_c) -> None:
    for sub in (0, 1):
        result = gemmini_c(source(no_bias=0, sub=sub))()
        assert result.returncode == 0, (sub, result.output)


def test_an_autocomp_shaped_harness_runs_through_evaluate_and_times_its_kernel(tmp_path: Path) -> None:
    result = evaluate(tmp_path, source())
    assert result["status"] == "ok", result
    assert result["value"] > 0
    assert "read_cycles() pair" in json.dumps(result)


def test_a_wrong_kernel_against_that_gold_is_not_correct(tmp_path: Path) -> None:
    result = evaluate(tmp_path, source(brk=1))
    assert result["status"] == "incorrect", result
    assert "Incorrect result" in result["message"]
