/* speedpatch's own implementation of the public Gemmini programming interface.
 *
 * Source-compatible with programs written against the upstream library: the same macro and function
 * names and arguments (config/mvin/mvout/preload/compute, the hardware loops, tiled_matmul,
 * tiled_matmul_auto, tiled_conv_auto). Written from the ISA facts; every operation ends in a RoCC
 * instruction through xcustom.h, which on a native build calls the instruction-level model and on
 * RISC-V emits the real custom-3 instruction.
 *
 * Deliberate limits (each reported at run time, never silently ignored):
 *  - tiled_conv_auto / tiled_conv: input dilation up to 2 with stride 1 on Gemmini, the layout flags but not
 *    the combinations upstream refuses too (see gemmini_conv.h); activations none and ReLU only;
 *  - weightA is accepted and ignored (a loading-priority hint); bert_scale serves IGELU and SOFTMAX. IGELU,
 *    LAYERNORM and SOFTMAX (tiled_matmul with WS or CPU, tiled_norm_auto) need a configuration with
 *    normalizations (HAS_NORMALIZATIONS) on the accelerator; LAYERNORM/SOFTMAX need a whole row of C per
 *    tile and are refused with OS or full_C.
 */
#ifndef SPEEDPATCH_GEMMINI_H
#define SPEEDPATCH_GEMMINI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Angle brackets on purpose: a build can put another configuration's directory first on the -I path. */
#include <gemmini_params.h>
#include "xcustom.h"

/* ---- configuration constants a parameter file may leave out ---------------------------------- */
#ifndef ADDR_LEN
#define ADDR_LEN 32
#endif
#ifndef MAX_BYTES
#define MAX_BYTES 64
#endif
#ifndef MAX_BLOCK_LEN
#define MAX_BLOCK_LEN (MAX_BYTES / (DIM * sizeof(elem_t)))
#endif
#ifndef MAX_BLOCK_LEN_ACC
#define MAX_BLOCK_LEN_ACC (MAX_BYTES / (DIM * sizeof(acc_t)))
#endif
#ifndef MVIN_SCALE_IDENTITY
#define MVIN_SCALE_IDENTITY 1.0f
#endif
#ifndef ACC_SCALE_IDENTITY
#define ACC_SCALE_IDENTITY 1.0f
#endif
#ifndef XCUSTOM_ACC
#define XCUSTOM_ACC 3
#endif
#ifndef NORM_STAT_IDS
#define NORM_STAT_IDS 4 /* the normalizer's statistics ids (upstream's default configurations have 4) */
#endif

/* ---- instruction numbers (funct field) ---------------------------------------------------------- */
#define k_CONFIG 0
#define k_MVIN2 1
#define k_MVIN 2
#define k_MVOUT 3
#define k_COMPUTE_PRELOADED 4
#define k_COMPUTE_ACCUMULATE 5
#define k_PRELOAD 6
#define k_FLUSH 7
#define k_LOOP_WS 8
#define k_LOOP_WS_CONFIG_BOUNDS 9
#define k_LOOP_WS_CONFIG_ADDRS_AB 10
#define k_LOOP_WS_CONFIG_ADDRS_DC 11
#define k_LOOP_WS_CONFIG_STRIDES_AB 12
#define k_LOOP_WS_CONFIG_STRIDES_DC 13
#define k_MVIN3 14
#define k_LOOP_CONV_WS 15
#define k_LOOP_CONV_WS_CONFIG_1 16
#define k_LOOP_CONV_WS_CONFIG_2 17
#define k_LOOP_CONV_WS_CONFIG_3 18
#define k_LOOP_CONV_WS_CONFIG_4 19
#define k_LOOP_CONV_WS_CONFIG_5 20
#define k_LOOP_CONV_WS_CONFIG_6 21
#define k_COUNTER 126

/* CONFIG sub-commands, selected by rs1[1:0]. */
#define CONFIG_EX 0
#define CONFIG_LD 1
#define CONFIG_ST 2
#define CONFIG_BERT 3

#define GARBAGE_ADDR ((uint32_t)(-1))
#define OUTPUT_STATIONARY 0
#define WEIGHT_STATIONARY 1

#ifndef NO_ACTIVATION
#define NO_ACTIVATION 0
#define RELU 1
#define LAYERNORM 2
#define IGELU 3
#define SOFTMAX 4
#endif
/* Activation 2 was RELU6 (ReLU clipped at 6 << relu6_shift) in the library versions whose calls carry a
 * relu6_shift (gemmini-rocc-tests before LayerNorm took the number; tiled_matmul_option.c, conv.c of that
 * time name it in their CPU references). The name keeps such programs compiling; their argument lists'
 * forms refuse activation 2 at run time with a message naming RELU6, as the model has no RELU6. */
#ifndef RELU6
#define RELU6 2
#endif

/* Local-address flag bits (bit31 accumulator, bit30 accumulate, bit29 full-width read). */
#define GEMMINI_ACC_ADDR (1u << 31)
#define GEMMINI_ACC_ACCUMULATE (1u << 30)
#define GEMMINI_ACC_FULL (1u << 29)

enum tiled_matmul_type_t { OS, WS, CPU };

