"""Upstream library and test-utility names that programs call: each added function checked on the model
against a CPU reference computed by the test program itself, and the names programs define themselves
(full_printMatrix) left to them."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

PRELUDE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "include/gemmini_testutils.h"

static int rnd_state = 12345;
static int rnd(int lo, int hi) {
  rnd_state = rnd_state * 1103515245 + 12345;
  return lo + (int)(((unsigned)rnd_state >> 8) % (unsigned)(hi - lo + 1));
}
static elem_t sat(long long v) { return v > 127 ? 127 : (v < -128 ? -128 : (elem_t)v); }
/* The accumulator read-out: x * scale in float, ties to even, saturated. */
static elem_t scaled(long long x, float scale) { return sat((long long)nearbyintf((float)x * scale)); }
"""


def run_ok(gemmini_c, body: str) -> str:
    result = gemmini_c(PRELUDE + body)()
    assert result.returncode == 0, result.output
    return result.output


def test_a_program_may_define_its_own_full_printMatrix(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
#define ROWS 3
#define COLS 5
void full_printMatrix(elem_t m[ROWS][COLS]) {
  for (size_t i = 0; i < ROWS; i++) { for (size_t j = 0; j < COLS; j++) printf("%d ", m[i][j]); printf("\n"); }
}
int main() { static elem_t m[ROWS][COLS]; full_printMatrix(m); return 0; }
""")


def test_MAT_IS_EQUAL_compares_every_element(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
int main() {
  static elem_t a[3][7], b[3][7];
  for (int i = 0; i < 3; i++) for (int j = 0; j < 7; j++) a[i][j] = b[i][j] = (elem_t)(i * 7 + j);
  if (!MAT_IS_EQUAL(3, 7, a, b)) return 1;
  b[2][6] = 0;
  if (MAT_IS_EQUAL(3, 7, a, b)) return 2;
  return 0;
}
""")


def test_transposed_matmul_references_match_a_transposing_copy(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
int main() {
  static elem_t A[DIM][DIM], B[DIM][DIM], D[DIM][DIM], At[DIM][DIM], Bt[DIM][DIM], C[DIM][DIM], Cs[DIM][DIM];
  static full_t F[DIM][DIM], G[DIM][DIM], Dfull[DIM][DIM];
  for (int i = 0; i < DIM; i++) for (int j = 0; j < DIM; j++) {
    A[i][j] = (elem_t)rnd(-9, 9); B[i][j] = (elem_t)rnd(-9, 9); D[i][j] = (elem_t)rnd(-9, 9);
    Dfull[i][j] = D[i][j];
  }
  transpose(A, At); transpose(B, Bt);
  matmul_A_transposed(At, B, D, F); matmul(A, B, D, G);
  if (memcmp(F, G, sizeof F)) return 1;
  matmul_B_transposed(A, Bt, D, F);
  if (memcmp(F, G, sizeof F)) return 2;
  matmul_AB_transposed(At, Bt, D, F);
  if (memcmp(F, G, sizeof F)) return 3;
  matmul_full_A_transposed(At, B, Dfull, F);
  if (memcmp(F, G, sizeof F)) return 4;
  matmul_short_A_transposed(At, B, D, Cs); matmul_short(A, B, D, C);
  if (memcmp(C, Cs, sizeof C)) return 5;
  /* and by hand, so the references are not only equal to each other */
  for (int r = 0; r < DIM; r++) for (int c = 0; c < DIM; c++) {
    long long s = D[r][c];
    for (int k = 0; k < DIM; k++) s += (long long)A[r][k] * B[k][c];
    if (G[r][c] != s) return 6;
  }
  return 0;
}
""")


def test_matmul_A_transposed_checks_a_transposed_gemmini_matmul(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
int main() {
  static elem_t A[DIM][DIM] row_align(1), B[DIM][DIM] row_align(1), D[DIM][DIM] row_align(1), C[DIM][DIM] row_align(1);
  static full_t F[DIM][DIM];
  static elem_t Want[DIM][DIM];
  for (int i = 0; i < DIM; i++) for (int j = 0; j < DIM; j++) {
    A[i][j] = (elem_t)rnd(-4, 4); B[i][j] = (elem_t)rnd(-4, 4); D[i][j] = (elem_t)rnd(-4, 4);
  }
  gemmini_flush(0);
  gemmini_extended_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 0, 1, true, false);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  gemmini_mvin(A, 0); gemmini_mvin(B, DIM); gemmini_mvin(D, 2 * DIM);
  gemmini_preload(2 * DIM, 3 * DIM);
  gemmini_compute_preloaded(0, DIM);
  gemmini_mvout(C, 3 * DIM);
  gemmini_fence();
  matmul_A_transposed(A, B, D, F);
  matshift(F, Want, 0);
  return is_equal(C, Want) ? 0 : 1;
}
""")


