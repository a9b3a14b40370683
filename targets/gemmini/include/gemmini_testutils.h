/* Test utilities of speedpatch's Gemmini API (source-compatible names): the cycle counter and small
 * DIM x DIM matrix helpers used by test programs to compute references on the CPU.
 */
#ifndef SPEEDPATCH_GEMMINI_TESTUTILS_H
#define SPEEDPATCH_GEMMINI_TESTUTILS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#ifndef BAREMETAL
#include <sys/mman.h>
#endif

#include "gemmini.h"

/* The modelled core's cycle counter: natively the model's host clock, on RISC-V `rdcycle`. */
static inline uint64_t read_cycles(void) {
#ifdef SPEEDPATCH_NATIVE
  return gemmini_model_cycles();
#else
  uint64_t cycles;
  asm volatile("rdcycle %0" : "=r"(cycles));
  return cycles;
#endif
}

#ifndef BAREMETAL
#define rdcycle() read_cycles()
#endif

/* Upstream's page pinning for Linux runs (newer test programs call it first thing instead of their own
 * mlockall block): lock every page so the DMA never meets one that is paged out; exit 1 if that fails.
 * Bare-metal programs have nothing to pin. Natively, xcustom.h makes mlockall() succeed without locking
 * (the model's memory is this process's own). */
static inline void pin_all(void) {
#ifndef BAREMETAL
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    perror("mlockall failed");
    exit(1);
  }
#endif
}

static inline int64_t gemmini_rounding_shift(int64_t x, int shift) {
  if (shift <= 0) return x;
  /* Round to nearest, ties to even, like the OS dataflow's output shift. */
  const int64_t q = x >> shift;
  const int64_t rem = x & ((1LL << shift) - 1);
  const int64_t half = 1LL << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) return q + 1;
  return q;
}

static inline void matmul(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM], full_t C_full[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      C_full[r][c] = D[r][c];
      for (size_t k = 0; k < DIM; k++) C_full[r][c] += (full_t)A[r][k] * B[k][c];
    }
}

static inline void matmul_short(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM], elem_t C[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      int64_t sum = D[r][c];
      for (size_t k = 0; k < DIM; k++) sum += (int64_t)A[r][k] * B[k][c];
      C[r][c] = (elem_t)sum; /* wraps, as the upstream helper does */
    }
}

/* The same with a full-width (64-bit) bias, as upstream declares it. */
static inline void matmul_full(elem_t A[DIM][DIM], elem_t B[DIM][DIM], full_t D[DIM][DIM], full_t C_full[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      C_full[r][c] = D[r][c];
      for (size_t k = 0; k < DIM; k++) C_full[r][c] += (full_t)A[r][k] * B[k][c];
    }
}

/* Transposed-operand references: A^T*B, A*B^T and A^T*B^T (+ D), in the three result widths of the plain
 * helpers above (full_t; elem_t wrapping; full_t with a full_t bias). */
static inline full_t gemmini_test_dot(elem_t A[DIM][DIM], elem_t B[DIM][DIM], size_t r, size_t c, bool a_t, bool b_t) {
  full_t sum = 0;
  for (size_t k = 0; k < DIM; k++) sum += (full_t)(a_t ? A[k][r] : A[r][k]) * (b_t ? B[c][k] : B[k][c]);
  return sum;
}

#define GEMMINI_TEST_TRANSPOSED_MATMULS(suffix, a_t, b_t)                                                     \
  static inline void matmul_##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM],             \
                                     full_t C_full[DIM][DIM]) {                                              \
    for (size_t r = 0; r < DIM; r++)                                                                         \
      for (size_t c = 0; c < DIM; c++) C_full[r][c] = D[r][c] + gemmini_test_dot(A, B, r, c, a_t, b_t);      \
  }                                                                                                          \
  static inline void matmul_short_##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM], elem_t D[DIM][DIM],       \
                                           elem_t C[DIM][DIM]) {                                             \
    for (size_t r = 0; r < DIM; r++)                                                                         \
      for (size_t c = 0; c < DIM; c++) C[r][c] = (elem_t)(D[r][c] + gemmini_test_dot(A, B, r, c, a_t, b_t)); \
  }                                                                                                          \
  static inline void matmul_full_##suffix(elem_t A[DIM][DIM], elem_t B[DIM][DIM], full_t D[DIM][DIM],        \
                                          full_t C_full[DIM][DIM]) {                                         \
    for (size_t r = 0; r < DIM; r++)                                                                         \
      for (size_t c = 0; c < DIM; c++) C_full[r][c] = D[r][c] + gemmini_test_dot(A, B, r, c, a_t, b_t);      \
  }
