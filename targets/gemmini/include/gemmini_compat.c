/* The DIM x DIM test helpers of upstream's early headers, for programs that call them with only gemmini.h
 * included.
 *
 * Before gemmini_testutils.h existed, include/systolic.h and the first include/gemmini.h defined is_equal()
 * and printMatrix() next to the instruction macros, so programs of that time (bareMetalC/aligned.c,
 * matmul_os.c) call them including only gemmini.h. Today they are static functions of gemmini_testutils.h,
 * and programs define their own; a definition in gemmini.h would clash with both. So build.py compiles this
 * file as a translation unit of its own, instrumented like the program (its host work is charged), and links
 * it only when the program's link leaves one of these names undefined; weak, so it never stands in for a
 * definition the program has. */
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
