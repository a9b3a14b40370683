/* The library functions of speedpatch's Gemmini API: tiled_matmul, tiled_matmul_auto, tiled_conv,
 * tiled_conv_auto. Included by gemmini.h; relies on its instruction macros.
 *
 * Scratchpad and accumulator are used double-buffered: each tile gets half of each, so loads of the
 * next tile can overlap the computation and write-back of the current one.
 */
#ifndef SPEEDPATCH_GEMMINI_LIB_H
#define SPEEDPATCH_GEMMINI_LIB_H

#define GEMMINI_SPAD_ROWS ((size_t)BANK_NUM * (size_t)BANK_ROWS)
#define GEMMINI_HALF_SPAD_ROWS (GEMMINI_SPAD_ROWS / 2)
#define GEMMINI_HALF_ACC_ROWS ((size_t)ACC_ROWS / 2)

/* Largest / smallest acc_t, for any signed acc_t width. */
#define GEMMINI_ACC_MAX ((int64_t)(((uint64_t)1 << (8 * sizeof(acc_t) - 1)) - 1))
#define GEMMINI_ACC_MIN (-GEMMINI_ACC_MAX - 1)

static inline size_t gemmini_ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }
static inline size_t gemmini_min(size_t a, size_t b) { return a < b ? a : b; }

/* The library refuses what it does not implement, loudly, rather than computing something else. */
static inline void gemmini_library_error(const char *function, const char *what) {
  printf("gemmini library error: %s: %s\n", function, what);
  fflush(stdout);
  exit(3);
}

/* The read-out scale of a library version whose read-out was an integer right shift: 2^-shift, exact in
 * float (the model scales in float, so a shifted sum below 2^24 in magnitude rounds exactly as the shift). */
static inline double gemmini_shift_scale(long long shift) {
  if (shift < 0 || shift >= 32) gemmini_library_error("gemmini_config_ex / tiled_matmul_auto", "a shift must be 0..31");
  double scale = 1.0;
  for (long long i = 0; i < shift; i++) scale *= 0.5;
  return scale;
}

/* The accumulator read-out of the library versions whose config_ex took it (5 / 8 arguments: act,
 * sys_shift, acc_scale, relu6_shift). There config_st(stride) set only the store stride, and the read-out's
 * activation and scale stayed as config_ex last set them, in whichever order the two came
 * (gemmini-rocc-tests matmul_ws.c / mvin_mvout_acc.c of that time call config_st once, then config_ex with
 * each activation and shift). Today both are CONFIG_ST fields, so a translation unit that uses those forms
 * keeps them here: such a config_ex re-sends CONFIG_ST with the last store stride, and config_st(stride)
 * sends the read-out config_ex set. Until one is used, config_st sends the identity read-out as always.
 * RELU6 (activation 2 then) has no equivalent in the model: it stops with an error that names it. */
static struct {
  bool set;          /* a 5 / 8-argument config_ex has set the read-out */
  int act;
  float scale;
  bool have_stride;  /* config_st(stride) has been sent: the stride to re-send */
  bool pooled;       /* the last CONFIG_ST was the 10-argument (pooling) form: no plain stride to re-send */
  uint64_t stride;
} gemmini_legacy_readout_ __attribute__((unused));

static inline void gemmini_legacy_relu6_check(int act) {
  if (act == RELU6)
    gemmini_library_error("gemmini_config_ex (4, 5, 7 or 8 arguments, an older library's)",
                          "activation 2 was RELU6 in the library versions with this form; the model has no RELU6 "
                          "(use NO_ACTIVATION or RELU)");
}

static inline void gemmini_legacy_config_ex_readout(int act, double acc_scale) {
  gemmini_legacy_relu6_check(act);
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error("gemmini_config_ex (5 or 8 arguments, an older library's)",
                          "only NO_ACTIVATION and RELU are activations of this form");
  gemmini_legacy_readout_.set = true;
  gemmini_legacy_readout_.act = act;
  gemmini_legacy_readout_.scale = (float)acc_scale;
  if (gemmini_legacy_readout_.pooled && (act != NO_ACTIVATION || acc_scale != 1.0))
    gemmini_library_error("gemmini_config_ex (5 or 8 arguments, an older library's)",
                          "a read-out activation or scale after a pooling config_st (10 arguments) is not "
                          "implemented: send config_ex first");
  if (gemmini_legacy_readout_.have_stride)
    gemmini_extended_config_st_with_3_args(gemmini_legacy_readout_.stride, act, acc_scale)
}

static inline void gemmini_config_st_stride_(uint64_t stride) {
  gemmini_legacy_readout_.have_stride = true;
  gemmini_legacy_readout_.pooled = false;
  gemmini_legacy_readout_.stride = stride;
  if (gemmini_legacy_readout_.set) {
    gemmini_extended_config_st_with_3_args(stride, gemmini_legacy_readout_.act, gemmini_legacy_readout_.scale)
  } else {
    gemmini_extended_config_st_with_3_args(stride, NO_ACTIVATION, ACC_SCALE_IDENTITY)
  }
}

/* Round half to even, the rounding of Gemmini's scaling units. Written without libm. */
static inline int64_t gemmini_round_half_even(double v) {
  int64_t i = (int64_t)v;
  double r = v - (double)i;
  if (r > 0.5 || (r == 0.5 && (i & 1)))
    i++;
  else if (r < -0.5 || (r == -0.5 && (i & 1)))
    i--;
  return i;
}

static inline elem_t gemmini_saturate_elem(int64_t v) {
  if (v > elem_t_max) return elem_t_max;
  if (v < elem_t_min) return elem_t_min;
  return (elem_t)v;
}

/* Accumulator read-out on the CPU: x * scale (float), round half to even, saturate, activation. */
static inline elem_t gemmini_cpu_acc_to_elem(int64_t x, acc_scale_t scale, int act) {
  if (x > GEMMINI_ACC_MAX) x = GEMMINI_ACC_MAX;
  if (x < GEMMINI_ACC_MIN) x = GEMMINI_ACC_MIN;
  float y = (float)x * (float)scale;
  elem_t out = gemmini_saturate_elem(gemmini_round_half_even((double)y));
  if (act == RELU && out < 0) out = 0;
  return out;
}

/* IGELU, the read-out activation 3 of configurations with normalizations: I-BERT's integer GELU as Gemmini's
 * accumulator read-out computes it (AccumulatorScale.igelu, ucb-bar/gemmini) on the 32-bit accumulator value
 * q, before the scale: sign(q) * ((min(|q|, -qb) + qb)^2 + qc), plus qc, times q, every sum and product
 * kept to its low 32 bits as the hardware keeps them. */
static inline int32_t gemmini_wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static inline int32_t gemmini_cpu_igelu(int32_t q, int32_t qb, int32_t qc) {
  const int64_t sign = q < 0 ? -1 : 1;
  const int32_t magnitude = gemmini_wrap32(q < 0 ? -(int64_t)q : (int64_t)q);
  const int32_t limit = gemmini_wrap32(-(int64_t)qb);
  const int32_t d = gemmini_wrap32((int64_t)(magnitude > limit ? limit : magnitude) + qb);
  const int32_t erf = gemmini_wrap32(sign * gemmini_wrap32((int64_t)d * d + qc));
  return gemmini_wrap32((int64_t)q * gemmini_wrap32((int64_t)erf + qc));
}

/* The constants upstream's library derives from bert_scale S for IGELU and sends with config_norm
 * (gemmini-rocc-tests include/gemmini.h, tiled_matmul_outer): qb = -1.769 / (S / sqrt(2)) and
 * qc = 1 / (-0.2888 * S*S / 2), I-BERT's erf polynomial coefficients, each truncated to acc_t. Evaluated
 * in upstream's types (float S, float sqrt(2), double constants) so a bert_scale gives the same integers. */
