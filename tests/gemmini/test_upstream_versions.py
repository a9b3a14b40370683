"""Programs written against older versions of the Gemmini library compile and compute what those versions
did: gemmini_config_ex with 2, 4 or 5 arguments (and gemmini_extended_config_ex with 7 or 8),
gemmini_extended_config_st with 10, tiled_matmul_auto with 12, 19, 22, 23 or 25, tiled_matmul with 26,
gemmini_loop_ws with 19 or 20, tiled_conv_auto with 19 or 26, tiled_conv with 33, tiled_conv_dw_auto with
18; and IGELU (activation 3)
on a configuration with normalizations. Each form is checked on a program of our own against a reference the
program computes on the core (IGELU against values worked out by hand); what an older form asked for that is
not implemented stops with an error that says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

PRELUDE = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static int rnd_state = 4321;
static int rnd(int lo, int hi) {
  rnd_state = rnd_state * 1103515245 + 12345;
  return lo + (int)(((unsigned)rnd_state >> 8) % (unsigned)(hi - lo + 1));
}
static elem_t sat(long long v) { return v > 127 ? 127 : (v < -128 ? -128 : (elem_t)v); }
/* The accumulator read-out: x * scale in float, ties to even, saturated; then ReLU when asked. */
static elem_t readout(long long x, float scale, int relu) {
  elem_t e = sat((long long)nearbyintf((float)x * scale));
  return relu && e < 0 ? 0 : e;
}
"""


def run(gemmini_c, body: str):
    return gemmini_c(PRELUDE + body)()


def run_ok(gemmini_c, body: str) -> str:
    result = run(gemmini_c, body)
    assert result.returncode == 0, result.output
    return result.output


# ---- gemmini_config_ex / gemmini_extended_config_ex ---------------------------------------------------

# One output-stationary block written to the scratchpad: the systolic array's shift (rounding, ties to
# even) and activation apply to it, so a form that misplaces sys_shift or act changes the result.
OS_BLOCK = r"""
#define CONFIGURE() @CONFIG@
#define SHIFT @SHIFT@
#define ACT_RELU @RELU@
static elem_t A[DIM][DIM], B[DIM][DIM], C[DIM][DIM];
static long long rounding_shift(long long x, int s) {
  if (s == 0) return x;
  long long q = x >> s, half = (x >> (s - 1)) & 1, below = (x & ((1LL << (s - 1)) - 1)) != 0;
  return q + (half & (below | (q & 1)));
}
int main() {
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) { A[i][j] = (elem_t)rnd(-9, 9); B[i][j] = (elem_t)rnd(-9, 9); }
  gemmini_flush(0);
  CONFIGURE();
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  gemmini_mvin(A, 0);
  gemmini_mvin(B, DIM);
  gemmini_preload(GARBAGE_ADDR, 2 * DIM);
  gemmini_compute_preloaded(0, DIM);
  gemmini_mvout(C, 2 * DIM);
  gemmini_fence();
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      long long sum = 0;
      for (int k = 0; k < DIM; k++) sum += A[i][k] * B[k][j];
      elem_t want = sat(rounding_shift(sum, SHIFT));
      if (ACT_RELU && want < 0) want = 0;
      if (C[i][j] != want) { printf("C[%d][%d] = %d, want %d\n", i, j, C[i][j], want); return 1; }
    }
  printf("ok\n");
  return 0;
}
"""

CONFIG_EX_FORMS = {
    "3 arguments (current)": ("gemmini_config_ex(OUTPUT_STATIONARY, RELU, 2)", 2, 1),
    "4 arguments (with relu6_shift)": ("gemmini_config_ex(OUTPUT_STATIONARY, RELU, 2, 3)", 2, 1),
    "5 arguments, integer accumulator shift": ("gemmini_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 3, 0, 1)", 3, 0),
    "5 arguments, float accumulator scale": ("gemmini_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 1, 1.0, 0)", 1, 0),
    "2 arguments (no activation)": ("gemmini_config_ex(OUTPUT_STATIONARY, 2)", 2, 0),
    "extended, 7 arguments": ("gemmini_extended_config_ex(OUTPUT_STATIONARY, RELU, 2, 4, 1, false, false)", 2, 1),
    "extended, 8 arguments": (
        "gemmini_extended_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 3, 0, 0, 1, false, false)", 3, 0),
}