/* ---- argument-count dispatch ------------------------------------------------------------------------
 * The public interface has changed its argument lists over upstream's releases (gemmini_config_ex had 2,
 * 3, 4 and 5 arguments; tiled_matmul_auto 12 to 25; tiled_conv_auto 19, 26 and 27). Programs written
 * against any of them must compile, so such a name is a variadic macro that picks NAME_with_<count>_args: each
 * form is defined next to the current one, with a comment naming the library version it comes from. A
 * count no version had expands to an undeclared NAME_with_<count>_args, which the compiler names in its
 * error. Arguments are counted at their top-level commas, as the compiler counts a call's. */
#define GEMMINI_ARG_COUNT(...)                                                                               \
  GEMMINI_ARG_COUNT_(__VA_ARGS__, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, \
                     21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define GEMMINI_ARG_COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, \
                           a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32, a33, a34, a35, a36,  \
                           a37, a38, a39, a40, count, ...)                                                        \
  count
#define GEMMINI_CAT3_(a, b, c) a##b##c
#define GEMMINI_CAT3(a, b, c) GEMMINI_CAT3_(a, b, c)
#define GEMMINI_BY_ARITY(name, ...) GEMMINI_CAT3(name##_with_, GEMMINI_ARG_COUNT(__VA_ARGS__), _args)(__VA_ARGS__)

/* ---- bit helpers -------------------------------------------------------------------------------- */
static inline uint32_t gemmini_float_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

/* rows[63:48] | cols[47:32] | local address[31:0]: the operand layout shared by mvin/mvout/preload/compute. */
#define gemmini_local_operand(addr, cols, rows)                                              \
  (((uint64_t)(rows) << (ADDR_LEN + 16)) | ((uint64_t)(cols) << ADDR_LEN) |                  \
   (uint64_t)(uint32_t)(addr))

/* One RoCC instruction, as a { } block like upstream's (its ROCC_INSTRUCTION macros are blocks): upstream
 * programs may leave out the ';' after an instruction macro (transpose.c does), and code written for these
 * headers must also compile against upstream's, so an instruction is no single statement for an unbraced
 * if/else either (brace such bodies, as upstream code must). */
#define gemmini_rocc(rs1, rs2, funct)                                                     \
  {                                                                                       \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(rs1), (uint64_t)(rs2), funct);       \
  }

/* ---- configuration ------------------------------------------------------------------------------ */
#define gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, sys_acc_scale, C_stride, A_stride,     \
                                    A_transpose, B_transpose, set_only_strides)                         \
  gemmini_rocc(((uint64_t)gemmini_float_bits((float)(sys_acc_scale)) << 32) |                           \
                   ((uint64_t)(uint16_t)(A_stride) << 16) | ((uint64_t)((B_transpose) ? 1 : 0) << 9) |   \
                   ((uint64_t)((A_transpose) ? 1 : 0) << 8) | ((uint64_t)((set_only_strides) ? 1 : 0) << 7) | \
                   ((uint64_t)((sys_act) & 3) << 3) | ((uint64_t)((dataflow) & 1) << 2) | CONFIG_EX,     \
               ((uint64_t)(uint16_t)(C_stride) << 48) | (uint64_t)(uint32_t)(sys_shift), k_CONFIG)

#define gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose) \
  gemmini_extended3_config_ex(dataflow, sys_act, sys_shift, ACC_SCALE_IDENTITY, 1, A_stride, A_transpose, \
                              B_transpose, false)

/* gemmini_extended_config_ex / gemmini_config_ex, by argument count:
 *  6 / 3  (dataflow, act, sys_shift, A_stride, A_transpose, B_transpose) / (dataflow, act, sys_shift): the
 *         current library;
 *  7 / 4  (dataflow, act, sys_shift, relu6_shift, A_stride, A_transpose, B_transpose) / (dataflow, act,
 *         sys_shift, relu6_shift): versions with RELU6 (activation 2, clipped at 6 << relu6_shift), whose
 *         config_st already carried the accumulator's activation and scale, so act here is the systolic
 *         array's (output-stationary) activation, as now; relu6_shift only served RELU6, which stops with a
 *         library error naming it (today's Gemmini has no RELU6);
 *  8 / 5  (dataflow, act, sys_shift, acc_scale, relu6_shift, A_stride, A_transpose, B_transpose) /
 *         (dataflow, act, sys_shift, acc_scale, relu6_shift): older versions, whose config_ex also set the
 *         accumulator read-out's scale (an integer right shift, later a float scale) and activation, which
 *         config_st's stride then kept: both are sent as CONFIG_ST fields, as they are today (see
 *         gemmini_legacy_config_ex_readout in gemmini_lib.h); RELU6 stops with a library error;
 *  2      (dataflow, sys_shift): the first library, without activations. */
#define gemmini_extended_config_ex_with_6_args(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose) \
  gemmini_extended2_config_ex(dataflow, sys_act, sys_shift, A_stride, A_transpose, B_transpose)
#define gemmini_extended_config_ex_with_7_args(dataflow, act, sys_shift, relu6_shift, A_stride, A_transpose,      \
                                               B_transpose)                                                    \
  {                                                                                                            \
    gemmini_legacy_relu6_check(act);                                                                           \
    gemmini_extended_config_ex_with_6_args(dataflow, act, sys_shift, A_stride, A_transpose, B_transpose)       \
  }
#define gemmini_extended_config_ex_with_8_args(dataflow, act, sys_shift, acc_scale, relu6_shift, A_stride,        \
                                               A_transpose, B_transpose)                                       \
  {                                                                                                            \
    gemmini_legacy_config_ex_readout(act, GEMMINI_LEGACY_ACC_SCALE(acc_scale));                                \
    gemmini_extended_config_ex_with_6_args(dataflow, act, sys_shift, A_stride, A_transpose, B_transpose)       \
  }
