"""Residual addition over strided rows: upstream's tiled_resadd_stride_auto and the 10-argument resadd_cpu
(gemmini-rocc-tests include/gemmini.h; bareMetalC/resadd_stride.c calls both), on our own program.

C = relu(sat(C_scale * (sat(A_scale * A) + sat(B_scale * B)))) elementwise, each scale in float32 with
ties to even, for the I x J elements of rows `stride` apart; the elements between J and the stride are not
written."""

from __future__ import annotations

import numpy as np
import pytest

ROWS, J, STRIDE = 37, 45, 50

PROGRAM = r"""
#include <stdio.h>
#include "include/gemmini_testutils.h"
#define I @I@
#define J @J@
#define STRIDE @STRIDE@
static elem_t A[I][STRIDE] = {@A@};
static elem_t B[I][STRIDE] = {@B@};
static elem_t C[I][STRIDE];
int main() {
  for (int i = 0; i < I; i++)
    for (int j = 0; j < STRIDE; j++) C[i][j] = 77;
  @CALL@;
  gemmini_fence();
  for (int i = 0; i < I; i++) {
    for (int j = 0; j < STRIDE; j++) printf("%d ", C[i][j]);
    printf("\n");
  }
  return 0;
}
"""

CALLS = {
    "tiled_resadd_stride_auto WS": "tiled_resadd_stride_auto(I, J, 2.0f, 0.5f, 0.75f, STRIDE, (elem_t *)A, "
                                   "(elem_t *)B, (elem_t *)C, true, WS)",
    "tiled_resadd_stride_auto CPU": "tiled_resadd_stride_auto(I, J, 2.0f, 0.5f, 0.75f, STRIDE, (elem_t *)A, "
                                    "(elem_t *)B, (elem_t *)C, true, CPU)",
    "resadd_cpu (10 arguments)": "resadd_cpu(I, J, STRIDE, 2.0f, 0.5f, 0.75f, (elem_t *)A, (elem_t *)B, "
                                 "(elem_t *)C, true)",
}


def scaled(x: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.rint(x.astype(np.float32) * np.float32(scale)), -128, 127).astype(np.int64)


@pytest.mark.parametrize("call", list(CALLS))
def test_a_strided_residual_addition_writes_the_scaled_sum_and_only_j_columns(gemmini_c, call: str) -> None:
    rng = np.random.default_rng(11)
    a = rng.integers(-40, 41, size=(ROWS, STRIDE))
    b = rng.integers(-100, 101, size=(ROWS, STRIDE))
    matrix = lambda m: ", ".join("{" + ", ".join(map(str, row)) + "}" for row in m)  # noqa: E731
    source = (PROGRAM.replace("@I@", str(ROWS)).replace("@J@", str(J)).replace("@STRIDE@", str(STRIDE))
              .replace("@A@", matrix(a)).replace("@B@", matrix(b)).replace("@CALL@", CALLS[call]))
    result = gemmini_c(source)()
    assert result.returncode == 0, result.output
    out = np.array([[int(v) for v in line.split()] for line in result.output.strip().splitlines()])
    expected = np.full((ROWS, STRIDE), 77)
    expected[:, :J] = np.maximum(scaled(scaled(a[:, :J], 2.0) + scaled(b[:, :J], 0.5), 0.75), 0)
    assert (out == expected).all(), np.argwhere(out != expected)[:5]


def test_a_stride_shorter_than_a_row_is_a_library_error(gemmini_c) -> None:
    source = (PROGRAM.replace("@I@", "2").replace("@J@", "8").replace("@STRIDE@", "8").replace("@A@", "0")
              .replace("@B@", "0").replace("@CALL@", "tiled_resadd_stride_auto(I, J, 1.0f, 1.0f, 1.0f, 4, "
                                                   "(elem_t *)A, (elem_t *)B, (elem_t *)C, false, WS)"))
    result = gemmini_c(source)()
    assert result.returncode == 3
    assert "row stride is shorter than a row" in result.output
