"""The instruction stream of our library calls is upstream's (gemmini-rocc-tests include/gemmini.h), and the
model reads the loops' scratchpad ids as the hardware does (gemmini LoopMatmul.scala / LoopConv.scala).

- tiled_matmul_auto picks upstream's tiles; an operand whose tiles number at most two (B: J0*K0, A: I0*K0)
  is moved in once, each tile into a half of its own (id 1 / 2), and later loops pass NULL;
- tiled_conv does the same for weights (input channels x output channels x kernel tiles) and input
  (everything but output channels);
- scratchpad id 0 is the half of the loop unit's slot, and consecutive loops alternate slots; ids 1 and 2
  name a half whatever the slot.

Each test runs a small program on the native model and checks its counters (instructions the loops
generated, DRAM bytes) or its results against expectations worked out by hand in the test."""

from __future__ import annotations

import re

HEAD = r"""
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
"""

LOOPS = HEAD + r"""
static elem_t A[4][DIM][DIM], B[4][DIM][DIM], C[DIM][DIM];

/* One 16x16x16 LOOP_WS: C = A * B with scale 1, no bias; a NULL operand is the one already in that half. */
static void loop(const elem_t *a, const elem_t *b, int a_id, int b_id) {
  gemmini_loop_ws(1, 1, 1, 0, 0, 0, a, b, NULL, C, DIM, DIM, 0, DIM, false, false, false, false, false,
                  NO_ACTIVATION, a_id, b_id, false);
  gemmini_fence();
}

/* Whether C is A[x] * B[y]. */
static int product_of(int x, int y) {
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      int s = 0;
      for (int k = 0; k < DIM; k++) s += A[x][i][k] * B[y][k][j];
      s = s > 127 ? 127 : (s < -128 ? -128 : s);
      if (C[i][j] != s) return 0;
    }
  return 1;
}

int main(void) {
  for (int m = 0; m < 4; m++)
    for (int i = 0; i < DIM; i++)
      for (int j = 0; j < DIM; j++) {
        A[m][i][j] = (elem_t)((i + 2 * j + 3 * m) % 5 - 2);
        B[m][i][j] = (elem_t)((3 * i + j + 5 * m) % 7 - 3);
      }
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(DIM, NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(DIM, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(DIM, MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);
BODY
  return 0;
}
"""


def _loops(gemmini_c, body: str) -> list[str]:
    res = gemmini_c(LOOPS.replace("BODY", body))()
    assert res.returncode == 0, res.output
    return re.findall(r"^check \S+ (\S+)$", res.output, re.M)


def test_spad_id_0_alternates_halves_between_consecutive_loops_like_the_loop_slots(gemmini_c):
    # Loops 1 and 2 (id 0) land in slots 0 and 1 = halves 1 and 2; loop 3 (id 0) is back in slot 0 and
    # replaces half 1. Loops that pass NULL with explicit ids then read what each half holds.
    checks = _loops(gemmini_c, r"""
  loop(&A[0][0][0], &B[0][0][0], 0, 0);
  loop(&A[1][0][0], &B[1][0][0], 0, 0);
  loop(NULL, NULL, 1, 2); printf("check a0b1 %s\n", product_of(0, 1) ? "ok" : "FAIL");
  loop(NULL, NULL, 2, 1); printf("check a1b0 %s\n", product_of(1, 0) ? "ok" : "FAIL");
  loop(&A[2][0][0], &B[2][0][0], 0, 0);
  loop(NULL, NULL, 1, 2); printf("check a2b1 %s\n", product_of(2, 1) ? "ok" : "FAIL");
""")
    assert checks == ["ok", "ok", "ok"]


def test_spad_ids_1_and_2_name_their_half_whatever_the_loop_slot(gemmini_c):
    # Loop 1 runs in slot 0 but asks for half 2; loop 2 (slot 1) asks for half 1; loop 3 (slot 0) reads both.
    checks = _loops(gemmini_c, r"""
  loop(&A[0][0][0], &B[0][0][0], 2, 2);
  loop(&A[1][0][0], &B[1][0][0], 1, 1);
  loop(NULL, NULL, 2, 1); printf("check a0b1 %s\n", product_of(0, 1) ? "ok" : "FAIL");
""")
    assert checks == ["ok"]