@pytest.mark.parametrize("form", list(CONFIG_EX_FORMS))
def test_each_config_ex_argument_list_sets_the_dataflow_shift_and_activation(gemmini_c, form: str) -> None:
    config, shift, relu = CONFIG_EX_FORMS[form]
    assert run_ok(gemmini_c, OS_BLOCK.replace("@CONFIG@", config).replace("@SHIFT@", str(shift)).replace("@RELU@", str(relu))).strip() == "ok"


@pytest.mark.parametrize("config,expected", [
    ("gemmini_config_ex(WEIGHT_STATIONARY, 2, 0, 0, 1)", "activation 2 was RELU6"),
    ("gemmini_config_ex(WEIGHT_STATIONARY, 3, 0, 0, 0)", "only NO_ACTIVATION and RELU"),
    ("gemmini_extended_config_st(DIM, 1, 2, 8, 4, 4, 8, 8, 0, 0); gemmini_config_ex(WEIGHT_STATIONARY, RELU, 0, 1, 0)",
     "after a pooling config_st"),
])
def test_a_five_argument_config_ex_asking_for_a_readout_it_cannot_set_stops(gemmini_c, config: str,
                                                                             expected: str) -> None:
    # In those versions config_ex also scaled and activated accumulator read-outs (test_upstream_relu6_era.py);
    # RELU6 (which today's Gemmini has not), an activation those versions did not have, and a read-out after a
    # pooled store config stop.
    result = run(gemmini_c, r"""
int main() {
  gemmini_flush(0);
  @CONFIG@;
  printf("went on\n");
  return 0;
}
""".replace("@CONFIG@", config))
    assert result.returncode == 3, result.output
    assert "gemmini_config_ex (" in result.output and "an older library's" in result.output
    assert expected in result.output
    assert "went on" not in result.output


def test_the_ten_argument_extended_config_st_sets_the_store_stride_with_the_identity_readout(gemmini_c) -> None:
    out = run_ok(gemmini_c, r"""
static acc_t In[DIM][DIM];
static elem_t Out[DIM][2 * DIM];
int main() {
  for (int i = 0; i < DIM; i++) for (int j = 0; j < DIM; j++) In[i][j] = rnd(-300, 300);
  for (int i = 0; i < DIM; i++) for (int j = 0; j < 2 * DIM; j++) Out[i][j] = 77;
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(acc_t));
  gemmini_extended_config_st(2 * DIM * sizeof(elem_t), 0, 0, 0, 0, 0, 0, 0, 0, 0);
  gemmini_mvin(In, GEMMINI_ACC_ADDR);
  gemmini_mvout(Out, GEMMINI_ACC_ADDR);
  gemmini_fence();
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < 2 * DIM; j++) {
      elem_t want = j < DIM ? sat(In[i][j]) : 77;
      if (Out[i][j] != want) { printf("Out[%d][%d] = %d, want %d\n", i, j, Out[i][j], want); return 1; }
    }
  printf("ok\n");
  return 0;
}
""")
    assert out.strip() == "ok"


# ---- tiled_matmul_auto ---------------------------------------------------------------------------------

# C = relu(0.25 * (A*B + D)) on a shape that is no multiple of DIM; At is A stored transposed (K x I).
MATMUL = r"""
#define I 37
#define J 29
#define K 45
static elem_t A[I][K], At[K][I], B[K][J], C[I][J];
static acc_t D[I][J];
int main() {
  for (int i = 0; i < I; i++) for (int k = 0; k < K; k++) At[k][i] = A[i][k] = (elem_t)rnd(-20, 20);
  for (int k = 0; k < K; k++) for (int j = 0; j < J; j++) B[k][j] = (elem_t)rnd(-20, 20);
  for (int i = 0; i < I; i++) for (int j = 0; j < J; j++) { D[i][j] = rnd(-500, 500); C[i][j] = 99; }
  gemmini_flush(0);
  @CALL@;
  gemmini_fence();
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      long long sum = D[i][j];
      for (int k = 0; k < K; k++) sum += A[i][k] * B[k][j];
      elem_t want = readout(sum, 0.25f, 1);
      if (C[i][j] != want) { printf("C[%d][%d] = %d, want %d\n", i, j, C[i][j], want); return 1; }
    }
  printf("ok\n");
  return 0;
}
"""

