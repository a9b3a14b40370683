/* speedpatch's trusted harness for Gemmini kernels.
 *
 * A kernel file = kernel function(s) + a main() that hands the kernel to one of the runners below. The
 * runner owns everything a candidate must not touch: inputs from a seed, the gold result computed on the
 * CPU, the timing (gemmini_flush(0) + fence, read_cycles, kernel, fence, read_cycles), the exact
 * comparison, and the verdict.
 *
 * Each trial uses fresh inputs (one seed per trial) and a poisoned output buffer, so a kernel that caches
 * results or writes nothing fails. The inputs are generated again from the seed after the kernel returns
 * and only then is the gold result computed: the kernel can neither read the gold result (it does not
 * exist yet) nor change what it is compared against by writing its inputs. The cycles reported are those
 * of the first trial (the model is deterministic); every trial must be correct.
 *
 * Three ways to build this header:
 * - SPEEDPATCH_KERNEL_TU (gemmini-native compiles the kernel region as its own translation unit): only
 *   the types a kernel sees; nothing of the harness is there for it to call.
 * - SPEEDPATCH_TRUSTED (gemmini-native's harness translation unit): the seed, the trial count and a
 *   per-evaluation nonce come on stdin (read before any kernel runs), and the verdict goes back through
 *   the result pipe the backend opened (SPEEDPATCH_RESULT_FD), with the model's own figures for the timed
 *   region (array MACs, DMA bytes, cycles). The line printed on stdout is only a log.
 * - otherwise (gemmini-spike, the command backend, hand builds): the seed is SPEEDPATCH_SEED (environment
 *   on native builds, or -DSPEEDPATCH_SEED=n), trials SPEEDPATCH_TRIALS (default 2), and the verdict is
 *   the one line those backends parse:
 *
 *     speedpatch: correct=1 cycles=123456 macs=2097152 trials=2
 *
 *   (gemmini-spike's trusted build adds the problem's minimal DMA bytes, min_read_bytes= and
 *   min_write_bytes=, and its nonce: its physics check holds the model's figures to the same work as native).
 *
 * Exit status: 0 correct, 1 incorrect.
 */
#ifndef SPEEDPATCH_HARNESS_H
#define SPEEDPATCH_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemmini.h"
#include "gemmini_testutils.h"

/* What a kernel may see of the harness: the shapes of the kernels it runs. */
typedef void (*speedpatch_matmul_kernel)(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C);
typedef void (*speedpatch_conv_kernel)(const elem_t *input, const elem_t *weights, const acc_t *bias, elem_t *output);
struct speedpatch_conv_shape {
  int batch_size, in_dim, in_channels, out_channels, kernel_dim, stride, padding;
};

#ifndef SPEEDPATCH_KERNEL_TU

#include "speedpatch_functs.h" /* the RoCC functs only the harness issues on Spike */

#ifndef SPEEDPATCH_SEED
#define SPEEDPATCH_SEED 1
#endif
#ifndef SPEEDPATCH_TRIALS
#define SPEEDPATCH_TRIALS 2
#endif

/* Harness code runs outside the timed region, so it need not be charged as host work; keeping it out of
 * the model's per-basic-block host accounting also keeps big gold computations fast. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define SPEEDPATCH_UNCOUNTED __attribute__((no_sanitize_coverage))
#else
#define SPEEDPATCH_UNCOUNTED
#endif

SPEEDPATCH_UNCOUNTED static inline uint64_t speedpatch_setting(const char *name, uint64_t fallback) {
#ifdef SPEEDPATCH_NATIVE
  const char *text = getenv(name);
  if (text != NULL && *text != '\0') return strtoull(text, NULL, 10);
#else
  (void)name;
#endif
  return fallback;
}

SPEEDPATCH_UNCOUNTED static inline void *speedpatch_alloc(size_t bytes) {
  /* Aligned to 16 KiB (four 4 KiB pages: one entry of the DMA's TLB, see timing_params.h): where a buffer
   * starts within a TLB entry changes its misses, and the address-space randomization would change it from
   * run to run; a fixed alignment keeps every figure deterministic. */
  void *p = aligned_alloc(16384, (bytes + 16383) / 16384 * 16384);
  if (p == NULL) {
    printf("speedpatch: out of memory allocating %zu bytes\n", bytes);
    exit(2);
  }
  return p;
}