static inline void gemmini_igelu_constants(acc_scale_t bert_scale, acc_t *qb, acc_t *qc) {
  const float sqrt_2 = (float)1.41421356237, S = (float)bert_scale;
  const float S_erf = (float)(-0.2888 * ((S * S) / 2));
  *qb = (acc_t)(-1.769 / (S / sqrt_2));
  *qc = (acc_t)(1.0 / S_erf);
}

/* The constants upstream's library derives from bert_scale S for SOFTMAX and sends with two config_norm
 * (gemmini-rocc-tests include/gemmini.h, tiled_matmul_outer and tiled_norm): qln2 = (int)(ln 2 / S),
 * qln2_inv = 65536 / qln2, and I-BERT's exponential polynomial qb = 1.353 / S, qc = 0.344 / (0.3585 * S*S),
 * each truncated to acc_t, evaluated in upstream's types (float coefficients, double ln 2). */
static inline void gemmini_softmax_constants(acc_scale_t bert_scale, acc_t *qln2, acc_t *qln2_inv, acc_t *qb,
                                             acc_t *qc) {
  const float a = (float)0.3585, b = (float)1.353, c = (float)0.344, S = (float)bert_scale;
  *qln2 = (acc_t)(0.693147 / S);
  *qln2_inv = *qln2 != 0 ? 65536 / *qln2 : 0;
  *qb = (acc_t)(b / S);
  *qc = (acc_t)(c / (a * S * S));
}

/* I-BERT's integer exponential of q <= 0 as the accumulator read-out computes it (AccumulatorScale.iexp,
 * ucb-bar/gemmini): z = (-q * qln2_inv) >> 16, qp = q + z * qln2, ((qp + qb)^2 + qc) >> z, with the
 * hardware's widths (the product taken whole and shifted as unsigned, everything else kept to 32 bits, a
 * shift of 32 or more giving 0). Upstream's matmul_cpu computes the same in int32 arithmetic wherever C
 * defines it. */
static inline int32_t gemmini_cpu_iexp(int32_t q, int32_t qln2, int32_t qln2_inv, int32_t qb, int32_t qc) {
  const int64_t product = (int64_t)gemmini_wrap32(-(int64_t)q) * (int64_t)qln2_inv;
  const int32_t z = (int32_t)(uint32_t)((uint64_t)product >> 16);
  const uint32_t shift = (((uint32_t)z >> 5) & 0x7FF) ? 32 : (uint32_t)z;
  const int32_t qp = gemmini_wrap32((int64_t)z * qln2 + q);
  const int32_t t = gemmini_wrap32((int64_t)qp + qb);
  const int32_t poly = gemmini_wrap32((int64_t)t * t + qc);
  return shift >= 32 ? 0 : (int32_t)((uint32_t)poly >> shift);
}

/* LayerNorm or softmax of one row of n accumulator values (32-bit, wrapped as the accumulator wraps) on the
 * CPU, upstream's matmul_cpu algorithm: LayerNorm: mean = sum / n, variance = sum((x - mean)^2) / n (C's
 * truncating divisions, 32-bit sums), stddev = floor(sqrt(variance)) (1 when the variance is 0), out =
 * (x - mean) / stddev truncated, then the read-out scale; softmax: out = iexp(x - max) * (127 / sum of
 * iexp) rounded to even and saturated (the read-out scale is not used, as upstream's reference and the
 * hardware's scale unit do). */
static inline void gemmini_cpu_normalize_row(const int32_t *x, size_t n, elem_t *out, int act, acc_scale_t scale,
                                             acc_scale_t bert_scale) {
  if (act == LAYERNORM) {
    int32_t sum = 0;
    for (size_t j = 0; j < n; j++) sum = gemmini_wrap32((int64_t)sum + x[j]);
    const int32_t mean = (int32_t)((int64_t)sum / (int64_t)n);
    int32_t err = 0;
    for (size_t j = 0; j < n; j++) {
      const int32_t d = gemmini_wrap32((int64_t)x[j] - mean);
      err = gemmini_wrap32((int64_t)err + gemmini_wrap32((int64_t)d * d));
    }
    const int32_t variance = (int32_t)((int64_t)err / (int64_t)n);
    int64_t stddev = 1;
    if (variance < 0) {
      stddev = 2147483647; /* a wrapped sum: the hardware's square root of a negative is NaN -> INT32_MAX */
    } else if (variance > 0) { /* floor(sqrt(variance)), Newton's iteration from above */
      int64_t next = ((int64_t)variance + 1) / 2;
      stddev = variance;
      while (next < stddev) {
        stddev = next;
        next = (stddev + variance / stddev) / 2;
      }
    }
    for (size_t j = 0; j < n; j++)
      out[j] = gemmini_cpu_acc_to_elem(gemmini_wrap32((int64_t)x[j] - mean) / stddev, scale, NO_ACTIVATION);
  } else {
    acc_t qln2, qln2_inv, qb, qc;
    gemmini_softmax_constants(bert_scale, &qln2, &qln2_inv, &qb, &qc);
    int32_t max = INT32_MIN, sum = 0;
    for (size_t j = 0; j < n; j++)
      if (x[j] > max) max = x[j];
    for (size_t j = 0; j < n; j++)
      sum = gemmini_wrap32((int64_t)sum +
                           gemmini_cpu_iexp(gemmini_wrap32((int64_t)x[j] - max), qln2, qln2_inv, qb, qc));
    const float factor = 127.0f / (float)sum;
    for (size_t j = 0; j < n; j++)
      out[j] = gemmini_cpu_acc_to_elem(
          gemmini_cpu_iexp(gemmini_wrap32((int64_t)x[j] - max), qln2, qln2_inv, qb, qc), factor, NO_ACTIVATION);
  }
}

static inline elem_t gemmini_cpu_mvin_scale(elem_t x, scale_t scale) {
  float y = (float)x * (float)scale;
  return gemmini_saturate_elem(gemmini_round_half_even((double)y));
}

/* ------------------------------------------------------------------------------------------------ */
/* tiled_matmul: C = act(scale * (A*B + D)), A is dim_I x dim_K, B dim_K x dim_J, D/C dim_I x dim_J.  */
/* tile_I/J/K are in blocks of DIM.                                                                   */
/* ------------------------------------------------------------------------------------------------ */

struct gemmini_matmul_args {
  size_t dim_I, dim_J, dim_K;
  const elem_t *A;
  const elem_t *B;
  const void *D;
  void *C;
  size_t stride_A, stride_B, stride_D, stride_C;
  scale_t A_scale_factor, B_scale_factor;
  scale_acc_t D_scale_factor;
  int act;
  acc_scale_t scale;
  bool repeating_bias, transpose_A, transpose_B, full_C, low_D;
  acc_scale_t bert_scale; /* IGELU's input scale (act == IGELU only) */
};

