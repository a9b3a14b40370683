/* What each Gemmini instruction does to the scratchpad, accumulator and DRAM (here: host memory), and
 * how it is handed to the cycle model. Semantics follow the ISA notes and the Spike functional model:
 * float scale then round-half-to-even then saturate; OS output uses a rounding right shift. */
#include <math.h>
#include <string.h>

#include "model_internal.h"

gm_state_t G;

/* Completion cycle of the last command each unit was given. The performance counters (below) count a
 * unit's busy cycles up to the host's current cycle, as the hardware's per-cycle counters do, so work
 * still queued behind the host is not counted yet. */
static uint64_t unit_done[U_NUM];

static uint64_t schedule_unit(int unit, uint64_t occupancy, uint64_t latency, uint64_t dram_cycles) {
  const uint64_t done = tm_schedule(unit, occupancy, latency, dram_cycles);
  if (done > unit_done[unit]) unit_done[unit] = done;
  return done;
}

static float float_from_bits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* x * scale in float, ties to even (nearbyintf under the default rounding mode), saturated to int8. */
static elem_t scale_to_elem(int64_t x, float scale) {
  float y = nearbyintf((float)x * scale);
  if (!(y == y)) return 0; /* NaN scale: the hardware has no defined answer; keep it deterministic */
  if (y > (float)elem_t_max) return elem_t_max;
  if (y < (float)elem_t_min) return elem_t_min;
  return (elem_t)y;
}

static elem_t saturate_elem(int64_t x) {
  return x > elem_t_max ? elem_t_max : (x < elem_t_min ? elem_t_min : (elem_t)x);
}

/* Rounding right shift with ties to even, as the OS dataflow applies to its outputs. */
static int64_t rounding_shift(int64_t x, uint32_t shift) {
  if (shift == 0) return x;
  int64_t q = x >> shift; /* floor */
  int64_t half = (x >> (shift - 1)) & 1;
  int64_t below = (x & ((INT64_C(1) << (shift - 1)) - 1)) != 0;
  return q + (half & (below | (q & 1)));
}

static elem_t activate(elem_t x, int act) { return (act == ACT_RELU && x < 0) ? 0 : x; }

static void check_act(int act, const char *where) {
  if (act != ACT_NONE && act != ACT_RELU)
    gm_fail("activation %d (%s) is not supported by this model (only none and ReLU)",
            act, where);
}

/* CONFIG_NORM's state: the read-out's IGELU constants (which iexp, softmax's exponential, shares as its
 * polynomial's qb/qc), iexp's ln2 constants, the activation's third bit (see gm_config) and the statistics
 * id that LayerNorm/softmax commands and read-outs use. */
static int32_t igelu_qb, igelu_qc, iexp_qln2, iexp_qln2_inv;
static int acc_act_msb;
static uint32_t norm_stat_id;

enum { ACT_LAYERNORM = 2, ACT_IGELU = 3, ACT_SOFTMAX = 4 };

/* Statistics ids of the normalizer (NORM_STAT_IDS in gemmini_params.h; Normalizer.scala num_stats). */
#ifdef NORM_STAT_IDS
#define GM_NORM_STATS NORM_STAT_IDS
#else
#define GM_NORM_STATS 4
#endif

/* The normalization commands an accumulator mvout carries in its local address bits 28:26 (NormCmd.scala,
 * ucb-bar/gemmini): 0 reads out (and ends the statistics pass), 1/2 sum (2: then the mean), 3/4 squared
 * error (4: then 1/stddev), 5 row maximum, 6/7 sum of iexp (7: then 127/sum). */
enum { NORM_RESET = 0, NORM_SUM, NORM_MEAN, NORM_VARIANCE, NORM_INV_STDDEV, NORM_MAX, NORM_SUM_EXP, NORM_INV_SUM_EXP };

/* One statistics id's registers. Values and their order of updates follow the Spike functional model
 * (ucb-bar/libgemmini gemmini.cc apply_norm): sums wrap at 32 bits as the accumulator's do; a command
 * after RESET, MEAN or INV_STDDEV starts a new sum, count and running maximum. */
typedef struct {
  int32_t sum, mean, stddev, max, running_max;
  uint32_t count;
  float inv_sum_exp;
  int fresh; /* the next command starts new running sums */
} norm_stats_t;
static norm_stats_t norm[GM_NORM_STATS];

/* The accumulator read-out's activation: CONFIG_ST's two bits and CONFIG_NORM's third. None, ReLU, LayerNorm,
 * IGELU and softmax; the last three only on a configuration with normalizations (Gemmini's
 * has_normalizations, HAS_NORMALIZATIONS in gemmini_params.h; its default configuration has none, and the
 * hardware asserts). */
static int readout_act(const char *where) {
  const int act = (acc_act_msb << 2) | G.acc_act;
  if (act == ACT_NONE || act == ACT_RELU) return act;
#ifdef HAS_NORMALIZATIONS
  if (act == ACT_LAYERNORM || act == ACT_IGELU || act == ACT_SOFTMAX) return act;
  gm_fail("activation %d (%s) is not an activation of Gemmini (0 none, 1 ReLU, 2 LayerNorm, 3 IGELU, "
          "4 softmax)", act, where);
#else
  gm_fail("activation %d (%s: %s) is not supported by this configuration (only none and ReLU; IGELU, "
          "LayerNorm and softmax need a configuration with normalizations, HAS_NORMALIZATIONS in "
          "gemmini_params.h)",
          act, where, act == 2 ? "LayerNorm" : act == 3 ? "IGELU" : act == 4 ? "softmax" : "unknown");
#endif
  return act;
}

/* I-BERT's integer GELU as Gemmini's accumulator read-out computes it (AccumulatorScale.igelu, ucb-bar/gemmini):
 * q_sign * ((min(|q|, -qb) + qb)^2 + qc), plus qc, times q. Sums and differences wrap to the accumulator's
 * 32 bits as the hardware's do; each product is exact and then keeps its low 32 bits (withWidthOf). */