#define gemmini_extended_config_ex(...) GEMMINI_BY_ARITY(gemmini_extended_config_ex, __VA_ARGS__)

#define gemmini_config_ex_with_3_args(dataflow, act, sys_shift) \
  gemmini_extended_config_ex_with_6_args(dataflow, act, sys_shift, 1, 0, 0)
#define gemmini_config_ex_with_4_args(dataflow, act, sys_shift, relu6_shift) \
  gemmini_extended_config_ex_with_7_args(dataflow, act, sys_shift, relu6_shift, 1, 0, 0)
#define gemmini_config_ex_with_5_args(dataflow, act, sys_shift, acc_scale, relu6_shift) \
  gemmini_extended_config_ex_with_8_args(dataflow, act, sys_shift, acc_scale, relu6_shift, 1, 0, 0)
#define gemmini_config_ex_with_2_args(dataflow, sys_shift) \
  gemmini_extended_config_ex_with_6_args(dataflow, NO_ACTIVATION, sys_shift, 1, 0, 0)
#define gemmini_config_ex(...) GEMMINI_BY_ARITY(gemmini_config_ex, __VA_ARGS__)

/* The accumulator read-out a library version before config_st took it passed to config_ex, as a scale: an
 * integer argument is the older right shift (a scale of 2^-shift), a floating one the later scale. */
#define GEMMINI_LEGACY_ACC_SCALE(x) \
  _Generic((x), float: (double)(x), double: (double)(x), long double: (double)(x), default: gemmini_shift_scale((x)))

/* CONFIG_LD: rs1 = scale[63:32] | block_mvin_stride[31:16] | pixel_repeats[15:8] | slot[4:3] | shrunk[2].
 * The upstream argument lists: extended5 sets pixel_repeats; extended4 and below repeat each pixel once. */
#define gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, pixel_repeats, id)     \
  gemmini_rocc(((uint64_t)gemmini_float_bits((float)(scale)) << 32) |                              \
                   ((uint64_t)(uint16_t)(block_mvin_stride) << 16) |                                \
                   ((uint64_t)(uint8_t)(pixel_repeats) << 8) | ((uint64_t)((id) & 3) << 3) |        \
                   ((uint64_t)((shrunk) ? 1 : 0) << 2) | CONFIG_LD,                                 \
               (uint64_t)(stride), k_CONFIG)

#define gemmini_extended4_config_ld(stride, scale, shrunk, block_mvin_stride, id) \
  gemmini_extended5_config_ld(stride, scale, shrunk, block_mvin_stride, 1, id)
#define gemmini_extended3_config_ld(stride, scale, shrunk, id) \
  gemmini_extended4_config_ld(stride, scale, shrunk, DIM, id)
#define gemmini_extended2_config_ld(stride, scale, shrunk) gemmini_extended3_config_ld(stride, scale, shrunk, 0)
#define gemmini_extended_config_ld(stride, scale) gemmini_extended2_config_ld(stride, scale, false)
#define gemmini_config_ld(stride) gemmini_extended_config_ld(stride, MVIN_SCALE_IDENTITY)

#define gemmini_extended2_config_st(stride, acc_act, acc_scale, pool_stride, pool_size, pool_out_dim,   \
                                    porows, pocols, orows, ocols, upad, lpad)                          \
  gemmini_rocc(((uint64_t)(uint8_t)(ocols) << 56) | ((uint64_t)(uint8_t)(orows) << 48) |              \
                   ((uint64_t)(uint8_t)(pocols) << 40) | ((uint64_t)(uint8_t)(porows) << 32) |        \
                   ((uint64_t)(uint8_t)(pool_out_dim) << 24) | ((uint64_t)((lpad) & 3) << 10) |       \
                   ((uint64_t)((upad) & 3) << 8) | ((uint64_t)((pool_size) & 3) << 6) |               \
                   ((uint64_t)((pool_stride) & 3) << 4) | ((uint64_t)((acc_act) & 3) << 2) | CONFIG_ST, \
               ((uint64_t)gemmini_float_bits((float)(acc_scale)) << 32) | (uint64_t)(uint32_t)(stride), \
               k_CONFIG)

/* gemmini_extended_config_st, by argument count: 3 (stride, acc_act, acc_scale), the current library; 10
 * (stride, pool_stride, pool_size, pool_out_dim, porows, pocols, orows, ocols, upad, lpad), versions whose
 * config_ex carried the read-out's activation and scale (see gemmini_config_ex with 5 arguments). */
#define gemmini_extended_config_st_with_3_args(stride, acc_act, acc_scale) \
  gemmini_extended2_config_st(stride, acc_act, acc_scale, 0, 0, 0, 0, 0, 0, 0, 0, 0)
#define gemmini_extended_config_st_with_10_args(stride, pool_stride, pool_size, pool_out_dim, porows, pocols, orows, \
                                                ocols, upad, lpad)                                               \
  {                                                                                                              \
    gemmini_legacy_readout_.have_stride = false;                                                                 \
    gemmini_legacy_readout_.pooled = true;                                                                       \
    gemmini_extended2_config_st(stride, gemmini_legacy_readout_.set ? gemmini_legacy_readout_.act : NO_ACTIVATION, \
                                gemmini_legacy_readout_.set ? gemmini_legacy_readout_.scale : ACC_SCALE_IDENTITY, \
                                pool_stride, pool_size, pool_out_dim, porows, pocols, orows, ocols, upad, lpad)  \
  }
