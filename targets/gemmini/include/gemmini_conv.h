/* Convolutions on Gemmini: tiled_conv (explicit tiles) and tiled_conv_auto (tiles chosen here), in the
 * weight-stationary dataflow. Included by gemmini_lib.h.
 *
 * Layouts (the upstream defaults): input NHWC [batch][row][col][in_ch], weights
 * [krow][kcol][in_ch][out_ch] (a (kdim*kdim*in_channels) x out_channels matrix), bias acc_t[out_channels],
 * output NHWC [batch][orow][ocol][out_ch].
 *
 * tiled_conv issues one LOOP_CONV_WS per tile, as the upstream library does: the accelerator's loop unit
 * moves the tile's input window (padding included), weights and bias in and the results out.
 *
 * gemmini_tiled_conv_core issues the same convolution instruction by instruction from the core: for each
 * kernel position (kr, kc), the output pixels of one output row times the input pixels they see (a strided
 * run of one input row) times the weights of that position. Input pixels outside the image are skipped
 * (they would contribute zeros), so the accumulator is initialised with the bias first and every product
 * accumulates onto it.
 */
#ifndef SPEEDPATCH_GEMMINI_CONV_H
#define SPEEDPATCH_GEMMINI_CONV_H

struct gemmini_conv_args {
  int batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim;
  int stride, kernel_dilation, padding, kernel_dim;
  const elem_t *input;
  const elem_t *weights;
  const acc_t *bias;
  elem_t *output;
  int act;
  acc_scale_t scale;
  /* Elements between successive input pixels, weight-matrix rows and output pixels: the channel counts,
   * or more when the tensors are slices of wider ones (tiled_conv_stride_auto, depthwise). */
  int in_stride, weight_stride, out_stride;
  /* Max pooling of the outputs (upstream's: a pool_stride of 0 means none, and then size 1, stride 1,
   * padding 0 and pool_out = out): the store unit pools as the results leave the accumulator. */
  int pool_size, pool_stride, pool_padding, pool_out_row_dim, pool_out_col_dim;
  /* Upstream's layout flags (the loop unit's, LoopConv.scala; addresses as Spike's functional model):
   * wrot180 convolves with the kernel rotated by 180 degrees (kernel position (kr, kc) takes the weights of
   * (kdim-1-kr, kdim-1-kc)); trans_input_3120 reads the input as [in_ch][row][col][batch];
   * trans_output_1203 writes the output as [orow][ocol][batch][out_ch]; trans_weight_1203 reads the weights
   * as [in_ch][krow][kcol][out_ch], trans_weight_0132 as [krow][kcol][out_ch][in_ch]. */
  bool wrot180, trans_output_1203, trans_input_3120, trans_weight_1203, trans_weight_0132;
  /* Input dilation: the image is read as if input_dilation-1 zero rows/columns stood between its pixels
   * (upstream's; the loop unit does 2, with stride 1, the CPU path any). Padding and the input coordinates
   * below are in that dilated image, in_row_dim/in_col_dim stay the stored (undilated) sizes. */
  int input_dilation;
};

static inline int gemmini_conv_dilated_dim(const struct gemmini_conv_args *c, int dim) {
  const int d = c->input_dilation > 1 ? c->input_dilation : 1;
  return dim + (d - 1) * (dim - 1);
}

/* The element of the (undilated) input, of the weights and of the output at the given coordinates, in the
 * layouts the flags select. */
static inline elem_t gemmini_conv_input_at(const struct gemmini_conv_args *c, int b, int irow, int icol, int ich) {
  if (c->trans_input_3120)
    return c->input[(((size_t)ich * c->in_row_dim + irow) * c->in_col_dim + icol) * c->batch_size + b];
  return c->input[(((size_t)b * c->in_row_dim + irow) * c->in_col_dim + icol) * c->in_stride + ich];
}

static inline elem_t gemmini_conv_weight_at(const struct gemmini_conv_args *c, int krow, int kcol, int ich, int och) {
  const size_t kd = (size_t)c->kernel_dim;
  if (c->trans_weight_1203) return c->weights[(((size_t)ich * kd + krow) * kd + kcol) * c->out_channels + och];
  if (c->trans_weight_0132) return c->weights[(((size_t)krow * kd + kcol) * c->out_channels + och) * c->in_channels + ich];
  return c->weights[(((size_t)krow * kd + kcol) * c->in_channels + ich) * c->weight_stride + och];
}

static inline size_t gemmini_conv_output_index(const struct gemmini_conv_args *c, int b, int orow, int ocol, int och) {
  if (c->trans_output_1203)
    return (((size_t)orow * c->out_col_dim + ocol) * c->batch_size + b) * c->out_channels + och;
  return (((size_t)b * c->pool_out_row_dim + orow) * c->pool_out_col_dim + ocol) * c->out_stride + och;
}

static inline bool gemmini_conv_pooled(const struct gemmini_conv_args *c) {
  return c->pool_size != 1 || c->pool_stride != 1 || c->pool_padding != 0;
}

struct gemmini_conv_tiles {
  int batches, porows, pocols, pochs, krows, kcols, kchs;
};

static inline int gemmini_conv_blocks(int n) { return (n + DIM - 1) / DIM; }
static inline int gemmini_conv_ceil(int n, int d) { return (n + d - 1) / d; }

/* Rows of scratchpad (weights + two input buffers) and accumulator one output tile needs. */
static inline void gemmini_conv_footprint(const struct gemmini_conv_tiles *t, size_t *spad_rows, size_t *acc_rows) {
  const size_t pixel_blocks = (size_t)t->batches * t->porows * gemmini_conv_blocks(t->pocols);
  const size_t och_blocks = gemmini_conv_blocks(t->pochs), ich_blocks = gemmini_conv_blocks(t->kchs);
  *acc_rows = pixel_blocks * och_blocks * DIM;
  *spad_rows = ((size_t)t->krows * t->kcols * ich_blocks * och_blocks + 2 * pixel_blocks * ich_blocks) * DIM;
}

static inline bool gemmini_conv_tiles_fit(const struct gemmini_conv_tiles *t) {
  size_t spad_rows, acc_rows;
  gemmini_conv_footprint(t, &spad_rows, &acc_rows);
  return acc_rows <= GEMMINI_HALF_ACC_ROWS && spad_rows <= GEMMINI_HALF_SPAD_ROWS;
}

/* The first output column whose input column (for kernel column kc) is inside the image, and one past
 * the last. */
static inline void gemmini_conv_valid_cols(const struct gemmini_conv_args *c, int kc, int *lo, int *hi) {
  const int offset = kc * c->kernel_dilation - c->padding; /* icol = ocol*stride + offset */
  int first = 0;
  while (first < c->out_col_dim && first * c->stride + offset < 0) first++;
  int last = c->out_col_dim;
  while (last > first && (last - 1) * c->stride + offset >= c->in_col_dim) last--;
  *lo = first;
  *hi = last;
}

/* One output pixel's channel och of the convolution, scaled and activated, on the core. */
static inline elem_t gemmini_conv_cpu_pixel(const struct gemmini_conv_args *c, int b, int orow, int ocol, int och) {
  const int kd = c->kernel_dim;
  int64_t sum = c->bias ? c->bias[och] : 0;
  for (int kr = 0; kr < kd; kr++)
    for (int kc = 0; kc < kd; kc++) {
      const int irow = orow * c->stride + kr * c->kernel_dilation - c->padding;
      const int icol = ocol * c->stride + kc * c->kernel_dilation - c->padding;
      if (irow < 0 || irow >= gemmini_conv_dilated_dim(c, c->in_row_dim) || icol < 0 ||
          icol >= gemmini_conv_dilated_dim(c, c->in_col_dim))
        continue;
      const int d = c->input_dilation > 1 ? c->input_dilation : 1;
      if (irow % d != 0 || icol % d != 0) continue; /* a zero between two input pixels */
      const int wr = c->wrot180 ? kd - 1 - kr : kr, wc = c->wrot180 ? kd - 1 - kc : kc;
      for (int ich = 0; ich < c->in_channels; ich++)
        sum += (int64_t)gemmini_conv_input_at(c, b, irow / d, icol / d, ich) *
               (int64_t)gemmini_conv_weight_at(c, wr, wc, ich, och);
    }
  return gemmini_cpu_acc_to_elem(sum, c->scale, c->act);
}

