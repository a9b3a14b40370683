/* Tamper evidence for the model's clock and counters, and the trusted harness's region API.
 *
 * Natively the candidate's code shares the model's address space, so it could write the host clock or
 * the work counters through a stray pointer. The model keeps a seal of that state keyed by a secret drawn
 * from the operating system when the run starts: its entry points check the seal on entry (the state must
 * be what the model left) and seal again on exit; the trace-pc hook does the same for the host clock. A
 * mismatch stops the run at once with a `gemmini-model: error: tampering` line and exit status 4, so no
 * verdict is ever reported for it. This is evidence, not isolation: code that finds the secret too can
 * forge the seal (docs/threat-model.md; gemmini-spike keeps the model outside the program's memory). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "trusted_region.h"

uint64_t gm_guard_key, gm_guard_host_seal, gm_host_pending;
static uint64_t state_seal, table_digest;
static int guard_ready;

/* Where the last region began (sealed with the rest). */
static uint64_t r_host, r_macs, r_read, r_write, r_host_cycles, r_insns;
static int r_open;

/* Every region's figures as the model measured them, for the statistics file: the backend compares the
 * harness's per-trial record with these, since the harness keeps its record on its own stack, where a
 * kernel can find and rewrite it by its text ("trial 0 ... cycles=14188") before it is sent. The log is
 * chained into the seal (r_log_digest), and the chain is recomputed before the log is written out. */
#define GM_REGION_LOG 64
static uint64_t r_log[GM_REGION_LOG][6];
static uint64_t r_logged, r_log_digest;

/* The harness's verdict, as handed to the model (sealed too: a kernel that found these two words could
 * otherwise vouch for a verdict it forged on the pipe). */
static uint64_t verdict_hash, verdicts;

/* The kernel call (gemmini_model_call_kernel): whether one is under way, and a keyed hash of everything of
 * the harness's on the stack at that moment (its callee-saved registers, the return address, every frame up
 * to the stack's top), compared when the kernel returns. */
static uint64_t k_open, k_frames, k_top; /* k_open: the saved-registers address while a call is open */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 29);
}

static uint64_t region_log_digest(void) {
  uint64_t h = gm_guard_key ^ 0x5245474c4f47ULL;
  for (uint64_t r = 0; r < r_logged && r < GM_REGION_LOG; r++)
    for (int i = 0; i < 6; i++) h = mix(h, r_log[r][i]);
  return h;
}

static uint64_t state_digest(void) {
  uint64_t h = gm_guard_key;
  const uint64_t fields[] = {T.next_issue, T.all_done, T.busy[0], T.busy[1], T.busy[2], S.macs,
                             S.dram_read_bytes, S.dram_write_bytes, S.fences, S.host_external_cycles,
                             gm_insn_no, r_host, r_macs, r_read, r_write,
                             r_host_cycles, r_insns, (uint64_t)r_open, r_logged, r_log_digest,
                             verdict_hash, verdicts, k_open, k_frames, k_top};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) h = mix(h, fields[i]);
  return h;
}

void gm_guard_tampered(const char *what, const char *where) {
  char msg[256];
  int n = snprintf(msg, sizeof msg,
                   "gemmini-model: error: tampering: %s changed outside the model (noticed at %s); "
                   "the run is void\n", what, where);
  fflush(stdout);
  if (n > 0) {
    ssize_t ignored = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    (void)ignored;
  }
  _exit(4);
}

void gm_guard_init(void) {
  uint64_t key = 0;
  if (getrandom(&key, sizeof key, 0) != (ssize_t)sizeof key) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    key = mix((uint64_t)ts.tv_nsec, (uint64_t)getpid()) ^ (uint64_t)(uintptr_t)&key;
  }
  gm_guard_key = key | 1;
  table_digest = gm_block_table_digest();
  r_log_digest = region_log_digest();
  guard_ready = 1;
  gm_guard_seal();
}

void gm_guard_seal(void) {
  if (!guard_ready) return;
  gm_guard_host_seal = gm_guard_host_digest();
  state_seal = state_digest();
}

void gm_guard_check(const char *where) {
  if (!guard_ready) return;
  if (gm_guard_host_digest() != gm_guard_host_seal) gm_guard_tampered("the host clock", where);
  if (state_digest() != state_seal) gm_guard_tampered("the accelerator's clock or work counters", where);
}

/* ---- the kernel call ---- */

/* What the harness has on the stack, from `saved` (the caller's callee-saved registers and return address,
 * as the trampoline pushed them) up to the stack's top, read without the timing model seeing it. */
