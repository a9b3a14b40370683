// The Autocomp paper's 3x3 convolution, batch 4, 28x28, 128 -> 128 channels, stride 1, padding 1 (int8, NHWC, with bias),
// through the library call: the baseline. Optimize `conv_kernel`; main() is the trusted harness.
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

void conv_kernel(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output) {
  tiled_conv_auto(BATCH_SIZE, IN_DIM, IN_DIM, IN_CHANNELS, OUT_CHANNELS, OUT_DIM, OUT_DIM, STRIDE, 1, 1, PADDING,
                  KERNEL_DIM, false, false, false, false, false, input, weights, bias, output, CONV_ACT, CONV_SCALE,
                  0, 0, 0, WS);
}

int main(void) {
  const struct speedpatch_conv_shape shape = {BATCH_SIZE, IN_DIM, IN_CHANNELS, OUT_CHANNELS, KERNEL_DIM, STRIDE,
                                              PADDING};
  return speedpatch_run_conv(shape, CONV_ACT, CONV_SCALE, conv_kernel);
}