static inline void gemmini_conv_cpu(const struct gemmini_conv_args *c) {
  if (gemmini_conv_pooled(c)) { /* max over each window; window pixels outside the output count as 0 */
    for (int b = 0; b < c->batch_size; b++)
      for (int porow = 0; porow < c->pool_out_row_dim; porow++)
        for (int pocol = 0; pocol < c->pool_out_col_dim; pocol++)
          for (int och = 0; och < c->out_channels; och++) {
            elem_t best = elem_t_min;
            for (int wr = 0; wr < c->pool_size; wr++)
              for (int wc = 0; wc < c->pool_size; wc++) {
                const int orow = porow * c->pool_stride + wr - c->pool_padding;
                const int ocol = pocol * c->pool_stride + wc - c->pool_padding;
                const bool inside = orow >= 0 && orow < c->out_row_dim && ocol >= 0 && ocol < c->out_col_dim;
                const elem_t e = inside ? gemmini_conv_cpu_pixel(c, b, orow, ocol, och) : 0;
                if (e > best) best = e;
              }
            c->output[gemmini_conv_output_index(c, b, porow, pocol, och)] = best;
          }
    return;
  }
  for (int b = 0; b < c->batch_size; b++)
    for (int orow = 0; orow < c->out_row_dim; orow++)
      for (int ocol = 0; ocol < c->out_col_dim; ocol++)
        for (int och = 0; och < c->out_channels; och++)
          c->output[gemmini_conv_output_index(c, b, orow, ocol, och)] = gemmini_conv_cpu_pixel(c, b, orow, ocol, och);
}

/* One output tile (b0.., orow0.., ocol0.., och0..), all its reduction tiles. */
static inline void gemmini_conv_output_tile(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t,
                                     int b0, int orow0, int ocol0, int och0, uint32_t spad_base, uint32_t acc_base) {
  const int nb = c->batch_size - b0 < t->batches ? c->batch_size - b0 : t->batches;
  const int nr = c->out_row_dim - orow0 < t->porows ? c->out_row_dim - orow0 : t->porows;
  const int ncols = c->out_col_dim - ocol0 < t->pocols ? c->out_col_dim - ocol0 : t->pocols;
  const int nochs = c->out_channels - och0 < t->pochs ? c->out_channels - och0 : t->pochs;
  const int ncb = gemmini_conv_blocks(ncols), nob = gemmini_conv_blocks(nochs);
  const int npb = nb * nr * ncb;
  const int kd = c->kernel_dim;
  const size_t W_rows = (size_t)t->krows * t->kcols * gemmini_conv_blocks(t->kchs) * nob * DIM;
  const size_t A_rows = (size_t)npb * gemmini_conv_blocks(t->kchs) * DIM;
  const uint32_t W_base = spad_base;
#define GEMMINI_PIX(p, b, r, cb) const int b = (p) / (nr * ncb), r = ((p) / ncb) % nr, cb = (p) % ncb
#define GEMMINI_ACC_BLOCK(p, ob) (acc_base + (uint32_t)(((p) * nob + (ob)) * DIM))

  /* Bias (repeated on every pixel row) into the accumulator; a NULL bias loads zeros. */
  for (int p = 0; p < npb; p++) {
    GEMMINI_PIX(p, b, r, cb);
    (void)b;
    (void)r;
    const int pixels = ncols - cb * DIM < DIM ? ncols - cb * DIM : DIM;
    for (int ob = 0; ob < nob; ob++) {
      const int chans = nochs - ob * DIM < DIM ? nochs - ob * DIM : DIM;
      const acc_t *src = c->bias ? c->bias + och0 + ob * DIM : NULL;
      gemmini_extended_mvin3(src, GEMMINI_ACC_ADDR | GEMMINI_ACC_BLOCK(p, ob), chans, pixels);
    }
  }

  unsigned a_buffer = 0;
  for (int krow0 = 0; krow0 < kd; krow0 += t->krows)
    for (int kcol0 = 0; kcol0 < kd; kcol0 += t->kcols)
      for (int kch0 = 0; kch0 < c->in_channels; kch0 += t->kchs) {
        const int nkr = kd - krow0 < t->krows ? kd - krow0 : t->krows;
        const int nkc = kd - kcol0 < t->kcols ? kd - kcol0 : t->kcols;
        const int nichs = c->in_channels - kch0 < t->kchs ? c->in_channels - kch0 : t->kchs;
        const int nib = gemmini_conv_blocks(nichs);
#define GEMMINI_W_BLOCK(kr, kc, ib, ob) (W_base + (uint32_t)(((((kr) * nkc + (kc)) * nib + (ib)) * nob + (ob)) * DIM))
        /* Weights of this reduction tile: several output-channel blocks per mvin. */
        for (int kr = 0; kr < nkr; kr++)
          for (int kc = 0; kc < nkc; kc++)
            for (int ib = 0; ib < nib; ib++) {
              const int ich = kch0 + ib * DIM, rows = nichs - ib * DIM < DIM ? nichs - ib * DIM : DIM;
              const size_t wrow = ((size_t)(krow0 + kr) * kd + (kcol0 + kc)) * c->in_channels + ich;
              for (int ob = 0; ob < nob;) {
                const int blocks = nob - ob < (int)MAX_BLOCK_LEN ? nob - ob : (int)MAX_BLOCK_LEN;
                const int cols = nochs - ob * DIM < blocks * DIM ? nochs - ob * DIM : blocks * DIM;
                gemmini_extended_mvin2(c->weights + wrow * c->out_channels + och0 + ob * DIM,
                                       GEMMINI_W_BLOCK(kr, kc, ib, ob), cols, rows);
                ob += blocks;
              }
            }
        for (int kr = 0; kr < nkr; kr++)
          for (int kc = 0; kc < nkc; kc++) {
            const int krow = krow0 + kr, kcol = kcol0 + kc;
            int lo, hi;
            gemmini_conv_valid_cols(c, kcol, &lo, &hi);
            const uint32_t A_base = spad_base + (uint32_t)(W_rows + (a_buffer % 2) * A_rows);
            a_buffer++;
            /* Input pixels each output pixel block sees at this kernel position. */
            for (int p = 0; p < npb; p++) {
              GEMMINI_PIX(p, b, r, cb);
              const int irow = (orow0 + r) * c->stride + krow * c->kernel_dilation - c->padding;
              const int first = ocol0 + cb * DIM, end = first + (ncols - cb * DIM < DIM ? ncols - cb * DIM : DIM);
              const int vlo = first > lo ? first : lo, vhi = end < hi ? end : hi;
              if (irow < 0 || irow >= c->in_row_dim || vlo >= vhi) continue;
              const int icol = vlo * c->stride + kcol * c->kernel_dilation - c->padding;
              const elem_t *src = c->input +
                                  (((size_t)(b0 + b) * c->in_row_dim + irow) * c->in_col_dim + icol) * c->in_channels + kch0;
              for (int ib = 0; ib < nib;) {
                const int blocks = nib - ib < (int)MAX_BLOCK_LEN ? nib - ib : (int)MAX_BLOCK_LEN;
                const int cols = nichs - ib * DIM < blocks * DIM ? nichs - ib * DIM : blocks * DIM;
                gemmini_extended_mvin(src + ib * DIM, A_base + (uint32_t)((p * nib + ib) * DIM), cols, vhi - vlo);
                ib += blocks;
              }
            }
            /* Each weight block stays in the PEs while every pixel block streams through it. */
            for (int ib = 0; ib < nib; ib++) {
              const int ichs = nichs - ib * DIM < DIM ? nichs - ib * DIM : DIM;
              for (int ob = 0; ob < nob; ob++) {
                const int ochs = nochs - ob * DIM < DIM ? nochs - ob * DIM : DIM;
                bool preloaded = false;
                for (int p = 0; p < npb; p++) {
                  GEMMINI_PIX(p, b, r, cb);
                  (void)b;
                  const int irow = (orow0 + r) * c->stride + krow * c->kernel_dilation - c->padding;
                  const int first = ocol0 + cb * DIM, end = first + (ncols - cb * DIM < DIM ? ncols - cb * DIM : DIM);
                  const int vlo = first > lo ? first : lo, vhi = end < hi ? end : hi;
                  if (irow < 0 || irow >= c->in_row_dim || vlo >= vhi) continue;
                  const uint32_t C_sp = GEMMINI_ACC_ADDR | GEMMINI_ACC_ACCUMULATE | (GEMMINI_ACC_BLOCK(p, ob) + (uint32_t)(vlo - first));
                  const uint32_t A_sp = A_base + (uint32_t)((p * nib + ib) * DIM);
                  if (!preloaded) {
                    gemmini_extended_preload(GEMMINI_W_BLOCK(kr, kc, ib, ob), C_sp, ochs, ichs, ochs, vhi - vlo);
                    gemmini_extended_compute_preloaded(A_sp, GARBAGE_ADDR, ichs, vhi - vlo, DIM, DIM);
                    preloaded = true;
                  } else {
                    gemmini_extended_preload(GARBAGE_ADDR, C_sp, DIM, DIM, ochs, vhi - vlo);
                    gemmini_extended_compute_accumulated(A_sp, GARBAGE_ADDR, ichs, vhi - vlo, DIM, DIM);
                  }
                }
              }
            }
          }
#undef GEMMINI_W_BLOCK
      }

  /* Scaled, activated results back to the NHWC output. */
  for (int p = 0; p < npb; p++) {
    GEMMINI_PIX(p, b, r, cb);
    const int pixels = ncols - cb * DIM < DIM ? ncols - cb * DIM : DIM;
    elem_t *dst = c->output + (((size_t)(b0 + b) * c->out_row_dim + orow0 + r) * c->out_col_dim + ocol0 + cb * DIM) *
                                  c->out_channels + och0;
    for (int ob = 0; ob < nob; ob++) {
      const int chans = nochs - ob * DIM < DIM ? nochs - ob * DIM : DIM;
      gemmini_extended_mvout(dst + ob * DIM, GEMMINI_ACC_ADDR | GEMMINI_ACC_BLOCK(p, ob), chans, pixels);
    }
  }
#undef GEMMINI_PIX
#undef GEMMINI_ACC_BLOCK
}