def test_spad_id_3_is_refused_with_a_message(gemmini_c):
    res = gemmini_c(LOOPS.replace("BODY", "  loop(&A[0][0][0], &B[0][0][0], 3, 0);"))()
    assert res.returncode == 3
    assert "scratchpad id 3 for A names no half" in res.output, res.output


CONV = HEAD + r"""
#define OUT_CH %(och)d
static elem_t in[1][8][8][16], w[3][3][16][OUT_CH], out[1][8][8][OUT_CH], gold[1][8][8][OUT_CH];
static acc_t bias[OUT_CH];

int main(void) {
  for (int r = 0; r < 8; r++) for (int c = 0; c < 8; c++) for (int ch = 0; ch < 16; ch++)
    in[0][r][c][ch] = (elem_t)((r * 3 + c * 5 + ch) %% 7 - 3);
  for (int kr = 0; kr < 3; kr++) for (int kc = 0; kc < 3; kc++) for (int ic = 0; ic < 16; ic++)
    for (int oc = 0; oc < OUT_CH; oc++) w[kr][kc][ic][oc] = (elem_t)((kr + 2 * kc + ic * 3 + oc) %% 5 - 2);
  for (int oc = 0; oc < OUT_CH; oc++) bias[oc] = oc * 10 - 50;
  /* 1 x 8x8 x 16 -> OUT_CH, 3x3, padding 1; tiles: 1 batch, %(porows)d output rows, 8 columns, 16 output
   * channels, the whole 3x3 kernel and all 16 input channels. */
  tiled_conv(1, 8, 8, 16, OUT_CH, 8, 8, 1, 1, 1, 1, 3, false, false, false, false, false, 1, %(porows)d, 8, 16,
             3, 3, 16, (elem_t *)in, (elem_t *)w, bias, (elem_t *)gold, NO_ACTIVATION, 0.0625f, 0, 0, 0, CPU);
  gemmini_flush(0);
  tiled_conv(1, 8, 8, 16, OUT_CH, 8, 8, 1, 1, 1, 1, 3, false, false, false, false, false, 1, %(porows)d, 8, 16,
             3, 3, 16, (elem_t *)in, (elem_t *)w, bias, (elem_t *)out, NO_ACTIVATION, 0.0625f, 0, 0, 0, WS);
  gemmini_fence();
  printf("result %%s\n", memcmp(out, gold, sizeof out) == 0 ? "ok" : "FAIL");
  return 0;
}
"""


def _conv(gemmini_c, out_channels: int, porows: int):
    res = gemmini_c(CONV % {"och": out_channels, "porows": porows})()
    assert res.returncode == 0, res.output
    assert "result ok" in res.output, res.output
    return res.stats


def test_conv_weights_that_fit_both_halves_are_moved_in_once_for_all_pixel_tiles(gemmini_c):
    # Two tiles of 4 output rows, one weight tile (16 -> 16 channels, 3x3): the weights are moved in by the
    # first loop only, 3 x 3 kernel positions x one 16x16 mvin = 9 mvins (18 when the second loop reloads).
    stats = _conv(gemmini_c, out_channels=16, porows=4)
    assert stats["instructions"]["LOOP_CONV_WS"] == 2
    assert stats["executed_instructions"]["MVIN2"] == 9


def test_conv_input_that_fits_both_halves_is_moved_in_once_for_all_output_channel_tiles(gemmini_c):
    # One pixel tile (all 8 rows), two output-channel tiles (32 = 2 x 16): the input is moved in by the first
    # loop only: 10 input rows (8 + 2 padding) x 3 pieces (left padding, 8 pixels, right padding) = 30 mvins
    # (60 when the second loop reloads it). Each loop moves its own 16 output channels of weights: 2 x 9.
    stats = _conv(gemmini_c, out_channels=32, porows=8)
    assert stats["instructions"]["LOOP_CONV_WS"] == 2
    assert stats["executed_instructions"]["MVIN"] == 30
    assert stats["executed_instructions"]["MVIN2"] == 18