static inline void gemmini_matmul_cpu(const struct gemmini_matmul_args *m) {
  const size_t sizeof_D = m->low_D ? sizeof(elem_t) : sizeof(acc_t);
  const bool normalize = (m->act == LAYERNORM || m->act == SOFTMAX) && !m->full_C;
  int32_t *row = NULL; /* a LayerNorm/softmax row's accumulator values, kept to 32 bits as the accumulator does */
  if (normalize && (row = (int32_t *)malloc(m->dim_J * sizeof(int32_t))) == NULL)
    gemmini_library_error("tiled_matmul", "out of memory for a LayerNorm/softmax row");
  for (size_t i = 0; i < m->dim_I; i++) {
    for (size_t j = 0; j < m->dim_J; j++) {
      int64_t sum = 0;
      if (m->D != NULL) {
        const size_t row = m->repeating_bias ? 0 : i;
        const char *d = (const char *)m->D + (row * m->stride_D + j) * sizeof_D;
        int64_t dv = m->low_D ? (int64_t)*(const elem_t *)d : (int64_t)*(const acc_t *)d;
        float scaled = (float)dv * (float)m->D_scale_factor;
        sum = gemmini_round_half_even((double)scaled);
      }
      for (size_t k = 0; k < m->dim_K; k++) {
        elem_t a = m->transpose_A ? m->A[k * m->stride_A + i] : m->A[i * m->stride_A + k];
        elem_t b = m->transpose_B ? m->B[j * m->stride_B + k] : m->B[k * m->stride_B + j];
        sum += (int64_t)gemmini_cpu_mvin_scale(a, m->A_scale_factor) *
               (int64_t)gemmini_cpu_mvin_scale(b, m->B_scale_factor);
      }
      if (normalize) {
        row[j] = gemmini_wrap32(sum);
      } else if (m->full_C) {
        if (sum > GEMMINI_ACC_MAX) sum = GEMMINI_ACC_MAX;
        if (sum < GEMMINI_ACC_MIN) sum = GEMMINI_ACC_MIN;
        ((acc_t *)m->C)[i * m->stride_C + j] = (acc_t)sum;
      } else if (m->act == IGELU) {
        acc_t qb, qc;
        gemmini_igelu_constants(m->bert_scale, &qb, &qc);
        if (sum > GEMMINI_ACC_MAX) sum = GEMMINI_ACC_MAX;
        if (sum < GEMMINI_ACC_MIN) sum = GEMMINI_ACC_MIN;
        ((elem_t *)m->C)[i * m->stride_C + j] =
            gemmini_cpu_acc_to_elem(gemmini_cpu_igelu((int32_t)sum, qb, qc), m->scale, NO_ACTIVATION);
      } else {
        ((elem_t *)m->C)[i * m->stride_C + j] = gemmini_cpu_acc_to_elem(sum, m->scale, m->act);
      }
    }
    if (normalize && m->dim_J > 0)
      gemmini_cpu_normalize_row(row, m->dim_J, (elem_t *)m->C + i * m->stride_C, m->act, m->scale, m->bert_scale);
  }
  free(row);
}

/* The configuration every accelerated matmul starts with: load slots 0/1/2 = A/B/D, store = C. */
static inline void gemmini_matmul_configure(const struct gemmini_matmul_args *m, int dataflow) {
  const size_t sizeof_D = m->low_D ? sizeof(elem_t) : sizeof(acc_t);
  const size_t sizeof_C = m->full_C ? sizeof(acc_t) : sizeof(elem_t);
  gemmini_extended_config_ex(dataflow, m->act & 3, 0, 1, m->transpose_A, m->transpose_B);
  gemmini_extended_config_st(m->stride_C * sizeof_C, m->act, m->scale);
  if (m->act == IGELU) { /* the read-out's IGELU constants, as upstream's tiled_matmul sends them */
    acc_t qb, qc;
    gemmini_igelu_constants(m->bert_scale, &qb, &qc);
    gemmini_config_norm(0, 0, 0, 0, 0, qb, qc);
  }
  if (m->act == SOFTMAX) { /* iexp's constants and the activation's third bit, as upstream's tiled_matmul */
    acc_t qln2, qln2_inv, qb, qc;
    gemmini_softmax_constants(m->bert_scale, &qln2, &qln2_inv, &qb, &qc);
    gemmini_config_norm(qln2, 0, 0, 1, 0, qb, qc);
    gemmini_config_norm(qln2_inv, 1, 0, 1, 0, qb, qc);
  }
  gemmini_extended3_config_ld(m->stride_A * sizeof(elem_t), m->A_scale_factor, false, 0);
  gemmini_extended3_config_ld(m->stride_B * sizeof(elem_t), m->B_scale_factor, false, 1);
  gemmini_extended3_config_ld(m->repeating_bias ? 0 : m->stride_D * sizeof_D, m->D_scale_factor, m->low_D, 2);
}

static inline const elem_t *gemmini_A_block(const struct gemmini_matmul_args *m, size_t row_i, size_t col_k) {
  return m->transpose_A ? m->A + col_k * m->stride_A + row_i : m->A + row_i * m->stride_A + col_k;
}

static inline const elem_t *gemmini_B_block(const struct gemmini_matmul_args *m, size_t row_k, size_t col_j) {
  return m->transpose_B ? m->B + col_j * m->stride_B + row_k : m->B + row_k * m->stride_B + col_j;
}

static inline const void *gemmini_D_block(const struct gemmini_matmul_args *m, size_t row_i, size_t col_j) {
  const size_t sizeof_D = m->low_D ? sizeof(elem_t) : sizeof(acc_t);
  const size_t row = m->repeating_bias ? 0 : row_i;
  return (const char *)m->D + (row * m->stride_D + col_j) * sizeof_D;
}

static inline void *gemmini_C_block(const struct gemmini_matmul_args *m, size_t row_i, size_t col_j) {
  const size_t sizeof_C = m->full_C ? sizeof(acc_t) : sizeof(elem_t);
  return (char *)m->C + (row_i * m->stride_C + col_j) * sizeof_C;
}

/* One tile with the LOOP_WS hardware loop: the accelerator issues every mvin/preload/compute/mvout.
 * a_spad_id / b_spad_id: 0 = the half of the loop unit's slot (consecutive loops alternate, so the loads of
 * the next tile overlap the computation of this one), 1 / 2 = that half, for a tile kept in place; load_A /
 * load_B false passes NULL, and the loop computes on the tile already there. The loop keeps C in the
 * accumulator from row 0; it accumulates onto the bias (D) or onto the partial sums of the previous K tile. */
static inline void gemmini_matmul_tile_loop(const struct gemmini_matmul_args *m, size_t i0, size_t j0, size_t k0,
                                     size_t I, size_t J, size_t K, bool first_k, bool last_k, bool load_A,
                                     bool load_B, int a_spad_id, int b_spad_id) {
  const size_t rows_left = m->dim_I - i0 * DIM, cols_left = m->dim_J - j0 * DIM, k_left = m->dim_K - k0 * DIM;
  const size_t pad_I = I * DIM > rows_left ? I * DIM - rows_left : 0;
  const size_t pad_J = J * DIM > cols_left ? J * DIM - cols_left : 0;
  const size_t pad_K = K * DIM > k_left ? K * DIM - k_left : 0;
  const void *D = (first_k && m->D != NULL) ? gemmini_D_block(m, i0 * DIM, j0 * DIM) : NULL;
  void *C = last_k ? gemmini_C_block(m, i0 * DIM, j0 * DIM) : NULL;
  const elem_t *A = load_A ? gemmini_A_block(m, i0 * DIM, k0 * DIM) : NULL;
  const elem_t *B = load_B ? gemmini_B_block(m, k0 * DIM, j0 * DIM) : NULL;
  gemmini_loop_ws(I, J, K, pad_I, pad_J, pad_K, A, B, D, C, m->stride_A, m->stride_B,
                  m->repeating_bias ? 0 : m->stride_D, m->stride_C, m->transpose_A, m->transpose_B, m->full_C,
                  m->low_D, !first_k || m->D != NULL, m->act, a_spad_id, b_spad_id, false);
}

/* One tile issued instruction by instruction (used for the output-stationary dataflow, and for WS
 * when asked explicitly). spad_base / acc_base select the half used for double buffering. */
