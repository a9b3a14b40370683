"""Convolutions with upstream's layout flags, as gemmini-rocc-tests' conv_with_rot180.c, conv_trans_output_1203.c,
conv_trans_input_3120.c, conv_trans_weight_1203.c and conv_trans_weight_0132.c call them: wrot180 (the kernel
rotated by 180 degrees), the input as [in_ch][row][col][batch] (3120), the output as [orow][ocol][batch][out_ch]
(1203), the weights as [in_ch][krow][kcol][out_ch] (1203) or [krow][kcol][out_ch][in_ch] (0132). Each is checked
on a program of our own against a convolution the program computes on the core from the logical tensors, on the
hardware loop with tiles that split batches, rows, columns, kernel rows and both channel counts (so every tile's
operand pointers are exercised), with tiled_conv_auto's tiles, and on the library's CPU path. Input dilation (2,
with stride 1, as upstream's loop unit does it) is checked the same way. What the hardware cannot do (both
operands transposed, a transposed output pooled, dilation above 2 or with a stride) stops with an error that
names it."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define ROT @ROT@
#define OUT_1203 @OUT_1203@
#define IN_3120 @IN_3120@
#define W_1203 @W_1203@
#define W_0132 @W_0132@
#define BATCH 2
#define IN_ROWS 9
#define IN_COLS 8
#define ICH 20
#define OCH 19
#define KDIM 3
#define STRIDE @STRIDE@
#define PAD @PAD@
#define DIL @DIL@
#define DIL_ROWS (IN_ROWS + (DIL - 1) * (IN_ROWS - 1))
#define DIL_COLS (IN_COLS + (DIL - 1) * (IN_COLS - 1))
#define OUT_ROWS ((DIL_ROWS + 2 * PAD - KDIM) / STRIDE + 1)
#define OUT_COLS ((DIL_COLS + 2 * PAD - KDIM) / STRIDE + 1)

static elem_t In[BATCH][IN_ROWS][IN_COLS][ICH], W[KDIM][KDIM][ICH][OCH];  /* logical tensors */
static elem_t in_mem[BATCH * IN_ROWS * IN_COLS * ICH], w_mem[KDIM * KDIM * ICH * OCH];
static elem_t out_mem[BATCH * OUT_ROWS * OUT_COLS * OCH];
static acc_t Bias[OCH];
static int rnd_state = 97;
static int rnd(int lo, int hi) {
  rnd_state = rnd_state * 1103515245 + 12345;
  return lo + (int)(((unsigned)rnd_state >> 8) % (unsigned)(hi - lo + 1));
}

static int check(const char *what) {
  for (int b = 0; b < BATCH; b++)
    for (int orow = 0; orow < OUT_ROWS; orow++)
      for (int ocol = 0; ocol < OUT_COLS; ocol++)
        for (int och = 0; och < OCH; och++) {
          long long sum = Bias[och];
          for (int kr = 0; kr < KDIM; kr++)
            for (int kc = 0; kc < KDIM; kc++)
              for (int ich = 0; ich < ICH; ich++) {
                /* coordinates in the dilated image: DIL-1 zeros between two input pixels */
                int irow = orow * STRIDE + kr - PAD, icol = ocol * STRIDE + kc - PAD;
                if (irow < 0 || icol < 0 || irow >= DIL_ROWS || icol >= DIL_COLS) continue;
                if (irow % DIL != 0 || icol % DIL != 0) continue;
                int wr = ROT ? KDIM - 1 - kr : kr, wc = ROT ? KDIM - 1 - kc : kc;
                sum += In[b][irow / DIL][icol / DIL][ich] * W[wr][wc][ich][och];
              }
          elem_t want = sum > 127 ? 127 : (sum < 0 ? 0 : (elem_t)sum);  /* ReLU, scale 1 */
          size_t at = OUT_1203 ? ((size_t)(orow * OUT_COLS + ocol) * BATCH + b) * OCH + och
                               : ((size_t)(b * OUT_ROWS + orow) * OUT_COLS + ocol) * OCH + och;
          if (out_mem[at] != want) {
            printf("%s: mismatch at b=%d orow=%d ocol=%d och=%d: %d, want %d\n", what, b, orow, ocol, och,
                   out_mem[at], want);
            return 1;
          }
        }
  return 0;
}

int main() {
  for (int b = 0; b < BATCH; b++)
    for (int r = 0; r < IN_ROWS; r++)
      for (int c = 0; c < IN_COLS; c++)
        for (int i = 0; i < ICH; i++) {
          In[b][r][c][i] = (elem_t)rnd(-3, 3);
          size_t at = IN_3120 ? (((size_t)i * IN_ROWS + r) * IN_COLS + c) * BATCH + b
                              : (((size_t)b * IN_ROWS + r) * IN_COLS + c) * ICH + i;
          in_mem[at] = In[b][r][c][i];
        }
  for (int kr = 0; kr < KDIM; kr++)
    for (int kc = 0; kc < KDIM; kc++)
      for (int i = 0; i < ICH; i++)
        for (int o = 0; o < OCH; o++) {
          W[kr][kc][i][o] = (elem_t)rnd(-3, 3);
          size_t at = W_1203   ? (((size_t)i * KDIM + kr) * KDIM + kc) * OCH + o
                      : W_0132 ? (((size_t)kr * KDIM + kc) * OCH + o) * ICH + i
                               : (((size_t)kr * KDIM + kc) * ICH + i) * OCH + o;
          w_mem[at] = W[kr][kc][i][o];
        }
  for (int o = 0; o < OCH; o++) Bias[o] = rnd(-40, 40);
  gemmini_flush(0);
  /* tiles: 1 batch, 2 rows, 3 columns, 16 output channels; 2 kernel rows, 2 kernel columns, 16 input channels */
  tiled_conv(BATCH, IN_ROWS, IN_COLS, ICH, OCH, OUT_ROWS, OUT_COLS, STRIDE, DIL, 1, PAD, KDIM, ROT, OUT_1203, IN_3120,
             W_1203, W_0132, 1, 2, 3, 16, 2, 2, 16, in_mem, w_mem, Bias, out_mem, RELU, ACC_SCALE_IDENTITY, 0, 0, 0,
             WS);
  gemmini_fence();
  if (check("tiled_conv, small tiles")) return 1;
  for (size_t i = 0; i < sizeof out_mem; i++) out_mem[i] = 99;
  tiled_conv_auto(BATCH, IN_ROWS, IN_COLS, ICH, OCH, OUT_ROWS, OUT_COLS, STRIDE, DIL, 1, PAD, KDIM, ROT, OUT_1203,
                  IN_3120, W_1203, W_0132, in_mem, w_mem, Bias, out_mem, RELU, ACC_SCALE_IDENTITY, 0, 0, 0, WS);
  gemmini_fence();
  if (check("tiled_conv_auto")) return 1;
  for (size_t i = 0; i < sizeof out_mem; i++) out_mem[i] = 99;
  tiled_conv_auto(BATCH, IN_ROWS, IN_COLS, ICH, OCH, OUT_ROWS, OUT_COLS, STRIDE, DIL, 1, PAD, KDIM, ROT, OUT_1203,
                  IN_3120, W_1203, W_0132, in_mem, w_mem, Bias, out_mem, RELU, ACC_SCALE_IDENTITY, 0, 0, 0, CPU);
  if (check("CPU")) return 1;
  printf("ok\n");
  return 0;
}
"""

