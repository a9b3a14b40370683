/* Parameters of the default Gemmini configuration: int8 inputs, int32 accumulation, a 16x16 array.
 *
 * One file = one hardware configuration. The native model and the library both take every size from
 * here, so another configuration is another copy of this file in another directory placed first on the
 * include path (include it as <gemmini_params.h>), never an edit to the model's code.
 */
#ifndef GEMMINI_PARAMS_H
#define GEMMINI_PARAMS_H

#include <limits.h>
#include <math.h>
#include <stdint.h>

#define XCUSTOM_ACC 3 /* RoCC custom opcode: custom-3 (0x7b) */

#define DIM 16        /* systolic array: DIM x DIM processing elements */
#define ADDR_LEN 32   /* bits of a local (scratchpad/accumulator) address */
#define BANK_NUM 4    /* scratchpad banks */
#define BANK_ROWS 4096 /* rows per bank, each DIM elements: 4 x 4096 x 16 B = 256 KiB */
#define ACC_ROWS 1024 /* accumulator rows, each DIM acc_t: 1024 x 16 x 4 B = 64 KiB */
#define MAX_BYTES 64  /* widest row one mvin moves */
#define MAX_BLOCK_LEN (MAX_BYTES / (DIM * 1))     /* DIM-wide blocks per scratchpad mvin */
#define MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * 4)) /* DIM-wide blocks per accumulator mvin */

typedef int8_t elem_t;
static const elem_t elem_t_max = 127;
static const elem_t elem_t_min = -128;
typedef int32_t acc_t;
typedef int64_t full_t;

#define HAS_MVIN_SCALE
typedef float scale_t;
typedef uint32_t scale_t_bits;
typedef int32_t scale_acc_t;
typedef uint32_t scale_acc_t_bits;
typedef float acc_scale_t;
typedef uint32_t acc_scale_t_bits;
#define ACC_SCALE_T_IS_FLOAT
#define ACC_SCALE_EXP_BITS 8
#define ACC_SCALE_SIG_BITS 24

#define row_align(blocks) __attribute__((aligned(blocks * DIM * sizeof(elem_t))))
#define row_align_acc(blocks) __attribute__((aligned(blocks * DIM * sizeof(acc_t))))

#define MVIN_SCALE_IDENTITY 1.0
#define ACC_SCALE_IDENTITY 1.0

/* Rounding right shift, ties to even (what the OS dataflow applies on output). */
#define ROUNDING_RIGHT_SHIFT(x, shift)                                                               \
  ((shift) > 0 ? (((x) >> (shift)) +                                                                 \
                  ((((x) >> ((shift) - 1)) & 1) &                                                    \
                   ((((shift) > 1) && (((x) & ((1LL << ((shift) - 1)) - 1)) != 0)) | (((x) >> (shift)) & 1)))) \
               : (x))

/* Round half to even, in the argument's own floating type (upstream's params header has this helper). */
#define ROUND_NEAR_EVEN(x)                                                                           \
  ({                                                                                                 \
    const __typeof__(x) x_ = (x);                                                                    \
    (__typeof__(x))(sizeof(x_) == sizeof(float) ? nearbyintf((float)x_) : nearbyint((double)x_));   \
  })

/* The accumulator read-out's scale as the default int8 configuration's params header defines it: float
 * scale, round half to even (the default rounding mode), saturated to elem_t's range (the mvout saturates
 * too, and test programs compare an ACC_SCALE result assigned to elem_t against the mvout's output). */
#define ACC_SCALE(x, scale)                                                                          \
  ({                                                                                                 \
    float y = nearbyintf((float)(x) * (float)(scale));                                               \
    y > 127.0f ? 127 : (y < -128.0f ? -128 : (acc_t)y);                                              \
  })
#define MVIN_SCALE(x, scale)                                                                         \
  ({                                                                                                 \
    float y = nearbyintf((float)(x) * (float)(scale));                                               \
    y > 127.0f ? 127 : (y < -128.0f ? -128 : (elem_t)y);                                             \
  })

#define ACC_READ_SMALL_WIDTH
#define ACC_READ_FULL_WIDTH
#define HAS_FIRST_LAYER_OPTIMIZATIONS
#define NORM_STAT_IDS 4

#endif /* GEMMINI_PARAMS_H */