static inline void gemmini_matmul_tile_manual(const struct gemmini_matmul_args *m, int dataflow, size_t i0, size_t j0,
                                       size_t k0, size_t I, size_t J, size_t K, bool first_k, bool last_k,
                                       uint32_t spad_base, uint32_t acc_base) {
  const uint32_t A_base = spad_base, B_base = spad_base + (uint32_t)(I * K * DIM);
#define GEMMINI_EXT(total, start) ((size_t)gemmini_min(DIM, (total) - (start)))
  /* A blocks (i, k) at A_base + (i*K + k)*DIM; several k blocks per mvin when not transposed. */
  for (size_t i = 0; i < I; i++) {
    const size_t row = (i0 + i) * DIM, rows = GEMMINI_EXT(m->dim_I, row);
    for (size_t k = 0; k < K;) {
      const size_t col = (k0 + k) * DIM;
      if (m->transpose_A) {
        gemmini_extended_mvin(gemmini_A_block(m, row, col), A_base + (i * K + k) * DIM, rows,
                              GEMMINI_EXT(m->dim_K, col));
        k++;
      } else {
        const size_t blocks = gemmini_min(MAX_BLOCK_LEN, K - k);
        const size_t cols = gemmini_min(blocks * DIM, m->dim_K - col);
        gemmini_extended_mvin(gemmini_A_block(m, row, col), A_base + (i * K + k) * DIM, cols, rows);
        k += blocks;
      }
    }
  }
  /* B blocks (k, j) at B_base + (k*J + j)*DIM. */
  for (size_t k = 0; k < K; k++) {
    const size_t row = (k0 + k) * DIM, rows = GEMMINI_EXT(m->dim_K, row);
    for (size_t j = 0; j < J;) {
      const size_t col = (j0 + j) * DIM;
      if (m->transpose_B) {
        gemmini_extended_mvin2(gemmini_B_block(m, row, col), B_base + (k * J + j) * DIM, rows,
                               GEMMINI_EXT(m->dim_J, col));
        j++;
      } else {
        const size_t blocks = gemmini_min(MAX_BLOCK_LEN, J - j);
        const size_t cols = gemmini_min(blocks * DIM, m->dim_J - col);
        gemmini_extended_mvin2(gemmini_B_block(m, row, col), B_base + (k * J + j) * DIM, cols, rows);
        j += blocks;
      }
    }
  }
  /* Bias into the accumulator before the first partial product. */
  if (first_k && m->D != NULL) {
    for (size_t i = 0; i < I; i++)
      for (size_t j = 0; j < J; j++) {
        const size_t row = (i0 + i) * DIM, col = (j0 + j) * DIM;
        gemmini_extended_mvin3(gemmini_D_block(m, row, col), GEMMINI_ACC_ADDR | (acc_base + (i * J + j) * DIM),
                               GEMMINI_EXT(m->dim_J, col), GEMMINI_EXT(m->dim_I, row));
      }
  }
  const bool accumulate_first = !first_k || m->D != NULL;
  if (dataflow == WEIGHT_STATIONARY) {
    /* Keep each B block in the PEs while every A row block streams through it. */
    for (size_t j = 0; j < J; j++)
      for (size_t k = 0; k < K; k++) {
        const size_t kk = (k0 + k) * DIM, jj = (j0 + j) * DIM;
        const size_t b_rows = GEMMINI_EXT(m->dim_K, kk), b_cols = GEMMINI_EXT(m->dim_J, jj);
        const uint32_t B_sp = B_base + (k * J + j) * DIM;
        for (size_t i = 0; i < I; i++) {
          const size_t ii = (i0 + i) * DIM, rows = GEMMINI_EXT(m->dim_I, ii);
          const uint32_t acc = (k > 0 || accumulate_first) ? GEMMINI_ACC_ACCUMULATE : 0;
          const uint32_t C_sp = GEMMINI_ACC_ADDR | acc | (acc_base + (i * J + j) * DIM);
          const uint32_t A_sp = A_base + (i * K + k) * DIM;
          /* Operand sizes are logical (rows x cols of A and B); a transposed operand sits in the
           * scratchpad as stored in DRAM and the array reads it column-wise. */
          if (i == 0) {
            gemmini_extended_preload(B_sp, C_sp, b_cols, b_rows, b_cols, rows);
            gemmini_extended_compute_preloaded(A_sp, GARBAGE_ADDR, b_rows, rows, DIM, DIM);
          } else {
            gemmini_extended_preload(GARBAGE_ADDR, C_sp, DIM, DIM, b_cols, rows);
            gemmini_extended_compute_accumulated(A_sp, GARBAGE_ADDR, b_rows, rows, DIM, DIM);
          }
        }
      }
  } else {
    /* Output stationary: each C block accumulates in the PEs over the whole K of this tile. Every
     * compute writes the running sums to the preloaded C address, so only the last one gets the real
     * destination (earlier ones write to the garbage address). */
    for (size_t i = 0; i < I; i++)
      for (size_t j = 0; j < J; j++) {
        const size_t ii = (i0 + i) * DIM, jj = (j0 + j) * DIM;
        const size_t rows = GEMMINI_EXT(m->dim_I, ii), cols = GEMMINI_EXT(m->dim_J, jj);
        const uint32_t acc = accumulate_first ? GEMMINI_ACC_ACCUMULATE : 0;
        const uint32_t C_sp = GEMMINI_ACC_ADDR | acc | (acc_base + (i * J + j) * DIM);
        for (size_t k = 0; k < K; k++) {
          const size_t kk = (k0 + k) * DIM, ks = GEMMINI_EXT(m->dim_K, kk);
          const uint32_t A_sp = A_base + (i * K + k) * DIM, B_sp = B_base + (k * J + j) * DIM;
          gemmini_extended_preload(GARBAGE_ADDR, k == K - 1 ? C_sp : GARBAGE_ADDR, DIM, DIM, cols, rows);
          if (k == 0) {
            gemmini_extended_compute_preloaded(A_sp, B_sp, ks, rows, cols, ks);
          } else {
            gemmini_extended_compute_accumulated(A_sp, B_sp, ks, rows, cols, ks);
          }
        }
      }
  }
  if (last_k) {
    for (size_t i = 0; i < I; i++)
      for (size_t j = 0; j < J; j++) {
        const size_t row = (i0 + i) * DIM, col = (j0 + j) * DIM;
        const uint32_t full = m->full_C ? GEMMINI_ACC_FULL : 0;
        gemmini_extended_mvout(gemmini_C_block(m, row, col), GEMMINI_ACC_ADDR | full | (acc_base + (i * J + j) * DIM),
                               GEMMINI_EXT(m->dim_J, col), GEMMINI_EXT(m->dim_I, row));
      }
  }
#undef GEMMINI_EXT
}

/* Whether a tile shape fits the double-buffered halves of scratchpad and accumulator. */
static inline bool gemmini_matmul_tiles_fit(size_t tile_I, size_t tile_J, size_t tile_K) {
  return tile_I * tile_J * DIM <= GEMMINI_HALF_ACC_ROWS &&
         (tile_I * tile_K + tile_K * tile_J) * DIM <= GEMMINI_HALF_SPAD_ROWS;
}

/* Shared by tiled_matmul and gemmini_tiled_matmul_manual: walk the tiles, K innermost so partial sums
 * stay in the accumulator. */