S = "(elem_t *)A, (elem_t *)B, (acc_t *)D, (elem_t *)C, K, J, J, J"
ST = "(elem_t *)At, (elem_t *)B, (acc_t *)D, (elem_t *)C, I, J, J, J"
F = "MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY"
MATMUL_FORMS = {
    "24 (current)": f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, false, false, false, false, 0, WS)",
    "25 (false between weightA and the dataflow)":
        f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, false, false, false, false, 0, false, WS)",
    "23 (before weightA)": f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, false, false, false, false, WS)",
    "23, A transposed": f"tiled_matmul_auto(I, J, K, {ST}, {F}, RELU, 0.25, 0, false, true, false, false, false, WS)",
    "22 (before low_D)": f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, false, false, false, WS)",
    "22, A transposed": f"tiled_matmul_auto(I, J, K, {ST}, {F}, RELU, 0.25, 0, false, true, false, false, WS)",
    "19, float scale": f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, WS)",
    "19, integer shift": f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 2, 0, false, WS)",
    "12 (dense arrays, shift)": "tiled_matmul_auto(I, J, K, A, B, (acc_t *)D, C, RELU, 2, 0, false, WS)",
    "12 on the CPU": "tiled_matmul_auto(I, J, K, A, B, (acc_t *)D, C, RELU, 2, 0, false, CPU)",
    "tiled_matmul, 27 (current)":
        f"tiled_matmul(I, J, K, {S}, {F}, RELU, 0.25, 0, false, 2, 1, 2, false, false, false, false, 0, WS)",
    "tiled_matmul, 26 (before weightA)":
        f"tiled_matmul(I, J, K, {S}, {F}, RELU, 0.25, 0, false, 2, 1, 2, false, false, false, false, WS)",
    "tiled_matmul, 26, A transposed":
        f"tiled_matmul(I, J, K, {ST}, {F}, RELU, 0.25, 0, false, 1, 2, 3, true, false, false, false, WS)",
}


@pytest.mark.parametrize("form", list(MATMUL_FORMS))
def test_each_tiled_matmul_argument_list_computes_the_scaled_biased_relu_product(gemmini_c, form: str) -> None:
    assert run_ok(gemmini_c, MATMUL.replace("@CALL@", MATMUL_FORMS[form])).strip() == "ok"


def test_the_22_argument_tiled_matmul_auto_writes_full_width_results(gemmini_c) -> None:
    out = run_ok(gemmini_c, r"""
#define I 21
#define J 35
#define K 19
static elem_t A[I][K], B[K][J];
static acc_t C[I][J];
int main() {
  for (int i = 0; i < I; i++) for (int k = 0; k < K; k++) A[i][k] = (elem_t)rnd(-128, 127);
  for (int k = 0; k < K; k++) for (int j = 0; j < J; j++) B[k][j] = (elem_t)rnd(-128, 127);
  gemmini_flush(0);
  tiled_matmul_auto(I, J, K, (elem_t *)A, (elem_t *)B, NULL, C, K, J, J, J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY,
                    NO_ACTIVATION, ACC_SCALE_IDENTITY, 0, false, false, false, true, WS);
  gemmini_fence();
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      long long sum = 0;
      for (int k = 0; k < K; k++) sum += A[i][k] * B[k][j];
      if (C[i][j] != sum) { printf("C[%d][%d] = %d, want %lld\n", i, j, C[i][j], sum); return 1; }
    }
  printf("ok\n");
  return 0;
}
""")
    assert out.strip() == "ok"


