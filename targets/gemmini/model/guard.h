/* Tamper evidence for the model's clock and counters (see guard.c). */
#ifndef GEMMINI_MODEL_GUARD_H
#define GEMMINI_MODEL_GUARD_H

#include <stdint.h>
#include <stdio.h>

#include "model_internal.h"

extern uint64_t gm_guard_key, gm_guard_host_seal;
extern uint64_t gm_host_pending; /* host cycles of the work since the last model event, charged at the next */

void gm_guard_init(void);               /* draws the secret and seals the current state */
void gm_guard_check(const char *where); /* stops the run when the state changed since the last seal */
void gm_guard_seal(void);               /* the model changed its state itself: seal the new one */
__attribute__((noreturn)) void gm_guard_tampered(const char *what, const char *where);
uint64_t gm_block_table_digest(void); /* runtime.c: a hash of the host-work block table */
void gm_guard_stats(FILE *f);          /* the verdict's hash and count, for the statistics file */
int gm_guard_owns(uint64_t addr, uint64_t n); /* whether a DMA range touches the model's own state */
/* The checked kernel call: the harness's stack from `saved` (its registers and return address, pushed by
 * its trampoline) to `top`, hashed before the kernel runs and compared when it returns. */
void gm_kernel_enter_at(uint64_t saved, uint64_t top);
void gm_kernel_leave_at(uint64_t saved);
void gm_host_memory_read(uint64_t addr, void *dst, uint64_t n); /* runtime.c: program memory, untimed */

/* The host clock and the work not yet charged to it move on every basic block of the program (trace-pc):
 * a cheap seal of just those two values. The model's other state moves only inside the model's own entry
 * points (check on entry, seal on exit). The seal is one round of guard.c's keyed mix over the clock plus the
 * pending work weighted by the secret (moving cycles between the two needs the secret):
 * it was T.host + key + pending * key, linear in T.host, so a kernel that subtracted the same number from
 * the clock and from its seal (both at fixed offsets from `&stdout` in the executable) erased its own host
 * work without knowing the key (30,000 charged host cycles gone, tests/security/test_gemmini_memory_attacks.py). */
static inline uint64_t gm_guard_host_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 29);
}
static inline uint64_t gm_guard_host_digest(void) {
  return gm_guard_host_mix(gm_guard_key, T.host + gm_host_pending * gm_guard_key);
}

static inline void gm_guard_host_add(uint64_t cycles) {
  if (__builtin_expect(gm_guard_host_digest() != gm_guard_host_seal, 0)) gm_guard_tampered("the host clock", "host work");
  T.host += cycles;
  gm_guard_host_seal = gm_guard_host_digest();
}

/* A new segment of host work starts: the previous one's cycles are charged now, this one's at the next
 * event (a basic block, an accelerator instruction, a fence or a cycle read). */
static inline void gm_guard_host_segment(uint64_t next_pending) {
  if (__builtin_expect(gm_guard_host_digest() != gm_guard_host_seal, 0)) gm_guard_tampered("the host clock", "host work");
  T.host += gm_host_pending;
  gm_host_pending = next_pending;
  gm_guard_host_seal = gm_guard_host_digest();
}

#endif /* GEMMINI_MODEL_GUARD_H */