static inline void gemmini_matmul_run(const char *function, const struct gemmini_matmul_args *m, size_t tile_I,
                               size_t tile_J, size_t tile_K, int dataflow, bool hardware_loop) {
  if (tile_I == 0 || tile_J == 0 || tile_K == 0) gemmini_library_error(function, "tile sizes must be >= 1");
  if (!gemmini_matmul_tiles_fit(tile_I, tile_J, tile_K))
    gemmini_library_error(function, "tiles do not fit: need tile_I*tile_J*DIM <= ACC_ROWS/2 and "
                                    "(tile_I*tile_K + tile_K*tile_J)*DIM <= BANK_NUM*BANK_ROWS/2");
  if (dataflow == OUTPUT_STATIONARY && m->transpose_B)
    gemmini_library_error(function, "the output-stationary dataflow cannot transpose B");
  if (dataflow == WEIGHT_STATIONARY && m->transpose_A && m->transpose_B)
    gemmini_library_error(function, "the weight-stationary dataflow cannot transpose both A and B");
  if ((m->act == LAYERNORM || m->act == SOFTMAX) && !hardware_loop)
    gemmini_library_error(function, "LAYERNORM and SOFTMAX are issued by the hardware loop (tiled_matmul with WS)");
  const size_t I_blocks = gemmini_ceil_div(m->dim_I, DIM), J_blocks = gemmini_ceil_div(m->dim_J, DIM),
               K_blocks = gemmini_ceil_div(m->dim_K, DIM);
  gemmini_matmul_configure(m, dataflow);
  /* Like upstream's tiled_matmul_outer (gemmini-rocc-tests include/gemmini.h): when all tiles of B (of A)
   * number at most two, each gets a scratchpad half of its own (id 1 for the first, 2 for the other), is
   * moved in with the first row (column) of tiles and stays there for the others, which pass NULL;
   * every other operand passes id 0, the loop slot's half. */
  const size_t I0 = gemmini_ceil_div(I_blocks, tile_I), J0 = gemmini_ceil_div(J_blocks, tile_J),
               K0 = gemmini_ceil_div(K_blocks, tile_K);
  const bool b_reuse = hardware_loop && J0 * K0 <= 2, a_reuse = hardware_loop && I0 * K0 <= 2;
  unsigned tile_count = 0, output_count = 0;
  for (size_t i0 = 0; i0 < I_blocks; i0 += tile_I)
    for (size_t j0 = 0; j0 < J_blocks; j0 += tile_J) {
      for (size_t k0 = 0; k0 < K_blocks; k0 += tile_K) {
        const size_t I = gemmini_min(tile_I, I_blocks - i0), J = gemmini_min(tile_J, J_blocks - j0),
                     K = gemmini_min(tile_K, K_blocks - k0);
        const bool first_k = k0 == 0, last_k = k0 + tile_K >= K_blocks;
        if (hardware_loop) {
          const size_t ti = i0 / tile_I, tj = j0 / tile_J, tk = k0 / tile_K;
          const int a_id = a_reuse ? (ti + tk == 0 ? 1 : 2) : 0, b_id = b_reuse ? (tj + tk == 0 ? 1 : 2) : 0;
          gemmini_matmul_tile_loop(m, i0, j0, k0, I, J, K, first_k, last_k, !(a_reuse && tj >= 1),
                                   !(b_reuse && ti >= 1), a_id, b_id);
        } else {
          const uint32_t spad_base = (uint32_t)((tile_count % 2) * GEMMINI_HALF_SPAD_ROWS);
          const uint32_t acc_base = (uint32_t)((output_count % 2) * GEMMINI_HALF_ACC_ROWS);
          gemmini_matmul_tile_manual(m, dataflow, i0, j0, k0, I, J, K, first_k, last_k, spad_base, acc_base);
        }
        tile_count++;
      }
      output_count++;
    }
}

static inline void tiled_matmul(size_t dim_I, size_t dim_J, size_t dim_K, const elem_t *A, const elem_t *B,
                         const void *D, void *C, size_t stride_A, size_t stride_B, size_t stride_D,
                         size_t stride_C, scale_t A_scale_factor, scale_t B_scale_factor,
                         scale_acc_t D_scale_factor, int act, acc_scale_t scale, acc_scale_t bert_scale,
                         bool repeating_bias, size_t tile_I, size_t tile_J, size_t tile_K, bool transpose_A,
                         bool transpose_B, bool full_C, bool low_D, uint8_t weightA,
                         enum tiled_matmul_type_t tiled_matmul_type) {
  (void)weightA;
  if ((act == LAYERNORM || act == SOFTMAX) && tiled_matmul_type != CPU) {
    /* The normalizer sees a row of C whole only when one loop holds every column tile of it (upstream
     * prints these and computes something else; refused here). */
    if (tiled_matmul_type == OS)
      gemmini_library_error("tiled_matmul", "LAYERNORM and SOFTMAX need the weight-stationary dataflow (WS)");
    if (full_C) gemmini_library_error("tiled_matmul", "LAYERNORM and SOFTMAX read out int8: full_C must be false");
    if (tile_J * DIM < dim_J)
      gemmini_library_error("tiled_matmul", "when doing layernorm or softmax, the full J dimension of the matrix "
                                            "must fit in one tile (tile_J * DIM >= dim_J)");
  }
  const struct gemmini_matmul_args m = {dim_I,          dim_J,          dim_K,          A,        B,
                                        D,              C,              stride_A,       stride_B, stride_D,
                                        stride_C,       A_scale_factor, B_scale_factor, D_scale_factor,
                                        act,            scale,          repeating_bias, transpose_A,
                                        transpose_B,    full_C,         low_D,          bert_scale};
  if (tiled_matmul_type == CPU) {
    gemmini_matmul_cpu(&m);
  } else if (tiled_matmul_type == OS) {
    gemmini_matmul_run("tiled_matmul", &m, tile_I, tile_J, tile_K, OUTPUT_STATIONARY, false);
  } else {
    gemmini_matmul_run("tiled_matmul", &m, tile_I, tile_J, tile_K, WEIGHT_STATIONARY, true);
  }
  /* Upstream's tiled_matmul returns only when the accelerator is done (its tiled_matmul_outer ends with a
   * fence): programs read C, and time the call with read_cycles(), right after it, without a fence. */
  if (tiled_matmul_type != CPU) gemmini_fence();
}

/* tiled_matmul by argument count (the current list has 27). 26: (dim_I, dim_J, dim_K, A, B, D, C,
 * stride_A..stride_C, A/B/D_scale_factor, act, scale, relu6_shift, repeating_bias, tile_I, tile_J, tile_K,
 * transpose_A, transpose_B, full_C, low_D, type), the versions before weightA, whose activation 2 was RELU6
 * (refused, as by tiled_matmul_auto's older lists). */
static inline void gemmini_legacy_tiled_matmul(size_t dim_I, size_t dim_J, size_t dim_K, const elem_t *A,
                                               const elem_t *B, const void *D, void *C, size_t stride_A,
                                               size_t stride_B, size_t stride_D, size_t stride_C,
                                               scale_t A_scale_factor, scale_t B_scale_factor,
                                               scale_acc_t D_scale_factor, int act, acc_scale_t scale,
                                               size_t relu6_shift, bool repeating_bias, size_t tile_I, size_t tile_J,
                                               size_t tile_K, bool transpose_A, bool transpose_B, bool full_C,
                                               bool low_D, enum tiled_matmul_type_t type) {
  (void)relu6_shift;
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error("tiled_matmul (26 arguments)",
                          "only NO_ACTIVATION and RELU are implemented for this older argument list "
                          "(activation 2 was RELU6 in the library versions that had it)");
  tiled_matmul(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C, A_scale_factor,
               B_scale_factor, D_scale_factor, act, scale, 0, repeating_bias, tile_I, tile_J, tile_K, transpose_A,
               transpose_B, full_C, low_D, 0, type);
}
#define tiled_matmul_with_27_args(...) tiled_matmul(__VA_ARGS__)
#define tiled_matmul_with_26_args(...) gemmini_legacy_tiled_matmul(__VA_ARGS__)
#define tiled_matmul(...) GEMMINI_BY_ARITY(tiled_matmul, __VA_ARGS__)

/* Like tiled_matmul, but every instruction is issued by the core (no LOOP_WS): a speedpatch extension
 * for kernels that want the manual schedule with a chosen dataflow (OS or WS). */