static uint64_t harness_frames_digest(uint64_t saved, uint64_t top) {
  uint64_t h = mix(gm_guard_key, saved);
  uint64_t chunk[64];
  for (uint64_t at = saved; at < top;) {
    const uint64_t n = top - at < sizeof chunk ? (top - at) / 8 : sizeof chunk / 8;
    if (n == 0) break;
    gm_host_memory_read(at, chunk, n * 8);
    for (uint64_t i = 0; i < n; i++) h = mix(h, chunk[i]);
    at += n * 8;
  }
  return h;
}

void gm_kernel_enter_at(uint64_t saved, uint64_t top) {
  gm_guard_check("the kernel call");
  if (k_open) gm_guard_tampered("the kernel call", "a second call while one was under way");
  k_open = saved ? saved : 1;
  k_top = top;
  k_frames = harness_frames_digest(saved, top);
  gm_guard_seal();
}

void gm_kernel_leave_at(uint64_t saved) {
  gm_guard_check("the kernel's return");
  if (k_open != (saved ? saved : 1) || harness_frames_digest(saved, k_top) != k_frames)
    gm_guard_tampered("the harness's registers or stack frames", "the kernel's return");
  k_open = 0;
  gm_guard_seal();
}

#if defined(__x86_64__) && !defined(GEMMINI_MODEL_SPIKE)
extern void *__libc_stack_end; /* glibc: the top of the initial stack, above main's frame */

GM_SCRUB void gm_kernel_enter(const uint64_t *saved) {
  gm_kernel_enter_at((uint64_t)(uintptr_t)saved, (uint64_t)(uintptr_t)__libc_stack_end);
}
void gm_kernel_leave(const uint64_t *saved) { gm_kernel_leave_at((uint64_t)(uintptr_t)saved); }

/* gemmini_model_call_kernel(fn, a, b, c, d): fn(a, b, c, d) with the harness's callee-saved registers, its
 * return address and its frames hashed before and checked after. Natively the kernel shares the stack: its
 * own frame lies just below the harness's, where a kernel found the harness's record by its text and rewrote
 * a trial's cycles, or could swap the output pointer the harness compares. Registers are pushed first so
 * that the kernel's epilogue restoring a rewritten copy is seen too. */
__asm__(".text\n"
        ".globl gemmini_model_call_kernel\n"
        ".type gemmini_model_call_kernel, @function\n"
        "gemmini_model_call_kernel:\n"
        "  pushq %rbx\n  pushq %rbp\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $40, %rsp\n" /* 8 + 48 + 40: 16-byte aligned for the calls */
        "  movq %rdi, 0(%rsp)\n  movq %rsi, 8(%rsp)\n  movq %rdx, 16(%rsp)\n  movq %rcx, 24(%rsp)\n"
        "  movq %r8, 32(%rsp)\n"
        "  leaq 40(%rsp), %rdi\n  call gm_kernel_enter\n"
        "  movq 0(%rsp), %rax\n  movq 8(%rsp), %rdi\n  movq 16(%rsp), %rsi\n  movq 24(%rsp), %rdx\n"
        "  movq 32(%rsp), %rcx\n  call *%rax\n"
        "  leaq 40(%rsp), %rdi\n  call gm_kernel_leave\n"
        "  addq $40, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbp\n  popq %rbx\n  ret\n"
        ".size gemmini_model_call_kernel, .-gemmini_model_call_kernel\n");
#else
/* On Spike the harness's own RISC-V trampoline (speedpatch_harness.h) hands the model its stack pointer and
 * the stack's top around the call (RoCC funct 120 and 119, runtime.c). */
void gemmini_model_call_kernel(void (*fn)(const void *, const void *, const void *, void *), const void *a,
                               const void *b, const void *c, void *d) {
  fn(a, b, c, d);
}
#endif

/* A kernel that did not return through the trampoline (it rewrote its return address) leaves the call open:
 * every later step of the harness's measurement refuses to go on. */
static void kernel_closed(const char *where) {
  if (k_open) gm_guard_tampered("the kernel's return address (the kernel never returned to the harness)", where);
}

void gemmini_model_region_begin(void) {
  gm_guard_check("the start of the timed region");
  kernel_closed("the start of the timed region");
  /* the harness ends every region it starts: a second start would restart the clock mid-measurement */
  if (r_open) gm_guard_tampered("the timed region", "a second start while one was open");
  r_host = T.host, r_macs = S.macs, r_read = S.dram_read_bytes, r_write = S.dram_write_bytes;
  r_host_cycles = S.host_block_cycles + S.host_external_cycles, r_insns = gm_insn_no;
  r_open = 1;
  gm_guard_seal();
}