#define gemmini_extended_config_st(...) GEMMINI_BY_ARITY(gemmini_extended_config_st, __VA_ARGS__)
/* The store stride with the identity read-out, or with the read-out an older config_ex set (gemmini_lib.h:
 * gemmini_config_st_stride_). */
#define gemmini_config_st(stride) gemmini_config_st_stride_((uint64_t)(stride));

/* CONFIG_NORM (upstream's gemmini_config_norm, CONFIG_BERT in rs1[1:0]): rs1 = q_const[63:32] |
 * q_const_type[18] | set_stats_id_only[17] | act_msb[16] | stat_id[15:8]; rs2 = igelu_qc[63:32] |
 * igelu_qb[31:0]. qb/qc are the accumulator read-out's IGELU constants; act_msb is the activation's third
 * bit (softmax = 4); q_const and the statistics ids serve LayerNorm and softmax. */
#define gemmini_config_norm(q_const, q_const_type, set_stats_id_only, act_msb, stat_id, igelu_qb, igelu_qc)    \
  gemmini_rocc(((uint64_t)(uint32_t)(q_const) << 32) | ((uint64_t)((q_const_type) & 1) << 18) |                \
                   ((uint64_t)((set_stats_id_only) & 1) << 17) | ((uint64_t)((act_msb) & 1) << 16) |            \
                   ((uint64_t)(uint8_t)(stat_id) << 8) | CONFIG_BERT,                                           \
               ((uint64_t)(uint32_t)(igelu_qc) << 32) | (uint64_t)(uint32_t)(igelu_qb), k_CONFIG)

/* ---- data movement ------------------------------------------------------------------------------ */
#define gemmini_extended_mvin(dram_addr, spad_addr, cols, rows) \
  gemmini_rocc((uintptr_t)(dram_addr), gemmini_local_operand(spad_addr, cols, rows), k_MVIN)
#define gemmini_extended_mvin2(dram_addr, spad_addr, cols, rows) \
  gemmini_rocc((uintptr_t)(dram_addr), gemmini_local_operand(spad_addr, cols, rows), k_MVIN2)
#define gemmini_extended_mvin3(dram_addr, spad_addr, cols, rows) \
  gemmini_rocc((uintptr_t)(dram_addr), gemmini_local_operand(spad_addr, cols, rows), k_MVIN3)
#define gemmini_mvin(dram_addr, spad_addr) gemmini_extended_mvin(dram_addr, spad_addr, DIM, DIM)
#define gemmini_mvin2(dram_addr, spad_addr) gemmini_extended_mvin2(dram_addr, spad_addr, DIM, DIM)
#define gemmini_mvin3(dram_addr, spad_addr) gemmini_extended_mvin3(dram_addr, spad_addr, DIM, DIM)
#define gemmini_block_mvin(dram_addr, spad_addr, len) \
  gemmini_extended_mvin(dram_addr, spad_addr, (len) * DIM, DIM)

#define gemmini_extended_mvout(dram_addr, spad_addr, cols, rows) \
  gemmini_rocc((uintptr_t)(dram_addr), gemmini_local_operand(spad_addr, cols, rows), k_MVOUT)
#define gemmini_mvout(dram_addr, spad_addr) gemmini_extended_mvout(dram_addr, spad_addr, DIM, DIM)

/* ---- execute ------------------------------------------------------------------------------------ */
#define gemmini_extended_preload(BD, C, BD_cols, BD_rows, C_cols, C_rows) \
  gemmini_rocc(gemmini_local_operand(BD, BD_cols, BD_rows), gemmini_local_operand(C, C_cols, C_rows), k_PRELOAD)
#define gemmini_preload(BD, C) gemmini_extended_preload(BD, C, DIM, DIM, DIM, DIM)
#define gemmini_preload_zeros(C) gemmini_preload(GARBAGE_ADDR, C)

#define gemmini_extended_compute_preloaded(A, BD, A_cols, A_rows, BD_cols, BD_rows)                     \
  gemmini_rocc(gemmini_local_operand(A, A_cols, A_rows), gemmini_local_operand(BD, BD_cols, BD_rows), \
               k_COMPUTE_PRELOADED)
#define gemmini_extended_compute_accumulated(A, BD, A_cols, A_rows, BD_cols, BD_rows)                   \
  gemmini_rocc(gemmini_local_operand(A, A_cols, A_rows), gemmini_local_operand(BD, BD_cols, BD_rows), \
               k_COMPUTE_ACCUMULATE)
#define gemmini_compute_preloaded(A, BD) gemmini_extended_compute_preloaded(A, BD, DIM, DIM, DIM, DIM)
#define gemmini_compute_accumulated(A, BD) gemmini_extended_compute_accumulated(A, BD, DIM, DIM, DIM, DIM)

#define gemmini_flush(skip) gemmini_rocc(skip, 0, k_FLUSH)

/* A RISC-V fence waits until Gemmini has finished everything outstanding; the native model offers the
 * same barrier as a function call. */
#ifdef SPEEDPATCH_NATIVE
#define gemmini_fence() gemmini_model_fence()
#else
#define gemmini_fence() asm volatile("fence")
#endif