static inline void gemmini_tiled_matmul_manual(size_t dim_I, size_t dim_J, size_t dim_K, const elem_t *A,
                                        const elem_t *B, const void *D, void *C, size_t stride_A,
                                        size_t stride_B, size_t stride_D, size_t stride_C, int act,
                                        acc_scale_t scale, bool repeating_bias, size_t tile_I, size_t tile_J,
                                        size_t tile_K, enum tiled_matmul_type_t dataflow) {
  const struct gemmini_matmul_args m = {
      dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C, MVIN_SCALE_IDENTITY,
      MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, act, scale, repeating_bias, false, false, false, false};
  gemmini_matmul_run("gemmini_tiled_matmul_manual", &m, tile_I, tile_J, tile_K,
                     dataflow == OS ? OUTPUT_STATIONARY : WEIGHT_STATIONARY, false);
}

/* Tile choice of tiled_matmul_auto, upstream's (gemmini-rocc-tests include/gemmini.h, double-buffered case):
 * start from I and J tiles of floor(sqrt(half the accumulator in blocks)) and a K tile of a quarter of the
 * scratchpad in blocks divided by that (each capped by the problem), then, in rounds, grow J, I and K by one
 * while the tiles still fit the halves of scratchpad and accumulator. Upstream picks larger, single-buffered
 * tiles for its OS dataflow; ours double-buffers OS too, so both dataflows get these. */
static inline void gemmini_auto_tiles(size_t dim_I, size_t dim_J, size_t dim_K, size_t *tile_I, size_t *tile_J,
                               size_t *tile_K) {
  const size_t I = gemmini_ceil_div(dim_I, DIM), J = gemmini_ceil_div(dim_J, DIM), K = gemmini_ceil_div(dim_K, DIM);
  size_t max_ij = 1; /* integer square root: no libm */
  while ((max_ij + 1) * (max_ij + 1) <= GEMMINI_HALF_ACC_ROWS / DIM) max_ij++;
  const size_t max_k = GEMMINI_HALF_SPAD_ROWS / 2 / DIM / max_ij;
  size_t ti = gemmini_min(I, max_ij), tj = gemmini_min(J, max_ij), tk = gemmini_min(K, max_k);
  bool grown = true;
  while (grown) {
    grown = false;
    if (tj < J && gemmini_matmul_tiles_fit(ti, tj + 1, tk)) tj++, grown = true;
    if (ti < I && gemmini_matmul_tiles_fit(ti + 1, tj, tk)) ti++, grown = true;
    if (tk < K && gemmini_matmul_tiles_fit(ti, tj, tk + 1)) tk++, grown = true;
  }
  *tile_I = ti;
  *tile_J = tj;
  *tile_K = tk;
}

static inline void tiled_matmul_auto(size_t dim_I, size_t dim_J, size_t dim_K, const elem_t *A, const elem_t *B,
                              const void *D, void *C, size_t stride_A, size_t stride_B, size_t stride_D,
                              size_t stride_C, scale_t A_scale_factor, scale_t B_scale_factor,
                              scale_acc_t D_scale_factor, int act, acc_scale_t scale, acc_scale_t bert_scale,
                              bool repeating_bias, bool transpose_A, bool transpose_B, bool full_C, bool low_D,
                              uint8_t weightA, enum tiled_matmul_type_t tiled_matmul_type) {
  size_t tile_I, tile_J, tile_K;
  if (act == LAYERNORM || act == SOFTMAX) {
    /* Upstream's rule for the normalizations: a whole row of C per tile (tile_J = all of J), then I and K
     * grown while the tiles fit. */
    const size_t I = gemmini_ceil_div(dim_I, DIM), J = gemmini_ceil_div(dim_J, DIM), K = gemmini_ceil_div(dim_K, DIM);
    tile_I = 1, tile_J = J, tile_K = 1;
    if (tiled_matmul_type != CPU && !gemmini_matmul_tiles_fit(tile_I, tile_J, tile_K))
      gemmini_library_error("tiled_matmul_auto", "when doing layernorm or softmax, a row of C (J = dim_J) must fit "
                                                 "in half the accumulator");
    bool grown = true;
    while (grown) {
      grown = false;
      if (tile_I < I && gemmini_matmul_tiles_fit(tile_I + 1, tile_J, tile_K)) tile_I++, grown = true;
      if (tile_K < K && gemmini_matmul_tiles_fit(tile_I, tile_J, tile_K + 1)) tile_K++, grown = true;
    }
  } else {
    gemmini_auto_tiles(dim_I, dim_J, dim_K, &tile_I, &tile_J, &tile_K);
  }
  tiled_matmul(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C, A_scale_factor,
               B_scale_factor, D_scale_factor, act, scale, bert_scale, repeating_bias, tile_I, tile_J, tile_K,
               transpose_A, transpose_B, full_C, low_D, weightA, tiled_matmul_type);
}

/* tiled_matmul_auto by argument count (the current list has 24). Older library versions' lists, each
 * mapped onto the current function:
 *  25  (dim_I, dim_J, dim_K, A, B, D, C, stride_A..stride_C, A/B/D_scale_factor, act, scale, bert_scale,
 *      repeating_bias, transpose_A, transpose_B, full_C, low_D, weightA, FLAG, type): the bareMetalC tests of
 *      ucb-bar/gemmini-rocc-tests at commit 6c45e1bd pass a 25th argument between weightA and the dataflow,
 *      always false; what true asks for is not known here, so true stops with a library error;
 *  23  (..., act, scale, relu6_shift, repeating_bias, transpose_A, transpose_B, full_C, low_D, type): before
 *      weightA (gemmini_nn.h's tiled_matmul_nn_auto calls this form);
 *  22  (..., act, scale, relu6_shift, repeating_bias, transpose_A, transpose_B, full_C, type): before low_D;
 *  19  (..., A/B/D_scale_factor, act, shift, relu6_shift, repeating_bias, type): before the transposes; the
 *      read-out was an integer right shift (size_t shift), later a float scale: an integer argument is
 *      taken as the shift (scale 2^-shift), a floating one as the scale;
 *  12  (dim_I, dim_J, dim_K, A[dim_I][dim_K], B[dim_K][dim_J], D, C[dim_I][dim_J], act, shift, relu6_shift,
 *      repeating_bias, type): the first library, dense row-major operands, D of acc_t with rows of dim_J.
 * In the versions with relu6_shift, activation 2 was RELU6 (ReLU clipped at 6 << relu6_shift); it is 2
 * (LayerNorm) now, and the older forms refuse every activation but NO_ACTIVATION and RELU. */
static inline void gemmini_legacy_tiled_matmul_auto(const char *form, size_t dim_I, size_t dim_J, size_t dim_K,
                                                    const elem_t *A, const elem_t *B, const void *D, void *C,
                                                    size_t stride_A, size_t stride_B, size_t stride_D,
                                                    size_t stride_C, scale_t A_scale_factor, scale_t B_scale_factor,
                                                    scale_acc_t D_scale_factor, int act, double scale,
                                                    bool repeating_bias, bool transpose_A, bool transpose_B,
                                                    bool full_C, bool low_D, enum tiled_matmul_type_t type) {
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error(form, "only NO_ACTIVATION and RELU are implemented for this older argument list "
                                "(activation 2 was RELU6 in the library versions that had it)");
  tiled_matmul_auto(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C, A_scale_factor,
                    B_scale_factor, D_scale_factor, act, (acc_scale_t)scale, 0, repeating_bias, transpose_A,
                    transpose_B, full_C, low_D, 0, type);
}