/* ---- the hardware-loop path (LOOP_CONV_WS per tile), as the upstream library issues it ---------------- */

/* Input rows (or columns) one LOOP_CONV_WS tile moves in, padding included: the loop unit reads
 * out*stride + dilated_kernel - 1 of them (one more than the outputs need when stride > 1; the far-side
 * padding makes up what the image does not have). */
static inline int gemmini_conv_loop_in_dim(int out, int stride, int kdim, int kernel_dilation) {
  return out * stride + kdim + (kernel_dilation - 1) * (kdim - 1) - 1;
}

/* Rows one LOOP_CONV_WS tile uses: the loop keeps its input at the bottom of the scratchpad's first half
 * and the weights at the top of it, and its outputs in one half of the accumulator. */
static inline void gemmini_conv_loop_footprint(const struct gemmini_conv_tiles *t, int stride, int kernel_dilation,
                                               size_t *spad_rows, size_t *acc_rows) {
  const size_t irows = (size_t)gemmini_conv_loop_in_dim(t->porows, stride, t->krows, kernel_dilation);
  const size_t icols = (size_t)gemmini_conv_loop_in_dim(t->pocols, stride, t->kcols, kernel_dilation);
  const size_t och_blocks = gemmini_conv_blocks(t->pochs), ich_blocks = gemmini_conv_blocks(t->kchs);
  *acc_rows = och_blocks * t->batches * t->porows * t->pocols;
  *spad_rows = ich_blocks * t->batches * irows * icols + och_blocks * t->krows * t->kcols * t->kchs;
}

static inline bool gemmini_conv_loop_tiles_fit(const struct gemmini_conv_tiles *t, int stride, int kernel_dilation) {
  size_t spad_rows, acc_rows;
  gemmini_conv_loop_footprint(t, stride, kernel_dilation, &spad_rows, &acc_rows);
  return acc_rows <= GEMMINI_HALF_ACC_ROWS && spad_rows <= GEMMINI_HALF_SPAD_ROWS;
}

/* A pooled tile of porows x pocols pool outputs makes the loop compute the porows*pool_stride + pool_size - 1
 * rows (and columns) of convolution outputs its windows cover: that is its footprint. */
static inline bool gemmini_conv_pooled_tiles_fit(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t) {
  struct gemmini_conv_tiles u = *t;
  u.porows = t->porows * c->pool_stride + c->pool_size - 1;
  u.pocols = t->pocols * c->pool_stride + c->pool_size - 1;
  /* the loop's pooled store takes these counts in 8-bit fields */
  if (u.porows > 255 || u.pocols > 255) return false;
  return gemmini_conv_loop_tiles_fit(&u, c->stride, c->kernel_dilation);
}

/* The footprint with the layout flags: trans_input_3120 keeps the input in the scratchpad as blocks of DIM
 * batches per input channel (LoopConv's trans_input_3120 addressing), trans_weight_0132 the weights as blocks
 * of DIM input channels per output channel, so a tile that fits in the NHWC layout may not. */
static inline bool gemmini_conv_layout_tiles_fit(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t) {
  struct gemmini_conv_tiles u = *t;
  if (gemmini_conv_pooled(c)) {
    u.porows = t->porows * c->pool_stride + c->pool_size - 1;
    u.pocols = t->pocols * c->pool_stride + c->pool_size - 1;
    if (u.porows > 255 || u.pocols > 255) return false;
  }
  size_t spad_rows, acc_rows;
  gemmini_conv_loop_footprint(&u, c->stride, c->kernel_dilation, &spad_rows, &acc_rows);
  const size_t irows = (size_t)gemmini_conv_loop_in_dim(u.porows, c->stride, u.krows, c->kernel_dilation);
  const size_t icols = (size_t)gemmini_conv_loop_in_dim(u.pocols, c->stride, u.kcols, c->kernel_dilation);
  const size_t input_rows = c->trans_input_3120 ? (size_t)gemmini_conv_blocks(u.batches) * u.kchs * irows * icols
                                                : (size_t)gemmini_conv_blocks(u.kchs) * u.batches * irows * icols;
  const size_t weight_rows = c->trans_weight_0132 ? (size_t)gemmini_conv_blocks(u.kchs) * u.krows * u.kcols * u.pochs
                                                  : (size_t)gemmini_conv_blocks(u.pochs) * u.krows * u.kcols * u.kchs;
  (void)spad_rows;
  return acc_rows <= GEMMINI_HALF_ACC_ROWS && input_rows + weight_rows <= GEMMINI_HALF_SPAD_ROWS;
}

/* One tile (output b0.., orow0.., ocol0.., och0..; reduction krow0.., kcol0.., kch0..) as one LOOP_CONV_WS.
 * With pooling, orow0/ocol0 and the tile's rows/columns count pool outputs, as upstream's tiled_conv does: the
 * loop computes the convolution outputs under the tile's pool windows (the pool padding trimmed: plpad..pdpad)
 * and its store unit writes the pooled pixels.
 * The pointers are moved to the tile's first element and the paddings are those of the tile's input
 * window; the bias goes in only with the first reduction tile and the output comes out only with the
 * last (the loop unit keeps the partial sums in the accumulator in between). */