/* ---- short instruction names -------------------------------------------------------------------------
 * The names Autocomp's and Exo's Gemmini kernels are written with (upstream gemmini-rocc-tests defines
 * them in include/gemmini.h on its auto-comp branches), with upstream's argument orders:
 *   config_ld(dram_stride_bytes, scale, spad_block_stride, id)   id 0/1/2 = mvin/mvin2/mvin3
 *   config_ex(dataflow, act, A_stride, A_transpose, B_transpose) config_st(dram_stride_bytes)
 * A program that defines its own (as macros before this header, or as functions/wrappers of another
 * arity) defines GEMMINI_NO_SHORT_NAMES first; a name already #defined is left alone. */
#ifndef GEMMINI_NO_SHORT_NAMES
#ifndef config_ex
#define config_ex(dataflow, act, A_stride, A_transpose, B_transpose) \
  gemmini_extended_config_ex_with_6_args(dataflow, act, 0, A_stride, A_transpose, B_transpose)
#endif
#ifndef config_ld
#define config_ld(dram_stride, scale, spad_block_stride, id) \
  gemmini_extended4_config_ld(dram_stride, scale, false, spad_block_stride, id)
#endif
#ifndef config_st
#define config_st(dram_stride) gemmini_config_st(dram_stride)
#endif
#ifndef mvin
#define mvin(dram_addr, spad_addr, cols, rows) gemmini_extended_mvin(dram_addr, spad_addr, cols, rows)
#endif
#ifndef mvin2
#define mvin2(dram_addr, spad_addr, cols, rows) gemmini_extended_mvin2(dram_addr, spad_addr, cols, rows)
#endif
#ifndef mvin3
#define mvin3(dram_addr, spad_addr, cols, rows) gemmini_extended_mvin3(dram_addr, spad_addr, cols, rows)
#endif
#ifndef mvout
#define mvout(dram_addr, spad_addr, cols, rows) gemmini_extended_mvout(dram_addr, spad_addr, cols, rows)
#endif
#ifndef preload
#define preload(B_spad_addr, C_acc_addr, B_cols, B_rows, C_cols, C_rows) \
  gemmini_extended_preload(B_spad_addr, C_acc_addr, B_cols, B_rows, C_cols, C_rows)
#endif
#ifndef preload_zeros
#define preload_zeros(C_acc_addr) gemmini_preload_zeros(C_acc_addr)
#endif
#ifndef compute_preloaded
#define compute_preloaded(A_spad_addr, bias_spad_addr, A_cols, A_rows, bias_cols, bias_rows) \
  gemmini_extended_compute_preloaded(A_spad_addr, bias_spad_addr, A_cols, A_rows, bias_cols, bias_rows)
#endif
#ifndef compute_accumulated
#define compute_accumulated(A_spad_addr, bias_spad_addr, A_cols, A_rows, bias_cols, bias_rows) \
  gemmini_extended_compute_accumulated(A_spad_addr, bias_spad_addr, A_cols, A_rows, bias_cols, bias_rows)
#endif
#ifndef fence
#define fence() gemmini_fence()
#endif
#endif /* GEMMINI_NO_SHORT_NAMES */

/* ---- legacy instruction names ------------------------------------------------------------------------
 * Upstream's API before the gemmini_* rename (include/systolic.h, then the first include/gemmini.h; its
 * bareMetalC/aligned.c still calls them): the two-argument forms whose meaning the current instructions
 * keep (mvin/mvout one DIM x DIM block, block_mvin len blocks side by side, preload/compute with
 * DIM x DIM operands, config_ld/config_st a DRAM stride, flush, fence). Left out: matmul_config_ex
 * (its acc_shift/relu6_shift read-out predates the float accumulator scale) and the still older forms
 * with dependency bits or a dummy first argument (their argument counts are a compile error). A program
 * defining these names itself defines GEMMINI_NO_LEGACY_NAMES first; a name already #defined is left alone. */
#ifndef GEMMINI_NO_LEGACY_NAMES
#ifndef matmul_mvin
#define matmul_mvin(dram_addr, spad_addr) gemmini_mvin(dram_addr, spad_addr)
#endif
#ifndef matmul_block_mvin
#define matmul_block_mvin(dram_addr, spad_addr, len) gemmini_block_mvin(dram_addr, spad_addr, len)
#endif
#ifndef matmul_mvout
#define matmul_mvout(dram_addr, spad_addr) gemmini_mvout(dram_addr, spad_addr)
#endif
#ifndef matmul_preload
#define matmul_preload(BD, C) gemmini_preload(BD, C)
#endif
#ifndef matmul_preload_zeros
#define matmul_preload_zeros(C) gemmini_preload_zeros(C)
#endif
#ifndef matmul_compute_preloaded
#define matmul_compute_preloaded(A, BD) gemmini_compute_preloaded(A, BD)
#endif
#ifndef matmul_compute_accumulated
#define matmul_compute_accumulated(A, BD) gemmini_compute_accumulated(A, BD)
#endif
#ifndef matmul_config_ld
#define matmul_config_ld(stride) gemmini_config_ld(stride)
#endif
#ifndef matmul_config_st
#define matmul_config_st(stride) gemmini_config_st(stride)
#endif
#ifndef matmul_flush
#define matmul_flush(skip) gemmini_flush(skip)
#endif
#ifndef matmul_fence
#define matmul_fence() gemmini_fence()
#endif
#endif /* GEMMINI_NO_LEGACY_NAMES */

/* ---- performance counters (the counter module, funct k_COUNTER) -------------------------------------
 * Command word (rs1): [0] reset all counters, [1] end the snapshot, [2] take a snapshot, [3] configure,
 * [6:4] counter index (8 counters), [17:12] event, [31] event is an external count. Event numbers are
 * those of Gemmini's counter file (CounterEvent 1..44, CounterExternal 1..7 after INCREMENTAL_COUNTERS).
 * The native model counts the unit-busy cycles, command counts and DMA bytes it models and stops with an
 * error naming any other event. */