GEMMINI_TEST_TRANSPOSED_MATMULS(A_transposed, true, false)
GEMMINI_TEST_TRANSPOSED_MATMULS(B_transposed, false, true)
GEMMINI_TEST_TRANSPOSED_MATMULS(AB_transposed, true, true)
#undef GEMMINI_TEST_TRANSPOSED_MATMULS

static inline void matadd(full_t sum[DIM][DIM], full_t m1[DIM][DIM], full_t m2[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) sum[r][c] = m1[r][c] + m2[r][c];
}

/* Rounding right shift of a full-precision matrix, then saturation to elem_t. */
static inline void matshift(full_t full[DIM][DIM], elem_t out[DIM][DIM], int shift) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[r][c] = gemmini_saturate_elem(gemmini_rounding_shift(full[r][c], shift));
}

static inline void matscale(full_t full[DIM][DIM], elem_t out[DIM][DIM], acc_scale_t scale) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[r][c] = gemmini_cpu_acc_to_elem(full[r][c], scale, NO_ACTIVATION);
}

static inline void matrelu(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[r][c] = in[r][c] > 0 ? in[r][c] : 0;
}

/* ReLU6's reference (clipped at 6 * scale), which test programs of the library versions with RELU6 call. */
static inline void matrelu6(elem_t in[DIM][DIM], elem_t out[DIM][DIM], int scale) {
  const int max = 6 * scale;
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) {
      const elem_t positive = in[r][c] > 0 ? in[r][c] : 0;
      out[r][c] = (elem_t)(positive > max ? max : positive);
    }
}

static inline void transpose(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) out[c][r] = in[r][c];
}

static inline int is_equal(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++)
      if (x[r][c] != y[r][c]) return 0;
  return 1;
}

static inline int is_equal_transposed(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++)
      if (x[r][c] != y[c][r]) return 0;
  return 1;
}

static inline void printMatrix(elem_t m[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++) {
    for (size_t c = 0; c < DIM; c++) printf("%d ", (int)m[r][c]);
    printf("\n");
  }
}

static inline void printMatrixAcc(acc_t m[DIM][DIM]) {
  for (size_t r = 0; r < DIM; r++) {
    for (size_t c = 0; c < DIM; c++) printf("%d ", (int)m[r][c]);
    printf("\n");
  }
}

/* Element-wise equality of two dim_i x dim_j arrays (any element type), as an expression. No
 * full_printMatrix / full_is_equal here: upstream programs define those themselves, for their own sizes. */
#define MAT_IS_EQUAL(dim_i, dim_j, x, y)                                        \
  ({                                                                            \
    int gemmini_mat_equal_ = 1;                                                 \
    for (size_t gemmini_i_ = 0; gemmini_i_ < (size_t)(dim_i); gemmini_i_++)     \
      for (size_t gemmini_j_ = 0; gemmini_j_ < (size_t)(dim_j); gemmini_j_++)   \
        if ((x)[gemmini_i_][gemmini_j_] != (y)[gemmini_i_][gemmini_j_])         \
          gemmini_mat_equal_ = 0;                                               \
    gemmini_mat_equal_;                                                         \
  })