static inline void gemmini_conv_loop_tile(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t, int b0,
                                          int orow0, int ocol0, int och0, int krow0, int kcol0, int kch0,
                                          bool load_input, bool load_weights, int a_spad_id, int b_spad_id) {
  const int kd = c->kernel_dim;
  const int nb = c->batch_size - b0 < t->batches ? c->batch_size - b0 : t->batches;
  const int npr = c->pool_out_row_dim - orow0 < t->porows ? c->pool_out_row_dim - orow0 : t->porows;
  const int npc = c->pool_out_col_dim - ocol0 < t->pocols ? c->pool_out_col_dim - ocol0 : t->pocols;
  const int nochs = c->out_channels - och0 < t->pochs ? c->out_channels - och0 : t->pochs;
  const int nkr = kd - krow0 < t->krows ? kd - krow0 : t->krows;
  const int nkc = kd - kcol0 < t->kcols ? kd - kcol0 : t->kcols;
  const int nichs = c->in_channels - kch0 < t->kchs ? c->in_channels - kch0 : t->kchs;
  /* The convolution outputs under this tile's pool windows (without pooling: the tile's own outputs). */
  const int orow = orow0 * c->pool_stride - c->pool_padding, ocol = ocol0 * c->pool_stride - c->pool_padding;
  const int orows_all = npr * c->pool_stride + c->pool_size - 1, ocols_all = npc * c->pool_stride + c->pool_size - 1;
  const int pupad = orow < 0 ? -orow : 0, plpad = ocol < 0 ? -ocol : 0;
  const int pdpad = orow + orows_all > c->out_row_dim ? orow + orows_all - c->out_row_dim : 0;
  const int prpad = ocol + ocols_all > c->out_col_dim ? ocol + ocols_all - c->out_col_dim : 0;
  const int nr = orows_all - pupad - pdpad, ncols = ocols_all - plpad - prpad;
  const int irow = (orow < 0 ? 0 : orow) * c->stride + krow0 * c->kernel_dilation - c->padding;
  const int icol = (ocol < 0 ? 0 : ocol) * c->stride + kcol0 * c->kernel_dilation - c->padding;
  const int irows = gemmini_conv_loop_in_dim(nr, c->stride, nkr, c->kernel_dilation);
  const int icols = gemmini_conv_loop_in_dim(ncols, c->stride, nkc, c->kernel_dilation);
  const int drows = gemmini_conv_dilated_dim(c, c->in_row_dim), dcols = gemmini_conv_dilated_dim(c, c->in_col_dim);
  int upad = irow < 0 ? -irow : 0, lpad = icol < 0 ? -icol : 0;
  int dpad = irow + irows > drows ? irow + irows - drows : 0;
  int rpad = icol + icols > dcols ? icol + icols - dcols : 0;
  const bool dilated = c->input_dilation == 2;
  if (dilated) {
    /* The window's first and last rows (columns) read must be input pixels, not the zeros between them: a
     * window that starts or ends on a zero pads it instead (as upstream's tiled_conv does). */
    upad += upad == 0 && irow % 2 != 0;
    lpad += lpad == 0 && icol % 2 != 0;
    dpad += dpad == 0 && (irow + irows) % 2 != 1;
    rpad += rpad == 0 && (icol + icols) % 2 != 1;
  }
  const bool first = krow0 == 0 && kcol0 == 0 && kch0 == 0;
  const bool last = krow0 + t->krows >= kd && kcol0 + t->kcols >= kd && kch0 + t->kchs >= c->in_channels;
  /* A missing bias is a non-null dummy with no_bias set: the loop then moves zeros into the accumulator. */
  const acc_t *bias = !first ? NULL : (c->bias ? c->bias + och0 : (const acc_t *)(uintptr_t)1);
  /* The tile's first element of each operand, in the operand's layout (the loop unit adds tile-local
   * offsets with the whole tensor's strides). With wrot180, kernel rows krow0.. of the input meet the
   * weights of rows kd-krow0-nkr.. (the loop reverses them within the tile). */
  elem_t *out = !last ? NULL : c->output + gemmini_conv_output_index(c, b0, orow0, ocol0, och0);
  const int in_row = (irow + upad) >> dilated, in_col = (icol + lpad) >> dilated;
  const elem_t *in = !load_input ? NULL
                     : c->trans_input_3120
                         ? c->input + (((size_t)kch0 * c->in_row_dim + in_row) * c->in_col_dim + in_col) * c->batch_size + b0
                         : c->input + (((size_t)b0 * c->in_row_dim + in_row) * c->in_col_dim + in_col) * c->in_stride + kch0;
  const int wkrow0 = c->wrot180 ? kd - krow0 - nkr : krow0, wkcol0 = c->wrot180 ? kd - kcol0 - nkc : kcol0;
  size_t w_at = (((size_t)wkrow0 * kd + wkcol0) * c->in_channels + kch0) * c->weight_stride + och0;
  if (c->trans_weight_1203) w_at = (((size_t)kch0 * kd + wkrow0) * kd + wkcol0) * c->out_channels + och0;
  if (c->trans_weight_0132) w_at = (((size_t)wkrow0 * kd + wkcol0) * c->out_channels + och0) * c->in_channels + kch0;
  const elem_t *w = !load_weights ? NULL : c->weights + w_at;
  gemmini_loop_conv_ws(c->batch_size, c->in_row_dim, c->in_col_dim, c->in_channels, c->out_channels, c->out_row_dim,
                       c->out_col_dim, c->pool_out_row_dim, c->pool_out_col_dim, c->stride, c->padding, kd,
                       c->kernel_dilation, c->pool_size, c->pool_stride, c->pool_padding, nb, npr, npc, nochs, nkr,
                       nkc, nichs, lpad, rpad, upad, dpad, plpad, prpad, pupad, pdpad, nr, ncols, w, out, bias, in,
                       c->bias == NULL, !gemmini_conv_pooled(c), false, c->wrot180, dilated, c->act,
                       c->trans_output_1203, c->trans_weight_1203, c->trans_weight_0132, c->trans_input_3120, 1,
                       c->in_stride, c->weight_stride, c->out_stride, false, a_spad_id, b_spad_id);
}

static inline void gemmini_conv_check(int input_dilation, bool wrot180, bool trans_output_1203, bool trans_input_3120,
                               bool trans_weight_1203, bool trans_weight_0132, int pool_size, int pool_stride,
                               int pool_padding) {
  (void)wrot180, (void)trans_input_3120;
  if (input_dilation < 1) gemmini_library_error("tiled_conv", "input_dilation must be at least 1");
  if (trans_weight_1203 && trans_weight_0132)
    gemmini_library_error("tiled_conv", "trans_weight_1203 and trans_weight_0132 cannot both be set");
  if (trans_input_3120 && trans_weight_0132)
    gemmini_library_error("tiled_conv", "trans_input_3120 and trans_weight_0132 cannot both be set (the array "
                                        "cannot transpose both operands in the WS dataflow)");
  if (trans_output_1203 && pool_stride != 0 && !(pool_size == 1 && pool_stride == 1 && pool_padding == 0))
    gemmini_library_error("tiled_conv", "pooling with trans_output_1203 is not implemented (the pooled store "
                                        "writes the NHWC layout)");
  if (pool_stride != 0 && (pool_size < 1 || pool_size > 3 || pool_stride > 3 || pool_padding < 0 || pool_padding > 3))
    gemmini_library_error("tiled_conv", "pooling needs pool_size 1..3, pool_stride 0..3 and pool_padding 0..3 "
                                        "(the store unit's pooling fields are 2 bits wide)");
}

