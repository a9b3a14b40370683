"""Programs of the gemmini-rocc-tests versions whose activation 2 was RELU6 (bareMetalC/matmul_os.c,
tiled_matmul_option.c, tiled_matmul_cpu.c of that time): they name RELU6 in their CPU references, call the
reference helpers the first gemmini.h defined (matmul, matmul_full, matshift, matrelu, matrelu6...) with
only gemmini.h included, and set the accumulator read-out's activation and shift in a 5-argument
gemmini_config_ex, which their config_st(stride) then keeps. Each is reproduced here on a program of our own."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

GEMMINI_ONLY = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini.h"

#define CHECK(cond) do { if (!(cond)) { printf("failed: %s\n", #cond); exit(1); } } while (0)
"""

TESTUTILS = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define CHECK(cond) do { if (!(cond)) { printf("failed: %s\n", #cond); exit(1); } } while (0)
"""


def run(gemmini_c, source: str):
    return gemmini_c(source)()


def run_ok(gemmini_c, source: str) -> str:
    result = run(gemmini_c, source)
    assert result.returncode == 0, result.output
    return result.output


def test_a_program_naming_relu6_in_its_reference_compiles_and_runs(gemmini_c) -> None:
    # tiled_matmul_option.c's shape: the activation loop stops at RELU on bare metal, RELU6 is only named.
    out = run_ok(gemmini_c, GEMMINI_ONLY + r"""
static elem_t A[20][16], B[16][24], C[20][24];
int main() {
  for (int i = 0; i < 20; i++) for (int k = 0; k < 16; k++) A[i][k] = (elem_t)((i * 3 + k) % 5 - 2);
  for (int k = 0; k < 16; k++) for (int j = 0; j < 24; j++) B[k][j] = (elem_t)((k + 2 * j) % 7 - 3);
  for (int act = 0; act <= 1; act++) {
    tiled_matmul_auto(20, 24, 16, A, B, NULL, C, act, 0, 1, false, WS);
    for (int i = 0; i < 20; i++)
      for (int j = 0; j < 24; j++) {
        int sum = 0;
        for (int k = 0; k < 16; k++) sum += A[i][k] * B[k][j];
        int want = sum > 127 ? 127 : sum < -128 ? -128 : sum;
        if (act == RELU && want < 0) want = 0;
        else if (act == RELU6 && want > 12) want = 12;
        CHECK(C[i][j] == want);
      }
  }
  printf("RELU6=%d ok\n", RELU6);
  return 0;
}
""")
    assert "RELU6=2 ok" in out


def test_the_first_headers_reference_helpers_link_with_only_gemmini_h(gemmini_c) -> None:
    # matmul_os.c of that time: matmul/matmul_full/matshift/matrelu/matrelu6 came from gemmini.h itself.
    out = run_ok(gemmini_c, GEMMINI_ONLY + r"""
static elem_t A[DIM][DIM], B[DIM][DIM], D[DIM][DIM], T[DIM][DIM], S[DIM][DIM], R[DIM][DIM], R6[DIM][DIM];
static int64_t full[DIM][DIM], full2[DIM][DIM], sum[DIM][DIM];
int main() {
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      A[i][j] = (elem_t)((i * 5 + j) % 9 - 4);
      B[i][j] = (elem_t)((i + 3 * j) % 7 - 3);
      D[i][j] = (elem_t)((i + j) % 3 - 1);
    }
  matmul(A, B, D, full);
  matmul_full(A, B, full, full2);
  matadd(sum, full, full2);
  matshift(sum, S, 1);
  matrelu(S, R);
  matrelu6(S, R6, 1);
  transpose(A, T);
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      int64_t p = 0;
      for (int k = 0; k < DIM; k++) p += A[i][k] * B[k][j];
      CHECK(full[i][j] == p + D[i][j]);
      CHECK(full2[i][j] == p + full[i][j]);
      CHECK(sum[i][j] == full[i][j] + full2[i][j]);
      int64_t x = sum[i][j], q = x >> 1;
      if ((x & 1) && (q & 1)) q++;  /* a rounding shift by one: ties to even */
      int64_t s = q > 127 ? 127 : q < -128 ? -128 : q;
      CHECK(S[i][j] == s);
      CHECK(R[i][j] == (s < 0 ? 0 : s));
      CHECK(R6[i][j] == (s < 0 ? 0 : s > 6 ? 6 : s));
      CHECK(T[j][i] == A[i][j]);
    }
  CHECK(is_equal(A, A));
  printf("helpers ok\n");
  return 0;
}
""")
    assert "helpers ok" in out


# A 5-argument config_ex (dataflow, act, sys_shift, acc_shift, relu6_shift) before or after the program's
# config_st(stride): accumulator rows read out through its shift and activation, as those versions did.
READOUT = TESTUTILS + r"""
static acc_t In[DIM][DIM] row_align_acc(1);
static elem_t Out[DIM][DIM] row_align(1);
int main() {
  for (int i = 0; i < DIM; i++) for (int j = 0; j < DIM; j++) In[i][j] = (i * DIM + j) * 3 - 380;
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(acc_t));
  @FIRST@;
  @SECOND@;
  gemmini_mvin(In, 1u << 31);
  gemmini_mvout(Out, 1u << 31);
  gemmini_fence();
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      const int x = In[i][j], shift = @SHIFT@;
      int q = x >> shift;  /* x * 2^-shift, ties to even */
      if (shift > 0) {
        const int rem = x - (q << shift), half = 1 << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
      }
      int want = q > 127 ? 127 : q < -128 ? -128 : q;
      if (@RELU@ && want < 0) want = 0;
      if (Out[i][j] != want) { printf("Out[%d][%d] = %d, want %d\n", i, j, Out[i][j], want); return 1; }
    }
  printf("readout ok\n");
  return 0;
}
"""


@pytest.mark.parametrize("config_first", [True, False])
def test_a_five_argument_config_ex_sets_the_readout_that_config_st_keeps(gemmini_c, config_first: bool) -> None:
    config_ex = "gemmini_config_ex(WEIGHT_STATIONARY, RELU, 0, 2, 3)"
    config_st = "gemmini_config_st(DIM * sizeof(elem_t))"
    first, second = (config_ex, config_st) if config_first else (config_st, config_ex)
    source = (READOUT.replace("@FIRST@", first).replace("@SECOND@", second).replace("@SHIFT@", "2")
              .replace("@RELU@", "1"))
    assert "readout ok" in run_ok(gemmini_c, source)


def test_a_float_scale_in_the_eight_argument_form_is_the_readout_scale(gemmini_c) -> None:
    source = (READOUT.replace("@FIRST@", "gemmini_config_st(DIM * sizeof(elem_t))")
              .replace("@SECOND@", "gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 0.125f, 0, 1, "
                                   "false, false)")
              .replace("@SHIFT@", "3").replace("@RELU@", "0"))
    assert "readout ok" in run_ok(gemmini_c, source)


def test_the_current_config_st_keeps_the_identity_readout(gemmini_c) -> None:
    source = (READOUT.replace("@FIRST@", "gemmini_config_ex(WEIGHT_STATIONARY, RELU, 0)")
              .replace("@SECOND@", "gemmini_config_st(DIM * sizeof(elem_t))")
              .replace("@SHIFT@", "0").replace("@RELU@", "0"))
    assert "readout ok" in run_ok(gemmini_c, source)


@pytest.mark.parametrize("config", ["gemmini_config_ex(OUTPUT_STATIONARY, RELU6, 0, 0, 1)",
                                    "gemmini_config_ex(OUTPUT_STATIONARY, RELU6, 0, 1)",
                                    "gemmini_extended_config_ex(OUTPUT_STATIONARY, RELU6, 0, 1, 1, false, false)"])
def test_relu6_in_an_older_config_ex_stops_naming_relu6(gemmini_c, config: str) -> None:
    result = run(gemmini_c, TESTUTILS + r"""
int main() {
  gemmini_flush(0);
  @CONFIG@;
  printf("went on\n");
  return 0;
}
""".replace("@CONFIG@", config))
    assert result.returncode == 3, result.output
    assert "RELU6" in result.output and "went on" not in result.output