def test_tiled_conv_dw_auto_matches_a_depthwise_reference(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
#define BATCH 2
#define ROWS 9
#define COLS 7
#define CH 5
#define K 3
#define STRIDE 2
#define PAD 1
#define OROWS ((ROWS + 2 * PAD - K) / STRIDE + 1)
#define OCOLS ((COLS + 2 * PAD - K) / STRIDE + 1)
int main() {
  static elem_t in[BATCH][ROWS][COLS][CH], w[CH][K][K], out[BATCH][OROWS][OCOLS][CH];
  static acc_t bias[CH];
  for (int b = 0; b < BATCH; b++) for (int r = 0; r < ROWS; r++) for (int c = 0; c < COLS; c++)
    for (int ch = 0; ch < CH; ch++) in[b][r][c][ch] = (elem_t)rnd(-20, 20);
  for (int ch = 0; ch < CH; ch++) { bias[ch] = rnd(-50, 50); for (int i = 0; i < K; i++) for (int j = 0; j < K; j++) w[ch][i][j] = (elem_t)rnd(-8, 8); }
  const float scale = 0.25f;
  tiled_conv_dw_auto(BATCH, ROWS, COLS, CH, OROWS, OCOLS, STRIDE, PAD, K, (elem_t *)in, (elem_t *)w, bias,
                     (elem_t *)out, RELU, scale, 1, 0, 0, WS);
  gemmini_fence();
  for (int b = 0; b < BATCH; b++) for (int orow = 0; orow < OROWS; orow++) for (int ocol = 0; ocol < OCOLS; ocol++)
    for (int ch = 0; ch < CH; ch++) {
      long long s = bias[ch];
      for (int i = 0; i < K; i++) for (int j = 0; j < K; j++) {
        int r = orow * STRIDE + i - PAD, c = ocol * STRIDE + j - PAD;
        if (r >= 0 && r < ROWS && c >= 0 && c < COLS) s += (long long)in[b][r][c][ch] * w[ch][i][j];
      }
      elem_t want = scaled(s, scale);
      if (want < 0) want = 0;
      if (out[b][orow][ocol][ch] != want) {
        printf("out[%d][%d][%d][%d] = %d, want %d\n", b, orow, ocol, ch, out[b][orow][ocol][ch], want);
        return 1;
      }
    }
  return 0;
}
""")


def test_tiled_conv_stride_auto_reads_and_writes_slices_of_wider_tensors(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
#define BATCH 1
#define DIMN 6
#define ICH 20
#define OCH 18
#define IN_STRIDE 24
#define W_STRIDE 21
#define OUT_STRIDE 25
#define K 3
#define PAD 1
int main() {
  static elem_t in[BATCH][DIMN][DIMN][IN_STRIDE], w[K * K * ICH][W_STRIDE], out[BATCH][DIMN][DIMN][OUT_STRIDE];
  static acc_t bias[OCH];
  for (int b = 0; b < BATCH; b++) for (int r = 0; r < DIMN; r++) for (int c = 0; c < DIMN; c++)
    for (int ch = 0; ch < IN_STRIDE; ch++) in[b][r][c][ch] = (elem_t)rnd(-6, 6);
  for (int i = 0; i < K * K * ICH; i++) for (int j = 0; j < W_STRIDE; j++) w[i][j] = (elem_t)rnd(-6, 6);
  for (int j = 0; j < OCH; j++) bias[j] = rnd(-100, 100);
  memset(out, 77, sizeof out);
  tiled_conv_stride_auto(BATCH, DIMN, DIMN, ICH, OCH, DIMN, DIMN, 1, 1, 1, PAD, K, IN_STRIDE, W_STRIDE, OUT_STRIDE,
                         false, false, false, false, false, (elem_t *)in, (elem_t *)w, bias, (elem_t *)out,
                         NO_ACTIVATION, 0.125f, 0, 0, 0, WS);
  gemmini_fence();
  for (int r = 0; r < DIMN; r++) for (int c = 0; c < DIMN; c++) {
    for (int o = 0; o < OCH; o++) {
      long long s = bias[o];
      for (int i = 0; i < K; i++) for (int j = 0; j < K; j++) {
        int ir = r + i - PAD, ic = c + j - PAD;
        if (ir < 0 || ir >= DIMN || ic < 0 || ic >= DIMN) continue;
        for (int ch = 0; ch < ICH; ch++) s += (long long)in[0][ir][ic][ch] * w[(i * K + j) * ICH + ch][o];
      }
      if (out[0][r][c][o] != scaled(s, 0.125f)) { printf("out[%d][%d][%d] = %d\n", r, c, o, out[0][r][c][o]); return 1; }
    }
    for (int o = OCH; o < OUT_STRIDE; o++) if (out[0][r][c][o] != 77) return 2;  /* the rest of the row untouched */
  }
  return 0;
}
""")


