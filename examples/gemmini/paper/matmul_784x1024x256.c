// The Autocomp paper's GEMM 784 x 1024 x 256 (I x J x K; int8, no bias, scale 1), as the paper defines it,
// through the library call: the baseline. Optimize `matmul_kernel`; main() is the trusted harness.
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"
#define MAT_DIM_I 784
#define MAT_DIM_J 1024
#define MAT_DIM_K 256

// C = A * B saturated to int8 (no bias, scale 1). A: I x K, B: K x J, C: I x J, row-major.
void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C) {
  (void)bias;
  tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, NULL, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, MAT_DIM_J,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f, 0, false,
                    false, false, false, false, 0, WS);
}

int main(void) {
  return speedpatch_run_matmul(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, false, NO_ACTIVATION, 1.0f, matmul_kernel);
}