FLAGS = ("ROT", "OUT_1203", "IN_3120", "W_1203", "W_0132")


def program(*on: str, stride: int = 2, pad: int = 1, dilation: int = 1) -> str:
    text = PROGRAM.replace("@STRIDE@", str(stride)).replace("@PAD@", str(pad)).replace("@DIL@", str(dilation))
    for flag in FLAGS:
        text = text.replace(f"@{flag}@", "true" if flag in on else "false")
    return text


@pytest.mark.parametrize("flags", [("ROT",), ("OUT_1203",), ("IN_3120",), ("W_1203",), ("W_0132",),
                                   ("ROT", "OUT_1203", "IN_3120", "W_1203")],
                         ids=lambda f: "+".join(f))
def test_a_convolution_in_upstreams_layouts_matches_the_core_reference(gemmini_c, flags: tuple[str, ...]) -> None:
    result = gemmini_c(program(*flags))()
    assert result.returncode == 0, result.output
    assert result.output.strip().endswith("ok")


def test_the_nhwc_program_is_the_control(gemmini_c) -> None:
    # Without flags the same program passes; with the reference's layout swapped it must not (the check can fail).
    assert gemmini_c(program())().returncode == 0
    wrong = program("ROT").replace("int wr = ROT ? KDIM - 1 - kr : kr", "int wr = kr")
    result = gemmini_c(wrong)()
    assert result.returncode == 1 and "mismatch" in result.output


@pytest.mark.parametrize(("flags", "message"), [
    (("IN_3120", "W_0132"), "trans_input_3120 and trans_weight_0132 cannot both be set"),
    (("W_1203", "W_0132"), "trans_weight_1203 and trans_weight_0132 cannot both be set"),
])
def test_layouts_the_hardware_cannot_combine_are_refused(gemmini_c, flags: tuple[str, ...], message: str) -> None:
    result = gemmini_c(program(*flags))()
    assert result.returncode == 3, result.output
    assert message in result.output


def test_a_pooled_transposed_output_is_refused(gemmini_c) -> None:
    text = program("OUT_1203").replace("RELU, ACC_SCALE_IDENTITY, 0, 0, 0,\n             WS);",
                                       "RELU, ACC_SCALE_IDENTITY, 3, 2, 1,\n             WS);")
    result = gemmini_c(text)()
    assert result.returncode == 3, result.output
    assert "pooling with trans_output_1203 is not implemented" in result.output


@pytest.mark.parametrize(("pad", "flags"), [(1, ()), (-1, ()), (0, ("ROT",)), (2, ("OUT_1203", "W_0132"))],
                         ids=["pad1", "negative-pad", "pad0-rot180", "pad2-1203-0132"])
def test_an_input_dilated_convolution_matches_the_core_reference(gemmini_c, pad: int, flags: tuple[str, ...]) -> None:
    # conv_with_input_dilation*.c: dilation 2 and stride 1 on the loop unit (its input_dilated bit, C_stride 2),
    # windows that start or end between two input pixels included (odd paddings).
    result = gemmini_c(program(*flags, stride=1, pad=pad, dilation=2))()
    assert result.returncode == 0, result.output
    assert result.output.strip().endswith("ok")


@pytest.mark.parametrize(("stride", "dilation", "message"), [
    (2, 2, "input_dilation needs stride 1 on Gemmini"),
    (1, 3, "input_dilation above 2 is only implemented on the CPU"),
])
def test_an_input_dilation_the_loop_unit_cannot_do_is_refused(gemmini_c, stride: int, dilation: int,
                                                              message: str) -> None:
    result = gemmini_c(program(stride=stride, dilation=dilation))()
    assert result.returncode == 3, result.output
    assert message in result.output
