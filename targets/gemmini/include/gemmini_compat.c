/* The DIM x DIM test helpers of upstream's early headers, for programs that call them with only gemmini.h
 * included.
 *
 * Before gemmini_testutils.h existed, include/systolic.h and the first include/gemmini.h defined the CPU
 * reference helpers (matmul, matmul_short, matmul_full, matadd, matshift, matrelu, matrelu6, transpose),
 * is_equal() and printMatrix() next to the instruction macros, so programs of that time (bareMetalC/aligned.c,
 * matmul_os.c, matmul_ws.c) call them including only gemmini.h. Today they are static functions of
 * gemmini_testutils.h, and programs define their own; a definition in gemmini.h would clash with both. So
 * build.py compiles this file as a translation unit of its own, instrumented like the program (its host work
 * is charged), and links it only when the program's link leaves one of these names undefined; weak, so it
 * never stands in for a definition the program has. Each computes what the early header's did (a 64-bit
 * product, a rounding right shift then a saturating cast, ReLU6 clipped at 6 * scale). */
#include <stdio.h>

#include "gemmini.h"

__attribute__((weak)) int is_equal(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++)
      if (x[r][c] != y[r][c]) return 0;
  return 1;
}

__attribute__((weak)) void printMatrix(elem_t m[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++) {
    for (size_t c = 0; c < DIM; c++) printf("%d ", (int)m[r][c]);
    printf("\n");
  }
}

__attribute__((weak)) void matmul(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM], int64_t C_full[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      C_full[r][c] = D[r][c];
      for (size_t k = 0; k < DIM; k++) C_full[r][c] += (int64_t)A[r][k] * B[k][c];
    }
}

/* The sum kept in elem_t, wrapping, as the early header's accumulation into C did. */
__attribute__((weak)) void matmul_short(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM], elem_t C[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      int64_t sum = D[r][c];
      for (size_t k = 0; k < DIM; k++) sum += (int64_t)A[r][k] * B[k][c];
      C[r][c] = (elem_t)sum;
    }
}

__attribute__((weak)) void matmul_full(elem_t A[DIM][DIM], elem_t B[DIM][DIM], int64_t D[DIM][DIM],
                                       int64_t C_full[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      C_full[r][c] = D[r][c];
      for (size_t k = 0; k < DIM; k++) C_full[r][c] += (int64_t)A[r][k] * B[k][c];
    }
}

__attribute__((weak)) void matadd(int64_t sum[DIM][DIM], int64_t m1[DIM][DIM], int64_t m2[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) sum[r][c] = m1[r][c] + m2[r][c];
}

__attribute__((weak)) void matshift(int64_t full[DIM][DIM], elem_t out[DIM][DIM], int shift) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      const int64_t shifted = ROUNDING_RIGHT_SHIFT(full[r][c], shift);
      out[r][c] = (elem_t)(shifted > elem_t_max ? elem_t_max : (shifted < elem_t_min ? elem_t_min : shifted));
    }
}

__attribute__((weak)) void matrelu(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[r][c] = in[r][c] > 0 ? in[r][c] : 0;
}

__attribute__((weak)) void matrelu6(elem_t in[DIM][DIM], elem_t out[DIM][DIM], int scale) {
  const int max = 6 * scale;
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      const elem_t positive = in[r][c] > 0 ? in[r][c] : 0;
      out[r][c] = (elem_t)(positive > max ? max : positive);
    }
}

__attribute__((weak)) void transpose(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[c][r] = in[r][c];
}