@pytest.mark.parametrize("call,function,expected", [
    (f"tiled_matmul_auto(I, J, K, {S}, {F}, RELU, 0.25, 0, false, false, false, false, false, 0, true, WS)",
     "tiled_matmul_auto (25 arguments)", "only false is implemented"),
    (f"tiled_matmul_auto(I, J, K, {S}, {F}, 2, 0.25, 3, false, false, false, false, false, WS)",
     "tiled_matmul_auto (23 arguments)", "activation 2 was RELU6"),
    ("tiled_matmul_auto(I, J, K, A, B, (acc_t *)D, C, 2, 0, 1, false, WS)",
     "tiled_matmul_auto (12 arguments)", "activation 2 was RELU6"),
])
def test_an_older_tiled_matmul_auto_asking_for_what_is_not_implemented_stops(gemmini_c, call: str, function: str,
                                                                              expected: str) -> None:
    result = run(gemmini_c, MATMUL.replace("@CALL@", call))
    assert result.returncode == 3, result.output
    assert f"gemmini library error: {function}:" in result.output and expected in result.output


def test_an_argument_count_no_version_had_is_a_compile_error_naming_the_count(tmp_path: Path) -> None:
    from speedpatch.targets.gemmini.build import build_native

    src = tmp_path / "prog.c"
    src.write_text(PRELUDE + r"""
static elem_t A[16][16], B[16][16], C[16][16];
int main() {
  tiled_matmul_auto(16, 16, 16, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, 16, 16, 16, 16,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0, 0, false, WS,
                    0);
  return 0;
}
""")
    res, exe = build_native(src, tmp_path, timeout=120)
    assert exe is None
    assert "tiled_matmul_auto_with_20_args" in res.output


# ---- gemmini_loop_ws --------------------------------------------------------------------------------------

# C = sat(A*B + D) for 32 x 32 x 32, one LOOP_WS of 2 x 2 x 2 blocks issued by the program itself.
LOOP_WS = r"""
#define N (2 * DIM)
static elem_t A[N][N], B[N][N], C[N][N];
static acc_t D[N][N];
int main() {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) { A[i][j] = (elem_t)rnd(-9, 9); B[i][j] = (elem_t)rnd(-9, 9); D[i][j] = rnd(-300, 300); }
  gemmini_flush(0);
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(N * sizeof(elem_t), NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(N * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(N * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(N * sizeof(acc_t), MVIN_SCALE_IDENTITY, false, 2);
  gemmini_loop_ws(2, 2, 2, 0, 0, 0, A, B, D, C, N, N, N, N, false, false, false, false, true@TAIL@);
  gemmini_fence();
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      long long sum = D[i][j];
      for (int k = 0; k < N; k++) sum += A[i][k] * B[k][j];
      if (C[i][j] != sat(sum)) { printf("C[%d][%d] = %d, want %d\n", i, j, C[i][j], sat(sum)); return 1; }
    }
  printf("ok\n");
  return 0;
}
"""


@pytest.mark.parametrize("tail", [", NO_ACTIVATION, 0, 0, false", ", NO_ACTIVATION", ""],
                         ids=["23 (current)", "20 (act, no scratchpad ids)", "19 (no act)"])
def test_each_loop_ws_argument_list_runs_the_hardware_loop(gemmini_c, tail: str) -> None:
    assert run_ok(gemmini_c, LOOP_WS.replace("@TAIL@", tail)).strip() == "ok"


def test_the_20_argument_loop_ws_puts_act_in_the_loops_activation_field(gemmini_c) -> None:
    # Activation 2 in LOOP_WS's field is LayerNorm: the loop moves C out through the normalizer's commands,
    # which the default configuration (no HAS_NORMALIZATIONS) refuses by name: the argument reached the field.
    result = run(gemmini_c, LOOP_WS.replace("@TAIL@", ", LAYERNORM"))
    assert result.returncode != 0
    assert "normalization command 1" in result.output and "HAS_NORMALIZATIONS" in result.output


# ---- tiled_conv_auto -----------------------------------------------------------------------------------