/* The arguments both tiled_conv paths share; stops on what neither implements. */
static inline struct gemmini_conv_args gemmini_conv_prepare(
    int batch_size, int in_row_dim, int in_col_dim, int in_channels, int out_channels, int out_row_dim,
    int out_col_dim, int stride, int input_dilation, int kernel_dilation, int padding, int kernel_dim, bool wrot180,
    bool trans_output_1203, bool trans_input_3120, bool trans_weight_1203, bool trans_weight_0132,
    const struct gemmini_conv_tiles *t, const elem_t *input, const elem_t *weights, const acc_t *bias,
    elem_t *output, int act, acc_scale_t scale, int pool_size, int pool_stride, int pool_padding,
    enum tiled_matmul_type_t tiled_conv_type) {
  gemmini_conv_check(input_dilation, wrot180, trans_output_1203, trans_input_3120, trans_weight_1203,
                     trans_weight_0132, pool_size, pool_stride, pool_padding);
  const bool no_pool = pool_stride == 0 || (pool_size == 1 && pool_stride == 1 && pool_padding == 0);
  const int psize = no_pool ? 1 : pool_size, pstride = no_pool ? 1 : pool_stride, ppad = no_pool ? 0 : pool_padding;
  struct gemmini_conv_args c = {batch_size, in_row_dim, in_col_dim, in_channels, out_channels,
                                      out_row_dim, out_col_dim, stride, kernel_dilation, padding, kernel_dim,
                                      input, weights, bias, output, act, scale, in_channels, out_channels,
                                      out_channels, psize, pstride, ppad,
                                      no_pool ? out_row_dim : (out_row_dim + 2 * ppad - psize) / pstride + 1,
                                      no_pool ? out_col_dim : (out_col_dim + 2 * ppad - psize) / pstride + 1};
  c.wrot180 = wrot180, c.trans_output_1203 = trans_output_1203, c.trans_input_3120 = trans_input_3120;
  c.trans_weight_1203 = trans_weight_1203, c.trans_weight_0132 = trans_weight_0132;
  c.input_dilation = input_dilation;
  if (tiled_conv_type != CPU && input_dilation > 2)
    gemmini_library_error("tiled_conv", "input_dilation above 2 is only implemented on the CPU (as upstream)");
  if (tiled_conv_type != CPU && input_dilation > 1 && stride > 1)
    gemmini_library_error("tiled_conv", "input_dilation needs stride 1 on Gemmini (as upstream)");
  if (!no_pool && (c.pool_out_row_dim < 1 || c.pool_out_col_dim < 1 || c.pool_out_col_dim > 255))
    gemmini_library_error("tiled_conv", "the pooled output must have 1..255 columns and at least one row");
  if (tiled_conv_type == OS) gemmini_library_error("tiled_conv", "only the WS dataflow is implemented for convolutions");
  /* IGELU needs constants that only tiled_matmul sends (from its bert_scale); the rest have no unit here. */
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error("tiled_conv", "only NO_ACTIVATION and RELU are implemented for convolutions");
  if (t->batches < 1 || t->porows < 1 || t->pocols < 1 || t->pochs < 1 || t->krows < 1 || t->kcols < 1 ||
      t->kchs < 1)
    gemmini_library_error("tiled_conv", "tile sizes must be >= 1");
  return c;
}

/* One LOOP_CONV_WS per tile over the whole convolution (or the CPU reference for tiled_conv_type CPU). */
static inline void gemmini_conv_run(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t,
                                    enum tiled_matmul_type_t tiled_conv_type, bool keep_tiles) {
  if (tiled_conv_type == CPU) {
    gemmini_conv_cpu(c);
    return;
  }
  if (gemmini_conv_pooled(c) ? !gemmini_conv_pooled_tiles_fit(c, t)
                              : !gemmini_conv_loop_tiles_fit(t, c->stride, c->kernel_dilation))
    gemmini_library_error("tiled_conv", "tiles do not fit half of the scratchpad / accumulator");
  if ((c->trans_input_3120 || c->trans_weight_0132) && !gemmini_conv_layout_tiles_fit(c, t))
    gemmini_library_error("tiled_conv", "tiles do not fit half of the scratchpad in the trans_input_3120 / "
                                        "trans_weight_0132 layout");
  /* Consecutive output pixels read input pixels `stride` rows apart in the scratchpad. */
  /* With input dilation, one compute covers every other output pixel of a row: C_stride = input_dilation. */
  gemmini_extended3_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, ACC_SCALE_IDENTITY, c->input_dilation, c->stride,
                              c->trans_input_3120, c->trans_weight_0132, false);
  /* A 1203 output's consecutive pixels of a row are batch_size * out_channels elements apart (as upstream's
   * tiled_conv sets the store stride); the loop unit's input-transposed (3120) pixels and 0132 weights reach
   * the array transposed, which the A/B transpose bits undo. */
  gemmini_extended_config_st((size_t)(c->trans_output_1203 ? c->batch_size * c->out_channels : c->out_stride) *
                                 sizeof(elem_t),
                             c->act, c->scale);
  /* With keep_tiles, like upstream's tiled_conv (gemmini-rocc-tests include/gemmini.h): when the weight
   * tiles (input tiles) number at most two, each gets a scratchpad half of its own (id 1 for the first, 2 for
   * the other), is moved in by the first loop that needs it and stays there: later loops pass NULL. Other
   * operands pass id 0, the loop slot's half. */
  const int n_b = gemmini_conv_ceil(c->batch_size, t->batches);
  const int n_porow = gemmini_conv_ceil(c->pool_out_row_dim, t->porows);
  const int n_pocol = gemmini_conv_ceil(c->pool_out_col_dim, t->pocols);
  const int n_poch = gemmini_conv_ceil(c->out_channels, t->pochs);
  const int n_krow = gemmini_conv_ceil(c->kernel_dim, t->krows), n_kcol = gemmini_conv_ceil(c->kernel_dim, t->kcols);
  const int n_kch = gemmini_conv_ceil(c->in_channels, t->kchs);
  const bool b_reuse = keep_tiles && n_kch * n_poch * n_krow * n_kcol <= 2;
  const bool a_reuse = keep_tiles && n_kch * n_krow * n_kcol * n_b * n_porow * n_pocol <= 2;
  for (int b0 = 0; b0 < c->batch_size; b0 += t->batches)
    for (int orow0 = 0; orow0 < c->pool_out_row_dim; orow0 += t->porows)
      for (int ocol0 = 0; ocol0 < c->pool_out_col_dim; ocol0 += t->pocols)
        for (int och0 = 0; och0 < c->out_channels; och0 += t->pochs)
          for (int krow0 = 0; krow0 < c->kernel_dim; krow0 += t->krows)
            for (int kcol0 = 0; kcol0 < c->kernel_dim; kcol0 += t->kcols)
              for (int kch0 = 0; kch0 < c->in_channels; kch0 += t->kchs) {
                const bool first_a = kch0 + krow0 + kcol0 + b0 + orow0 + ocol0 == 0;
                const bool first_b = kch0 + och0 + krow0 + kcol0 == 0;
                gemmini_conv_loop_tile(c, t, b0, orow0, ocol0, och0, krow0, kcol0, kch0, !(a_reuse && och0 > 0),
                                       !(b_reuse && b0 + orow0 + ocol0 > 0), a_reuse ? (first_a ? 1 : 2) : 0,
                                       b_reuse ? (first_b ? 1 : 2) : 0);
              }
}

/* speedpatch's tiled_conv: explicit tiles (output: batches, porows, pocols pixels, pochs channels;
 * reduction: krows, kcols, kchs input channels), one LOOP_CONV_WS per tile as the upstream library does. */
static inline void tiled_conv(int batch_size, int in_row_dim, int in_col_dim, int in_channels, int out_channels,
                       int out_row_dim, int out_col_dim, int stride, int input_dilation, int kernel_dilation,
                       int padding, int kernel_dim, bool wrot180, bool trans_output_1203, bool trans_input_3120,
                       bool trans_weight_1203, bool trans_weight_0132, int batches, int porows, int pocols,
                       int pochs, int krows, int kcols, int kchs, const elem_t *input, const elem_t *weights,
                       const acc_t *bias, elem_t *output, int act, acc_scale_t scale, int pool_size,
                       int pool_stride, int pool_padding, enum tiled_matmul_type_t tiled_conv_type) {
  const struct gemmini_conv_tiles t = {batches, porows, pocols, pochs, krows, kcols, kchs};
  const struct gemmini_conv_args c = gemmini_conv_prepare(
      batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim, stride,
      input_dilation, kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120,
      trans_weight_1203, trans_weight_0132, &t, input, weights, bias, output, act, scale, pool_size, pool_stride,
      pool_padding, tiled_conv_type);
  gemmini_conv_run(&c, &t, tiled_conv_type, true);
}

