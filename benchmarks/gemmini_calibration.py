"""Calibration of the Gemmini cycle model against the Autocomp paper's FireSim figures.

For each of the paper's six GEMMs (int8, no bias, scale 1; I x J x K) and three 3x3 convolutions (batch 4,
stride 1, padding 1, with bias), three kernels written for this benchmark run on the native model:

  library  the library call (tiled_matmul_auto / tiled_conv_auto), the paper's baseline
  naive    explicit instructions, unoptimized: one 16x16 tile at a time, single-buffered (the kind of
           starting point the paper's search begins from; the same code as examples/gemmini/paper/*_explicit.c)
  tuned    a carefully software-pipelined explicit kernel: GEMM: accumulator-resident output blocks,
           K chunks double-buffered in the scratchpad with 64-byte mvins, the next chunk's mvins and the
           previous block's mvouts spread between the computes; conv: weights of an output-channel block
           resident, each input row loaded once (zero-padded in the scratchpad) and reused by the three
           kernel columns, accumulator double-buffered
  tuned-loop  the hardware loop with hand-chosen tiles (tiled_matmul / tiled_conv): what a tuner that
           keeps LOOP_WS / LOOP_CONV_WS but picks its own tiling gets
  resident GEMM only: data movement first, as hand-tuned Gemmini code is written: a panel of B stays in the
           scratchpad, each block row of A is moved in once per panel (double-buffered), every DMA stream
           walks its operand in order (so address translation holds), C leaves in 64-byte rows

It prints cycles and utilization (MACs / 256 / cycles) per kernel and the ratios, next to what the paper's
FireSim numbers imply: hand-tuned code ~4x (GEMM) / ~2.5x (conv) faster than the library (5.6x and 2.7x
over the library for Autocomp, 1.4x and 1.1x over hand-tuned code), and the library at most ~18% (GEMM)
/ ~37% (conv) utilization. Deterministic model: one run per kernel.

    .venv/bin/python benchmarks/gemmini_calibration.py [--only gemm|conv] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER_DIR = REPO / "examples" / "gemmini" / "paper"

# (I, J, K): C[I][J] = A[I][K] * B[K][J]
PAPER_GEMMS = [(512, 512, 512), (12544, 64, 256), (12544, 256, 64), (3136, 128, 512), (3136, 512, 128),
               (784, 1024, 256)]
# (in_dim, in_channels, out_channels, scale): batch 4, 3x3, stride 1, padding 1
PAPER_CONVS = [(56, 64, 64, "1.0f / 64"), (28, 128, 128, "1.0f / 128"), (14, 256, 256, "1.0f / 128")]
PAPER = {"gemm": {"speedup": 4.0, "library_util": 0.18}, "conv": {"speedup": 2.5, "library_util": 0.37}}
KINDS = ("library", "naive", "tuned", "tuned-loop", "resident")
KINDS_OF = {"gemm": KINDS, "conv": KINDS[:4]}  # "resident" is written for GEMMs only

HEAD = """#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"
"""


# ------------------------------------------------------------------------------------------------ GEMM
def gemm_name(shape: tuple[int, int, int]) -> str:
    return "matmul_{}x{}x{}".format(*shape)


def gemm_defines(shape: tuple[int, int, int]) -> str:
    i, j, k = shape
    return f"#define MAT_DIM_I {i}\n#define MAT_DIM_J {j}\n#define MAT_DIM_K {k}\n"


GEMM_MAIN = """
int main(void) {
  return speedpatch_run_matmul(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, false, NO_ACTIVATION, 1.0f, matmul_kernel);
}
"""

GEMM_LIBRARY = """
// C = A * B saturated to int8 (no bias, scale 1). A: I x K, B: K x J, C: I x J, row-major.
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, NULL, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, MAT_DIM_J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f, 0, false,
                    false, false, false, false, 0, WS);
}
"""

GEMM_NAIVE = """
// C = A * B saturated to int8 (no bias, scale 1). A: I x K, B: K x J, C: I x J, row-major.
// Unoptimized explicit code: for every 16x16 output tile, walk K one 16x16 tile at a time through the
// same scratchpad rows, then move the tile out.
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(MAT_DIM_J, NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(MAT_DIM_K, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(MAT_DIM_J, MVIN_SCALE_IDENTITY, false, 1);
  for (size_t i = 0; i < MAT_DIM_I / DIM; i++)
    for (size_t j = 0; j < MAT_DIM_J / DIM; j++) {
      for (size_t k = 0; k < MAT_DIM_K / DIM; k++) {
        gemmini_mvin(A + i * DIM * MAT_DIM_K + k * DIM, 0);
        gemmini_mvin2(B + k * DIM * MAT_DIM_J + j * DIM, DIM);
        gemmini_preload(DIM, GEMMINI_ACC_ADDR | (k ? GEMMINI_ACC_ACCUMULATE : 0));
        gemmini_compute_preloaded(0, GARBAGE_ADDR);
      }
      gemmini_mvout(C + i * DIM * MAT_DIM_J + j * DIM, GEMMINI_ACC_ADDR);
    }
  gemmini_fence();
}
"""

# Software-pipelined explicit GEMM. Output blocks of TI x TJ tiles live in one accumulator half (the halves
# alternate between blocks); K is walked in chunks of KC tiles whose A (TI x KC tiles) and B (KC x TJ tiles)
# sit in one scratchpad half (alternating per chunk), moved in with 64-byte rows. While chunk c computes,
# chunk c+1's mvins and the previous block's mvouts are issued between its computes, so that no queue ever
# waits on the core and the core never waits on a full queue for long.
GEMM_TUNED = """
#define TI %(ti)d
#define TJ %(tj)d
#define KC %(kc)d
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  enum { NI = MAT_DIM_I / DIM / TI, NJ = MAT_DIM_J / DIM / TJ, NK = MAT_DIM_K / DIM / KC,
         NA = TI * (KC / 4), NLOAD = NA + KC * (TJ / 4), NOUT = TI * TJ };
  const uint32_t half = BANK_NUM * BANK_ROWS / 2;
  const size_t chunks = (size_t)NI * NJ * NK; /* chunk c: output block c / NK (row-major), K chunk c %% NK */
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(MAT_DIM_J, NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(MAT_DIM_K, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(MAT_DIM_J, MVIN_SCALE_IDENTITY, false, 1);
  /* pending mvins (of chunk `ld_chunk`) and mvouts (of output block `out_blk`), issued a few at a time */
  size_t ld_chunk = 0, ld_next = 0, ld_left = NLOAD, out_blk = 0, out_next = 0, out_left = 0;
#define ISSUE_ONE_MVIN()                                                                                      \
  do {                                                                                                        \
    const size_t nb_ = ld_chunk / NK, nk_ = ld_chunk %% NK, p_ = ld_next++;                                    \
    const uint32_t base_ = (uint32_t)(ld_chunk & 1) * half;                                                   \
    if (p_ < NA) {                                                                                            \
      const size_t ii_ = p_ / (KC / 4), kk_ = (p_ %% (KC / 4)) * 4;                                            \
      gemmini_extended_mvin(A + ((nb_ / NJ) * TI + ii_) * DIM * MAT_DIM_K + (nk_ * KC + kk_) * DIM,             \
                            base_ + (uint32_t)(ii_ * KC + kk_) * DIM, 4 * DIM, DIM);                           \
    } else {                                                                                                  \
      const size_t q_ = p_ - NA, kk_ = q_ / (TJ / 4), jj_ = (q_ %% (TJ / 4)) * 4;                              \
      gemmini_extended_mvin2(B + (nk_ * KC + kk_) * DIM * MAT_DIM_J + ((nb_ %% NJ) * TJ + jj_) * DIM,           \
                             base_ + TI * KC * DIM + (uint32_t)(kk_ * TJ + jj_) * DIM, 4 * DIM, DIM);          \
    }                                                                                                         \
    ld_left--;                                                                                                \
  } while (0)
#define ISSUE_ONE_MVOUT()                                                                                     \
  do {                                                                                                        \
    const size_t o_ = out_next++, oi_ = o_ / TJ, oj_ = o_ %% TJ;                                               \
    gemmini_mvout(C + ((out_blk / NJ) * TI + oi_) * DIM * MAT_DIM_J + ((out_blk %% NJ) * TJ + oj_) * DIM,       \
                  GEMMINI_ACC_ADDR | ((uint32_t)(out_blk & 1) * (ACC_ROWS / 2) + (uint32_t)(oi_ * TJ + oj_) * DIM)); \
    out_left--;                                                                                               \
  } while (0)
  while (ld_left) ISSUE_ONE_MVIN(); /* chunk 0 */
  for (size_t c = 0; c < chunks; c++) {
    const size_t blk = c / NK, kc = c %% NK;
    const uint32_t a_base = (uint32_t)(c & 1) * half, b_base = a_base + TI * KC * DIM;
    const uint32_t acc_base = GEMMINI_ACC_ADDR | ((uint32_t)(blk & 1) * (ACC_ROWS / 2));
    if (c + 1 < chunks) ld_chunk = c + 1, ld_next = 0, ld_left = NLOAD;
    for (size_t k = 0; k < KC; k++) {
      const uint32_t flag = (kc || k) ? GEMMINI_ACC_ACCUMULATE : 0;
      for (size_t j = 0; j < TJ; j++) {
        uint32_t acc = (acc_base | flag) + (uint32_t)j * DIM, a = a_base + (uint32_t)k * DIM;
        gemmini_preload(b_base + (uint32_t)(k * TJ + j) * DIM, acc);
        gemmini_compute_preloaded(a, GARBAGE_ADDR);
        for (size_t i = 1; i < TI; i++) { /* the weights stay; only A and C move */
          acc += TJ * DIM, a += KC * DIM;
          gemmini_preload(GARBAGE_ADDR, acc);
          gemmini_compute_accumulated(a, GARBAGE_ADDR);
        }
        if (ld_left) ISSUE_ONE_MVIN();
        if (out_left) ISSUE_ONE_MVOUT();
      }
    }
    while (ld_left) ISSUE_ONE_MVIN();
    while (out_left) ISSUE_ONE_MVOUT();
    if (kc == NK - 1) out_blk = blk, out_next = 0, out_left = NOUT;
  }
  while (out_left) ISSUE_ONE_MVOUT();
#undef ISSUE_ONE_MVIN
#undef ISSUE_ONE_MVOUT
  gemmini_fence();
}
"""

GEMM_RESIDENT = """
// Data movement first, as hand-tuned Gemmini code does: a panel of B (all of K, JP column blocks) stays in the
// scratchpad; each 16-row block of A is moved in once per panel (two slots: the next block loads while this
// one computes); C leaves in 64-byte rows. Each DMA stream walks its operand in order, so the TLB holds.
#define JP %(jp)d
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  enum { NI = MAT_DIM_I / DIM, NK = MAT_DIM_K / DIM, NP = MAT_DIM_J / DIM / JP, A_ROWS = NK * DIM };
  const uint32_t a_base = NK * JP * DIM; /* B panel rows first, then the two A slots */
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(MAT_DIM_J, NO_ACTIVATION, 1.0f);
  gemmini_extended3_config_ld(MAT_DIM_K, MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld(MAT_DIM_J, MVIN_SCALE_IDENTITY, false, 1);
  for (size_t p = 0; p < NP; p++) {
    for (size_t k = 0; k < NK; k++)
      for (size_t j = 0; j < JP; j += 4)
        gemmini_extended_mvin2(B + k * DIM * MAT_DIM_J + (p * JP + j) * DIM, (uint32_t)((k * JP + j) * DIM),
                               4 * DIM, DIM);
    for (size_t i = 0; i < NI; i++) {
      const uint32_t a = a_base + (uint32_t)((i & 1) * A_ROWS);
      const uint32_t acc = GEMMINI_ACC_ADDR | (uint32_t)((i & 1) * JP * DIM);
      for (size_t k = 0; k < NK; k += 4)
        gemmini_extended_mvin(A + i * DIM * MAT_DIM_K + k * DIM, a + (uint32_t)(k * DIM), 4 * DIM, DIM);
      for (size_t k = 0; k < NK; k++) {
        const uint32_t flag = k ? GEMMINI_ACC_ACCUMULATE : 0;
        for (size_t j = 0; j < JP; j++) {
          gemmini_preload((uint32_t)((k * JP + j) * DIM), (acc | flag) + (uint32_t)(j * DIM));
          gemmini_compute_preloaded(a + (uint32_t)(k * DIM), GARBAGE_ADDR);
        }
      }
      for (size_t j = 0; j < JP; j += 4)
        gemmini_extended_mvout(C + i * DIM * MAT_DIM_J + (p * JP + j) * DIM, acc + (uint32_t)(j * DIM), 4 * DIM, DIM);
    }
  }
  gemmini_fence();
}
"""

GEMM_TUNED_LOOP = """
// The hardware loop with hand-chosen tiles (%(ti)d x %(tj)d x %(tk)d blocks of 16).
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  tiled_matmul(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, NULL, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, MAT_DIM_J,
               MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f, 0, false,
               %(ti)d, %(tj)d, %(tk)d, false, false, false, false, 0, WS);
}
"""


def gemm_tuned_tiles(shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """TI x TJ output tiles (TI*TJ*16 <= half the accumulator), KC K-tiles per chunk (A and B of a chunk in
    half the scratchpad), TJ and KC multiples of 4 (64-byte mvins): the largest block, as square as J
    allows, then the longest K chunk that divides K."""
    it, jt, kt = (d // 16 for d in shape)
    tj = 8 if jt % 8 == 0 else 4
    ti = max(t for t in (1, 2, 4, 8) if t * tj <= 32 and it % t == 0)
    kc = max(k for k in range(4, kt + 1, 4) if kt % k == 0 and (ti * k + k * tj) * 16 <= 8192)
    return ti, tj, kc


def gemm_resident_panel(shape: tuple[int, int, int]) -> int:
    """Column blocks of the resident B panel: a multiple of 4 dividing J/16, two accumulator halves of it
    (<= 32 blocks), and the panel plus two A block rows in the scratchpad (16384 rows), as wide as fits."""
    _, jt, kt = (d // 16 for d in shape)
    fits = [jp for jp in range(4, min(jt, 32) + 1, 4) if jt % jp == 0 and kt * 16 * (jp + 2) <= 16384]
    assert fits, shape
    return max(fits)


def gemm_loop_tiles(shape: tuple[int, int, int]) -> tuple[int, int, int]:
    """Hand-chosen LOOP_WS tiles: J wide, I to fill the accumulator half, K as deep as the scratchpad half
    allows (the rule the offline moves offer too)."""
    from speedpatch.targets.gemmini.moves import wide_tiles

    return wide_tiles(shape)


def gemm_source(kind: str, shape: tuple[int, int, int]) -> str:
    if kind in ("library", "naive"):
        path = PAPER_DIR / (gemm_name(shape) + ("_explicit.c" if kind == "naive" else ".c"))
        if path.exists():
            return path.read_text()
        body = GEMM_LIBRARY if kind == "library" else GEMM_NAIVE
    elif kind == "tuned":
        ti, tj, kc = gemm_tuned_tiles(shape)
        body = GEMM_TUNED % {"ti": ti, "tj": tj, "kc": kc}
    elif kind == "resident":
        body = GEMM_RESIDENT % {"jp": gemm_resident_panel(shape)}
    else:
        ti, tj, tk = gemm_loop_tiles(shape)
        body = GEMM_TUNED_LOOP % {"ti": ti, "tj": tj, "tk": tk}
    return HEAD + gemm_defines(shape) + body + GEMM_MAIN


# ------------------------------------------------------------------------------------------------ conv
def conv_name(shape: tuple) -> str:
    return f"conv_{shape[0]}x{shape[0]}_{shape[1]}"


def conv_defines(shape: tuple) -> str:
    dim, ich, och, scale = shape
    return (f"#define BATCH_SIZE 4\n#define IN_DIM {dim}\n#define IN_CHANNELS {ich}\n#define OUT_CHANNELS {och}\n"
            "#define KERNEL_DIM 3\n#define STRIDE 1\n#define PADDING 1\n"
            "#define OUT_DIM ((IN_DIM + 2 * PADDING - KERNEL_DIM) / STRIDE + 1)\n"
            f"#define CONV_SCALE ({scale})\n#define CONV_ACT NO_ACTIVATION\n")


CONV_MAIN = """
int main(void) {
  const struct speedpatch_conv_shape shape = {BATCH_SIZE, IN_DIM, IN_CHANNELS, OUT_CHANNELS, KERNEL_DIM, STRIDE,
                                              PADDING};
  return speedpatch_run_conv(shape, CONV_ACT, CONV_SCALE, conv_kernel);
}
"""

CONV_LIBRARY = """
void conv_kernel(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output) {
  tiled_conv_auto(BATCH_SIZE, IN_DIM, IN_DIM, IN_CHANNELS, OUT_CHANNELS, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PADDING,
                  KERNEL_DIM, false, false, false, false, false, input, weights, bias, output, CONV_ACT, CONV_SCALE,
                  0, 0, 0, WS);
}
"""

CONV_NAIVE = """
// Unoptimized explicit convolution: for every 16 output pixels of a row and 16 output channels, start from
// the bias in the accumulator and add, for each kernel position and 16 input channels, the 16 input pixels it
// sees times that 16x16 weight block, one tile at a time (pixels outside the image are zeros); then move out.
// input [BATCH][IN_DIM][IN_DIM][IN_CHANNELS], weights [3][3][IN_CHANNELS][OUT_CHANNELS], bias [OUT_CHANNELS],
// output [BATCH][OUT_DIM][OUT_DIM][OUT_CHANNELS].
void conv_kernel(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output) {
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(OUT_CHANNELS, CONV_ACT, CONV_SCALE);
  gemmini_extended3_config_ld(IN_CHANNELS, MVIN_SCALE_IDENTITY, false, 0);  /* input pixels */
  gemmini_extended3_config_ld(OUT_CHANNELS, MVIN_SCALE_IDENTITY, false, 1); /* weight rows */
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);            /* the bias row, repeated */
  for (int b = 0; b < BATCH_SIZE; b++)
    for (int orow = 0; orow < OUT_DIM; orow++)
      for (int ocol = 0; ocol < OUT_DIM; ocol += DIM)
        for (int och = 0; och < OUT_CHANNELS; och += DIM) {
          const int npix = OUT_DIM - ocol < DIM ? OUT_DIM - ocol : DIM;
          gemmini_extended_mvin3(bias + och, GEMMINI_ACC_ADDR, DIM, npix);
          for (int kr = 0; kr < KERNEL_DIM; kr++) {
            const int irow = orow * STRIDE + kr - PADDING;
            for (int kc = 0; kc < KERNEL_DIM; kc++) {
              /* output pixels lo..hi-1 see input pixels inside the image */
              int lo = PADDING - kc - ocol, hi = IN_DIM + PADDING - kc - ocol;
              if (lo < 0) lo = 0;
              if (hi > npix) hi = npix;
              if (irow < 0 || irow >= IN_DIM) hi = lo;
              const int icol = ocol + lo + kc - PADDING;
              for (int ich = 0; ich < IN_CHANNELS; ich += DIM) {
                if (lo > 0 || hi < npix) gemmini_extended_mvin(0, 0, DIM, npix); /* zeros */
                if (lo < hi)
                  gemmini_extended_mvin(input + (((size_t)b * IN_DIM + irow) * IN_DIM + icol) * IN_CHANNELS + ich,
                                        (uint32_t)lo, DIM, hi - lo);
                gemmini_extended_mvin2(weights + ((size_t)(kr * KERNEL_DIM + kc) * IN_CHANNELS + ich) * OUT_CHANNELS + och,
                                       DIM, DIM, DIM);
                gemmini_extended_preload(DIM, GEMMINI_ACC_ADDR | GEMMINI_ACC_ACCUMULATE, DIM, DIM, DIM, npix);
                gemmini_extended_compute_preloaded(0, GARBAGE_ADDR, DIM, npix, DIM, DIM);
              }
            }
          }
          gemmini_extended_mvout(output + (((size_t)b * OUT_DIM + orow) * OUT_DIM + ocol) * OUT_CHANNELS + och,
                                 GEMMINI_ACC_ADDR, DIM, npix);
        }
  gemmini_fence();
}
"""

# Software-pipelined explicit convolution. Loop order: output-channel block (OB tiles of 16) outermost, so
# its weights (3 x 3 x IN_CHANNELS rows, OB tiles wide) are moved in once and stay resident. For every output
# row, the three input rows it needs are kept in the scratchpad zero-padded (one column of zeros on each
# side): each input row is moved in once, with 64-byte rows, and serves the three kernel columns as plain
# address offsets. Output rows alternate between accumulator halves, so one row's mvouts overlap the next
# row's computes; the next input row's mvins are issued before the current row's computes.
CONV_TUNED = """
#define OB %(ob)d
void conv_kernel(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output) {
  enum { IT = IN_CHANNELS / DIM, PADW = IN_DIM + 2, ROWSLOT = IT * PADW, W_ROWS = KERNEL_DIM * KERNEL_DIM * IN_CHANNELS };
  const uint32_t w_base = 0;                          /* weights: tile t of row r at w_base + t * W_ROWS + r */
  const uint32_t in_base = OB * W_ROWS;               /* 4 input row slots, ROWSLOT rows each */
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st(OUT_CHANNELS, CONV_ACT, CONV_SCALE);
  gemmini_extended4_config_ld(IN_CHANNELS, MVIN_SCALE_IDENTITY, false, PADW, 0); /* input: channel tiles PADW apart */
  gemmini_extended4_config_ld(OUT_CHANNELS, MVIN_SCALE_IDENTITY, false, W_ROWS, 1); /* weights: OB tiles W_ROWS apart */
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);                  /* bias row, repeated */
  for (int ob = 0; ob < OUT_CHANNELS; ob += OB * DIM) {
    for (int r = 0; r < W_ROWS; r += DIM)
      for (int t = 0; t < OB; t += 4)
        gemmini_extended_mvin2(weights + (size_t)r * OUT_CHANNELS + ob + t * DIM, w_base + (uint32_t)(t * W_ROWS + r),
                               (OB - t < 4 ? OB - t : 4) * DIM, DIM);
    int row_count = 0;
    for (int b = 0; b < BATCH_SIZE; b++) {
      /* input row irow lives in slot (irow + 1) %% 4; the padded columns 0 and PADW-1 are zeros */
      for (int irow = -1; irow < IN_DIM + 1; irow++) {
        const uint32_t slot = in_base + (uint32_t)(((irow + 1) %% 4) * ROWSLOT);
        if (irow < 0 || irow >= IN_DIM) {
          for (int t = 0; t < IT; t++) gemmini_extended_mvin(0, slot + (uint32_t)(t * PADW), DIM, PADW);
        } else {
          for (int t = 0; t < IT; t++) {
            gemmini_extended_mvin(0, slot + (uint32_t)(t * PADW), DIM, 1);
            gemmini_extended_mvin(0, slot + (uint32_t)(t * PADW + PADW - 1), DIM, 1);
          }
          for (int col = 0; col < IN_DIM; col += DIM)
            for (int t = 0; t < IT; t += 4)
              gemmini_extended_mvin(input + (((size_t)b * IN_DIM + irow) * IN_DIM + col) * IN_CHANNELS + t * DIM,
                                    slot + (uint32_t)(t * PADW + 1 + col), (IT - t < 4 ? IT - t : 4) * DIM,
                                    IN_DIM - col < DIM ? IN_DIM - col : DIM);
        }
        const int orow = irow - 1; /* its three input rows (orow-1, orow, orow+1) are now in */
        if (orow < 0) continue;
        const uint32_t acc_base = (uint32_t)(row_count++ & 1) * (ACC_ROWS / 2);
        for (int ocol = 0; ocol < OUT_DIM; ocol += DIM) {
          const int npix = OUT_DIM - ocol < DIM ? OUT_DIM - ocol : DIM;
          for (int t = 0; t < OB; t++) {
            const uint32_t acc = acc_base + (uint32_t)((ocol / DIM) * OB + t) * DIM;
            gemmini_extended_mvin3(bias + ob + t * DIM, GEMMINI_ACC_ADDR | acc, DIM, npix);
            for (int kr = 0; kr < KERNEL_DIM; kr++) {
              const uint32_t in_row = in_base + (uint32_t)(((orow + kr) %% 4) * ROWSLOT);
              for (int kc = 0; kc < KERNEL_DIM; kc++)
                for (int it = 0; it < IT; it++) {
                  const uint32_t w = w_base + (uint32_t)(t * W_ROWS + ((kr * KERNEL_DIM + kc) * IT + it) * DIM);
                  gemmini_extended_preload(w, GEMMINI_ACC_ADDR | GEMMINI_ACC_ACCUMULATE | acc, DIM, DIM, DIM, npix);
                  gemmini_extended_compute_preloaded(in_row + (uint32_t)(it * PADW + ocol + kc), GARBAGE_ADDR, DIM, npix,
                                                     DIM, DIM);
                }
            }
          }
        }
        for (int ocol = 0; ocol < OUT_DIM; ocol += DIM) {
          const int npix = OUT_DIM - ocol < DIM ? OUT_DIM - ocol : DIM;
          for (int t = 0; t < OB; t++)
            gemmini_extended_mvout(output + (((size_t)b * OUT_DIM + orow) * OUT_DIM + ocol) * OUT_CHANNELS + ob + t * DIM,
                                   GEMMINI_ACC_ADDR | (acc_base + (uint32_t)((ocol / DIM) * OB + t) * DIM), DIM, npix);
        }
      }
    }
  }
  gemmini_fence();
}
"""

CONV_TUNED_LOOP = """
// The hardware loop with hand-chosen tiles: all batches, %(porows)d output rows, every output column, %(pochs)d
// output channels and every input channel per LOOP_CONV_WS.
void conv_kernel(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output) {
  tiled_conv(BATCH_SIZE, IN_DIM, IN_DIM, IN_CHANNELS, OUT_CHANNELS, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PADDING,
             KERNEL_DIM, false, false, false, false, false, %(batches)d, %(porows)d, %(pocols)d, %(pochs)d, 3, 3,
             %(kchs)d, input, weights, bias, output, CONV_ACT, CONV_SCALE, 0, 0, 0, WS);
}
"""


def conv_tuned_ob(shape: tuple) -> int:
    """Output-channel tiles whose weights stay resident (9 * IN_CHANNELS rows each) next to 4 input-row slots,
    within the scratchpad, and whose accumulator rows (OUT_DIM pixels rounded to 16, per tile) fit a half."""
    dim, ich, och, _ = shape
    it, ot = ich // 16, och // 16
    pix_tiles = -(-dim // 16)
    best = 1
    for ob in range(1, ot + 1):
        if ot % ob or pix_tiles * ob * 16 > 512 or ob * 9 * ich + 4 * it * (dim + 2) > 16384:
            continue
        best = ob
    return best


def conv_loop_tiles(shape: tuple) -> dict[str, int]:
    """Hand-chosen LOOP_CONV_WS tiles: every input channel and whole output rows per loop (each input row is
    then moved in once per output-channel block), as many output rows and channels as fit, preferring more
    output channels (fewer re-reads of the input)."""
    from speedpatch.targets.gemmini.moves import conv_fits

    dim, ich, och, _ = shape
    dims = {"stride": 1, "k_dil": 1}
    best, best_key = None, (-1, -1)
    for pochs in range(16, och + 1, 16):
        for porows in range(1, dim + 1):
            t = {"batches": 1, "porows": porows, "pocols": dim, "pochs": pochs, "krows": 3, "kcols": 3, "kchs": ich}
            key = (pochs * porows, pochs)
            if och % pochs == 0 and conv_fits(t, dims) and key > best_key:
                best, best_key = t, key
    assert best is not None, shape
    return best


def conv_source(kind: str, shape: tuple) -> str:
    if kind in ("library", "naive"):
        path = PAPER_DIR / (conv_name(shape) + ("_explicit.c" if kind == "naive" else ".c"))
        if path.exists():
            return path.read_text()
        body = CONV_LIBRARY if kind == "library" else CONV_NAIVE
    elif kind == "tuned":
        body = CONV_TUNED % {"ob": conv_tuned_ob(shape)}
    else:
        body = CONV_TUNED_LOOP % conv_loop_tiles(shape)
    return HEAD + conv_defines(shape) + body + CONV_MAIN


def conv_macs(shape: tuple) -> int:
    dim, ich, och, _ = shape
    return 4 * dim * dim * och * 9 * ich  # padding 1: every output pixel sums 9 positions (zeros count)


# ------------------------------------------------------------------------------- published anchors
# FireSim cycle counts Autocomp publishes for two explicit kernels of the GEMM A[12544][64] x B[64][256]
# (I x J x K = 12544 x 256 x 64), in its public repository ucb-bar/autocomp,
# autocomp/agent_builder/.built/gemmini/code_examples.md, "if_example_matmul": the unoptimized kernel
# (3,435,455 cycles) and its rewrite with if-gated loads (1,519,076). The kernels below are written for this
# benchmark with the same instruction streams: per 16-row block of A and 64-column group of C, four
# accumulator tiles zeroed by an mvin from address 0, A's block row and B's four 16x64 pieces moved in
# (the unoptimized one reloads both every time, into the same scratchpad rows), 16 preload/compute pairs,
# four mvouts. The gated one moves A in once per block row and B once in all, into distinct rows.
ANCHOR_SHAPE = (12544, 256, 64)
# the two kernels share their configuration and loop heads; only the body of the (i, j) loop differs
ANCHOR_HEAD = """
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  const uint32_t acc = 1u << 31, accum = 1u << 30;
  gemmini_extended_config_st(256, NO_ACTIVATION, 1.0f);
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended3_config_ld(256, MVIN_SCALE_IDENTITY, false, 2);
  gemmini_extended3_config_ld(64, MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 0);
  for (int i = 0; i < 784; i++)
    for (int j = 0; j < 4; j++) {
"""
ANCHOR_TAIL = """    }
  gemmini_fence();
}
"""
ANCHOR_UNOPTIMIZED = """
// C = A * B (no bias, scale 1): the unoptimized explicit kernel of the published anchor.
""" + ANCHOR_HEAD + """      for (int t = 0; t < 4; t++) gemmini_extended_mvin(0, acc + t * 16, 16, 16);
      gemmini_extended_mvin2(A + 16 * i * 64, 0, 64, 16);
      for (int k = 0; k < 4; k++) gemmini_extended_mvin3(B + 16 * k * 256 + 64 * j, 64 + k * 64, 64, 16);
      for (int k = 0; k < 4; k++)
        for (int t = 0; t < 4; t++) {
          gemmini_extended_preload(64 + k * 64 + t * 16, (acc + t * 16) | accum, 16, 16, 16, 16);
          gemmini_extended_compute_preloaded(k * 16, GARBAGE_ADDR, 16, 16, 16, 16);
        }
      for (int t = 0; t < 4; t++) gemmini_extended_mvout(C + 16 * i * 256 + 16 * t + 64 * j, acc + t * 16, 16, 16);