# relu(0.5 * (conv + bias)), NHWC, square 9x9 images, stride 2, padding 1, 3x3 kernel -> 5x5 outputs;
# weights as the library takes them: [krow][kcol][in channel] rows of out-channel columns.
CONV = r"""
#define BATCH 2
#define IN_DIM 9
#define ICH 5
#define OCH 7
#define KDIM 3
#define STRIDE 2
#define PAD 1
#define OUT_DIM 5
static elem_t In[BATCH][IN_DIM][IN_DIM][ICH], W[KDIM * KDIM * ICH][OCH], Out[BATCH][OUT_DIM][OUT_DIM][OCH];
static acc_t Bias[OCH];
int main() {
  for (int i = 0; i < BATCH * IN_DIM * IN_DIM * ICH; i++) (&In[0][0][0][0])[i] = (elem_t)rnd(-30, 30);
  for (int i = 0; i < KDIM * KDIM * ICH * OCH; i++) (&W[0][0])[i] = (elem_t)rnd(-30, 30);
  for (int i = 0; i < OCH; i++) Bias[i] = rnd(-1000, 1000);
  gemmini_flush(0);
  @CALL@;
  gemmini_fence();
  for (int b = 0; b < BATCH; b++)
    for (int orow = 0; orow < OUT_DIM; orow++)
      for (int ocol = 0; ocol < OUT_DIM; ocol++)
        for (int och = 0; och < OCH; och++) {
          long long sum = Bias[och];
          for (int kr = 0; kr < KDIM; kr++)
            for (int kc = 0; kc < KDIM; kc++)
              for (int ich = 0; ich < ICH; ich++) {
                int irow = orow * STRIDE + kr - PAD, icol = ocol * STRIDE + kc - PAD;
                if (irow < 0 || icol < 0 || irow >= IN_DIM || icol >= IN_DIM) continue;
                sum += In[b][irow][icol][ich] * W[(kr * KDIM + kc) * ICH + ich][och];
              }
          elem_t want = readout(sum, 0.5f, 1);
          if (Out[b][orow][ocol][och] != want) { printf("mismatch at %d %d %d %d\n", b, orow, ocol, och); return 1; }
        }
  printf("ok\n");
  return 0;
}
"""

P = "(elem_t *)In, (elem_t *)W, Bias, (elem_t *)Out"
CONV_FORMS = {
    "27 (current, rectangular)": "tiled_conv_auto(BATCH, IN_DIM, IN_DIM, ICH, OCH, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PAD, "
                                 f"KDIM, false, false, false, false, false, {P}, RELU, 0.5, 0, 0, 0, WS)",
    "26 (square, relu6_shift)": "tiled_conv_auto(BATCH, IN_DIM, ICH, OCH, OUT_DIM, STRIDE, 1, 1, PAD, KDIM, "
                                f"false, false, false, false, false, {P}, RELU, 0.5, 0, 0, 0, 0, WS)",
    "19 (square, no dilation)": f"tiled_conv_auto(BATCH, IN_DIM, ICH, OCH, OUT_DIM, STRIDE, PAD, KDIM, {P}, RELU, 0.5, "
                                "0, 0, 0, 0, WS)",
    "tiled_conv, 34 (current)": "tiled_conv(BATCH, IN_DIM, IN_DIM, ICH, OCH, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PAD, KDIM, "
                                f"false, false, false, false, false, 1, 2, 3, 4, 3, 2, 5, {P}, RELU, 0.5, 0, 0, 0, WS)",
    "tiled_conv, 33 (square, relu6_shift)": "tiled_conv(BATCH, IN_DIM, ICH, OCH, OUT_DIM, STRIDE, 1, 1, PAD, KDIM, "
                                            f"false, false, false, false, false, 2, 5, 2, 7, 3, 3, 5, {P}, RELU, 0.5, 0, "
                                            "0, 0, 0, WS)",
}


@pytest.mark.parametrize("form", list(CONV_FORMS))
def test_each_tiled_conv_argument_list_computes_the_convolution(gemmini_c, form: str) -> None:
    assert run_ok(gemmini_c, CONV.replace("@CALL@", CONV_FORMS[form])).strip() == "ok"