/* tiled_conv by argument count (the current list, rectangular, has 34). 33: (batch_size, in_dim, in_channels,
 * out_channels, out_dim, stride, input_dilation, kernel_dilation, padding, kernel_dim, wrot180,
 * trans_output_1203, trans_input_3120, trans_weight_1203, trans_weight_0132, batches, porows, pocols, pochs,
 * krows, kcols, kchs, input, weights, bias, output, act, scale, relu6_shift, pool_size, pool_stride,
 * pool_padding, type): square images, with RELU6's shift (activation 2 = RELU6 then, refused). */
static inline void gemmini_legacy_tiled_conv(int batch_size, int in_dim, int in_channels, int out_channels,
                                             int out_dim, int stride, int input_dilation, int kernel_dilation,
                                             int padding, int kernel_dim, bool wrot180, bool trans_output_1203,
                                             bool trans_input_3120, bool trans_weight_1203, bool trans_weight_0132,
                                             int batches, int porows, int pocols, int pochs, int krows, int kcols,
                                             int kchs, const elem_t *input, const elem_t *weights, const acc_t *bias,
                                             elem_t *output, int act, acc_scale_t scale, size_t relu6_shift,
                                             int pool_size, int pool_stride, int pool_padding,
                                             enum tiled_matmul_type_t tiled_conv_type) {
  (void)relu6_shift;
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error("tiled_conv (33 arguments)", "only NO_ACTIVATION and RELU are implemented for this older "
                                                       "argument list (activation 2 was RELU6 in the library versions "
                                                       "that had it)");
  tiled_conv(batch_size, in_dim, in_dim, in_channels, out_channels, out_dim, out_dim, stride, input_dilation,
             kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120, trans_weight_1203,
             trans_weight_0132, batches, porows, pocols, pochs, krows, kcols, kchs, input, weights, bias, output, act,
             scale, pool_size, pool_stride, pool_padding, tiled_conv_type);
}
#define tiled_conv_with_34_args(...) tiled_conv(__VA_ARGS__)
#define tiled_conv_with_33_args(...) gemmini_legacy_tiled_conv(__VA_ARGS__)
#define tiled_conv(...) GEMMINI_BY_ARITY(tiled_conv, __VA_ARGS__)

/* The same convolution issued instruction by instruction from the core (no LOOP_CONV_WS): double-buffered
 * output tiles with their own footprint rule (gemmini_conv_tiles_fit). */
static inline void gemmini_tiled_conv_core(int batch_size, int in_row_dim, int in_col_dim, int in_channels,
                                           int out_channels, int out_row_dim, int out_col_dim, int stride,
                                           int input_dilation, int kernel_dilation, int padding, int kernel_dim,
                                           bool wrot180, bool trans_output_1203, bool trans_input_3120,
                                           bool trans_weight_1203, bool trans_weight_0132, int batches, int porows,
                                           int pocols, int pochs, int krows, int kcols, int kchs,
                                           const elem_t *input, const elem_t *weights, const acc_t *bias,
                                           elem_t *output, int act, acc_scale_t scale, int pool_size,
                                           int pool_stride, int pool_padding,
                                           enum tiled_matmul_type_t tiled_conv_type) {
  const struct gemmini_conv_tiles t = {batches, porows, pocols, pochs, krows, kcols, kchs};
  const struct gemmini_conv_args c = gemmini_conv_prepare(
      batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim, stride,
      input_dilation, kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120,
      trans_weight_1203, trans_weight_0132, &t, input, weights, bias, output, act, scale, pool_size, pool_stride,
      pool_padding, tiled_conv_type);
  if (tiled_conv_type == CPU) {
    gemmini_conv_cpu(&c);
    return;
  }
  if (input_dilation != 1 || wrot180 || trans_output_1203 || trans_input_3120 || trans_weight_1203 || trans_weight_0132)
    gemmini_library_error("gemmini_tiled_conv_core", "input dilation and the transposed/rotated layouts are only "
                                                      "implemented on the hardware-loop path (tiled_conv)");
  if (gemmini_conv_pooled(&c))
    gemmini_library_error("gemmini_tiled_conv_core", "pooling is not implemented on the core-issued path "
                                                      "(tiled_conv / tiled_conv_auto pool)");
  if (!gemmini_conv_tiles_fit(&t))
    gemmini_library_error("tiled_conv", "tiles do not fit half of the scratchpad / accumulator");
  gemmini_extended_config_ex(WEIGHT_STATIONARY, NO_ACTIVATION, 0, 1, false, false);
  gemmini_extended_config_st((size_t)out_channels * sizeof(elem_t), act, scale);
  gemmini_extended3_config_ld((size_t)stride * in_channels * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 0);
  gemmini_extended3_config_ld((size_t)out_channels * sizeof(elem_t), MVIN_SCALE_IDENTITY, false, 1);
  gemmini_extended3_config_ld(0, MVIN_SCALE_IDENTITY, false, 2);
  unsigned tile = 0;
  for (int b0 = 0; b0 < batch_size; b0 += batches)
    for (int orow0 = 0; orow0 < out_row_dim; orow0 += porows)
      for (int ocol0 = 0; ocol0 < out_col_dim; ocol0 += pocols)
        for (int och0 = 0; och0 < out_channels; och0 += pochs) {
          const uint32_t spad_base = (uint32_t)((tile % 2) * GEMMINI_HALF_SPAD_ROWS);
          const uint32_t acc_base = (uint32_t)((tile % 2) * GEMMINI_HALF_ACC_ROWS);
          gemmini_conv_output_tile(&c, &t, b0, orow0, ocol0, och0, spad_base, acc_base);
          tile++;
        }
}

/* Whether one tile fits: with pooling, its footprint is that of the convolution outputs under its pool windows
 * (and the pooled store's 8-bit fields); without, the tile's own (gemmini_conv_loop_tiles_fit). */
static inline bool gemmini_conv_auto_fit(const struct gemmini_conv_args *c, const struct gemmini_conv_tiles *t,
                                         bool pooled) {
  return pooled ? gemmini_conv_pooled_tiles_fit(c, t) : gemmini_conv_loop_tiles_fit(t, c->stride, c->kernel_dilation);
}

/* Tiles of tiled_conv_auto, by upstream's rule (gemmini-rocc-tests include/gemmini.h, tiled_conv_stride_auto and
 * tiled_conv_dw_auto, master): start from the whole problem {batches, pooled output rows, columns, output
 * channels, kernel rows, columns, input channels}; while a tile does not fit half the scratchpad and half the
 * accumulator, shrink the largest size -- channels by DIM (or down to a multiple of it), the rest by one, the
 * first of equals first, and the output columns not once they are down to DIM while rows remain -- then grow the
 * columns while they fit, then every size by one, in that order, for as long as any grows. The baseline is the
 * library's: these are the tiles its users get, not the best ones (upstream's come out small in output channels,
 * so every tile reloads its input). */
