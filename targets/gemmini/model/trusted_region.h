/* The trusted harness's view of the model: what the accelerator did between two points of the run.
 *
 * speedpatch_harness.h (trusted build, SPEEDPATCH_TRUSTED) calls gemmini_model_region_begin() right after
 * its start read_cycles() and gemmini_model_region_end() right after the final fence of the timed region.
 * The figures come from the model's own counters, which are sealed with a per-run secret (guard.c): a
 * candidate that writes them outside the model stops the run. The kernel's object may not call either
 * function (build.py's link allowlist). */
#ifndef GEMMINI_MODEL_TRUSTED_REGION_H
#define GEMMINI_MODEL_TRUSTED_REGION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint64_t cycles;           /* host clock at end minus at begin */
  uint64_t array_macs;       /* multiply-accumulates through the systolic array */
  uint64_t dram_read_bytes;  /* bytes the accelerator's DMA read from DRAM */
  uint64_t dram_write_bytes; /* ... and wrote */
  uint64_t host_cycles;      /* host cycles charged for the program's own basic blocks and libc copies */
  uint64_t rocc;             /* RoCC instructions the program issued */
  uint32_t dim;              /* the array is dim x dim */
  uint32_t dram_bytes_per_cycle; /* the model's sustained DRAM bandwidth per direction */
} gemmini_model_region_t;

/* The harness calls the kernel through the model: fn(a, b, c, d), with the harness's registers and stack
 * frames checked when it returns (guard.c). */
void gemmini_model_call_kernel(void (*fn)(const void *, const void *, const void *, void *), const void *a,
                               const void *b, const void *c, void *d);

void gemmini_model_region_begin(void);
void gemmini_model_region_end(gemmini_model_region_t *out);

/* The harness hands its verdict text to the model before writing it to the result pipe; the model puts
 * its FNV-1a 64 hash and the number of verdicts in the statistics file at exit. The backend accepts only a
 * verdict that matches: a program that forges one on the pipe and exits leaves the model without it. */
void gemmini_model_verdict(const char *text, uint64_t n);

#ifdef __cplusplus
}
#endif

#endif /* GEMMINI_MODEL_TRUSTED_REGION_H */