def test_an_older_tiled_conv_auto_refuses_relu6(gemmini_c) -> None:
    call = (f"tiled_conv_auto(BATCH, IN_DIM, ICH, OCH, OUT_DIM, STRIDE, 1, 1, PAD, KDIM, false, false, false, false, "
            f"false, {P}, 2, 0.5, 1, 0, 0, 0, WS)")
    result = run(gemmini_c, CONV.replace("@CALL@", call))
    assert result.returncode == 3, result.output
    assert "tiled_conv_auto (26 arguments)" in result.output and "activation 2 was RELU6" in result.output


# Depthwise: each channel convolved with its own 3x3 filter, weights [channel][krow][kcol], NHWC.
DW_CONV = r"""
#define BATCH 2
#define IN_DIM 9
#define CH 5
#define KDIM 3
#define STRIDE 2
#define PAD 1
#define OUT_DIM 5
static elem_t In[BATCH][IN_DIM][IN_DIM][CH], W[CH][KDIM][KDIM], Out[BATCH][OUT_DIM][OUT_DIM][CH];
static acc_t Bias[CH];
int main() {
  for (int i = 0; i < BATCH * IN_DIM * IN_DIM * CH; i++) (&In[0][0][0][0])[i] = (elem_t)rnd(-30, 30);
  for (int i = 0; i < CH * KDIM * KDIM; i++) (&W[0][0][0])[i] = (elem_t)rnd(-30, 30);
  for (int i = 0; i < CH; i++) Bias[i] = rnd(-1000, 1000);
  gemmini_flush(0);
  @CALL@;
  gemmini_fence();
  for (int b = 0; b < BATCH; b++)
    for (int orow = 0; orow < OUT_DIM; orow++)
      for (int ocol = 0; ocol < OUT_DIM; ocol++)
        for (int ch = 0; ch < CH; ch++) {
          long long sum = Bias[ch];
          for (int kr = 0; kr < KDIM; kr++)
            for (int kc = 0; kc < KDIM; kc++) {
              int irow = orow * STRIDE + kr - PAD, icol = ocol * STRIDE + kc - PAD;
              if (irow < 0 || icol < 0 || irow >= IN_DIM || icol >= IN_DIM) continue;
              sum += In[b][irow][icol][ch] * W[ch][kr][kc];
            }
          elem_t want = readout(sum, 0.5f, 1);
          if (Out[b][orow][ocol][ch] != want) { printf("mismatch at %d %d %d %d\n", b, orow, ocol, ch); return 1; }
        }
  printf("ok\n");
  return 0;
}
"""

DW_P = "(elem_t *)In, (elem_t *)W, Bias, (elem_t *)Out"
DW_FORMS = {
    "19 (current, rectangular)": f"tiled_conv_dw_auto(BATCH, IN_DIM, IN_DIM, CH, OUT_DIM, OUT_DIM, STRIDE, PAD, KDIM, "
                                 f"{DW_P}, RELU, 0.5, 0, 0, 0, WS)",
    "18 (square, relu6_shift)": f"tiled_conv_dw_auto(BATCH, IN_DIM, CH, OUT_DIM, STRIDE, PAD, KDIM, {DW_P}, RELU, "
                                "0.5, 0, 1, 0, 0, WS)",
}


@pytest.mark.parametrize("form", list(DW_FORMS))
def test_each_depthwise_conv_argument_list_computes_the_convolution(gemmini_c, form: str) -> None:
    assert run_ok(gemmini_c, DW_CONV.replace("@CALL@", DW_FORMS[form])).strip() == "ok"


def test_the_older_depthwise_conv_refuses_relu6(gemmini_c) -> None:
    call = f"tiled_conv_dw_auto(BATCH, IN_DIM, CH, OUT_DIM, STRIDE, PAD, KDIM, {DW_P}, 2, 0.5, 1, 1, 0, 0, WS)"
    result = run(gemmini_c, DW_CONV.replace("@CALL@", call))
    assert result.returncode == 3, result.output
    assert "tiled_conv_dw_auto (18 arguments)" in result.output and "activation 2 was RELU6" in result.output


# ---- IGELU (activation 3) --------------------------------------------------------------------------------