static inline void gemmini_conv_upstream_tiles(int batch_size, int in_channels, int out_channels, int out_row_dim,
                                               int out_col_dim, int kernel_dim, int stride, int kernel_dilation,
                                               int pool_size, int pool_stride, int pool_padding,
                                               struct gemmini_conv_tiles *t) {
  struct gemmini_conv_args c;
  memset(&c, 0, sizeof c);
  c.stride = stride, c.kernel_dilation = kernel_dilation;
  const bool pooled = pool_stride != 0 && !(pool_size == 1 && pool_stride == 1 && pool_padding == 0);
  int porows = out_row_dim, pocols = out_col_dim;
  if (pooled) {
    c.pool_size = pool_size, c.pool_stride = pool_stride, c.pool_padding = pool_padding;
    porows = (out_row_dim + 2 * pool_padding - pool_size) / pool_stride + 1;
    pocols = (out_col_dim + 2 * pool_padding - pool_size) / pool_stride + 1;
    if (porows < 1 || pocols < 1) porows = pocols = 1; /* tiled_conv says what is wrong */
  }
  enum { ROWS = 1, COLS = 2, OCHS = 3, ICHS = 6, N_ARGS = 7 };
  const int most[N_ARGS] = {batch_size, porows, pocols, out_channels, kernel_dim, kernel_dim, in_channels};
  int a[N_ARGS];
  memcpy(a, most, sizeof a);
#define GEMMINI_AS_TILES(v) ((struct gemmini_conv_tiles){v[0], v[1], v[2], v[3], v[4], v[5], v[6]})
  struct gemmini_conv_tiles s = GEMMINI_AS_TILES(a);
  while (!gemmini_conv_auto_fit(&c, &s, pooled)) {
    int largest = -1, at = -1;
    for (int i = 0; i < N_ARGS; i++)
      if (!(i == COLS && a[i] <= DIM && a[ROWS] > 1) && a[i] > largest) largest = a[i], at = i;
    if (largest <= 1) break; /* nothing left to shrink: tiled_conv reports what does not fit */
    if (at == OCHS || at == ICHS) {
      a[at] = a[at] % DIM ? a[at] / DIM * DIM : a[at] - DIM;
      if (a[at] == 0) a[at] = 1;
    } else {
      a[at]--;
    }
    s = GEMMINI_AS_TILES(a);
  }
  for (bool grew = true; grew;) {
    grew = false;
    int g[N_ARGS];
    memcpy(g, a, sizeof g);
    if (++g[COLS] > most[COLS]) break;
    const struct gemmini_conv_tiles gt = GEMMINI_AS_TILES(g);
    if (gemmini_conv_auto_fit(&c, &gt, pooled)) memcpy(a, g, sizeof a), grew = true;
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (int i = 0; i < N_ARGS; i++) {
      int g[N_ARGS];
      memcpy(g, a, sizeof g);
      if (++g[i] > most[i]) continue;
      const struct gemmini_conv_tiles gt = GEMMINI_AS_TILES(g);
      if (gemmini_conv_auto_fit(&c, &gt, pooled)) memcpy(a, g, sizeof a), grew = true;
    }
  }
  *t = GEMMINI_AS_TILES(a);
#undef GEMMINI_AS_TILES
}

/* The tiles without pooling (the moves mirror this rule: moves.conv_auto_tiles). */
static inline void gemmini_conv_auto_tiles(int batch_size, int in_channels, int out_channels, int out_row_dim,
                                           int out_col_dim, int kernel_dim, int stride, int kernel_dilation,
                                           struct gemmini_conv_tiles *t) {
  gemmini_conv_upstream_tiles(batch_size, in_channels, out_channels, out_row_dim, out_col_dim, kernel_dim, stride,
                              kernel_dilation, 1, 0, 0, t);
}

static inline void tiled_conv_auto(int batch_size, int in_row_dim, int in_col_dim, int in_channels, int out_channels,
                            int out_row_dim, int out_col_dim, int stride, int input_dilation, int kernel_dilation,
                            int padding, int kernel_dim, bool wrot180, bool trans_output_1203,
                            bool trans_input_3120, bool trans_weight_1203, bool trans_weight_0132,
                            const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output,
                            int act, acc_scale_t scale, int pool_size, int pool_stride, int pool_padding,
                            enum tiled_matmul_type_t tiled_conv_type) {
  struct gemmini_conv_tiles t;
  gemmini_conv_upstream_tiles(batch_size, in_channels, out_channels, out_row_dim, out_col_dim, kernel_dim, stride,
                              kernel_dilation, pool_size, pool_stride, pool_padding, &t);
  if (trans_input_3120 || trans_weight_0132) {
    /* Our rule, not upstream's: shrink the largest of batches, rows, columns and channels (channels by DIM)
     * until the tile fits in these layouts too. */
    struct gemmini_conv_args c;
    memset(&c, 0, sizeof c);
    c.stride = stride, c.kernel_dilation = kernel_dilation, c.pool_size = 1, c.pool_stride = 1;
    c.trans_input_3120 = trans_input_3120, c.trans_weight_0132 = trans_weight_0132;
    if (pool_stride != 0 && !(pool_size == 1 && pool_stride == 1 && pool_padding == 0))
      c.pool_size = pool_size, c.pool_stride = pool_stride, c.pool_padding = pool_padding;
    int *sizes[5] = {&t.batches, &t.porows, &t.pocols, &t.kchs, &t.pochs};
    while (!gemmini_conv_layout_tiles_fit(&c, &t)) {
      int **largest = NULL;
      for (int i = 0; i < 5; i++)
        if (*sizes[i] > 1 && (largest == NULL || *sizes[i] > **largest)) largest = &sizes[i];
      if (largest == NULL) break; /* tiled_conv says what does not fit */
      const bool channels = *largest == &t.kchs || *largest == &t.pochs;
      **largest = channels && **largest > DIM ? (**largest - 1) / DIM * DIM : **largest - 1;
    }
  }
  tiled_conv(batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim, stride,
             input_dilation, kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120,
             trans_weight_1203, trans_weight_0132, t.batches, t.porows, t.pocols, t.pochs, t.krows, t.kcols,
             t.kchs, input, weights, bias, output, act, scale, pool_size, pool_stride, pool_padding,
             tiled_conv_type);
}

/* tiled_conv_auto by argument count (the current list, rectangular, has 27). Older library versions' lists:
 *  26  (batch_size, in_dim, in_channels, out_channels, out_dim, stride, input_dilation, kernel_dilation,
 *      padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120, trans_weight_1203,
 *      trans_weight_0132, input, weights, bias, output, act, scale, relu6_shift, pool_size, pool_stride,
 *      pool_padding, type): square images, with RELU6's shift;
 *  19  (batch_size, in_dim, in_channels, out_channels, out_dim, stride, padding, kernel_dim, input, weights,
 *      bias, output, act, scale, relu6_shift, pool_size, pool_stride, pool_padding, type): before dilations
 *      and transposed layouts.
 * In those versions activation 2 was RELU6; both refuse every activation but NO_ACTIVATION and RELU. */
static inline void gemmini_legacy_tiled_conv_auto(const char *form, int batch_size, int in_dim, int in_channels,
                                                  int out_channels, int out_dim, int stride, int input_dilation,
                                                  int kernel_dilation, int padding, int kernel_dim, bool wrot180,
                                                  bool trans_output_1203, bool trans_input_3120,
                                                  bool trans_weight_1203, bool trans_weight_0132,
                                                  const elem_t *input, const elem_t *weights, const acc_t *bias,
                                                  elem_t *output, int act, acc_scale_t scale, int pool_size,
                                                  int pool_stride, int pool_padding,
                                                  enum tiled_matmul_type_t tiled_conv_type) {
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error(form, "only NO_ACTIVATION and RELU are implemented for this older argument list "
                                "(activation 2 was RELU6 in the library versions that had it)");
  tiled_conv_auto(batch_size, in_dim, in_dim, in_channels, out_channels, out_dim, out_dim, stride, input_dilation,
                  kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120,
                  trans_weight_1203, trans_weight_0132, input, weights, bias, output, act, scale, pool_size,
                  pool_stride, pool_padding, tiled_conv_type);
}

#define tiled_conv_auto_with_27_args(...) tiled_conv_auto(__VA_ARGS__)
#define tiled_conv_auto_with_26_args(batch_size, in_dim, in_channels, out_channels, out_dim, stride, input_dilation, \
                                     kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203,            \
                                     trans_input_3120, trans_weight_1203, trans_weight_0132, input, weights, bias, \
                                     output, act, scale, relu6_shift, pool_size, pool_stride, pool_padding, type)  \
  gemmini_legacy_tiled_conv_auto("tiled_conv_auto (26 arguments)", batch_size, in_dim, in_channels, out_channels,  \
                                 out_dim, stride, input_dilation, kernel_dilation, padding, kernel_dim, wrot180,   \
                                 trans_output_1203, trans_input_3120, trans_weight_1203, trans_weight_0132, input, \
                                 weights, bias, output, act, scale, pool_size, pool_stride, pool_padding, type)