static inline void gemmini_tiled_matmul_auto_flagged(size_t dim_I, size_t dim_J, size_t dim_K, const elem_t *A,
                                                     const elem_t *B, const void *D, void *C, size_t stride_A,
                                                     size_t stride_B, size_t stride_D, size_t stride_C,
                                                     scale_t A_scale_factor, scale_t B_scale_factor,
                                                     scale_acc_t D_scale_factor, int act, acc_scale_t scale,
                                                     acc_scale_t bert_scale, bool repeating_bias, bool transpose_A,
                                                     bool transpose_B, bool full_C, bool low_D, uint8_t weightA,
                                                     bool flag, enum tiled_matmul_type_t type) {
  if (flag)
    gemmini_library_error("tiled_matmul_auto (25 arguments)",
                          "the argument between weightA and the dataflow is true; only false is implemented");
  tiled_matmul_auto(dim_I, dim_J, dim_K, A, B, D, C, stride_A, stride_B, stride_D, stride_C, A_scale_factor,
                    B_scale_factor, D_scale_factor, act, scale, bert_scale, repeating_bias, transpose_A,
                    transpose_B, full_C, low_D, weightA, type);
}

/* The current list calls the function itself: a macro's own name is not expanded again inside it. */
#define tiled_matmul_auto_with_24_args(...) tiled_matmul_auto(__VA_ARGS__)
#define tiled_matmul_auto_with_25_args(...) gemmini_tiled_matmul_auto_flagged(__VA_ARGS__)
#define tiled_matmul_auto_with_23_args(dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD, sC, As, Bs, Ds, act, scale,      \
                                       relu6_shift, repeating_bias, tA, tB, full_C, low_D, type)                    \
  gemmini_legacy_tiled_matmul_auto("tiled_matmul_auto (23 arguments)", dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD,  \
                                   sC, As, Bs, Ds, act, scale, repeating_bias, tA, tB, full_C, low_D, type)
#define tiled_matmul_auto_with_22_args(dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD, sC, As, Bs, Ds, act, scale,      \
                                       relu6_shift, repeating_bias, tA, tB, full_C, type)                           \
  gemmini_legacy_tiled_matmul_auto("tiled_matmul_auto (22 arguments)", dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD,  \
                                   sC, As, Bs, Ds, act, scale, repeating_bias, tA, tB, full_C, false, type)
#define tiled_matmul_auto_with_19_args(dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD, sC, As, Bs, Ds, act, shift,      \
                                       relu6_shift, repeating_bias, type)                                           \
  gemmini_legacy_tiled_matmul_auto("tiled_matmul_auto (19 arguments)", dim_I, dim_J, dim_K, A, B, D, C, sA, sB, sD,  \
                                   sC, As, Bs, Ds, act, GEMMINI_LEGACY_ACC_SCALE(shift), repeating_bias, false,      \
                                   false, false, false, type)
#define tiled_matmul_auto_with_12_args(dim_I, dim_J, dim_K, A, B, D, C, act, shift, relu6_shift, repeating_bias,      \
                                       type)                                                                        \
  gemmini_legacy_tiled_matmul_auto("tiled_matmul_auto (12 arguments)", dim_I, dim_J, dim_K, (const elem_t *)(A),     \
                                   (const elem_t *)(B), (const void *)(D), (void *)(C), dim_K, dim_J, dim_J, dim_J,  \
                                   MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, act,               \
                                   GEMMINI_LEGACY_ACC_SCALE(shift), repeating_bias, false, false, false, false,      \
                                   type)
#define tiled_matmul_auto(...) GEMMINI_BY_ARITY(tiled_matmul_auto, __VA_ARGS__)

/* Global average pooling (upstream's argument list): input NHWC [batches][dim][dim][channels], output
 * [batches][channels]. On Gemmini each batch is a 1 x (dim*dim) row of ones times its pixels, read out of the
 * accumulator with the scale 1/(dim*dim) (float, round half to even, saturate); type CPU computes
 * upstream's integer reference, (sum + count/2) / count, which rounds negative halves differently. */
static inline void tiled_global_average_auto(const elem_t *input, elem_t *output, int batches, int channels, int dim,
                                             enum tiled_matmul_type_t type) {
  const size_t count = (size_t)dim * (size_t)dim;
  if (batches <= 0 || channels <= 0 || dim <= 0) gemmini_library_error("tiled_global_average_auto", "empty input");
  if (type == CPU) {
    for (int b = 0; b < batches; b++)
      for (int ch = 0; ch < channels; ch++) {
        int64_t sum = 0;
        for (size_t p = 0; p < count; p++) sum += input[((size_t)b * count + p) * channels + ch];
        output[(size_t)b * channels + ch] = gemmini_saturate_elem((sum + (int64_t)count / 2) / (int64_t)count);
      }
    return;
  }
  elem_t *ones = (elem_t *)malloc(count * sizeof(elem_t));
  if (ones == NULL) gemmini_library_error("tiled_global_average_auto", "out of memory");
  for (size_t p = 0; p < count; p++) ones[p] = 1;
  for (int b = 0; b < batches; b++)
    tiled_matmul_auto(1, (size_t)channels, count, ones, input + (size_t)b * count * channels, NULL,
                      output + (size_t)b * channels, count, (size_t)channels, 0, (size_t)channels,
                      MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION,
                      (acc_scale_t)(1.0f / (float)count), 0, false, false, false, false, false, 0, type);
  gemmini_fence(); /* the loop reads `ones` until it is done */
  free(ones);
}

/* Residual addition (upstream's argument lists): C = act(C_scale * (A_scale*A + B_scale*B)), A, B and C
 * I x J with rows `stride` elements apart (tiled_resadd_stride_auto; tiled_resadd_auto: stride J). Each
 * operand is scaled on its way into the accumulator (x * scale, round half to even, saturated to elem_t),
 * B accumulates onto A there, and the sum comes out through the accumulator's scale (C_scale, round half to
 * even, saturate, ReLU when asked). Type CPU computes the same on the core. */
static inline void tiled_resadd_stride_auto(const size_t I, const size_t J, const scale_t A_scale,
                                            const scale_t B_scale, const acc_scale_t C_scale, const size_t stride,
                                            const elem_t *A, const elem_t *B, elem_t *C, bool relu,
                                            enum tiled_matmul_type_t matadd_type) {
  const int act = relu ? RELU : NO_ACTIVATION;
  if (stride < J) gemmini_library_error("tiled_resadd_stride_auto", "the row stride is shorter than a row (J)");
  if (matadd_type == CPU) {
    for (size_t i = 0; i < I; i++)
      for (size_t j = 0; j < J; j++) {
        const int64_t sum = (int64_t)gemmini_cpu_mvin_scale(A[i * stride + j], A_scale) +
                            (int64_t)gemmini_cpu_mvin_scale(B[i * stride + j], B_scale);
        C[i * stride + j] = gemmini_cpu_acc_to_elem(sum, C_scale, act);
      }
    return;
  }
  gemmini_extended4_config_ld(stride * sizeof(elem_t), A_scale, true, DIM, 0);
  gemmini_extended4_config_ld(stride * sizeof(elem_t), B_scale, true, DIM, 1);
  gemmini_extended_config_st(stride * sizeof(elem_t), act, C_scale);
  /* One DIM x DIM block at a time, rotating through the accumulator so that the next block's loads can
   * proceed while earlier ones are still being stored. */
  const uint32_t slots = (uint32_t)(ACC_ROWS / DIM);
  uint32_t slot = 0;
  for (size_t i = 0; i < I; i += DIM)
    for (size_t j = 0; j < J; j += DIM) {
      const size_t rows = gemmini_min(DIM, I - i), cols = gemmini_min(DIM, J - j);
      const uint32_t acc = GEMMINI_ACC_ADDR | (slot * DIM);
      gemmini_extended_mvin(A + i * stride + j, acc, cols, rows);
      gemmini_extended_mvin2(B + i * stride + j, acc | GEMMINI_ACC_ACCUMULATE, cols, rows);
      gemmini_extended_mvout(C + i * stride + j, acc, cols, rows);
      slot = (slot + 1) % slots;
    }
}