INCLUDE = Path(__file__).resolve().parents[2] / "targets" / "gemmini" / "include"


@pytest.fixture
def normalizations(tmp_path: Path) -> Path:
    """A configuration directory: the default parameters plus HAS_NORMALIZATIONS (Gemmini's
    has_normalizations, as its ibertInferenceConfig sets it)."""
    text = (INCLUDE / "gemmini_params.h").read_text()
    end = "#endif /* GEMMINI_PARAMS_H */"
    assert end in text
    d = tmp_path / "normalizations"
    d.mkdir()
    (d / "gemmini_params.h").write_text(text.replace(end, "#define HAS_NORMALIZATIONS\n" + end))
    return d


# Accumulator values read out through IGELU with qb = -3, qc = -10. By hand, for q >= 0:
# d = min(q, 3) - 3, erf = d*d - 10, result = q * (erf - 10); for q < 0: erf = -(d*d - 10), result = q * (erf - 10).
#   q = 1: d = -2, erf = -6, 1 * -16 = -16      q = 2: d = -1, erf = -9, 2 * -19 = -38
#   q = 3 and 5: erf = -10: -60 and -100        q = -1: erf = 6, -1 * -4 = 4      q = -5: erf = 10, 0
#   q = 1000: -20000, saturated to -128
#   q = 2^30: 2^30 * -20 wraps to 0 in the accumulator's 32 bits (-20 * 2^30 = -5 * 2^32)
IGELU_Q = [1, 2, 3, 5, -1, -5, 0, 1000, 1 << 30]
IGELU_AT_SCALE_1 = [-16, -38, -60, -100, 4, 0, 0, -128, 0]
IGELU_AT_SCALE_QUARTER = [-4, -10, -15, -25, 1, 0, 0, -128, 0]  # -9.5 rounds to the even -10

IGELU_READOUT = r"""
static acc_t In[DIM][DIM];
static elem_t Out[DIM][DIM];
static const long long q[] = {@Q@};
int main() {
  for (int j = 0; j < (int)(sizeof q / sizeof q[0]); j++) In[0][j] = (acc_t)q[j];
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(acc_t));
  gemmini_config_norm(0, 0, 0, 0, 0, -3, -10);
  gemmini_extended_config_st(DIM * sizeof(elem_t), IGELU, @SCALE@);
  gemmini_mvin(In, GEMMINI_ACC_ADDR);
  gemmini_mvout(Out, GEMMINI_ACC_ADDR);
  gemmini_fence();
  for (int j = 0; j < (int)(sizeof q / sizeof q[0]); j++) printf("%d ", Out[0][j]);
  printf("\n");
  return 0;
}
"""


@pytest.mark.parametrize("scale,expected", [("1.0f", IGELU_AT_SCALE_1), ("0.25f", IGELU_AT_SCALE_QUARTER)])
def test_the_igelu_readout_computes_the_hardwares_integer_gelu_then_scales(gemmini_c, normalizations: Path,
                                                                          scale: str, expected: list[int]) -> None:
    source = PRELUDE + IGELU_READOUT.replace("@Q@", ", ".join(map(str, IGELU_Q))).replace("@SCALE@", scale)
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    assert [int(x) for x in result.output.split()] == expected


def test_igelu_on_a_configuration_without_normalizations_is_refused(gemmini_c) -> None:
    source = PRELUDE + IGELU_READOUT.replace("@Q@", "1, 2").replace("@SCALE@", "1.0f")
    result = gemmini_c(source)()
    assert result.returncode != 0
    assert "activation 3 (CONFIG_ST activation: IGELU)" in result.output and "HAS_NORMALIZATIONS" in result.output


def test_the_igelu_constants_follow_upstreams_formula(gemmini_c) -> None:
    # bert_scale 0.8: qb = trunc(-1.769 / (0.8 / sqrt 2)) = trunc(-3.127) = -3,
    # qc = trunc(1 / (-0.2888 * 0.64 / 2)) = trunc(-10.82) = -10; bert_scale 0.05: -50 and -2770.
    out = run_ok(gemmini_c, r"""
int main() {
  acc_t qb, qc;
  gemmini_igelu_constants(0.8f, &qb, &qc);
  printf("%d %d ", qb, qc);
  gemmini_igelu_constants(0.05f, &qb, &qc);
  printf("%d %d\n", qb, qc);
  return 0;
}
""")
    assert out.split() == ["-3", "-10", "-50", "-2770"]


