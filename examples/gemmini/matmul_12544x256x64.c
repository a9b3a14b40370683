// GEMM 12544x256x64 (I x J x K), int8 inputs, int32 accumulation, a bias row, through the library call
// (the baseline). One of the paper's Gemmini GEMM benchmarks. Optimize `matmul_kernel`; main() is the
// trusted speedpatch harness.
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"

#define MAT_DIM_I 12544
#define MAT_DIM_J 256
#define MAT_DIM_K 64
#define MATMUL_SCALE (1.0f / 32) // keeps the int8 results in range for K = 64
#define MATMUL_ACT NO_ACTIVATION

// C = MATMUL_SCALE * (A * B + bias), saturated to int8. A: I x K, B: K x J, bias: J (repeated on every row).
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, MAT_DIM_J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, false,
                    false, false, 0, WS);
}

int main(void) {
  return speedpatch_run_matmul(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, true, MATMUL_ACT, MATMUL_SCALE, matmul_kernel);
}