static inline void tiled_resadd_auto(const size_t I, const size_t J, const scale_t A_scale, const scale_t B_scale,
                                     const acc_scale_t C_scale, const elem_t *A, const elem_t *B, elem_t *C,
                                     bool relu, enum tiled_matmul_type_t matadd_type) {
  tiled_resadd_stride_auto(I, J, A_scale, B_scale, C_scale, J, A, B, C, relu, matadd_type);
}

/* Upstream's CPU reference for the residual addition, by argument count: 10 (I, J, stride, A_scale, B_scale,
 * C_scale, A, B, C, relu), the current library's; 9 (without the stride: rows J apart), earlier versions'. */
static inline void resadd_cpu(const size_t I, const size_t J, const size_t stride, const scale_t A_scale,
                              const scale_t B_scale, const acc_scale_t C_scale, const elem_t *A, const elem_t *B,
                              elem_t *C, bool relu) {
  tiled_resadd_stride_auto(I, J, A_scale, B_scale, C_scale, stride, A, B, C, relu, CPU);
}
#define resadd_cpu_with_10_args(...) resadd_cpu(__VA_ARGS__)
#define resadd_cpu_with_9_args(I, J, A_scale, B_scale, C_scale, A, B, C, relu) \
  resadd_cpu(I, J, J, A_scale, B_scale, C_scale, A, B, C, relu)
#define resadd_cpu(...) GEMMINI_BY_ARITY(resadd_cpu, __VA_ARGS__)

/* LayerNorm / softmax of an I x J accumulator matrix (acc_t, rows J apart) into int8 (rows J apart), upstream's
 * tiled_norm / tiled_norm_auto (gemmini-rocc-tests include/gemmini.h): each block of up to DIM rows is moved
 * into the accumulator, then every row goes through the normalizer on its own statistics id (NORM_STAT_IDS
 * rows at a time): LayerNorm: a sum pass ending in the mean, a squared-error pass ending in 1/stddev, the
 * read-out; softmax: a maximum pass, a sum-of-iexp pass ending in 127/sum, the read-out. Each pass moves a
 * row out in pieces of up to MAX_BLOCK_LEN blocks, the last piece carrying the command that ends the
 * statistic. Softmax uses bert_scale 0.05, as upstream's does. Needs HAS_NORMALIZATIONS. */
static inline void gemmini_sp_tiled_norm(size_t I, size_t J, const acc_t *in, elem_t *out, size_t in_stride,
                                         size_t out_stride, int act) {
  const size_t J_blocks = gemmini_ceil_div(J, DIM);
  const size_t in_blocks = gemmini_min(J_blocks, MAX_BLOCK_LEN_ACC), out_blocks = gemmini_min(J_blocks, MAX_BLOCK_LEN);
  static const uint32_t layernorm_cmds[3][2] = {{1, 2}, {3, 4}, {0, 0}};
  static const uint32_t softmax_cmds[3][2] = {{5, 5}, {6, 7}, {0, 0}};
  const uint32_t(*cmds)[2] = act == LAYERNORM ? layernorm_cmds : softmax_cmds;
  for (size_t i = 0; i < I; i += DIM) {
    const size_t rows = gemmini_min(DIM, I - i);
    const uint32_t block_base = (uint32_t)((i / DIM) * J_blocks * DIM); /* this row block's accumulator rows */
    for (size_t j = 0; j < J; j += in_blocks * DIM)
      gemmini_extended_mvin(in + i * in_stride + j, GEMMINI_ACC_ADDR | (block_base + (uint32_t)j),
                            gemmini_min(in_blocks * DIM, J - j), rows);
    for (size_t row = 0; row < rows; row += NORM_STAT_IDS) {
      const size_t ids = gemmini_min(NORM_STAT_IDS, rows - row);
      for (int pass = 0; pass < 3; pass++)
        for (size_t id = 0; id < ids; id++) {
          /* LayerNorm's passes reload the whole CONFIG_NORM (zero constants, third activation bit 0);
           * softmax's only pick the statistics id, keeping iexp's constants. */
          gemmini_config_norm(0, 0, act == SOFTMAX, 0, id, 0, 0);
          const size_t r = row + id;
          for (size_t j = 0; j < J; j += out_blocks * DIM) {
            const bool last = j + out_blocks * DIM >= J;
            const uint32_t addr = GEMMINI_ACC_ADDR | GEMMINI_ACC_ACCUMULATE | (block_base + (uint32_t)(j + r)) |
                                  (cmds[pass][last ? 1 : 0] << 26);
            gemmini_extended_mvout(out + (i + r) * out_stride + j, addr, gemmini_min(out_blocks * DIM, J - j), 1);
          }
        }
    }
  }
}

static inline void tiled_norm(const size_t I, const size_t J, const size_t tile_I, const size_t tile_J,
                              const acc_t *in, elem_t *out, const acc_scale_t C_scale, int act,
                              enum tiled_matmul_type_t norm_type) {
  (void)norm_type;
#ifndef HAS_NORMALIZATIONS
  (void)I, (void)J, (void)tile_I, (void)tile_J, (void)in, (void)out, (void)C_scale, (void)act;
  gemmini_library_error("tiled_norm", "normalizations are not supported in this Gemmini configuration "
                                      "(HAS_NORMALIZATIONS in gemmini_params.h)");
#else
  if (act != LAYERNORM && act != SOFTMAX) gemmini_library_error("tiled_norm", "act must be LAYERNORM or SOFTMAX");
  if (tile_I == 0 || tile_J == 0) gemmini_library_error("tiled_norm", "tile sizes must be >= 1");
  if (tile_J < J) gemmini_library_error("tiled_norm", "a row must be normalized whole: tile_J must be J");
  if (gemmini_ceil_div(tile_I, DIM) * DIM * gemmini_ceil_div(J, DIM) > ACC_ROWS)
    gemmini_library_error("tiled_norm", "a tile of tile_I rows of J values does not fit in the accumulator");
  gemmini_extended_config_st(J * sizeof(elem_t), act & 3, C_scale);
  gemmini_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0);
  gemmini_extended4_config_ld(J * sizeof(acc_t), MVIN_SCALE_IDENTITY, false, DIM, 0);
  gemmini_extended4_config_ld(J * sizeof(acc_t), MVIN_SCALE_IDENTITY, false, DIM, 1);
  if (act == SOFTMAX) {
    acc_t qln2, qln2_inv, qb, qc;
    gemmini_softmax_constants((acc_scale_t)0.05, &qln2, &qln2_inv, &qb, &qc);
    gemmini_config_norm(qln2, 0, 0, 1, 0, qb, qc);
    gemmini_config_norm(qln2_inv, 1, 0, 1, 0, qb, qc);
  }
  for (size_t i = 0; i < I; i += tile_I)
    gemmini_sp_tiled_norm(gemmini_min(tile_I, I - i), J, in + i * J, out + i * J, J, J, act);
  gemmini_fence();
#endif
}

static inline void tiled_norm_auto(const size_t I, const size_t J, const acc_t *in, elem_t *out,
                                   const acc_scale_t C_scale, int act, enum tiled_matmul_type_t norm_type) {
  /* Upstream's choice: as many rows as the accumulator holds; OS is "Unsupported type" there (CPU runs on
   * Gemmini like WS). */
  if (norm_type == OS) gemmini_library_error("tiled_norm_auto", "unsupported type OS (WS or CPU)");
  size_t tile_I = I;
  while (tile_I > 1 && gemmini_ceil_div(tile_I, DIM) * DIM * gemmini_ceil_div(J, DIM) > ACC_ROWS) tile_I--;
  tiled_norm(I, J, tile_I, J, in, out, C_scale, act, norm_type);
}

#include "gemmini_conv.h"

#endif /* SPEEDPATCH_GEMMINI_LIB_H */