IGELU_MATMUL = r"""
#define I 40
#define J 33
#define K 70
static elem_t A[I][K], B[K][J], C[I][J], Ref[I][J];
/* The read-out by hand, for qb = -3, qc = -10 (bert_scale 0.8): no sum here leaves 32 bits. */
static elem_t expected(long long q) {
  long long d = (q < 0 ? -q : q) < 3 ? (q < 0 ? -q : q) - 3 : 0;
  long long erf = (q < 0 ? -1 : 1) * (d * d - 10);
  return readout(q * (erf - 10), 0.5f, 0);
}
int main() {
  for (int i = 0; i < I; i++) for (int k = 0; k < K; k++) A[i][k] = (elem_t)rnd(-2, 2);
  for (int k = 0; k < K; k++) for (int j = 0; j < J; j++) B[k][j] = (elem_t)rnd(-2, 2);
  gemmini_flush(0);
  tiled_matmul_auto(I, J, K, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)@OUT@, K, J, J, J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, IGELU, 0.5f, 0.8f, false,
                    false, false, false, false, 0, @TYPE@);
  gemmini_fence();
  int nonzero = 0;
  for (int i = 0; i < I; i++)
    for (int j = 0; j < J; j++) {
      long long sum = 0;
      for (int k = 0; k < K; k++) sum += A[i][k] * B[k][j];
      elem_t want = expected(sum);
      nonzero += want != 0;
      if (@OUT@[i][j] != want) { printf("C[%d][%d] = %d, want %d (sum %lld)\n", i, j, @OUT@[i][j], want, sum); return 1; }
    }
  printf("ok %d\n", nonzero);
  return 0;
}
"""


@pytest.mark.parametrize("type_,out", [("WS", "C"), ("OS", "C"), ("CPU", "Ref")])
def test_tiled_matmul_auto_with_igelu_sends_the_constants_and_matches_the_hand_reference(
        gemmini_c, normalizations: Path, type_: str, out: str) -> None:
    source = PRELUDE + IGELU_MATMUL.replace("@TYPE@", type_).replace("@OUT@", out)
    result = gemmini_c(source, params_dir=normalizations)()
    assert result.returncode == 0, result.output
    words = result.output.split()
    assert words[0] == "ok" and int(words[1]) > 100, result.output  # most outputs are not 0


@pytest.mark.parametrize("act", ["LAYERNORM", "SOFTMAX"])
def test_tiled_matmul_layernorm_and_softmax_on_gemmini_need_normalizations(gemmini_c, act: str) -> None:
    # The default configuration has no normalizer (test_upstream_normalizations.py runs them on one that has).
    result = run(gemmini_c, r"""
static elem_t A[16][16], B[16][16], C[16][16];
int main() {
  tiled_matmul_auto(16, 16, 16, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, 16, 16, 16, 16,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, @ACT@, 1.0f, 0.8f, false,
                    false, false, false, false, 0, @TYPE@);
  printf("went on\n");
  return 0;
}
""".replace("@ACT@", act).replace("@TYPE@", "WS"))
    assert result.returncode != 0, result.output
    assert "HAS_NORMALIZATIONS" in result.output
    assert "went on" not in result.output


def test_a_convolution_with_igelu_is_refused(gemmini_c) -> None:
    call = (f"tiled_conv_auto(BATCH, IN_DIM, IN_DIM, ICH, OCH, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PAD, KDIM, false, "
            f"false, false, false, false, {P}, IGELU, 0.5, 0, 0, 0, WS)")
    result = run(gemmini_c, CONV.replace("@CALL@", call))
    assert result.returncode == 3, result.output
    assert "only NO_ACTIVATION and RELU are implemented for convolutions" in result.output