/* The gold result of Autocomp's Gemmini harnesses (ucb-bar/autocomp harnesses/{exo,gemm}/test*.c and
 * tests/, built against gemmini-rocc-tests' auto-comp-v2 branch, whose header is not public):
 *   tiled_matmul_outer_eigen(A, B, C, I, K, J, A_transpose, B_transpose)
 *   tiled_matmul_outer_eigen_bias(A, B, D, C, I, K, J, A_transpose, B_transpose, sub_bias)
 * compute C = A*B (+ D, or - D when sub_bias) for I x K by K x J matrices, A stored K x I when transposed, B
 * stored J x K when transposed, with scale 1 and no activation, before the harness's timed region. Here it is
 * computed exactly on the CPU (independent of the model the kernel runs on) and saturated to C's element
 * type: elem_t for the int8 harnesses, acc_t where C is an acc_t array. D may be elem_t or acc_t. */
static inline void gemmini_outer_reference(const elem_t *A, const elem_t *B, const void *D, int d_is_acc,
                                           void *C, int c_is_acc, size_t I, size_t K, size_t J, bool a_t,
                                           bool b_t, bool sub_bias) {
  for (size_t i = 0; i < I; i++)
    for (size_t j = 0; j < J; j++) {
      full_t sum = 0;
      for (size_t k = 0; k < K; k++)
        sum += (full_t)(a_t ? A[k * I + i] : A[i * K + k]) * (b_t ? B[j * K + k] : B[k * J + j]);
      if (D != NULL) {
        const full_t d = d_is_acc ? (full_t)((const acc_t *)D)[i * J + j] : (full_t)((const elem_t *)D)[i * J + j];
        sum = sub_bias ? sum - d : sum + d;
      }
      if (c_is_acc) {
        ((acc_t *)C)[i * J + j] = (acc_t)(sum > INT32_MAX ? INT32_MAX : (sum < INT32_MIN ? INT32_MIN : sum));
      } else {
        ((elem_t *)C)[i * J + j] = (elem_t)(sum > elem_t_max ? elem_t_max : (sum < elem_t_min ? elem_t_min : sum));
      }
    }
}

#define GEMMINI_IS_ACC_ARRAY(M) _Generic(&(M)[0][0], acc_t *: 1, const acc_t *: 1, default: 0)
#define tiled_matmul_outer_eigen(A, B, C, I, K, J, A_transpose, B_transpose)                                  \
  gemmini_outer_reference(&(A)[0][0], &(B)[0][0], NULL, 0, &(C)[0][0], GEMMINI_IS_ACC_ARRAY(C), (I), (K), (J), \
                          (A_transpose), (B_transpose), false)
#define tiled_matmul_outer_eigen_bias(A, B, D, C, I, K, J, A_transpose, B_transpose, sub_bias)                  \
  gemmini_outer_reference(&(A)[0][0], &(B)[0][0], &(D)[0][0], GEMMINI_IS_ACC_ARRAY(D), &(C)[0][0],           \
                          GEMMINI_IS_ACC_ARRAY(C), (I), (K), (J), (A_transpose), (B_transpose), (sub_bias))

/* A small deterministic generator (splitmix64), so test data never depends on the C library. */
static uint64_t gemmini_test_rng_state __attribute__((unused)) = 0x853c49e6748fea9bULL;

static inline void gemmini_test_seed(uint64_t seed) { gemmini_test_rng_state = seed * 0x9E3779B97F4A7C15ULL + 1; }

static inline uint64_t gemmini_test_rand(void) {
  uint64_t z = (gemmini_test_rng_state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* A uniform integer in [lo, hi]. */
static inline int64_t gemmini_test_rand_range(int64_t lo, int64_t hi) {
  return lo + (int64_t)(gemmini_test_rand() % (uint64_t)(hi - lo + 1));
}

static inline void rand_matrix(elem_t m[DIM][DIM], int lo, int hi) {
  for (size_t r = 0; r < DIM; r++)
    for (size_t c = 0; c < DIM; c++) m[r][c] = (elem_t)gemmini_test_rand_range(lo, hi);
}

#endif /* SPEEDPATCH_GEMMINI_TESTUTILS_H */