#ifndef INCREMENTAL_COUNTERS
#define INCREMENTAL_COUNTERS 44
#endif
#define MAIN_LD_CYCLES 1
#define MAIN_ST_CYCLES 2
#define MAIN_EX_CYCLES 3
#define MAIN_LD_ST_CYCLES 4
#define MAIN_LD_EX_CYCLES 5
#define MAIN_ST_EX_CYCLES 6
#define MAIN_LD_ST_EX_CYCLES 7
#define LOAD_DMA_WAIT_CYCLE 8
#define LOAD_ACTIVE_CYCLE 9
#define LOAD_SCRATCHPAD_WAIT_CYCLE 10
#define STORE_DMA_WAIT_CYCLE 11
#define STORE_ACTIVE_CYCLE 12
#define STORE_POOLING_CYCLE 13
#define STORE_SCRATCHPAD_WAIT_CYCLE 14
#define DMA_TLB_MISS_CYCLE 15
#define DMA_TLB_HIT_REQ 16
#define DMA_TLB_TOTAL_REQ 17
#define RDMA_ACTIVE_CYCLE 18
#define RDMA_TLB_WAIT_CYCLES 19
#define RDMA_TL_WAIT_CYCLES 20
#define WDMA_ACTIVE_CYCLE 21
#define WDMA_TLB_WAIT_CYCLES 22
#define WDMA_TL_WAIT_CYCLES 23
#define EXE_ACTIVE_CYCLE 24
#define EXE_FLUSH_CYCLE 25
#define EXE_CONTROL_Q_BLOCK_CYCLE 26
#define EXE_PRELOAD_HAZ_CYCLE 27
#define EXE_OVERLAP_HAZ_CYCLE 28
#define SCRATCHPAD_A_WAIT_CYCLE 29
#define SCRATCHPAD_B_WAIT_CYCLE 30
#define SCRATCHPAD_D_WAIT_CYCLE 31
#define ACC_A_WAIT_CYCLE 32
#define ACC_B_WAIT_CYCLE 33
#define ACC_D_WAIT_CYCLE 34
#define A_GARBAGE_CYCLES 35
#define B_GARBAGE_CYCLES 36
#define D_GARBAGE_CYCLES 37
#define IM2COL_MEM_CYCLES 38
#define IM2COL_ACTIVE_CYCLES 39
#define IM2COL_TRANSPOSER_WAIT_CYCLE 40
#define RESERVATION_STATION_FULL_CYCLES 41
#define RESERVATION_STATION_ACTIVE_CYCLES 42
#define LOOP_MATMUL_ACTIVE_CYCLES 43
#define TRANSPOSE_PRELOAD_UNROLLER_ACTIVE_CYCLES 44
#define RESERVATION_STATION_LD_COUNT (INCREMENTAL_COUNTERS + 1)
#define RESERVATION_STATION_ST_COUNT (INCREMENTAL_COUNTERS + 2)
#define RESERVATION_STATION_EX_COUNT (INCREMENTAL_COUNTERS + 3)
#define RDMA_BYTES_REC (INCREMENTAL_COUNTERS + 4)
#define WDMA_BYTES_SENT (INCREMENTAL_COUNTERS + 5)
#define RDMA_TOTAL_LATENCY (INCREMENTAL_COUNTERS + 6)
#define WDMA_TOTAL_LATENCY (INCREMENTAL_COUNTERS + 7)
/* Older programs name the reservation station "ROB". */
#define ROB_LD_COUNT RESERVATION_STATION_LD_COUNT
#define ROB_ST_COUNT RESERVATION_STATION_ST_COUNT
#define ROB_EX_COUNT RESERVATION_STATION_EX_COUNT
#define ROB_FULL_CYCLES RESERVATION_STATION_FULL_CYCLES
#define ROB_ACTIVE_CYCLES RESERVATION_STATION_ACTIVE_CYCLES

#define gemmini_counter_access(rd, config_reg)                                                      \
  do {                                                                                              \
    uint64_t gemmini_counter_rd_ = 0;                                                               \
    ROCC_INSTRUCTION_R_R_R(XCUSTOM_ACC, gemmini_counter_rd_, (uint64_t)(uint32_t)(config_reg), 0, \
                           k_COUNTER);                                                              \
    (rd) = gemmini_counter_rd_;                                                                     \
  } while (0)

static inline uint32_t counter_read(size_t index) {
  uint32_t value;
  gemmini_counter_access(value, (uint32_t)((index & 7) << 4));
  return value;
}

/* Points counter `index` at an event and clears it. An event number above INCREMENTAL_COUNTERS is an
 * external count; the older three-argument form says so with its last argument instead. */
static inline void gemmini_counter_configure3(size_t index, size_t event, bool external) {
  if (event > INCREMENTAL_COUNTERS) {
    event -= INCREMENTAL_COUNTERS;
    external = true;
  }
  uint32_t ignored;
  gemmini_counter_access(ignored, (uint32_t)(((index & 7) << 4) | 0x8 | ((event & 0x3F) << 12) |
                                             ((uint32_t)(external ? 1 : 0) << 31)));
  (void)ignored;
}
#define gemmini_counter_configure2(index, event) gemmini_counter_configure3(index, event, false)
#define GEMMINI_COUNTER_PICK(_1, _2, _3, name, ...) name
#define counter_configure(...) \
  GEMMINI_COUNTER_PICK(__VA_ARGS__, gemmini_counter_configure3, gemmini_counter_configure2, unused)(__VA_ARGS__)