void gemmini_model_region_end(gemmini_model_region_t *out) {
  gm_guard_check("the end of the timed region");
  kernel_closed("the end of the timed region");
  if (!r_open || T.host < r_host || S.macs < r_macs) gm_guard_tampered("the timed region's start", "its end");
  /* The harness fences right before this point; accelerator work still outstanding means a kernel
   * returned past that fence (on Spike, by rewriting its return address), leaving its work out of the figure. */
  if (T.all_done > T.host) gm_guard_tampered("the harness's control flow (its fence before the region's end was skipped)", "the end of the timed region");
  if (gm_block_table_digest() != table_digest) gm_guard_tampered("the host-work block table", "the end of the timed region");
  out->cycles = T.host - r_host;
  out->array_macs = S.macs - r_macs;
  out->dram_read_bytes = S.dram_read_bytes - r_read;
  out->dram_write_bytes = S.dram_write_bytes - r_write;
  out->host_cycles = S.host_block_cycles + S.host_external_cycles - r_host_cycles;
  out->rocc = gm_insn_no - r_insns;
  out->dim = DIM;
  out->dram_bytes_per_cycle = T_DRAM_BYTES_PER_CYCLE;
  r_open = 0;
  if (r_logged < GM_REGION_LOG) {
    const uint64_t figures[6] = {out->cycles, out->array_macs, out->dram_read_bytes, out->dram_write_bytes,
                                 out->host_cycles, out->rocc};
    for (int i = 0; i < 6; i++) r_log[r_logged][i] = figures[i];
  }
  r_logged++;
  r_log_digest = region_log_digest();
  gm_guard_seal();
}

void gemmini_model_verdict(const char *text, uint64_t n) {
  gm_guard_check("the harness's verdict");
  kernel_closed("the harness's verdict");
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
  for (uint64_t i = 0; i < n; i++) h = (h ^ (uint8_t)text[i]) * 0x100000001b3ULL;
  verdict_hash = h;
  verdicts++;
  gm_guard_seal();
}

void gm_guard_stats(FILE *f) {
  if (guard_ready && region_log_digest() != r_log_digest) gm_guard_tampered("the model's record of the timed regions", "exit");
  fprintf(f, "  \"verdicts\": %llu,\n  \"verdict_fnv1a64\": \"%016llx\",\n", (unsigned long long)verdicts,
          (unsigned long long)verdict_hash);
  /* [cycles, array MACs, DRAM bytes read, written, host cycles, RoCC instructions] per region */
  fprintf(f, "  \"harness_regions\": %llu,\n  \"harness_region_figures\": [", (unsigned long long)r_logged);
  for (uint64_t r = 0; r < r_logged && r < GM_REGION_LOG; r++)
    fprintf(f, "%s[%llu, %llu, %llu, %llu, %llu, %llu]", r ? ", " : "", (unsigned long long)r_log[r][0],
            (unsigned long long)r_log[r][1], (unsigned long long)r_log[r][2], (unsigned long long)r_log[r][3],
            (unsigned long long)r_log[r][4], (unsigned long long)r_log[r][5]);
  fprintf(f, "],\n");
}

/* Whether [addr, addr + n) touches the model's own state: natively the accelerator's DMA reaches all of
 * host memory, and an mvin/mvout aimed there would read the secret or rewrite the clock from inside the
 * model (where no seal can tell). */
int gm_guard_owns(uint64_t addr, uint64_t n) {
  const struct { const void *p; uint64_t size; } owned[] = {
      {&T, sizeof T}, {&S, sizeof S}, {&G, sizeof G}, {&gm_guard_key, sizeof gm_guard_key},
      {&gm_guard_host_seal, sizeof gm_guard_host_seal}, {&gm_host_pending, sizeof gm_host_pending}, {&state_seal, sizeof state_seal},
      {&table_digest, sizeof table_digest}, {&r_host, sizeof r_host}, {&r_macs, sizeof r_macs},
      {&r_read, sizeof r_read}, {&r_write, sizeof r_write}, {&r_host_cycles, sizeof r_host_cycles},
      {&r_insns, sizeof r_insns}, {&r_open, sizeof r_open}, {&verdict_hash, sizeof verdict_hash},
      {&verdicts, sizeof verdicts}, {r_log, sizeof r_log}, {&r_logged, sizeof r_logged},
      {&r_log_digest, sizeof r_log_digest}, {&k_open, sizeof k_open}, {&k_frames, sizeof k_frames},
      {&k_top, sizeof k_top}};
  for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) {
    const uint64_t lo = (uint64_t)(uintptr_t)owned[i].p, hi = lo + owned[i].size;
    if (addr < hi && addr + n > lo) return 1;
  }
  return 0;
}
