// The Autocomp paper's GEMM 784 x 1024 x 256 (I x J x K; int8, no bias, scale 1) as unoptimized explicit
// Gemmini code: the kind of starting point the paper's search begins from. Optimize `matmul_kernel`;
// main() is the trusted harness.
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"
#define MAT_DIM_I 784
#define MAT_DIM_J 1024
#define MAT_DIM_K 256

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

int main(void) {
  return speedpatch_run_matmul(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, false, NO_ACTIVATION, 1.0f, matmul_kernel);
}