static int32_t wrap32(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static acc_t igelu(acc_t q) {
  const int32_t sign = q < 0 ? -1 : 1;
  const int32_t abs_q = q < 0 ? wrap32(-(int64_t)q) : q;
  const int32_t neg_qb = wrap32(-(int64_t)igelu_qb);
  const int32_t clipped = abs_q > neg_qb ? neg_qb : abs_q;
  const int32_t t = wrap32((int64_t)clipped + igelu_qb);
  const int32_t poly = wrap32((int64_t)t * t + igelu_qc);
  const int32_t erf = wrap32((int64_t)sign * poly);
  return wrap32((int64_t)q * wrap32((int64_t)erf + igelu_qc));
}

/* I-BERT's integer exponential for q <= 0 (softmax's numerator), as AccumulatorScale.iexp computes it:
 * z = (-q * qln2_inv) >> 16 (the 64-bit product shifted as unsigned, low 32 bits kept), qp = q + z * qln2,
 * ((qp + qb)^2 + qc) >> z as an unsigned shift; a z with any of bits 5..15 set shifts by 32, so every
 * z of 32 or more gives 0. Upstream's CPU reference (gemmini.h matmul_cpu) and Spike compute the same in
 * C int32 arithmetic wherever that is defined (no overflow, z < 32). */
static acc_t iexp(acc_t q) {
  const int64_t product = (int64_t)wrap32(-(int64_t)q) * (int64_t)iexp_qln2_inv;
  const int32_t z = (int32_t)(uint32_t)((uint64_t)product >> 16);
  const uint32_t shift = (((uint32_t)z >> 5) & 0x7FF) ? 32 : (uint32_t)z;
  const int32_t qp = wrap32((int64_t)z * iexp_qln2 + q);
  const int32_t t = wrap32((int64_t)qp + igelu_qb);
  const int32_t poly = wrap32((int64_t)t * t + igelu_qc);
  return shift >= 32 ? 0 : (acc_t)((uint32_t)poly >> shift);
}

/* Floor square root of a variance. A negative variance (its 32-bit sum wrapped) has no root: the RTL's
 * float square root gives NaN, which converts to the largest integer. */
static int32_t norm_stddev(int32_t variance) {
  if (variance < 0) return INT32_MAX;
  if (variance == 0) return 1; /* Normalizer.scala and upstream's matmul_cpu: a zero deviation divides by 1 */
  int64_t r = (int64_t)sqrt((double)variance);
  while (r * r > variance) r--;
  while ((r + 1) * (r + 1) <= variance) r++;
  return (int32_t)r;
}

/* One normalization command on `len` accumulator values of one row block. Returns the cycles the
 * normalizer's iterative units take to finish it (see T_NORM_* in timing_params.h). */
static uint64_t norm_command(const acc_t *x, uint32_t len, uint32_t cmd) {
  norm_stats_t *st = &norm[norm_stat_id];
  if (st->fresh) {
    st->sum = 0;
    st->count = 0;
    st->running_max = INT32_MIN;
  }
  st->fresh = cmd == NORM_RESET || cmd == NORM_MEAN || cmd == NORM_INV_STDDEV;
  switch (cmd) {
  case NORM_SUM:
  case NORM_MEAN:
    for (uint32_t i = 0; i < len; i++) st->sum = wrap32((int64_t)st->sum + x[i]);
    st->count += len;
    break;
  case NORM_VARIANCE:
  case NORM_INV_STDDEV:
    for (uint32_t i = 0; i < len; i++) {
      const int32_t d = wrap32((int64_t)x[i] - st->mean);
      st->sum = wrap32((int64_t)st->sum + wrap32((int64_t)d * d));
    }
    st->count += len;
    break;
  case NORM_MAX:
    for (uint32_t i = 0; i < len; i++)
      if (x[i] > st->running_max) st->running_max = x[i];
    break;
  case NORM_SUM_EXP:
  case NORM_INV_SUM_EXP:
    st->max = st->running_max;
    for (uint32_t i = 0; i < len; i++) st->sum = wrap32((int64_t)st->sum + iexp(wrap32((int64_t)x[i] - st->max)));
    break;
  default:
    break;
  }
  switch (cmd) {
  case NORM_MEAN: /* C's truncating division, as the RTL's round-toward-zero float divider and Spike */
    st->mean = st->count ? (int32_t)((int64_t)st->sum / (int64_t)st->count) : 0;
    return T_NORM_INT_DIV_CYCLES;
  case NORM_INV_STDDEV:
    st->stddev = norm_stddev(st->count ? (int32_t)((int64_t)st->sum / (int64_t)st->count) : 0);
    return T_NORM_INT_DIV_CYCLES + T_NORM_INT_SQRT_CYCLES + T_NORM_FLOAT_DIV_CYCLES;
  case NORM_INV_SUM_EXP:
    st->running_max = INT32_MIN;
    st->inv_sum_exp = 127.0f / (float)st->sum; /* int8's largest value is softmax's 1 (Normalizer.scala) */
    return T_NORM_FLOAT_DIV_CYCLES;
  default:
    return 0;
  }
}

static void touch_spad(uint32_t row) {
  if ((int64_t)row > S.max_spad_row) S.max_spad_row = row;
  if (!S.spad_touched[row]) {
    S.spad_touched[row] = 1;
    S.spad_rows_touched++;
  }
}

static void touch_acc(uint32_t row) {
  if ((int64_t)row > S.max_acc_row) S.max_acc_row = row;
  if (!S.acc_touched[row]) {
    S.acc_touched[row] = 1;
    S.acc_rows_touched++;
  }
}

static void check_row(int mem, uint64_t row, const char *what) {
  uint64_t limit = mem == MEM_ACC ? ACC_ROWS : SPAD_ROWS;
  if (row >= limit)
    gm_fail("%s: %s row %llu is out of range (%s has %llu rows)", what,
            mem == MEM_ACC ? "accumulator" : "scratchpad", (unsigned long long)row,
            mem == MEM_ACC ? "the accumulator" : "the scratchpad", (unsigned long long)limit);
}

static uint64_t busy_counted[U_NUM]; /* performance counters: the busy cycles already reported */

void gm_reset(void) {
  memset(&G, 0, sizeof G);
  memset(unit_done, 0, sizeof unit_done);
  memset(busy_counted, 0, sizeof busy_counted);
  G.dataflow = DF_OS;
  G.a_stride = 1;
  G.c_stride = 1;
  for (int i = 0; i < 3; i++) {
    G.ld_stride[i] = DIM * sizeof(elem_t);
    G.ld_block_stride[i] = DIM;
    G.ld_pixels[i] = 1;
    G.ld_scale[i] = 1.0f;
  }
  G.st_stride = DIM * sizeof(elem_t);
  G.acc_scale = 1.0f;
  G.preload_addr = G.output_addr = GARBAGE_LOCAL;
  igelu_qb = igelu_qc = iexp_qln2 = iexp_qln2_inv = 0;
  acc_act_msb = 0;
  norm_stat_id = 0;
  memset(norm, 0, sizeof norm);
  for (int i = 0; i < GM_NORM_STATS; i++) {
    norm[i].fresh = 1;
    norm[i].max = norm[i].running_max = INT32_MIN;
    norm[i].stddev = 1;
  }
}

/* ---------------------------------------------------------------------------------------- CONFIG */

void gm_config(uint64_t rs1, uint64_t rs2) {
  switch (rs1 & 3) {
  case 0: { /* CONFIG_EX */
    int set_only_strides = (rs1 >> 7) & 1;
    if (!set_only_strides) {
      int dataflow = (rs1 >> 2) & 1, a_t = (rs1 >> 8) & 1, b_t = (rs1 >> 9) & 1;
      uint32_t shift = (uint32_t)rs2;
      if (dataflow == DF_OS && !a_t && b_t)
        gm_fail("illegal CONFIG_EX: the output-stationary dataflow cannot transpose only B");
      if (dataflow == DF_WS && a_t && b_t)
        gm_fail("illegal CONFIG_EX: the weight-stationary dataflow cannot transpose both A and B");
      if (shift >= 32) gm_fail("illegal CONFIG_EX: sys_shift %u must be below 32", shift);
      G.dataflow = dataflow;
      G.sys_act = (rs1 >> 3) & 3;
      G.sys_shift = shift;
      G.a_transpose = a_t;
      G.b_transpose = b_t;
    }
    G.a_stride = (rs1 >> 16) & 0xFFFF;
    G.c_stride = (rs2 >> 48) & 0xFFFF;
    schedule_unit(U_EX, T_EX_CMD_OVERHEAD, 0, 0);
    break;
  }
  case 1: { /* CONFIG_LD */
    uint32_t slot = (rs1 >> 3) & 3;
    if (slot > 2) gm_fail("illegal CONFIG_LD: load slot %u (only 0, 1, 2 exist)", slot);
    uint32_t bits = (uint32_t)(rs1 >> 32);
    G.ld_stride[slot] = rs2;
    G.ld_block_stride[slot] = (rs1 >> 16) & 0xFFFF;
#ifdef HAS_MVIN_SCALE
    /* The scale as sent, 0.0 included (a zero scale loads zeros, as on the hardware and in upstream's
     * functional model). */
    G.ld_scale[slot] = float_from_bits(bits);
#else
    (void)bits; /* a configuration without mvin scaling ignores the field */
    G.ld_scale[slot] = 1.0f;
#endif
    G.ld_shrunk[slot] = (rs1 >> 2) & 1;
    G.ld_pixels[slot] = (rs1 >> 8) & 0xFF;
    if (G.ld_pixels[slot] == 0) G.ld_pixels[slot] = 1;
    schedule_unit(U_LOAD, T_EX_CMD_OVERHEAD, 0, 0);
    break;
  }
  case 2: /* CONFIG_ST */
    G.st_stride = rs2 & 0xFFFFFFFF;
    G.acc_act = (rs1 >> 2) & 3;
    acc_act_msb = 0; /* CONFIG_ST sets the whole read-out activation; CONFIG_NORM may then raise it to 4 */
    G.acc_scale = float_from_bits((uint32_t)(rs2 >> 32));
    G.pool_stride = (rs1 >> 4) & 3;
    G.pool_size = (rs1 >> 6) & 3;
    G.pool_upad = (rs1 >> 8) & 3;
    G.pool_lpad = (rs1 >> 10) & 3;
    G.pool_out_dim = (rs1 >> 24) & 0xFF;
    G.pool_porows = (rs1 >> 32) & 0xFF;
    G.pool_pocols = (rs1 >> 40) & 0xFF;
    G.pool_orows = (rs1 >> 48) & 0xFF;
    G.pool_ocols = (rs1 >> 56) & 0xFF;
    schedule_unit(U_STORE, T_EX_CMD_OVERHEAD, 0, 0);
    break;
  default: { /* CONFIG_NORM (upstream's gemmini_config_norm) */
    /* rs1 = q_const[63:32] | q_const_type[18] | set_stats_id_only[17] | act_msb[16] | stat_id[15:8],
     * rs2 = qc[63:32] | qb[31:0]. The statistics id is always taken; the rest only without
     * set_stats_id_only. q_const is iexp's qln2 (type 0) or qln2_inv (type 1). act_msb replaces the read-out
     * activation's third bit (CONFIG_ST's two bits + 4 = softmax), as the store controller does. */
    const uint32_t id = (uint32_t)((rs1 >> 8) & 0xFF);
    if (id >= GM_NORM_STATS)
      gm_fail("CONFIG_NORM: statistics id %u is out of range (this configuration has %d, NORM_STAT_IDS)", id,
              GM_NORM_STATS);
    norm_stat_id = id;
    if (!((rs1 >> 17) & 1)) {
      igelu_qb = (int32_t)(uint32_t)rs2;
      igelu_qc = (int32_t)(uint32_t)(rs2 >> 32);
      acc_act_msb = (int)((rs1 >> 16) & 1);
      if ((rs1 >> 18) & 1)
        iexp_qln2_inv = (int32_t)(uint32_t)(rs1 >> 32);
      else
        iexp_qln2 = (int32_t)(uint32_t)(rs1 >> 32);
    }
    schedule_unit(U_STORE, T_EX_CMD_OVERHEAD, 0, 0);
    break;
  }
  }
}

/* ------------------------------------------------------------------------------------------ MVIN */

void gm_mvin(uint64_t dram, uint64_t local, int slot) {
  const uint32_t addr = (uint32_t)local;
  const uint32_t cols = (local >> 32) & 0xFFFF, rows = (local >> 48) & 0xFFFF;
  if (addr == GARBAGE_LOCAL) gm_fail("mvin to the garbage address");
  const int is_acc = (addr >> 31) & 1, accumulate = (addr >> 30) & 1;
  const uint32_t base = addr & 0x1FFFFFFF;
  const int shrunk = G.ld_shrunk[slot];
  const uint32_t esize = is_acc ? (shrunk ? sizeof(elem_t) : sizeof(acc_t)) : sizeof(elem_t);
  const uint32_t max_cols = MAX_BYTES / esize;
  const uint32_t pixels = G.ld_pixels[slot], block_stride = G.ld_block_stride[slot];
  const uint64_t stride = G.ld_stride[slot];
  const float scale = G.ld_scale[slot];
  const int mem = is_acc ? MEM_ACC : MEM_SPAD;

  if (cols > max_cols)
    gm_fail("mvin of %u columns exceeds one DMA request of %d bytes (at most %u columns here)", cols,
            MAX_BYTES, max_cols);
  if (rows == 0 || cols == 0) {
    schedule_unit(U_LOAD, T_DMA_CMD_OVERHEAD, 0, 0);
    return;
  }
  const uint32_t blocks = (cols + DIM - 1) / DIM;
  if (pixels > 1 && cols * pixels > DIM)
    gm_fail("mvin with %u pixel repeats of %u columns does not fit in a row of %d", pixels, cols, DIM);
  for (uint32_t b = 0; b < blocks; b++) {
    uint64_t last = (uint64_t)base + (uint64_t)b * block_stride + rows - 1;
    check_row(mem, last, "mvin");
    uint64_t first = (uint64_t)base + (uint64_t)b * block_stride;
    uint64_t low = first >= pixels - 1 ? first - (pixels - 1) : 0;
    tm_write(mem, (uint32_t)low, (uint32_t)(last - low + 1), 1);
    for (uint64_t r = low; r <= last; r++) mem == MEM_ACC ? touch_acc((uint32_t)r) : touch_spad((uint32_t)r);
  }

  unsigned char src[MAX_BYTES];
  for (uint32_t row = 0; row < rows; row++) {
    if (dram) gm_dram_read(dram + row * stride, src, (uint64_t)cols * esize);
    for (uint32_t col = 0; col < cols; col++) {
      const uint32_t block = col / DIM, lcol = col % DIM;
      const uint32_t lrow = base + row + block * block_stride;
      int64_t value = 0;
      if (dram) {
        if (is_acc && !shrunk) {
          acc_t v;
          memcpy(&v, src + (size_t)col * sizeof(acc_t), sizeof v);
          value = v; /* this configuration has no accumulator mvin scale */
        } else {
          elem_t v;
          memcpy(&v, src + (size_t)col * sizeof(elem_t), sizeof v);
          value = scale == 1.0f ? v : scale_to_elem(v, scale);
        }
      }
      for (uint32_t p = 0; p < pixels && p <= lrow; p++) {
        if (is_acc) {
          acc_t *cell = &G.acc[lrow - p][lcol + p * cols];
          *cell = accumulate ? (acc_t)((uint32_t)*cell + (uint32_t)value) : (acc_t)value;
        } else {
          G.spad[lrow - p][lcol + p * cols] = (elem_t)value;
        }
      }
    }
  }

  uint64_t dram_cycles = dram ? tm_dma_cycles(rows, (uint64_t)cols * esize) : 0;
  if (dram) S.dram_read_bytes += (uint64_t)rows * cols * esize;
  uint64_t local_cycles = (uint64_t)rows * blocks * T_SPAD_ROW_CYCLES;
  schedule_unit(U_LOAD, T_DMA_CMD_OVERHEAD + local_cycles, dram ? T_DRAM_LATENCY : 0, dram_cycles);
}

/* ----------------------------------------------------------------------------------------- MVOUT */

/* act: readout_act()'s, checked once per mvout. */
static elem_t acc_to_elem(acc_t v, int act) {
  const norm_stats_t *st = &norm[norm_stat_id];
  switch (act) {
  case ACT_IGELU:
    return scale_to_elem(igelu(v), G.acc_scale);
  case ACT_LAYERNORM:
    /* (x - mean) / stddev, truncated, then the read-out scale: upstream's CPU reference (gemmini.h
     * matmul_cpu) and Spike (apply_pre_activation_acc: (x - mean) * (1/stddev) in float, truncated). The RTL
     * multiplies by the float 1/stddev in its scale unit instead, and ignores the read-out scale. */
    return scale_to_elem(wrap32((int64_t)v - st->mean) / st->stddev, G.acc_scale);
  case ACT_SOFTMAX:
    /* iexp(x - max) * (127 / sum of iexp), round half to even, saturate: the RTL's scale unit, upstream's
     * CPU reference and Spike; the read-out scale is not applied (the RTL replaces it by 127/sum). */
    return scale_to_elem(iexp(wrap32((int64_t)v - st->max)), st->inv_sum_exp);
  default:
    return activate(scale_to_elem(v, G.acc_scale), act);
  }
}

static void mvout_pooled(uint64_t dram, uint32_t base, int is_acc, uint32_t channels, int act) {
  const int mem = is_acc ? MEM_ACC : MEM_SPAD;
  const uint32_t orows = G.pool_orows, ocols = G.pool_ocols;
  if (channels > DIM) gm_fail("pooled mvout of %u channels exceeds DIM=%d", channels, DIM);
  if (orows && ocols) {
    check_row(mem, (uint64_t)base + (uint64_t)orows * ocols - 1, "pooled mvout");
    tm_read(mem, base, orows * ocols, 1);
  }
  for (uint32_t porow = 0; porow < G.pool_porows; porow++)
    for (uint32_t pocol = 0; pocol < G.pool_pocols; pocol++)
      for (uint32_t ch = 0; ch < channels; ch++) {
        elem_t best = elem_t_min;
        for (uint32_t wr = 0; wr < G.pool_size; wr++)
          for (uint32_t wc = 0; wc < G.pool_size; wc++) {
            int64_t orow = (int64_t)porow * G.pool_stride + wr - G.pool_upad;
            int64_t ocol = (int64_t)pocol * G.pool_stride + wc - G.pool_lpad;
            elem_t e = 0;
            if (orow >= 0 && ocol >= 0 && orow < orows && ocol < ocols) {
              uint32_t row = base + (uint32_t)(orow * ocols + ocol);
              e = is_acc ? acc_to_elem(G.acc[row][ch], act) : G.spad[row][ch];
            }
            if (e > best) best = e;
          }
        unsigned char byte = (unsigned char)best;
        gm_dram_write(dram + ((uint64_t)porow * G.pool_out_dim + pocol) * G.st_stride + ch, &byte, 1);
      }
  uint64_t out_rows = (uint64_t)G.pool_porows * G.pool_pocols;
  uint64_t in_rows = (uint64_t)orows * ocols;
  S.dram_write_bytes += out_rows * channels;
  schedule_unit(U_STORE, T_DMA_CMD_OVERHEAD + in_rows * T_SPAD_ROW_CYCLES,
              (is_acc ? T_ACC_READ_LATENCY : 0) + T_DRAM_LATENCY, tm_dma_cycles(out_rows, channels));
}

void gm_mvout(uint64_t dram, uint64_t local) {
  const uint32_t addr = (uint32_t)local;
  const uint32_t cols = (local >> 32) & 0xFFFF, rows = (local >> 48) & 0xFFFF;
  if (addr == GARBAGE_LOCAL) gm_fail("mvout from the garbage address");
  if (dram == 0) gm_fail("mvout to DRAM address 0");
  const int is_acc = (addr >> 31) & 1, full = (addr >> 29) & 1;
  const uint32_t cmd = (addr >> 26) & 7, base = addr & 0x3FFFFFF;
  const int mem = is_acc ? MEM_ACC : MEM_SPAD;
#ifndef HAS_NORMALIZATIONS
  if (cmd != NORM_RESET && is_acc)
    gm_fail("mvout normalization command %u (local address bits 28:26) needs a configuration with "
            "normalizations (HAS_NORMALIZATIONS in gemmini_params.h)", cmd);
#endif
  /* Commands 1..7 only gather statistics: nothing is read out to DRAM (NormCmd.writes_to_main_memory). */
  const int writes = !is_acc || cmd == NORM_RESET;
  const int act = (is_acc && !full && writes) ? readout_act("CONFIG_ST activation") : ACT_NONE;
  if (G.pool_stride != 0) {
    if (is_acc && (cmd != NORM_RESET || act == ACT_LAYERNORM || act == ACT_SOFTMAX))
      gm_fail("a pooled mvout cannot normalize (normalization command %u, activation %d)", cmd, act);
    mvout_pooled(dram, base, is_acc, cols, act);
    return;
  }
  if (rows == 0 || cols == 0) {
    schedule_unit(U_STORE, T_DMA_CMD_OVERHEAD, 0, 0);
    return;
  }
  const uint32_t blocks = (cols + DIM - 1) / DIM;
  for (uint32_t b = 0; b < blocks; b++) {
    check_row(mem, (uint64_t)base + (uint64_t)b * DIM + rows - 1, "mvout");
    tm_read(mem, base + b * DIM, rows, 1);
  }
  /* Each row's blocks go through the normalizer in order, the last with the command and the others with
   * its running version (MEAN -> SUM, INV_STDDEV -> VARIANCE, INV_SUM_EXP -> SUM_EXP), as the store
   * controller splits a mvout (NormCmd.non_reset_version) and Spike's mvout does. */
  uint64_t norm_cycles = 0;
  if (is_acc)
    for (uint32_t i = 0; i < rows; i++)
      for (uint32_t j = 0; j < cols; j += DIM) {
        const uint32_t len = cols - j > DIM ? DIM : cols - j, last = j + DIM >= cols;
        uint32_t c = cmd;
        if (!last) c = cmd == NORM_MEAN ? NORM_SUM : cmd == NORM_INV_STDDEV ? NORM_VARIANCE
                     : cmd == NORM_INV_SUM_EXP ? NORM_SUM_EXP : cmd;
        norm_cycles += norm_command(G.acc[base + (j / DIM) * DIM + i], len, c);
      }
  if (!writes) {
    /* The accumulator rows are read (one row block per cycle: the normalizer's lanes take a DIM-wide
     * block per cycle, Normalizer.scala with num_reduce_lanes = -1), nothing goes to DRAM, and a command
     * that ends a statistic holds the normalizer while its divider / square root / reciprocal runs. */
    schedule_unit(U_STORE, T_DMA_CMD_OVERHEAD + (uint64_t)rows * blocks * T_SPAD_ROW_CYCLES + norm_cycles,
                  T_ACC_READ_LATENCY, 0);
    return;
  }
  const uint32_t esize = (is_acc && full) ? sizeof(acc_t) : sizeof(elem_t);
  static unsigned char dst[65536 * sizeof(acc_t)];
  for (uint32_t i = 0; i < rows; i++) {
    for (uint32_t j = 0; j < cols; j++) {
      const uint32_t row = base + (j / DIM) * DIM + i, col = j % DIM;
      if (!is_acc) {
        dst[j] = (unsigned char)G.spad[row][col];
      } else if (full) {
        memcpy(dst + (size_t)j * sizeof(acc_t), &G.acc[row][col], sizeof(acc_t));
      } else {
        dst[j] = (unsigned char)acc_to_elem(G.acc[row][col], act);
      }
    }
    gm_dram_write(dram + (uint64_t)i * G.st_stride, dst, (uint64_t)cols * esize);
  }
  S.dram_write_bytes += (uint64_t)rows * cols * esize;
  schedule_unit(U_STORE, T_DMA_CMD_OVERHEAD + (uint64_t)rows * blocks * T_SPAD_ROW_CYCLES,
              (is_acc ? T_ACC_READ_LATENCY : 0) + T_DRAM_LATENCY, tm_dma_cycles(rows, (uint64_t)cols * esize));
}

/* --------------------------------------------------------------------------------------- EXECUTE */

static void check_dims(uint32_t rows, uint32_t cols, const char *what) {
  if (rows > DIM || cols > DIM)
    gm_fail("%s operand of %u rows x %u columns exceeds the %dx%d array", what, rows, cols, DIM, DIM);
}

static void check_spad_operand(uint32_t addr, const char *what) {
  if (addr != GARBAGE_LOCAL && (addr >> 30) != 0)
    gm_fail("%s operand 0x%08x must be a scratchpad address (the model does not read it from the "
            "accumulator)", what, addr);
}

void gm_preload(uint64_t bd, uint64_t c) {
  G.preload_addr = (uint32_t)bd;
  G.output_addr = (uint32_t)c;
  G.preload_cols = (bd >> 32) & 0xFFFF;
  G.preload_rows = (bd >> 48) & 0xFFFF;
  G.output_cols = (c >> 32) & 0xFFFF;
  G.output_rows = (c >> 48) & 0xFFFF;
  check_dims(G.preload_rows, G.preload_cols, "PRELOAD B/D");
  check_dims(G.output_rows, G.output_cols, "PRELOAD C");
  check_spad_operand(G.preload_addr, "PRELOAD B/D");
  /* The preloaded rows shift into the array's second weight buffer while the previous compute runs;
   * the compute that uses them streams at least that many rows (see gm_compute). */
  G.preload_streamed = 0;
  if (G.preload_addr != GARBAGE_LOCAL && G.preload_rows) {
    uint64_t last_row = (uint64_t)G.preload_addr + G.preload_rows - 1;
    if (G.dataflow == DF_WS && G.b_transpose) last_row = (uint64_t)G.preload_addr + G.preload_cols - 1;
    check_row(MEM_SPAD, last_row, "PRELOAD");
    tm_read(MEM_SPAD, G.preload_addr, (uint32_t)(last_row - G.preload_addr + 1), 1);
    G.preload_streamed = (uint32_t)(last_row - G.preload_addr + 1);
  }
  schedule_unit(U_EX, T_EX_CMD_OVERHEAD, 0, 0);
}

void gm_compute(uint64_t a_op, uint64_t bd_op, int preload) {
  static acc_t A[DIM][DIM], BD[DIM][DIM], R[DIM][DIM];
  const uint32_t a_addr = (uint32_t)a_op, bd_addr = (uint32_t)bd_op;
  const uint32_t a_cols = (a_op >> 32) & 0xFFFF, a_rows = (a_op >> 48) & 0xFFFF;
  const uint32_t bd_cols = (bd_op >> 32) & 0xFFFF, bd_rows = (bd_op >> 48) & 0xFFFF;
  const int ws = G.dataflow == DF_WS;
  check_dims(a_rows, a_cols, "COMPUTE A");
  check_dims(bd_rows, bd_cols, ws ? "COMPUTE D" : "COMPUTE B");
  check_spad_operand(a_addr, "COMPUTE A");
  check_spad_operand(bd_addr, ws ? "COMPUTE D" : "COMPUTE B");
  uint64_t streamed = 0;

  /* A (DIM x DIM, zero outside rows x cols), row i at a_addr + a_stride*i (transposed: column). */
  memset(A, 0, sizeof A);
  if (a_addr != GARBAGE_LOCAL && a_rows && a_cols) {
    uint32_t n = G.a_transpose ? a_cols : a_rows;
    uint64_t last = (uint64_t)a_addr + (uint64_t)G.a_stride * (n - 1);
    check_row(MEM_SPAD, last, "COMPUTE A");
    tm_read(MEM_SPAD, a_addr, n, G.a_stride);
    for (uint32_t i = 0; i < a_rows; i++)
      for (uint32_t k = 0; k < a_cols; k++)
        A[i][k] = G.a_transpose ? G.spad[a_addr + G.a_stride * k][i] : G.spad[a_addr + G.a_stride * i][k];
    streamed = n;
  }

  /* The second operand: D (bias) in WS, B in OS (transposed: row j holds column j). */
  memset(BD, 0, sizeof BD);
  if (bd_addr != GARBAGE_LOCAL && bd_rows && bd_cols) {
    int bt = !ws && G.b_transpose;
    uint32_t n = bt ? bd_cols : bd_rows;
    check_row(MEM_SPAD, (uint64_t)bd_addr + n - 1, "COMPUTE B/D");
    tm_read(MEM_SPAD, bd_addr, n, 1);
    for (uint32_t i = 0; i < bd_rows; i++)
      for (uint32_t j = 0; j < bd_cols; j++) BD[i][j] = bt ? G.spad[bd_addr + j][i] : G.spad[bd_addr + i][j];
    if (n > streamed) streamed = n;
  }

  if (preload) {
    /* The preloaded matrix enters the PEs: weights (WS, optionally transposed) or initial sums (OS). */
    int pt = ws && G.b_transpose;
    memset(G.pe, 0, sizeof G.pe);
    if (G.preload_addr != GARBAGE_LOCAL)
      for (uint32_t i = 0; i < G.preload_rows; i++)
        for (uint32_t j = 0; j < G.preload_cols; j++)
          G.pe[i][j] = pt ? G.spad[G.preload_addr + j][i] : G.spad[G.preload_addr + i][j];
  }

  uint32_t depth_j = ws ? G.preload_cols : bd_cols;
  if (G.output_addr != GARBAGE_LOCAL) depth_j = G.output_cols;
  S.macs += (uint64_t)a_rows * a_cols * depth_j;

  if (ws) {
    for (int i = 0; i < DIM; i++)
      for (int j = 0; j < DIM; j++) R[i][j] = BD[i][j];
    for (int i = 0; i < DIM; i++)
      for (int k = 0; k < DIM; k++) {
        const acc_t a = A[i][k];
        if (a == 0) continue;
        for (int j = 0; j < DIM; j++) R[i][j] = (acc_t)((uint32_t)R[i][j] + (uint32_t)(a * G.pe[k][j]));
      }
  } else {
    for (int i = 0; i < DIM; i++)
      for (int k = 0; k < DIM; k++) {
        const acc_t a = A[i][k];
        if (a == 0) continue;
        for (int j = 0; j < DIM; j++) G.pe[i][j] = (acc_t)((uint32_t)G.pe[i][j] + (uint32_t)(a * BD[k][j]));
      }
  }

  /* Write C: to the accumulator as acc_t (overwrite or accumulate), to the scratchpad saturated
   * (OS: after the rounding shift) and activated. */
  const uint32_t out = G.output_addr;
  if (out != GARBAGE_LOCAL && G.output_rows && G.output_cols) {
    const int to_acc = (out >> 31) & 1, accumulate = (out >> 30) & 1;
    const uint32_t base = out & 0x1FFFFFFF;
    const int mem = to_acc ? MEM_ACC : MEM_SPAD;
    check_row(mem, (uint64_t)base + (uint64_t)G.c_stride * (G.output_rows - 1), "COMPUTE C");
    if (!to_acc) check_act(G.sys_act, "CONFIG_EX activation");
    tm_write(mem, base, G.output_rows, G.c_stride);
    for (uint32_t i = 0; i < G.output_rows; i++) {
      const uint32_t row = base + G.c_stride * i;
      to_acc ? touch_acc(row) : touch_spad(row);
      for (uint32_t j = 0; j < G.output_cols; j++) {
        const acc_t v = ws ? R[i][j] : G.pe[i][j];
        if (to_acc) {
          G.acc[row][j] = accumulate ? (acc_t)((uint32_t)G.acc[row][j] + (uint32_t)v) : v;
        } else {
          int64_t shifted = ws ? v : rounding_shift(v, G.sys_shift);
          G.spad[row][j] = activate(saturate_elem(shifted), G.sys_act);
        }
      }
    }
  }
  if (preload && G.preload_streamed > streamed) streamed = G.preload_streamed;
  if (streamed == 0) streamed = 1;
  schedule_unit(U_EX, streamed * T_EX_ROW_CYCLES, T_MESH_LATENCY, 0);
}

void gm_flush(void) { schedule_unit(U_EX, T_EX_CMD_OVERHEAD, 0, 0); }

/* ------------------------------------------------------------------------ PERFORMANCE COUNTERS */

/* The counter module (funct 126, rs1 = command, rd = value), as Gemmini's counter file decodes it:
 * rs1[0] resets every counter, rs1[1] ends a snapshot, rs1[2] takes a snapshot (reads then return the
 * values frozen at that moment), rs1[3] configures counter rs1[6:4] to count event rs1[17:12] (rs1[31]
 * set: an "external" count instead of a per-cycle event) and clears it; rd is always counter rs1[6:4].
 *
 * The model counts what it models: the busy cycles of its load, execute and store units and the
 * commands and DMA bytes they handled. A busy-cycle count is read as of the host's current cycle: a
 * unit's work scheduled past that cycle is not counted yet (so a count taken while the accelerator is
 * still working keeps growing, as upstream's gemmini_counter test checks), and after gemmini_fence() it
 * is exact. Any other event stops the run with an error that names it, rather than reading 0. */
#define GM_COUNTERS 8
#define GM_COUNTER_EVENTS 45

static const char *const counter_event_names[GM_COUNTER_EVENTS] = {
    "DISABLE", "MAIN_LD_CYCLES", "MAIN_ST_CYCLES", "MAIN_EX_CYCLES", "MAIN_LD_ST_CYCLES", "MAIN_LD_EX_CYCLES",
    "MAIN_ST_EX_CYCLES", "MAIN_LD_ST_EX_CYCLES", "LOAD_DMA_WAIT_CYCLE", "LOAD_ACTIVE_CYCLE",
    "LOAD_SCRATCHPAD_WAIT_CYCLE", "STORE_DMA_WAIT_CYCLE", "STORE_ACTIVE_CYCLE", "STORE_POOLING_CYCLE",
    "STORE_SCRATCHPAD_WAIT_CYCLE", "DMA_TLB_MISS_CYCLE", "DMA_TLB_HIT_REQ", "DMA_TLB_TOTAL_REQ",
    "RDMA_ACTIVE_CYCLE", "RDMA_TLB_WAIT_CYCLES", "RDMA_TL_WAIT_CYCLES", "WDMA_ACTIVE_CYCLE",
    "WDMA_TLB_WAIT_CYCLES", "WDMA_TL_WAIT_CYCLES", "EXE_ACTIVE_CYCLE", "EXE_FLUSH_CYCLE",
    "EXE_CONTROL_Q_BLOCK_CYCLE", "EXE_PRELOAD_HAZ_CYCLE", "EXE_OVERLAP_HAZ_CYCLE", "SCRATCHPAD_A_WAIT_CYCLE",
    "SCRATCHPAD_B_WAIT_CYCLE", "SCRATCHPAD_D_WAIT_CYCLE", "ACC_A_WAIT_CYCLE", "ACC_B_WAIT_CYCLE",
    "ACC_D_WAIT_CYCLE", "A_GARBAGE_CYCLES", "B_GARBAGE_CYCLES", "D_GARBAGE_CYCLES", "IM2COL_MEM_CYCLES",
    "IM2COL_ACTIVE_CYCLES", "IM2COL_TRANSPOSER_WAIT_CYCLE", "RESERVATION_STATION_FULL_CYCLES",
    "RESERVATION_STATION_ACTIVE_CYCLES", "LOOP_MATMUL_ACTIVE_CYCLES", "TRANSPOSE_PRELOAD_UNROLLER_ACTIVE_CYCLES"};
#define GM_COUNTER_EXTERNALS 8
static const char *const counter_external_names[GM_COUNTER_EXTERNALS] = {
    "DISABLE", "RESERVATION_STATION_LD_COUNT", "RESERVATION_STATION_ST_COUNT", "RESERVATION_STATION_EX_COUNT",
    "RDMA_BYTES_REC", "WDMA_BYTES_SENT", "RDMA_TOTAL_LATENCY", "WDMA_TOTAL_LATENCY"};

static struct {
  int external;
  uint32_t event;
  uint64_t base; /* the source's value when the counter was last cleared */
} counters[GM_COUNTERS];
static int snapshot_active;
static uint64_t snapshot_values[GM_COUNTERS];

/* Busy cycles of `unit` up to the host's current cycle. The model schedules a command whole when it is
 * issued; the part of a unit's busy time that lies after the host's cycle (at most up to that unit's
 * last completion) is still to come. Reported values never decrease, as a hardware counter's do not. */
static uint64_t busy_so_far(int unit) {
  const uint64_t pending = unit_done[unit] > T.host ? unit_done[unit] - T.host : 0;
  const uint64_t now = T.busy[unit] > pending ? T.busy[unit] - pending : 0;
  if (now > busy_counted[unit]) busy_counted[unit] = now;
  return busy_counted[unit];
}

/* The running total an event counts, or stops the run for one the model does not count. */
static uint64_t counter_source(int external, uint32_t event) {
  if (event == 0) return 0;
  if (external) {
    switch (event) {
    case 1: return S.executed[F_MVIN] + S.executed[F_MVIN2] + S.executed[F_MVIN3];
    case 2: return S.executed[F_MVOUT];
    case 3: return S.executed[F_PRELOAD] + S.executed[F_COMPUTE_PRELOADED] + S.executed[F_COMPUTE_ACCUMULATE];
    case 4: return S.dram_read_bytes;
    case 5: return S.dram_write_bytes;
    default: break;
    }
    gm_fail("performance counter %s (external event %u) is not modelled; this model counts "
            "LOAD_ACTIVE_CYCLE, RDMA_ACTIVE_CYCLE, EXE_ACTIVE_CYCLE, STORE_ACTIVE_CYCLE, WDMA_ACTIVE_CYCLE, "
            "RESERVATION_STATION_LD/ST/EX_COUNT, RDMA_BYTES_REC and WDMA_BYTES_SENT",
            event < GM_COUNTER_EXTERNALS ? counter_external_names[event] : "(unknown)", event);
  }
  switch (event) {
  case 9:  /* LOAD_ACTIVE_CYCLE */
  case 18: /* RDMA_ACTIVE_CYCLE: the load unit is the model's only DRAM reader */
    return busy_so_far(U_LOAD);
  case 12: /* STORE_ACTIVE_CYCLE */
  case 21: /* WDMA_ACTIVE_CYCLE: the store unit is the model's only DRAM writer */
    return busy_so_far(U_STORE);
  case 24: /* EXE_ACTIVE_CYCLE */
    return busy_so_far(U_EX);
  default: break;
  }
  gm_fail("performance counter %s (event %u) is not modelled; this model counts LOAD_ACTIVE_CYCLE, "
          "RDMA_ACTIVE_CYCLE, EXE_ACTIVE_CYCLE, STORE_ACTIVE_CYCLE, WDMA_ACTIVE_CYCLE, "
          "RESERVATION_STATION_LD/ST/EX_COUNT, RDMA_BYTES_REC and WDMA_BYTES_SENT",
          event < GM_COUNTER_EVENTS ? counter_event_names[event] : "(not an event of Gemmini's counter file)",
          event);
}

static uint64_t counter_value(int i) {
  return counter_source(counters[i].external, counters[i].event) - counters[i].base;
}

uint64_t gm_counter(uint64_t rs1) {
  const int index = (int)((rs1 >> 4) & 7);
  if (rs1 & 1) { /* reset the module */
    for (int i = 0; i < GM_COUNTERS; i++) counters[i].base = counter_source(counters[i].external, counters[i].event);
    snapshot_active = 0;
  }
  if (rs1 & 2) snapshot_active = 0;
  if (rs1 & 4) {
    for (int i = 0; i < GM_COUNTERS; i++) snapshot_values[i] = counter_value(i);
    snapshot_active = 1;
  }
  if (rs1 & 8) {
    counters[index].external = (int)((rs1 >> 31) & 1);
    counters[index].event = (uint32_t)((rs1 >> 12) & 0x3F);
    counters[index].base = counter_source(counters[index].external, counters[index].event);
  }
  return snapshot_active ? snapshot_values[index] : counter_value(index);
}