#define tiled_conv_auto_with_19_args(batch_size, in_dim, in_channels, out_channels, out_dim, stride, padding,       \
                                     kernel_dim, input, weights, bias, output, act, scale, relu6_shift, pool_size, \
                                     pool_stride, pool_padding, type)                                              \
  gemmini_legacy_tiled_conv_auto("tiled_conv_auto (19 arguments)", batch_size, in_dim, in_channels, out_channels,  \
                                 out_dim, stride, 1, 1, padding, kernel_dim, false, false, false, false, false,    \
                                 input, weights, bias, output, act, scale, pool_size, pool_stride, pool_padding,   \
                                 type)
#define tiled_conv_auto(...) GEMMINI_BY_ARITY(tiled_conv_auto, __VA_ARGS__)

/* tiled_conv_auto for tensors that are slices of wider ones (upstream's argument list): in_stride elements
 * between input pixels, weight_stride between weight-matrix rows, out_stride between output pixels. */
static inline void tiled_conv_stride_auto(int batch_size, int in_row_dim, int in_col_dim, int in_channels,
                                          int out_channels, int out_row_dim, int out_col_dim, int stride,
                                          int input_dilation, int kernel_dilation, int padding, int kernel_dim,
                                          int in_stride, int weight_stride, int out_stride, bool wrot180,
                                          bool trans_output_1203, bool trans_input_3120, bool trans_weight_1203,
                                          bool trans_weight_0132, const elem_t *input, const elem_t *weights,
                                          const acc_t *bias, elem_t *output, int act, acc_scale_t scale,
                                          int pool_size, int pool_stride, int pool_padding,
                                          enum tiled_matmul_type_t tiled_conv_type) {
  if (in_stride < in_channels || weight_stride < out_channels || out_stride < out_channels)
    gemmini_library_error("tiled_conv_stride_auto", "a stride is smaller than its channel count");
  struct gemmini_conv_tiles t;
  gemmini_conv_upstream_tiles(batch_size, in_channels, out_channels, out_row_dim, out_col_dim, kernel_dim, stride,
                              kernel_dilation, pool_size, pool_stride, pool_padding, &t);
  struct gemmini_conv_args c = gemmini_conv_prepare(
      batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim, stride,
      input_dilation, kernel_dilation, padding, kernel_dim, wrot180, trans_output_1203, trans_input_3120,
      trans_weight_1203, trans_weight_0132, &t, input, weights, bias, output, act, scale, pool_size, pool_stride,
      pool_padding, tiled_conv_type);
  c.in_stride = in_stride;
  c.weight_stride = weight_stride;
  c.out_stride = out_stride;
  gemmini_conv_run(&c, &t, tiled_conv_type, true);
}

/* The same under the name some upstream test programs call it by (conv_stride.c: tiled_conv_full, with
 * tiled_conv_stride_auto's argument list). */
static inline void tiled_conv_full(int batch_size, int in_row_dim, int in_col_dim, int in_channels, int out_channels,
                                   int out_row_dim, int out_col_dim, int stride, int input_dilation,
                                   int kernel_dilation, int padding, int kernel_dim, int in_stride, int weight_stride,
                                   int out_stride, bool wrot180, bool trans_output_1203, bool trans_input_3120,
                                   bool trans_weight_1203, bool trans_weight_0132, const elem_t *input,
                                   const elem_t *weights, const acc_t *bias, elem_t *output, int act,
                                   acc_scale_t scale, int pool_size, int pool_stride, int pool_padding,
                                   enum tiled_matmul_type_t tiled_conv_type) {
  tiled_conv_stride_auto(batch_size, in_row_dim, in_col_dim, in_channels, out_channels, out_row_dim, out_col_dim,
                         stride, input_dilation, kernel_dilation, padding, kernel_dim, in_stride, weight_stride,
                         out_stride, wrot180, trans_output_1203, trans_input_3120, trans_weight_1203,
                         trans_weight_0132, input, weights, bias, output, act, scale, pool_size, pool_stride,
                         pool_padding, tiled_conv_type);
}

/* Depthwise convolution (upstream's argument list): every channel is convolved with its own
 * kernel_dim x kernel_dim filter, weights[channel][krow][kcol], NHWC input and output, bias[channel]. Each
 * channel runs as a one-channel convolution whose pixels are `channels` elements apart. */
static inline void tiled_conv_dw_auto(int batch_size, int in_row_dim, int in_col_dim, int channels, int out_row_dim,
                                      int out_col_dim, int stride, int padding, int kernel_dim, const elem_t *input,
                                      const elem_t *weights, const acc_t *bias, elem_t *output, int act,
                                      acc_scale_t scale, int pool_size, int pool_stride, int pool_padding,
                                      enum tiled_matmul_type_t tiled_conv_type) {
  struct gemmini_conv_tiles t;
  gemmini_conv_upstream_tiles(batch_size, 1, 1, out_row_dim, out_col_dim, kernel_dim, stride, 1, pool_size,
                              pool_stride, pool_padding, &t);
  for (int ch = 0; ch < channels; ch++) {
    struct gemmini_conv_args c = gemmini_conv_prepare(
        batch_size, in_row_dim, in_col_dim, 1, 1, out_row_dim, out_col_dim, stride, 1, 1, padding, kernel_dim,
        false, false, false, false, false, &t, input + ch, weights + (size_t)ch * kernel_dim * kernel_dim,
        bias ? bias + ch : NULL, output + ch, act, scale, pool_size, pool_stride, pool_padding, tiled_conv_type);
    c.in_stride = channels;
    c.weight_stride = 1;
    c.out_stride = channels;
    gemmini_conv_run(&c, &t, tiled_conv_type, false); /* upstream's tiled_conv_dw keeps no tile in place */
  }
}

/* tiled_conv_dw_auto by argument count (the current list, rectangular, has 19). The older list (18:
 * batch_size, in_dim, channels, out_dim, stride, padding, kernel_dim, input, weights, bias, output, act, scale,
 * relu6_shift, pool_size, pool_stride, pool_padding, type; gemmini-rocc-tests conv_dw.c of the RELU6 era) has
 * square images and RELU6's shift; activation 2 was RELU6 then, so only NO_ACTIVATION and RELU are taken. */
static inline void gemmini_legacy_tiled_conv_dw_auto(int batch_size, int in_dim, int channels, int out_dim, int stride,
                                                     int padding, int kernel_dim, const elem_t *input,
                                                     const elem_t *weights, const acc_t *bias, elem_t *output,
                                                     int act, acc_scale_t scale, int pool_size, int pool_stride,
                                                     int pool_padding, enum tiled_matmul_type_t tiled_conv_type) {
  if (act != NO_ACTIVATION && act != RELU)
    gemmini_library_error("tiled_conv_dw_auto (18 arguments)",
                          "only NO_ACTIVATION and RELU are implemented for this older argument list "
                          "(activation 2 was RELU6 in the library versions that had it)");
  tiled_conv_dw_auto(batch_size, in_dim, in_dim, channels, out_dim, out_dim, stride, padding, kernel_dim, input,
                     weights, bias, output, act, scale, pool_size, pool_stride, pool_padding, tiled_conv_type);
}

#define tiled_conv_dw_auto_with_19_args(...) tiled_conv_dw_auto(__VA_ARGS__)
#define tiled_conv_dw_auto_with_18_args(batch_size, in_dim, channels, out_dim, stride, padding, kernel_dim, input,   \
                                        weights, bias, output, act, scale, relu6_shift, pool_size, pool_stride,      \
                                        pool_padding, type)                                                          \
  gemmini_legacy_tiled_conv_dw_auto(batch_size, in_dim, channels, out_dim, stride, padding, kernel_dim, input,      \
                                    weights, bias, output, act, scale, pool_size, pool_stride, pool_padding, type)
#define tiled_conv_dw_auto(...) GEMMINI_BY_ARITY(tiled_conv_dw_auto, __VA_ARGS__)

#endif /* SPEEDPATCH_GEMMINI_CONV_H */