static inline void gemmini_counter_command(uint32_t command) {
  uint32_t ignored;
  gemmini_counter_access(ignored, command);
  (void)ignored;
}
static inline void counter_snapshot_take(void) { gemmini_counter_command(0x4); }
static inline void counter_snapshot_reset(void) { gemmini_counter_command(0x2); }
static inline void counter_reset(void) { gemmini_counter_command(0x1); }

/* ---- hardware loops ----------------------------------------------------------------------------- */
/* One tiled matmul of I x J x K blocks (of DIM), issued by the accelerator itself. pad_* = how many rows/
 * columns of the last block are missing. D/C may be NULL (no bias / no write-back). */
#define gemmini_loop_ws_with_23_args(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride,   \
                                     C_stride, A_transpose, B_transpose, full_C, low_D, ex_accumulate, act,     \
                                     a_spad_id, b_spad_id, is_resadd)                                           \
  do {                                                                                                    \
    gemmini_rocc(((uint64_t)(pad_K) << 32) | ((uint64_t)(pad_J) << 16) | (uint64_t)(pad_I),               \
                 ((uint64_t)(K) << 32) | ((uint64_t)(J) << 16) | (uint64_t)(I), k_LOOP_WS_CONFIG_BOUNDS);  \
    gemmini_rocc((uintptr_t)(A), (uintptr_t)(B), k_LOOP_WS_CONFIG_ADDRS_AB);                              \
    gemmini_rocc((uintptr_t)(D), (uintptr_t)(C), k_LOOP_WS_CONFIG_ADDRS_DC);                              \
    gemmini_rocc((A_stride), (B_stride), k_LOOP_WS_CONFIG_STRIDES_AB);                                    \
    gemmini_rocc((D_stride), (C_stride), k_LOOP_WS_CONFIG_STRIDES_DC);                                    \
    gemmini_rocc(((uint64_t)(a_spad_id) << 18) | ((uint64_t)(b_spad_id) << 16) | ((uint64_t)(act) << 8) | \
                     ((uint64_t)((low_D) ? 1 : 0) << 2) | ((uint64_t)((full_C) ? 1 : 0) << 1) |          \
                     (uint64_t)((ex_accumulate) ? 1 : 0),                                                 \
                 ((uint64_t)((is_resadd) ? 1 : 0) << 2) | ((uint64_t)((B_transpose) ? 1 : 0) << 1) |     \
                     (uint64_t)((A_transpose) ? 1 : 0),                                                   \
                 k_LOOP_WS);                                                                              \
  } while (0)

/* gemmini_loop_ws by argument count: 23 (current); 20 (..., ex_accumulate, act), before the scratchpad ids and
 * is_resadd; 19 (..., ex_accumulate), before act. The older forms' LOOP_WS word is the current one with those
 * fields 0 (id 0: the half of the loop unit's slot, as those versions' loops used). */
#define gemmini_loop_ws_with_20_args(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride,     \
                                     C_stride, A_transpose, B_transpose, full_C, low_D, ex_accumulate, act)       \
  gemmini_loop_ws_with_23_args(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride, C_stride,  \
                               A_transpose, B_transpose, full_C, low_D, ex_accumulate, act, 0, 0, false)
#define gemmini_loop_ws_with_19_args(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride,     \
                                     C_stride, A_transpose, B_transpose, full_C, low_D, ex_accumulate)            \
  gemmini_loop_ws_with_23_args(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, A_stride, B_stride, D_stride, C_stride,  \
                               A_transpose, B_transpose, full_C, low_D, ex_accumulate, NO_ACTIVATION, 0, 0, false)
#define gemmini_loop_ws(...) GEMMINI_BY_ARITY(gemmini_loop_ws, __VA_ARGS__)

/* One tile of a convolution issued by the accelerator (LOOP_CONV_WS). Upstream argument order; the caller
 * sets the WS dataflow (config_ex) and the output scale/activation (config_st) first. Paddings are those
 * of this tile; strides are in elements. */