""" + ANCHOR_TAIL
ANCHOR_GATED = """
// The same computation with if-gated loads: A once per block row, B once in all (the published rewrite).
""" + ANCHOR_HEAD + """      for (int t = 0; t < 4; t++) gemmini_extended_mvin(0, acc + j * 64 + t * 16, 16, 16);
      if (j == 0) gemmini_extended_mvin2(A + 16 * i * 64, (i / 4) * 64, 64, 16);
      if (i == 0) for (int k = 0; k < 4; k++) gemmini_extended_mvin3(B + 16 * k * 256 + 64 * j, 12544 + j * 256 + k * 64, 64, 16);
      for (int k = 0; k < 4; k++)
        for (int t = 0; t < 4; t++) {
          gemmini_extended_preload(12544 + j * 256 + k * 64 + t * 16, (acc + j * 64 + t * 16) | accum, 16, 16, 16, 16);
          gemmini_extended_compute_preloaded((i / 4) * 64 + k * 16, GARBAGE_ADDR, 16, 16, 16, 16);
        }
      for (int t = 0; t < 4; t++) gemmini_extended_mvout(C + 16 * i * 256 + 16 * t + 64 * j, acc + j * 64 + t * 16, 16, 16);
""" + ANCHOR_TAIL
ANCHORS = {"unoptimized": (ANCHOR_UNOPTIMIZED, 3_435_455), "if-gated": (ANCHOR_GATED, 1_519_076)}


def anchor_source(kind: str) -> str:
    return HEAD + gemm_defines(ANCHOR_SHAPE) + ANCHORS[kind][0] + GEMM_MAIN


# --------------------------------------------------------------------------------------------- running
@dataclass
class Result:
    problem: str
    family: str
    kind: str
    correct: bool
    cycles: int
    macs: int
    note: str = ""

    @property
    def utilization(self) -> float:
        return self.macs / 256 / self.cycles if self.cycles else 0.0


LINE = re.compile(r"speedpatch: correct=(\d) cycles=(\d+) macs=(\d+)")


def measure(source: str, work: Path) -> tuple[bool, int, int, str]:
    """Build `source` against the native model and run it: (correct, cycles, macs, output on failure)."""
    from speedpatch.targets.gemmini.build import build_native, run_native

    work.mkdir(parents=True, exist_ok=True)
    src = work / "kernel.c"
    src.write_text(source)
    res, exe = build_native(src, work, timeout=300)
    if exe is None:
        return False, 0, 0, res.output[-2000:]
    run = run_native(exe, work, timeout=600)
    m = LINE.search(run.output)
    if run.returncode != 0 or not m:
        return False, 0, 0, run.output[-2000:]
    return m.group(1) == "1", int(m.group(2)), int(m.group(3)), ""


def problems(only: str | None = None) -> list[tuple[str, str, tuple]]:
    out: list[tuple[str, str, tuple]] = []
    if only in (None, "gemm"):
        out += [("gemm", gemm_name(s), s) for s in PAPER_GEMMS]
    if only in (None, "conv"):
        out += [("conv", conv_name(s), s) for s in PAPER_CONVS]
    return out


def run_all(selected: list[tuple[str, str, tuple]], kinds: tuple[str, ...] = KINDS, workers: int = 2) -> list[Result]:
    jobs = [(family, name, shape, kind) for family, name, shape in selected for kind in kinds
            if kind in KINDS_OF[family]]

    def one(job: tuple[str, str, tuple, str]) -> Result:
        family, name, shape, kind = job
        source = gemm_source(kind, shape) if family == "gemm" else conv_source(kind, shape)
        with tempfile.TemporaryDirectory(prefix="gemmini-cal-") as tmp:
            ok, cycles, macs, note = measure(source, Path(tmp))
        return Result(name, family, kind, ok, cycles, macs, note)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


def run_anchors(workers: int = 2) -> list[tuple[str, int, Result]]:
    """The published anchors on the model: (kind, FireSim cycles, model result)."""
    def one(kind: str) -> tuple[str, int, Result]:
        with tempfile.TemporaryDirectory(prefix="gemmini-anchor-") as tmp:
            ok, cycles, macs, note = measure(anchor_source(kind), Path(tmp))
        return kind, ANCHORS[kind][1], Result(gemm_name(ANCHOR_SHAPE), "gemm", kind, ok, cycles, macs, note)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, ANCHORS))


def anchor_report(anchors: list[tuple[str, int, Result]]) -> str:
    lines = [f"published FireSim anchors ({gemm_name(ANCHOR_SHAPE)}, Autocomp code_examples.md):",
             f"{'kernel':14s} {'FireSim':>10s} {'model':>10s} {'model/FireSim':>14s}"]
    for kind, published, r in anchors:
        model = f"{r.cycles:>10d} {r.cycles / published:13.2f}x" if r.correct else f"{'INCORRECT':>10s}"
        lines.append(f"{kind:14s} {published:>10d} {model}")
    return "\n".join(lines)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def report(results: list[Result]) -> str:
    by = {(r.problem, r.kind): r for r in results}
    lines = [f"{'problem':24s} " + " ".join(f"{k:>22s}" for k in KINDS) + f" {'tuned/lib':>9s} {'best/lib':>8s}"]
    summary: dict[str, dict[str, list[float]]] = {}
    for problem in dict.fromkeys(r.problem for r in results):
        row = [f"{problem:24s}"]
        for kind in KINDS:
            r = by.get((problem, kind))
            if r is None:
                row.append(f"{'-':>22s}")
            elif not r.correct:
                row.append(f"{'INCORRECT':>22s}")
            else:
                row.append(f"{r.cycles:>12d} {r.utilization:7.1%}  ")
        lib, tuned = by.get((problem, "library")), by.get((problem, "tuned"))
        best = min((r for r in results if r.problem == problem and r.correct and r.kind != "library"),
                   key=lambda r: r.cycles, default=None)
        fam = next(r.family for r in results if r.problem == problem)
        s = summary.setdefault(fam, {"tuned": [], "best": [], "lib_util": [], "naive": []})
        if lib and lib.correct and tuned and tuned.correct:
            s["tuned"].append(lib.cycles / tuned.cycles)
            row.append(f"{lib.cycles / tuned.cycles:8.2f}x")
        else:
            row.append(f"{'-':>9s}")
        if lib and lib.correct and best:
            s["best"].append(lib.cycles / best.cycles)
            s["lib_util"].append(lib.utilization)
            row.append(f"{lib.cycles / best.cycles:7.2f}x")
        naive = by.get((problem, "naive"))
        if lib and lib.correct and naive and naive.correct:
            s["naive"].append(naive.cycles / lib.cycles)
        lines.append(" ".join(row))
    lines.append("")
    for fam, s in summary.items():
        paper = PAPER[fam]
        lines.append(
            f"{fam}: tuned explicit vs library geomean {geomean(s['tuned']):.2f}x, best hand-written vs library "
            f"{geomean(s['best']):.2f}x (paper's FireSim: ~{paper['speedup']:.1f}x); library utilization "
            f"{min(s['lib_util'], default=0):.0%}..{max(s['lib_util'], default=0):.0%} (paper: at most "
            f"~{paper['library_util']:.0%})"
            + (f"; naive explicit is {geomean(s['naive']):.1f}x slower than the library" if s["naive"] else ""))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("gemm", "conv"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    anchors = run_anchors(args.workers) if args.only in (None, "gemm") else []
    results = run_all(problems(args.only), workers=args.workers)
    if args.json:
        print(json.dumps([r.__dict__ | {"utilization": r.utilization} for r in results]
                         + [r.__dict__ | {"published_cycles": p} for _, p, r in anchors]))
    else:
        if anchors:
            print(anchor_report(anchors) + "\n")
        print(report(results))
        for r in [*results, *(r for _, _, r in anchors)]:
            if not r.correct:
                print(f"\n{r.problem} {r.kind}: not correct\n{r.note}", file=sys.stderr)
    return 0 if all(r.correct for r in results) and all(r.correct for _, _, r in anchors) else 1


if __name__ == "__main__":
    sys.exit(main())
