// The Autocomp paper's 3x3 convolution, batch 4, 28x28, 128 -> 128 channels, stride 1, padding 1 (int8, NHWC, with bias),
// as unoptimized explicit Gemmini code: the kind of starting point the paper's search begins from.
// Optimize `conv_kernel`; main() is the trusted harness.
#include "include/gemmini.h"
#include "include/gemmini_testutils.h"
#include "include/speedpatch_harness.h"
#define BATCH_SIZE 4
#define IN_DIM 28
#define IN_CHANNELS 128
#define OUT_CHANNELS 128
#define KERNEL_DIM 3
#define STRIDE 1
#define PADDING 1
#define OUT_DIM ((IN_DIM + 2 * PADDING - KERNEL_DIM) / STRIDE + 1)
#define CONV_SCALE (1.0f / 128)
#define CONV_ACT NO_ACTIVATION

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

int main(void) {
  const struct speedpatch_conv_shape shape = {BATCH_SIZE, IN_DIM, IN_CHANNELS, OUT_CHANNELS, KERNEL_DIM, STRIDE,
                                              PADDING};
  return speedpatch_run_conv(shape, CONV_ACT, CONV_SCALE, conv_kernel);
}