#define gemmini_loop_conv_ws(batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim,           \
                             out_col_dim, pool_out_row_dim, pool_out_col_dim, stride, padding, kernel_dim,         \
                             kernel_dilation, pool_size, pool_stride, pool_padding, batches, porows, pocols, pochs, \
                             krows, kcols, kchs, lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad, orows, ocols,  \
                             weights, output, bias, input, no_bias, no_pool, downsample, wrot180, input_dilated,    \
                             act, trans_output_1203, trans_weight_1203, trans_weight_0132, trans_input_3120,        \
                             max_pixels_per_row, in_stride, weight_stride, out_stride, dw, a_spad_id, b_spad_id)    \
  do {                                                                                                            \
    gemmini_rocc(((uint64_t)(out_channels) << 48) | ((uint64_t)(in_channels) << 32) |                            \
                     ((uint64_t)(in_row_dim) << 16) | (uint64_t)(batch_size),                                    \
                 ((uint64_t)(padding) << 56) | ((uint64_t)(stride) << 48) | ((uint64_t)(out_col_dim) << 32) |    \
                     ((uint64_t)(pool_out_row_dim) << 16) | (uint64_t)(out_row_dim),                             \
                 k_LOOP_CONV_WS_CONFIG_1);                                                                       \
    gemmini_rocc(((uint64_t)(kernel_dim) << 48) | ((uint64_t)(pool_out_col_dim) << 32) |                         \
                     ((uint64_t)(pool_size) << 16) | ((uint64_t)(pool_stride) << 8) | (uint64_t)(pool_padding),  \
                 ((uint64_t)(batches) << 48) | ((uint64_t)(porows) << 32) | ((uint64_t)(pocols) << 16) |         \
                     (uint64_t)(pochs),                                                                          \
                 k_LOOP_CONV_WS_CONFIG_2);                                                                       \
    gemmini_rocc(((uint64_t)(krows) << 48) | ((uint64_t)(kcols) << 32) | ((uint64_t)(kchs) << 16) |              \
                     (uint64_t)(lpad),                                                                           \
                 ((uint64_t)(rpad) << 48) | ((uint64_t)(upad) << 32) | ((uint64_t)(dpad) << 24) |                \
                     ((uint64_t)(plpad) << 16) | (uint64_t)(in_col_dim),                                         \
                 k_LOOP_CONV_WS_CONFIG_3);                                                                       \
    gemmini_rocc(((uint64_t)(orows) << 48) | ((uint64_t)(prpad) << 32) | ((uint64_t)(pupad) << 21) |             \
                     ((uint64_t)(pdpad) << 10) | (uint64_t)(kernel_dilation),                                    \
                 ((uint64_t)(in_stride) << 48) | ((uint64_t)(weight_stride) << 32) |                             \
                     ((uint64_t)(out_stride) << 16) | (uint64_t)(ocols),                                         \
                 k_LOOP_CONV_WS_CONFIG_4);                                                                       \
    gemmini_rocc((uintptr_t)(weights), (uintptr_t)(output), k_LOOP_CONV_WS_CONFIG_5);                            \
    gemmini_rocc((uintptr_t)(bias), (uintptr_t)(input), k_LOOP_CONV_WS_CONFIG_6);                                \
    gemmini_rocc(((uint64_t)(a_spad_id) << 18) | ((uint64_t)(b_spad_id) << 16) |                                 \
                     ((uint64_t)(max_pixels_per_row) << 8) | ((uint64_t)((dw) ? 1 : 0) << 6) |                   \
                     ((uint64_t)((trans_input_3120) ? 1 : 0) << 5) | ((uint64_t)((trans_weight_0132) ? 1 : 0) << 4) | \
                     ((uint64_t)((trans_weight_1203) ? 1 : 0) << 3) | ((uint64_t)((trans_output_1203) ? 1 : 0) << 2) | \
                     ((uint64_t)((wrot180) ? 1 : 0) << 1) | (uint64_t)((no_bias) ? 1 : 0),                      \
                 ((uint64_t)(act) << 3) | ((uint64_t)((input_dilated) ? 1 : 0) << 2) |                           \
                     ((uint64_t)((downsample) ? 1 : 0) << 1) | (uint64_t)((no_pool) ? 1 : 0),                    \
                 k_LOOP_CONV_WS);                                                                                \
  } while (0)

/* ---- instructions of other Gemmini variants ----------------------------------------------------------
 * Branches and forks of gemmini-rocc-tests call instructions that the Gemmini this model follows
 * (ucb-bar/gemmini master, default configuration) does not have. Each name below is a compile error that
 * says so, instead of an undeclared function or a wrong encoding: gcc's error attribute reports a call that
 * survives optimisation with the message as written. A program that #defines the name before including this
 * header keeps its own. */
#define GEMMINI_OTHER_VARIANT(what)                                                                           \
  what " is not an instruction of the Gemmini this model follows (ucb-bar/gemmini master): the program is "  \
       "written for another variant; run it on that variant's own simulator (the gemmini-command backend)"
extern int gemmini_variant_mvout_spad(void) __attribute__((error(GEMMINI_OTHER_VARIANT(
    "gemmini_mvout_spad (a move from the accumulator into the scratchpad, funct 23)"))));
extern int gemmini_variant_lut(void) __attribute__((error(GEMMINI_OTHER_VARIANT(
    "gemmini_preload_lut1/2 (lookup-table activations)"))));
extern int gemmini_variant_rerocc(void) __attribute__((error(
    "rr_acquire_single / rr_set_opc / rr_release are ReRoCC's (several accelerators shared by several cores): "
    "the model attaches one Gemmini to one core, so a program that acquires accelerators cannot run here; "
    "measure it on FireSim or Verilator through the gemmini-command backend")));
#ifndef gemmini_mvout_spad
#define gemmini_mvout_spad(...) gemmini_variant_mvout_spad()
#endif
#ifndef gemmini_extended_mvout_spad
#define gemmini_extended_mvout_spad(...) gemmini_variant_mvout_spad()
#endif
#ifndef gemmini_preload_lut1
#define gemmini_preload_lut1(...) gemmini_variant_lut()
#endif
#ifndef gemmini_preload_lut2
#define gemmini_preload_lut2(...) gemmini_variant_lut()
#endif
#ifndef rr_acquire_single
#define rr_acquire_single(...) gemmini_variant_rerocc()
#endif
#ifndef rr_set_opc
#define rr_set_opc(...) gemmini_variant_rerocc()
#endif
#ifndef rr_release
#define rr_release(...) gemmini_variant_rerocc()
#endif

#include "gemmini_lib.h"

#endif /* SPEEDPATCH_GEMMINI_H */