def test_tiled_global_average_auto_matches_the_accumulator_readout(gemmini_c) -> None:
    out = run_ok(gemmini_c, r"""
#define BATCH 3
#define CH 21
#define DIMN 5
int main() {
  static elem_t in[BATCH][DIMN][DIMN][CH], out[BATCH][CH], cpu[BATCH][CH];
  for (int b = 0; b < BATCH; b++) for (int r = 0; r < DIMN; r++) for (int c = 0; c < DIMN; c++)
    for (int ch = 0; ch < CH; ch++) in[b][r][c][ch] = (elem_t)rnd(-128, 127);
  tiled_global_average_auto((elem_t *)in, (elem_t *)out, BATCH, CH, DIMN, WS);
  tiled_global_average_auto((elem_t *)in, (elem_t *)cpu, BATCH, CH, DIMN, CPU);
  gemmini_fence();
  int differ = 0;
  for (int b = 0; b < BATCH; b++) for (int ch = 0; ch < CH; ch++) {
    long long s = 0;
    for (int r = 0; r < DIMN; r++) for (int c = 0; c < DIMN; c++) s += in[b][r][c][ch];
    if (out[b][ch] != scaled(s, 1.0f / (DIMN * DIMN))) { printf("out[%d][%d] = %d\n", b, ch, out[b][ch]); return 1; }
    long long want_cpu = (s + DIMN * DIMN / 2) / (DIMN * DIMN);
    if (cpu[b][ch] != want_cpu) return 2;
    differ += cpu[b][ch] != out[b][ch];
  }
  printf("cpu and gemmini roundings differ on %d of %d\n", differ, BATCH * CH);
  return 0;
}
""")
    assert "differ on" in out


def test_tiled_resadd_auto_matches_scaled_saturated_addition(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
#define I 37
#define J 45
int main() {
  static elem_t A[I][J], B[I][J], C[I][J], Cpu[I][J];
  for (int i = 0; i < I; i++) for (int j = 0; j < J; j++) { A[i][j] = (elem_t)rnd(-128, 127); B[i][j] = (elem_t)rnd(-128, 127); }
  const float a_scale = 0.5f, b_scale = 1.5f, c_scale = 0.75f;
  for (int relu = 0; relu < 2; relu++) {
    tiled_resadd_auto(I, J, a_scale, b_scale, c_scale, (elem_t *)A, (elem_t *)B, (elem_t *)C, relu, WS);
    tiled_resadd_auto(I, J, a_scale, b_scale, c_scale, (elem_t *)A, (elem_t *)B, (elem_t *)Cpu, relu, CPU);
    gemmini_fence();
    for (int i = 0; i < I; i++) for (int j = 0; j < J; j++) {
      long long sum = (long long)scaled(A[i][j], a_scale) + scaled(B[i][j], b_scale);  /* each saturated on mvin */
      elem_t want = scaled(sum, c_scale);
      if (relu && want < 0) want = 0;
      if (C[i][j] != want || Cpu[i][j] != want) {
        printf("relu %d C[%d][%d] = %d (cpu %d), want %d\n", relu, i, j, C[i][j], Cpu[i][j], want);
        return 1;
      }
    }
  }
  return 0;
}
""")


def test_ACC_SCALE_saturates_to_elem_t_like_the_accumulators_mvout(gemmini_c) -> None:
    # Upstream's default params header saturates ACC_SCALE to int8's range; mvin_mvout_acc_zero_stride.c assigns
    # ACC_SCALE(acc value) to an elem_t and compares it with what mvout read out of the accumulator.
    run_ok(gemmini_c, r"""
static acc_t In[DIM] row_align_acc(1);
static elem_t Out[DIM][DIM] row_align(1);
int main() {
  for (int j = 0; j < DIM; j++) In[j] = (j % 2 ? 1 : -1) * (j * 40000 + 3);
  gemmini_flush(0);
  gemmini_config_ld(0);  /* every row reads the same DRAM row */
  gemmini_config_ex(WS, NO_ACTIVATION, 0);
  gemmini_config_st(DIM * sizeof(elem_t));
  gemmini_mvin(In, (uint32_t)1 << (ADDR_LEN - 1));
  gemmini_mvout(Out, (uint32_t)1 << (ADDR_LEN - 1));
  gemmini_fence();
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      elem_t gold = ACC_SCALE(In[j], ACC_SCALE_IDENTITY);
      if (Out[i][j] != gold || gold != scaled(In[j], 1.0f)) { printf("at %d %d: %d %d\n", i, j, Out[i][j], gold); return 1; }
    }
  if (ACC_SCALE(300, 0.5f) != 127 || ACC_SCALE(-301, 0.25f) != -75 || ACC_SCALE(5, 0.5f) != 2) return 2;
  return 0;
}
""")


def test_ROUND_NEAR_EVEN_rounds_ties_to_even_in_its_own_type(gemmini_c) -> None:
    run_ok(gemmini_c, r"""
int main() {
  if (ROUND_NEAR_EVEN(2.5f) != 2.0f || ROUND_NEAR_EVEN(3.5f) != 4.0f || ROUND_NEAR_EVEN(-2.5f) != -2.0f) return 1;
  if (ROUND_NEAR_EVEN(2.6) != 3.0 || ROUND_NEAR_EVEN(-0.4) != 0.0) return 2;
  if (sizeof(ROUND_NEAR_EVEN(1.5f)) != sizeof(float) || sizeof(ROUND_NEAR_EVEN(1.5)) != sizeof(double)) return 3;
  return 0;
}
""")