/* The harness's own generator (splitmix64), so that input generation is neither charged as host work
 * nor dependent on the C library. */
static uint64_t speedpatch_rng_state __attribute__((unused)) = 1;

SPEEDPATCH_UNCOUNTED static inline void speedpatch_seed_inputs(uint64_t seed) {
  speedpatch_rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
}

SPEEDPATCH_UNCOUNTED static inline int64_t speedpatch_rand_range(int64_t lo, int64_t hi) {
  uint64_t z = (speedpatch_rng_state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return lo + (int64_t)(z % (uint64_t)(hi - lo + 1));
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_fill_elem(elem_t *p, size_t n, int lo, int hi) {
  for (size_t i = 0; i < n; i++) p[i] = (elem_t)speedpatch_rand_range(lo, hi);
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_fill_acc(acc_t *p, size_t n, int lo, int hi) {
  for (size_t i = 0; i < n; i++) p[i] = (acc_t)speedpatch_rand_range(lo, hi);
}

/* For example authors: a power-of-two accumulator scale that keeps sums of `terms` products of values in
 * [-16, 15] mostly inside int8 (exact in float, so rounding is well defined) instead of saturating. */
SPEEDPATCH_UNCOUNTED static inline acc_scale_t speedpatch_scale_for(size_t terms) {
  acc_scale_t scale = 1.0f;
  /* ~3 standard deviations of the sum: 3 * sqrt(terms) * 85 (85 ~ variance of the product factors). */
  while ((double)terms * 9.0 * 85.0 * 85.0 > 127.0 * 127.0 / ((double)scale * (double)scale)) scale /= 2;
  return scale;
}

/* ---- the verdict ---- */
#ifdef SPEEDPATCH_TRUSTED
#include <unistd.h>

#include "trusted_region.h"
#else
typedef struct {
  uint64_t cycles, array_macs, dram_read_bytes, dram_write_bytes, host_cycles, rocc;
  uint32_t dim, dram_bytes_per_cycle;
} gemmini_model_region_t;
#endif

/* What the runner knows about the problem and what each trial measured. */
struct speedpatch_verdict {
  int fd;          /* SPEEDPATCH_TRUSTED: the result pipe to the backend */
  char nonce[40];  /* ... and its per-evaluation nonce, echoed with the verdict */
  uint64_t seed;
  unsigned trials;
  uint64_t required_macs, min_read_bytes, min_write_bytes; /* the problem's work, from its own constants */
  char record[8192];
  size_t used;
  char why[256]; /* the first mismatch */
  char mismatch[256]; /* ... as the log line printed after the verdict (see speedpatch_compare) */
};

SPEEDPATCH_UNCOUNTED static inline void speedpatch_verdict_open(struct speedpatch_verdict *v) {
  memset(v, 0, sizeof *v);
  v->fd = -1;
#ifdef SPEEDPATCH_TRUSTED
  /* The secret arrives on stdin (read whole before any kernel runs); the verdict leaves through the
   * result pipe the backend opened for this run. */
  const char *text = getenv("SPEEDPATCH_RESULT_FD");
  char buf[256];
  unsigned long long seed = 0;
  /* Unbuffered: a buffered stdin keeps the whole line in libc's buffer, which the kernel reaches without any
   * address arithmetic (stdout->_chain is stdin in glibc, and stdout is data a kernel may name). */
  setvbuf(stdin, NULL, _IONBF, 0);
  if (text == NULL || *text == '\0' || fgets(buf, sizeof buf, stdin) == NULL ||
      sscanf(buf, "speedpatch-secret nonce=%39s seed=%llu trials=%u", v->nonce, &seed, &v->trials) != 3) {
    printf("speedpatch: this harness was built for gemmini-native's verdict channel (secret on stdin, "
           "SPEEDPATCH_RESULT_FD)\n");
    exit(2);
  }
  v->fd = atoi(text);
  v->seed = seed;
  memset(buf, 0, sizeof buf); /* the nonce stays only in the verdict structure */
#else
  v->seed = speedpatch_setting("SPEEDPATCH_SEED", SPEEDPATCH_SEED);
  v->trials = (unsigned)speedpatch_setting("SPEEDPATCH_TRIALS", SPEEDPATCH_TRIALS);
#endif
  if (v->trials == 0) v->trials = 1;
}

/* The problem's work, sent before any kernel runs: the backend checks that the verdict repeats it, so a
 * kernel that shrinks the harness's sizes on the stack is caught. */
SPEEDPATCH_UNCOUNTED static inline void speedpatch_verdict_problem(struct speedpatch_verdict *v) {
#ifdef SPEEDPATCH_TRUSTED
  char line[256];
  int n = snprintf(line, sizeof line, "speedpatch-problem required_macs=%llu min_read_bytes=%llu min_write_bytes=%llu\n",
                   (unsigned long long)v->required_macs, (unsigned long long)v->min_read_bytes,
                   (unsigned long long)v->min_write_bytes);
  if (n <= 0 || write(v->fd, line, (size_t)n) != n) {
    printf("speedpatch: cannot write to the verdict channel\n");
    exit(2);
  }
#elif defined(SPEEDPATCH_NATIVE)
  /* one unit with the kernel (upstream headers): the printed line is the verdict, so the model keeps the
   * problem's work, and the backend holds the first timed trial's figures to it */
  void gemmini_model_declare_problem(uint64_t macs, uint64_t min_read_bytes, uint64_t min_write_bytes);
  gemmini_model_declare_problem(v->required_macs, v->min_read_bytes, v->min_write_bytes);
#else
  (void)v;
#endif
}

/* One trial's figures; `seed` is the one the gold result was computed from (the backend checks it is its
 * own, so a kernel that rewrote the harness's seed is caught). */
SPEEDPATCH_UNCOUNTED static inline void speedpatch_verdict_trial(struct speedpatch_verdict *v, unsigned t, bool correct,
                                                                uint64_t seed, uint64_t harness_cycles,
                                                                const gemmini_model_region_t *r) {
  if (v->used >= sizeof v->record) return;
  int n = snprintf(v->record + v->used, sizeof v->record - v->used,
                   "trial %u correct=%d seed=%llu cycles=%llu harness_cycles=%llu array_macs=%llu dram_read=%llu "
                   "dram_write=%llu host_cycles=%llu rocc=%llu dim=%u dram_bpc=%u\n",
                   t, correct ? 1 : 0, (unsigned long long)seed, (unsigned long long)r->cycles, (unsigned long long)harness_cycles,
                   (unsigned long long)r->array_macs, (unsigned long long)r->dram_read_bytes,
                   (unsigned long long)r->dram_write_bytes, (unsigned long long)r->host_cycles,
                   (unsigned long long)r->rocc, r->dim, r->dram_bytes_per_cycle);
  if (n > 0) v->used += (size_t)n;
}

/* The log line (every build) and, on the trusted build, the verdict through the channel. */
SPEEDPATCH_UNCOUNTED static inline void speedpatch_verdict_close(struct speedpatch_verdict *v, bool correct,
                                                                uint64_t cycles, unsigned trials_run) {
#if defined(SPEEDPATCH_SPIKE_VOUCH) && defined(BAREMETAL)
  /* gemmini-spike's trusted build: the line goes to the model in the Spike process first (RoCC funct 125),
   * which puts its hash in the statistics file; the backend takes only the line the model vouches for. */
  static char line[256];
  int n = snprintf(line, sizeof line,
                   "speedpatch: correct=%d cycles=%llu macs=%llu trials=%u min_read_bytes=%llu min_write_bytes=%llu "
                   "nonce=%s\n",
                   correct ? 1 : 0, (unsigned long long)cycles, (unsigned long long)v->required_macs, trials_run,
                   (unsigned long long)v->min_read_bytes, (unsigned long long)v->min_write_bytes, SPEEDPATCH_NONCE);
  if (n > 0) {
    const uint64_t len = (size_t)n < sizeof line ? (uint64_t)n : sizeof line - 1;
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, (uint64_t)(uintptr_t)line, len, SPEEDPATCH_FUNCT_VERDICT);
    fputs(line, stdout);
  }
#else
  printf("speedpatch: correct=%d cycles=%llu macs=%llu trials=%u\n", correct ? 1 : 0, (unsigned long long)cycles,
         (unsigned long long)v->required_macs, trials_run);
#endif
  /* Printed only now: stdout's writer is a function pointer in memory the kernel can write (picolibc's FILE
   * on Spike), so a print between the kernel's return and the verdict would run code the kernel planted,
   * after its checked call had closed. */
  if (v->mismatch[0]) fputs(v->mismatch, stdout);
  fflush(stdout);
#ifdef SPEEDPATCH_TRUSTED
  static char text[512 + sizeof v->record];
  int n = snprintf(text, 512,
                   "speedpatch-verdict nonce=%s correct=%d cycles=%llu trials=%u required_macs=%llu "
                   "min_read_bytes=%llu min_write_bytes=%llu why=%s\n",
                   v->nonce, correct ? 1 : 0, (unsigned long long)cycles, trials_run,
                   (unsigned long long)v->required_macs, (unsigned long long)v->min_read_bytes,
                   (unsigned long long)v->min_write_bytes, v->why);
  size_t len = n > 0 ? ((size_t)n < 512 ? (size_t)n : 511) : 0;
  memcpy(text + len, v->record, v->used);
  len += v->used;
  gemmini_model_verdict(text, len); /* the model vouches for this text in its statistics */
  for (size_t done = 0; done < len;) {
    ssize_t w = write(v->fd, text + done, len - done);
    if (w <= 0) break;
    done += (size_t)w;
  }
#endif
}

/* ---- gold results: plain C, independent of the library's implementation ---- */
SPEEDPATCH_UNCOUNTED static inline elem_t speedpatch_round_scale(int64_t sum, acc_scale_t scale, int act) {
  if (sum > INT32_MAX) sum = INT32_MAX;
  if (sum < INT32_MIN) sum = INT32_MIN;
  const float y = (float)sum * (float)scale;
  /* round half to even without libm */
  int64_t r = (int64_t)y;
  const float frac = y - (float)r;
  if (frac > 0.5f || (frac == 0.5f && (r & 1))) r++;
  if (frac < -0.5f || (frac == -0.5f && (r & 1))) r--;
  if (r > elem_t_max) r = elem_t_max;
  if (r < elem_t_min) r = elem_t_min;
  if (act == RELU && r < 0) r = 0;
  return (elem_t)r;
}

/* The runners allocate the gold's scratch (`row`: J sums) with their other buffers, before any kernel runs:
 * between the kernel's return and the verdict the harness neither allocates nor prints (see
 * speedpatch_compare). */
SPEEDPATCH_UNCOUNTED static inline void speedpatch_gold_matmul_into(size_t I, size_t J, size_t K, const elem_t *A,
                                                                   const elem_t *B, const acc_t *bias, elem_t *C,
                                                                   acc_scale_t scale, int act, int64_t *row) {
  for (size_t i = 0; i < I; i++) {
    for (size_t j = 0; j < J; j++) row[j] = bias ? bias[j] : 0;
    for (size_t k = 0; k < K; k++) {
      const int64_t a = A[i * K + k];
      const elem_t *b = B + k * J;
      for (size_t j = 0; j < J; j++) row[j] += a * b[j];
    }
    for (size_t j = 0; j < J; j++) C[i * J + j] = speedpatch_round_scale(row[j], scale, act);
  }
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_gold_matmul(size_t I, size_t J, size_t K, const elem_t *A,
                                                              const elem_t *B, const acc_t *bias, elem_t *C,
                                                              acc_scale_t scale, int act) {
  int64_t *row = (int64_t *)speedpatch_alloc(J * sizeof(int64_t));
  speedpatch_gold_matmul_into(I, J, K, A, B, bias, C, scale, act, row);
  free(row);
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_gold_conv_into(int batch, int in_dim, int in_ch, int out_ch,
                                                                 int out_dim, int kdim, int stride, int padding,
                                                                 const elem_t *in, const elem_t *w, const acc_t *bias,
                                                                 elem_t *out, acc_scale_t scale, int act, int64_t *acc) {
  for (int b = 0; b < batch; b++)
    for (int orow = 0; orow < out_dim; orow++)
      for (int ocol = 0; ocol < out_dim; ocol++) {
        for (int oc = 0; oc < out_ch; oc++) acc[oc] = bias[oc];
        for (int kr = 0; kr < kdim; kr++)
          for (int kc = 0; kc < kdim; kc++) {
            const int irow = orow * stride + kr - padding, icol = ocol * stride + kc - padding;
            if (irow < 0 || irow >= in_dim || icol < 0 || icol >= in_dim) continue;
            const elem_t *px = in + (((size_t)b * in_dim + irow) * in_dim + icol) * in_ch;
            const elem_t *wk = w + (size_t)(kr * kdim + kc) * in_ch * out_ch;
            for (int ic = 0; ic < in_ch; ic++) {
              const int64_t x = px[ic];
              const elem_t *wrow = wk + (size_t)ic * out_ch;
              for (int oc = 0; oc < out_ch; oc++) acc[oc] += x * wrow[oc];
            }
          }
        elem_t *dst = out + (((size_t)b * out_dim + orow) * out_dim + ocol) * out_ch;
        for (int oc = 0; oc < out_ch; oc++) dst[oc] = speedpatch_round_scale(acc[oc], scale, act);
      }
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_gold_conv(int batch, int in_dim, int in_ch, int out_ch, int out_dim,
                                                            int kdim, int stride, int padding, const elem_t *in,
                                                            const elem_t *w, const acc_t *bias, elem_t *out,
                                                            acc_scale_t scale, int act) {
  int64_t *acc = (int64_t *)speedpatch_alloc((size_t)out_ch * sizeof(int64_t));
  speedpatch_gold_conv_into(batch, in_dim, in_ch, out_ch, out_dim, kdim, stride, padding, in, w, bias, out, scale, act,
                            acc);
  free(acc);
}

/* The timed region: drain and flush before, wait for the accelerator after. On the trusted build the model
 * measures the same region itself (gemmini_model_region_*), so a kernel that changes the harness's start
 * value on the stack does not change the figure. */
#ifdef SPEEDPATCH_TRUSTED
#define SPEEDPATCH_REGION_BEGIN() gemmini_model_region_begin()
#define SPEEDPATCH_REGION_END(region) gemmini_model_region_end(region)
#elif defined(SPEEDPATCH_SPIKE_VOUCH) && defined(BAREMETAL)
/* gemmini-spike's trusted build: the model inside Spike measures and logs the region (RoCC funct 123/124,
 * which only the harness may issue); its figures reach the backend through the statistics file only. */
#define SPEEDPATCH_REGION_BEGIN() ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, SPEEDPATCH_FUNCT_REGION_BEGIN)
#define SPEEDPATCH_REGION_END(region) \
  do {                                \
    ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, SPEEDPATCH_FUNCT_REGION_END); \
    memset((region), 0, sizeof *(region)); \
  } while (0)
#else
#define SPEEDPATCH_REGION_BEGIN() ((void)0)
#define SPEEDPATCH_REGION_END(region) memset((region), 0, sizeof *(region))
#endif
/* The kernel call. On the trusted build it goes through the model, which hashes the harness's registers and
 * stack frames before and checks them after (the kernel's frame lies just below the harness's). */
#ifdef SPEEDPATCH_TRUSTED
#define SPEEDPATCH_CALL_KERNEL(fn, a, b, c, d) \
  gemmini_model_call_kernel((void (*)(const void *, const void *, const void *, void *))(fn), (a), (b), (c), (d))
#elif defined(SPEEDPATCH_SPIKE_VOUCH) && defined(BAREMETAL)
/* gemmini-spike's trusted build: the same check through the harness's own RISC-V trampoline. It pushes the
 * return address and every register the RISC-V ABI has a callee preserve (s0-s11, fs0-fs11, and fcsr's
 * rounding mode), hands the model inside Spike its stack pointer and the stack's top (RoCC funct 120; the
 * model hashes everything in between, i.e. these registers and every harness frame), calls the kernel, and
 * hands the stack pointer over again (funct 119; the model compares) before restoring them. The float
 * registers were left out before: gcc keeps the gold's scale in fs2 across the call, and a kernel that
 * rewrote the copy its own prologue had saved (its epilogue restored it) zeroed the scale, so an all-zero
 * output was "correct on Spike" (red-team, tests/security/test_gemmini_spike_attacks.py).
 * Code is read-only on Spike (start.S), so the kernel cannot bypass it; it may issue neither instruction. */
void speedpatch_spike_call_kernel(void (*fn)(const void *, const void *, const void *, void *), const void *a,
                                  const void *b, const void *c, void *d);
__asm__(".text\n"
        ".globl speedpatch_spike_call_kernel\n"
        ".type speedpatch_spike_call_kernel, @function\n"
        "speedpatch_spike_call_kernel:\n"
        "  addi sp, sp, -208\n"
        "  sd ra, 0(sp)\n  sd s0, 8(sp)\n  sd s1, 16(sp)\n  sd s2, 24(sp)\n  sd s3, 32(sp)\n  sd s4, 40(sp)\n"
        "  sd s5, 48(sp)\n  sd s6, 56(sp)\n  sd s7, 64(sp)\n  sd s8, 72(sp)\n  sd s9, 80(sp)\n  sd s10, 88(sp)\n"
        "  sd s11, 96(sp)\n"
        "  fsd fs0, 104(sp)\n  fsd fs1, 112(sp)\n  fsd fs2, 120(sp)\n  fsd fs3, 128(sp)\n  fsd fs4, 136(sp)\n"
        "  fsd fs5, 144(sp)\n  fsd fs6, 152(sp)\n  fsd fs7, 160(sp)\n  fsd fs8, 168(sp)\n  fsd fs9, 176(sp)\n"
        "  fsd fs10, 184(sp)\n  fsd fs11, 192(sp)\n"
        "  frcsr t0\n  sd t0, 200(sp)\n"
        "  mv t0, a0\n"
        "  la t1, __stack_top\n"
        "  .insn r 0x7b, 3, " SPEEDPATCH_FUNCT_STR(SPEEDPATCH_FUNCT_KERNEL_ENTER) ", x0, sp, t1\n"
        "  mv a0, a1\n  mv a1, a2\n  mv a2, a3\n  mv a3, a4\n"
        "  jalr t0\n"
        "  .insn r 0x7b, 3, " SPEEDPATCH_FUNCT_STR(SPEEDPATCH_FUNCT_KERNEL_LEAVE) ", x0, sp, x0\n"
        "  ld ra, 0(sp)\n  ld s0, 8(sp)\n  ld s1, 16(sp)\n  ld s2, 24(sp)\n  ld s3, 32(sp)\n  ld s4, 40(sp)\n"
        "  ld s5, 48(sp)\n  ld s6, 56(sp)\n  ld s7, 64(sp)\n  ld s8, 72(sp)\n  ld s9, 80(sp)\n  ld s10, 88(sp)\n"
        "  ld s11, 96(sp)\n"
        "  fld fs0, 104(sp)\n  fld fs1, 112(sp)\n  fld fs2, 120(sp)\n  fld fs3, 128(sp)\n  fld fs4, 136(sp)\n"
        "  fld fs5, 144(sp)\n  fld fs6, 152(sp)\n  fld fs7, 160(sp)\n  fld fs8, 168(sp)\n  fld fs9, 176(sp)\n"
        "  fld fs10, 184(sp)\n  fld fs11, 192(sp)\n"
        "  ld t0, 200(sp)\n  fscsr t0\n"
        "  addi sp, sp, 208\n"
        "  ret\n"
        ".size speedpatch_spike_call_kernel, .-speedpatch_spike_call_kernel\n");
#define SPEEDPATCH_CALL_KERNEL(fn, a, b, c, d)                                                                 \
  speedpatch_spike_call_kernel((void (*)(const void *, const void *, const void *, void *))(fn), (a), (b), (c), \
                               (d))
#else
#define SPEEDPATCH_CALL_KERNEL(fn, a, b, c, d) (fn)((a), (b), (c), (d))
#endif
#define SPEEDPATCH_TIMED_REGION(cycles_out, region, call) \
  do {                                                    \
    gemmini_flush(0);                                     \
    gemmini_fence();                                      \
    const uint64_t speedpatch_start_ = read_cycles();     \
    SPEEDPATCH_REGION_BEGIN();                            \
    call;                                                 \
    gemmini_fence();                                      \
    SPEEDPATCH_REGION_END(region);                        \
    (cycles_out) = read_cycles() - speedpatch_start_;     \
  } while (0)
#define SPEEDPATCH_TIMED(cycles_out, call)                       \
  do {                                                           \
    gemmini_model_region_t speedpatch_region_;                   \
    SPEEDPATCH_TIMED_REGION(cycles_out, &speedpatch_region_, call); \
  } while (0)

SPEEDPATCH_UNCOUNTED static inline bool speedpatch_compare(struct speedpatch_verdict *v, const elem_t *got,
                                                          const elem_t *want, size_t n, const char *what,
                                                          size_t row_len) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      snprintf(v->why, sizeof v->why, "%s[%zu][%zu]:got=%d,expected=%d", what, i / row_len, i % row_len,
               (int)got[i], (int)want[i]);
      snprintf(v->mismatch, sizeof v->mismatch, "speedpatch: mismatch in %s at [%zu][%zu]: got %d, expected %d\n",
               what, i / row_len, i % row_len, (int)got[i], (int)want[i]);
      return false;
    }
  return true;
}

/* The figure: the model's cycles for the region where it measured them, else the harness's own. */
SPEEDPATCH_UNCOUNTED static inline uint64_t speedpatch_figure(uint64_t harness_cycles, const gemmini_model_region_t *r) {
#ifdef SPEEDPATCH_TRUSTED
  (void)harness_cycles;
  return r->cycles;
#else
  (void)r;
  return harness_cycles;
#endif
}

/* ---- GEMM: C[I][J] = scale * (A[I][K] * B[K][J] + bias[J]) with activation, saturated to int8 ---- */

SPEEDPATCH_UNCOUNTED static inline void speedpatch_matmul_inputs(uint64_t seed, elem_t *A, elem_t *B, acc_t *bias,
                                                                size_t dim_I, size_t dim_J, size_t dim_K) {
  speedpatch_seed_inputs(seed);
  speedpatch_fill_elem(A, dim_I * dim_K, -16, 15);
  speedpatch_fill_elem(B, dim_K * dim_J, -16, 15);
  if (bias) speedpatch_fill_acc(bias, dim_J, -512, 511);
}

/* `scale` and `act` are the problem's: the kernel must apply the same ones (examples define them as
 * constants shared by main() and the kernel). */
SPEEDPATCH_UNCOUNTED static inline int speedpatch_run_matmul(size_t dim_I, size_t dim_J, size_t dim_K, bool with_bias, int act,
                                 acc_scale_t scale, speedpatch_matmul_kernel kernel) {
  struct speedpatch_verdict v;
  speedpatch_verdict_open(&v);
  v.required_macs = (uint64_t)dim_I * dim_J * dim_K;
  v.min_read_bytes = (uint64_t)(dim_I * dim_K + dim_K * dim_J) * sizeof(elem_t);
  v.min_write_bytes = (uint64_t)dim_I * dim_J * sizeof(elem_t);
  speedpatch_verdict_problem(&v);
  elem_t *A = (elem_t *)speedpatch_alloc(dim_I * dim_K * sizeof(elem_t));
  elem_t *B = (elem_t *)speedpatch_alloc(dim_K * dim_J * sizeof(elem_t));
  acc_t *bias = with_bias ? (acc_t *)speedpatch_alloc(dim_J * sizeof(acc_t)) : NULL;
  elem_t *C = (elem_t *)speedpatch_alloc(dim_I * dim_J * sizeof(elem_t));
  /* Allocated now but filled only after the kernel: a kernel that frees C cannot have the gold result
   * land in C's memory. */
  elem_t *gold = (elem_t *)speedpatch_alloc(dim_I * dim_J * sizeof(elem_t));
  int64_t *gold_row = (int64_t *)speedpatch_alloc(dim_J * sizeof(int64_t)); /* no allocation after a kernel */
  bool correct = true;
  uint64_t first_cycles = 0;
  unsigned t = 0;
  for (; t < v.trials && correct; t++) {
    speedpatch_matmul_inputs(v.seed + t, A, B, bias, dim_I, dim_J, dim_K);
    memset(C, 0x5a, dim_I * dim_J * sizeof(elem_t));
    memset(gold, 0xa5, dim_I * dim_J * sizeof(elem_t));
    uint64_t cycles = 0;
    gemmini_model_region_t region;
    SPEEDPATCH_TIMED_REGION(cycles, &region, SPEEDPATCH_CALL_KERNEL(kernel, A, B, bias, C));
    if (t == 0) first_cycles = speedpatch_figure(cycles, &region);
    /* Only now: the inputs again (whatever the kernel wrote into them) and the gold result. */
    const uint64_t gold_seed = v.seed + t;
    speedpatch_matmul_inputs(gold_seed, A, B, bias, dim_I, dim_J, dim_K);
    speedpatch_gold_matmul_into(dim_I, dim_J, dim_K, A, B, bias, gold, scale, act, gold_row);
    correct = speedpatch_compare(&v, C, gold, dim_I * dim_J, "C", dim_J);
    speedpatch_verdict_trial(&v, t, correct, gold_seed, cycles, &region);
  }
  v.required_macs = (uint64_t)dim_I * dim_J * dim_K; /* from the sizes as they are now */
  speedpatch_verdict_close(&v, correct, first_cycles, t);
  free(A), free(B), free(bias), free(C), free(gold), free(gold_row);
  return correct ? 0 : 1;
}

/* ---- Convolution, NHWC input/output, weights [krow][kcol][in_ch][out_ch], bias[out_ch] ---- */

SPEEDPATCH_UNCOUNTED static inline int speedpatch_conv_out_dim(const struct speedpatch_conv_shape *s) {
  return (s->in_dim + 2 * s->padding - s->kernel_dim) / s->stride + 1;
}

SPEEDPATCH_UNCOUNTED static inline void speedpatch_conv_inputs(uint64_t seed, elem_t *input, size_t in_n, elem_t *weights,
                                                              size_t w_n, acc_t *bias, size_t out_ch) {
  speedpatch_seed_inputs(seed);
  speedpatch_fill_elem(input, in_n, -16, 15);
  speedpatch_fill_elem(weights, w_n, -16, 15);
  speedpatch_fill_acc(bias, out_ch, -512, 511);
}

SPEEDPATCH_UNCOUNTED static inline int speedpatch_run_conv(struct speedpatch_conv_shape s, int act, acc_scale_t scale,
                               speedpatch_conv_kernel kernel) {
  struct speedpatch_verdict v;
  speedpatch_verdict_open(&v);
  const int out_dim = speedpatch_conv_out_dim(&s);
  const size_t in_n = (size_t)s.batch_size * s.in_dim * s.in_dim * s.in_channels;
  const size_t w_n = (size_t)s.kernel_dim * s.kernel_dim * s.in_channels * s.out_channels;
  const size_t out_n = (size_t)s.batch_size * out_dim * out_dim * s.out_channels;
  v.required_macs = (uint64_t)out_n * s.kernel_dim * s.kernel_dim * s.in_channels;
  /* Every weight is used; every input pixel too unless the stride skips some. */
  v.min_read_bytes = (uint64_t)w_n + (s.stride <= s.kernel_dim ? (uint64_t)in_n : 0);
  v.min_write_bytes = (uint64_t)out_n;
  speedpatch_verdict_problem(&v);
  elem_t *input = (elem_t *)speedpatch_alloc(in_n);
  elem_t *weights = (elem_t *)speedpatch_alloc(w_n);
  acc_t *bias = (acc_t *)speedpatch_alloc((size_t)s.out_channels * sizeof(acc_t));
  elem_t *output = (elem_t *)speedpatch_alloc(out_n);
  elem_t *gold = (elem_t *)speedpatch_alloc(out_n); /* filled only after the kernel, see speedpatch_run_matmul */
  int64_t *gold_acc = (int64_t *)speedpatch_alloc((size_t)s.out_channels * sizeof(int64_t));
  bool correct = true;
  uint64_t first_cycles = 0;
  unsigned t = 0;
  for (; t < v.trials && correct; t++) {
    speedpatch_conv_inputs(v.seed + t, input, in_n, weights, w_n, bias, (size_t)s.out_channels);
    memset(output, 0x5a, out_n);
    memset(gold, 0xa5, out_n);
    uint64_t cycles = 0;
    gemmini_model_region_t region;
    SPEEDPATCH_TIMED_REGION(cycles, &region, SPEEDPATCH_CALL_KERNEL(kernel, input, weights, bias, output));
    if (t == 0) first_cycles = speedpatch_figure(cycles, &region);
    const uint64_t gold_seed = v.seed + t;
    speedpatch_conv_inputs(gold_seed, input, in_n, weights, w_n, bias, (size_t)s.out_channels);
    speedpatch_gold_conv_into(s.batch_size, s.in_dim, s.in_channels, s.out_channels, out_dim, s.kernel_dim, s.stride,
                              s.padding, input, weights, bias, gold, scale, act, gold_acc);
    correct = speedpatch_compare(&v, output, gold, out_n, "output", (size_t)s.out_channels);
    speedpatch_verdict_trial(&v, t, correct, gold_seed, cycles, &region);
  }
  v.required_macs = (uint64_t)out_n * s.kernel_dim * s.kernel_dim * s.in_channels;
  speedpatch_verdict_close(&v, correct, first_cycles, t);
  free(input), free(weights), free(bias), free(output), free(gold), free(gold_acc);
  return correct ? 0 : 1;
}

#endif /* !SPEEDPATCH_KERNEL_TU */

#endif /* SPEEDPATCH_HARNESS_H */
