/* Entry points of the native model: RoCC dispatch, fence, cycle counter, the host-work hook
 * (__sanitizer_cov_trace_pc), error reporting and the statistics file. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef GEMMINI_MODEL_SPIKE
#include <sys/mman.h>
#include <sys/personality.h>
#endif

#include "gemmini_model.h"
#include "guard.h"
#include "host_calls.h"
#include "model_internal.h"

gm_stats_t S;
uint64_t gm_insn_no, gm_cur_funct, gm_cur_rs1, gm_cur_rs2;
const char *gm_in_loop;

static int initialized;
static volatile sig_atomic_t in_model;
/* in_model is writable by the program: set, it would make the program's own memcpy/memset free. The
 * copy wrappers therefore also require this token, which only the model's instruction dispatch sets and
 * which cannot be written without the run's secret. */
static uint64_t model_busy;
#define MODEL_BUSY_TOKEN (gm_guard_key ^ 0x4d4f44454c425553ULL)

static void load_block_table(void);

uint64_t gm_counter(uint64_t rs1); /* functional.c */

/* The program's own timed regions, for programs without the speedpatch harness: read_cycles() calls
 * taken in pairs (start, end); a pair is a region of accelerator work when the program issued Gemmini
 * instructions (other than counter accesses) between its two reads. */
static uint64_t work_insns, region_start, region_start_work, region_start_macs;
static uint64_t regions, region_cycles, region_macs;
/* A region ends when its closing read_cycles() does or, where the accelerator is still busy then (no fence
 * before the read), when the work finishes: a program that leaves work in flight measures only its issue
 * time, and a rewrite that drops a fence would otherwise look faster for doing the same work. These are the
 * cycles added that way. */
static uint64_t region_unfinished;
/* The first pair's own figures, work or not: a harness program built as one unit (upstream headers) prints
 * its first trial's cycles as the verdict, and the backend holds that line to these (native.py). */
static uint64_t first_pair_cycles, first_pair_macs, first_pair_read, first_pair_write;
static uint64_t region_start_read, region_start_write;
/* The problem's work as the harness declares it before any kernel runs (the first declaration stands): the
 * backend holds the first pair's MACs and DRAM bytes to it, so a kernel that forges the printed verdict must
 * still have done the problem's work inside the timed region. */
static uint64_t declared, declared_macs, declared_read, declared_write;
/* They are the figure of a whole-program run, so they are sealed like the model's other counters (guard.c):
 * keyed by the run's secret, checked before each use and sealed again after each change. */
static uint64_t region_seal;

static uint64_t region_digest(void) {
  const uint64_t v[] = {work_insns, region_start, region_start_work, region_start_macs, regions, region_cycles,
                        region_macs, S.cycle_reads, first_pair_cycles, first_pair_macs, first_pair_read,
                        first_pair_write, region_start_read, region_start_write, declared, declared_macs,
                        declared_read, declared_write, region_unfinished};
  uint64_t h = gm_guard_key;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    h ^= v[i] + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  }
  return h ^ (h >> 31);
}

static void region_check(const char *where) {
  if (region_seal != region_digest()) gm_guard_tampered("the read_cycles() regions", where);
}
static const char *funct_name(uint64_t f) {
  static const char *names[] = {"CONFIG", "MVIN2", "MVIN", "MVOUT", "COMPUTE_PRELOADED",
                                "COMPUTE_ACCUMULATE", "PRELOAD", "FLUSH", "LOOP_WS",
                                "LOOP_WS_CONFIG_BOUNDS", "LOOP_WS_CONFIG_ADDRS_AB",
                                "LOOP_WS_CONFIG_ADDRS_DC", "LOOP_WS_CONFIG_STRIDES_AB",
                                "LOOP_WS_CONFIG_STRIDES_DC", "MVIN3", "LOOP_CONV_WS",
                                "LOOP_CONV_WS_CONFIG_1", "LOOP_CONV_WS_CONFIG_2", "LOOP_CONV_WS_CONFIG_3",
                                "LOOP_CONV_WS_CONFIG_4", "LOOP_CONV_WS_CONFIG_5", "LOOP_CONV_WS_CONFIG_6"};
  if (f < sizeof names / sizeof names[0]) return names[f];
  if (f == F_COUNTER) return "COUNTER";
  return NULL;
}

static void write_stats(void) {
  const char *path = getenv("GEMMINI_MODEL_STATS");
  if (!initialized) return;
  gm_guard_check("exit"); /* a run whose counters were forged must not end normally */
  if (!path || !*path) return;
  in_model = 1;
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "{\n  \"dim\": %d,\n", DIM);
  /* the DRAM bound of the physics check (backends/trusted.py) on Spike, where the program cannot supply it */
  fprintf(f, "  \"dram_bytes_per_cycle\": %d,\n", (int)T_DRAM_BYTES_PER_CYCLE);
  for (int pass = 0; pass < 2; pass++) {
    const uint64_t *counts = pass ? S.executed : S.host_issued;
    fprintf(f, "  \"%s\": {", pass ? "executed_instructions" : "instructions");
    int first = 1;
    for (int i = 0; i < NUM_FUNCTS; i++) {
      if (!counts[i]) continue;
      const char *name = funct_name((uint64_t)i);
      if (name) fprintf(f, "%s\"%s\": %llu", first ? "" : ", ", name, (unsigned long long)counts[i]);
      else fprintf(f, "%s\"funct_%d\": %llu", first ? "" : ", ", i, (unsigned long long)counts[i]);
      first = 0;
    }
    fprintf(f, "},\n");
  }
  double spad_kib = (double)S.spad_rows_touched * DIM * sizeof(elem_t) / 1024.0;
  double acc_kib = (double)S.acc_rows_touched * DIM * sizeof(acc_t) / 1024.0;
  gm_guard_stats(f);
  fprintf(f, "  \"macs\": %llu,\n", (unsigned long long)S.macs);
  fprintf(f, "  \"max_spad_row\": %lld,\n  \"max_acc_row\": %lld,\n", (long long)S.max_spad_row,
          (long long)S.max_acc_row);
  fprintf(f, "  \"spad_rows\": %u,\n  \"acc_rows\": %d,\n", SPAD_ROWS, ACC_ROWS);
  fprintf(f, "  \"spad_kib_used\": %.2f,\n  \"spad_kib_total\": %.2f,\n", spad_kib,
          (double)SPAD_ROWS * DIM * sizeof(elem_t) / 1024.0);
  fprintf(f, "  \"acc_kib_used\": %.2f,\n  \"acc_kib_total\": %.2f,\n", acc_kib,
          (double)ACC_ROWS * DIM * sizeof(acc_t) / 1024.0);
  fprintf(f, "  \"cycles\": %llu,\n", (unsigned long long)S.last_cycles);
  fprintf(f, "  \"cycle_reads\": %llu,\n", (unsigned long long)S.cycle_reads);
  fprintf(f, "  \"host_cycles_at_exit\": %llu,\n", (unsigned long long)T.host);
  fprintf(f, "  \"accelerator_done_cycle\": %llu,\n", (unsigned long long)T.all_done);
  fprintf(f, "  \"host_blocks\": %llu,\n", (unsigned long long)S.host_blocks);
  region_check("exit");
  fprintf(f, "  \"timed_regions\": %llu,\n  \"timed_region_cycles\": %llu,\n  \"timed_region_macs\": %llu,\n"
             "  \"timed_region_unfinished_cycles\": %llu,\n",
          (unsigned long long)regions, (unsigned long long)region_cycles, (unsigned long long)region_macs,
          (unsigned long long)region_unfinished);
  if (S.cycle_reads >= 2)
    fprintf(f, "  \"first_pair_cycles\": %llu,\n  \"first_pair_macs\": %llu,\n"
               "  \"first_pair_dram_read_bytes\": %llu,\n  \"first_pair_dram_write_bytes\": %llu,\n",
            (unsigned long long)first_pair_cycles, (unsigned long long)first_pair_macs,
            (unsigned long long)first_pair_read, (unsigned long long)first_pair_write);
  if (declared)
    fprintf(f, "  \"declared_macs\": %llu,\n  \"declared_min_read_bytes\": %llu,\n"
               "  \"declared_min_write_bytes\": %llu,\n",
            (unsigned long long)declared_macs, (unsigned long long)declared_read, (unsigned long long)declared_write);
  fprintf(f, "  \"host_instructions\": %llu,\n", (unsigned long long)S.host_instructions);
  fprintf(f, "  \"host_block_cycles\": %llu,\n", (unsigned long long)S.host_block_cycles);
  fprintf(f, "  \"host_external_cycles\": %llu,\n", (unsigned long long)S.host_external_cycles);
  fprintf(f, "  \"fences\": %llu,\n", (unsigned long long)S.fences);
  fprintf(f, "  \"busy_cycles\": {\"load\": %llu, \"execute\": %llu, \"store\": %llu},\n",
          (unsigned long long)T.busy[U_LOAD], (unsigned long long)T.busy[U_EX],
          (unsigned long long)T.busy[U_STORE]);
  uint64_t mem[TM_MEMORY_STATS];
  tm_memory_stats(mem);
  fprintf(f, "  \"memory\": {\"gets\": %llu, \"puts\": %llu, \"l2_hits\": %llu, \"l2_misses\": %llu, "
          "\"writebacks\": %llu, \"tlb_misses\": %llu, \"gets_behind_fill\": %llu},\n", (unsigned long long)mem[0],
          (unsigned long long)mem[1], (unsigned long long)mem[2], (unsigned long long)mem[3],
          (unsigned long long)mem[4], (unsigned long long)mem[5], (unsigned long long)mem[6]);
  fprintf(f, "  \"dram_read_bytes\": %llu,\n  \"dram_write_bytes\": %llu\n}\n",
          (unsigned long long)S.dram_read_bytes, (unsigned long long)S.dram_write_bytes);
  fclose(f);
}

static void on_fault(int sig, siginfo_t *info, void *ctx) {
  (void)ctx;
  if (!in_model) { /* the program's own bug: crash as it would have */
    signal(sig, SIG_DFL);
    return;
  }
  char msg[320];
  int n = snprintf(msg, sizeof msg,
                   "gemmini-model: error: invalid DRAM address %p touched by the accelerator%s%s "
                   "(instruction #%llu funct=%llu rs1=0x%llx rs2=0x%llx)\n",
                   info ? info->si_addr : NULL, gm_in_loop ? " inside " : "", gm_in_loop ? gm_in_loop : "",
                   (unsigned long long)gm_insn_no, (unsigned long long)gm_cur_funct,
                   (unsigned long long)gm_cur_rs1, (unsigned long long)gm_cur_rs2);
  if (n > 0) {
    ssize_t ignored = write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    (void)ignored;
  }
  _exit(3);
}

static int model_started(void);

static void init(void) {
  if (initialized) return;
  /* `initialized` is writable: a program that clears it would have the next call start the model again,
   * clock and counters from zero, in the middle of a timed region. */
  if (model_started()) gm_guard_tampered("the model's start-up flag", "a second start");
  in_model = 1;
  gm_reset();
  tm_reset();
  memset(&S, 0, sizeof S);
  S.max_spad_row = S.max_acc_row = -1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  atexit(write_stats);
  load_block_table();
  gm_guard_init();
  region_seal = region_digest();
  initialized = 1;
  in_model = 0;
}

/* Before main, so that host work done before the first RoCC instruction is counted on a clean state. */
__attribute__((constructor)) static void init_at_start(void) { init(); }

#ifndef GEMMINI_MODEL_SPIKE
/* Address translation (timing.c) depends on where buffers lie within pages and 16 KiB groups, and the
 * kernel's address-space randomization moves them from run to run. A program of the native model therefore
 * runs with randomization off: it re-executes itself once, before anything else (glibc passes argv and envp
 * to constructors), so that every figure is deterministic. Without /proc it runs as it is. */
__attribute__((constructor(101))) static void fixed_layout(int argc, char **argv, char **envp) {
  (void)argc;
  const int current = personality(0xffffffff);
  if (current == -1 || (current & ADDR_NO_RANDOMIZE)) return;
  if (personality((unsigned long)current | ADDR_NO_RANDOMIZE) == -1) return;
  execve("/proc/self/exe", argv, envp);
}
#endif

void gm_fail(const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fprintf(stderr, "gemmini-model: error: %s%s%s (instruction #%llu funct=%llu rs1=0x%llx rs2=0x%llx)\n", what,
          gm_in_loop ? " inside " : "", gm_in_loop ? gm_in_loop : "", (unsigned long long)gm_insn_no,
          (unsigned long long)gm_cur_funct, (unsigned long long)gm_cur_rs1, (unsigned long long)gm_cur_rs2);
  in_model = 0;
  model_busy = 0;
  gm_guard_seal(); /* the model stops itself mid-instruction: its own state, not tampering */
  exit(3);
}

#ifdef GEMMINI_MODEL_SPIKE
#include "trusted_region.h"
#include "../include/speedpatch_functs.h" /* the numbers, shared with the harness and build.py's check */
/* the Spike harness hands over its verdict line: rs1 = address, rs2 = length */
#define F_VERDICT SPEEDPATCH_FUNCT_VERDICT
/* ... and marks its timed region, which the model measures and logs like gemmini_model_region_* natively
 * (no calls into the model exist on Spike). A kernel object may not issue any of these (build.py). */
#define F_REGION_BEGIN SPEEDPATCH_FUNCT_REGION_BEGIN
#define F_REGION_END SPEEDPATCH_FUNCT_REGION_END
/* ... and calls the kernel through its trampoline, which hands over its stack pointer (rs1) and the stack's
 * top (rs2) before the call and its stack pointer after: the harness's frames are checked as natively. */
#define F_KERNEL_ENTER SPEEDPATCH_FUNCT_KERNEL_ENTER
#define F_KERNEL_LEAVE SPEEDPATCH_FUNCT_KERNEL_LEAVE
#endif

static void host_segment(uintptr_t return_address, int basic_block);

static uint64_t rocc(uint64_t funct, uint64_t rs1, uint64_t rs2, uintptr_t return_address) {
  init();
  gm_guard_check("a Gemmini instruction");
  host_segment(return_address, 0);
#ifdef GEMMINI_MODEL_SPIKE
  if (funct == F_VERDICT) { /* not an accelerator instruction: nothing is counted or timed */
    char text[4096];
    const uint64_t n = rs2 < sizeof text ? rs2 : sizeof text;
    gm_host_memory_read(rs1, text, n);
    gemmini_model_verdict(text, n);
    return 0;
  }
  if (funct == F_KERNEL_ENTER) {
    gm_kernel_enter_at(rs1, rs2);
    return 0;
  }
  if (funct == F_KERNEL_LEAVE) {
    gm_kernel_leave_at(rs1);
    return 0;
  }
  if (funct == F_REGION_BEGIN) {
    gemmini_model_region_begin();
    return 0;
  }
  if (funct == F_REGION_END) {
    gemmini_model_region_t figures;
    gemmini_model_region_end(&figures);
    return 0;
  }
#endif
  gm_insn_no++;
  gm_cur_funct = funct, gm_cur_rs1 = rs1, gm_cur_rs2 = rs2;
  gm_in_loop = NULL;
  S.host_issued[funct < NUM_FUNCTS ? funct : NUM_FUNCTS - 1]++;
  if (funct != F_COUNTER) {
    region_check("a Gemmini instruction");
    work_insns++;
    region_seal = region_digest();
  }
  if (funct < NUM_FUNCTS && funct != F_LOOP_WS && funct != F_LOOP_CONV_WS) S.executed[funct]++;
  in_model = 1;
  model_busy = MODEL_BUSY_TOKEN;
  tm_host_begin();
  uint64_t rd = 0;
  switch (funct) {
  case F_CONFIG: gm_config(rs1, rs2); break;
  case F_MVIN: gm_mvin(rs1, rs2, 0); break;
  case F_MVIN2: gm_mvin(rs1, rs2, 1); break;
  case F_MVIN3: gm_mvin(rs1, rs2, 2); break;
  case F_MVOUT: gm_mvout(rs1, rs2); break;
  case F_PRELOAD: gm_preload(rs1, rs2); break;
  case F_COMPUTE_PRELOADED: gm_compute(rs1, rs2, 1); break;
  case F_COMPUTE_ACCUMULATE: gm_compute(rs1, rs2, 0); break;
  case F_FLUSH: gm_flush(); break;
  case F_LOOP_WS: gm_loop_ws(rs1, rs2); break;
  case F_LOOP_CONV_WS: gm_loop_conv_ws(rs1, rs2); break;
  case F_COUNTER: /* the counter module (functional.c): what the model counts, or an error naming the event */
    tm_frontend_only();
    rd = gm_counter(rs1);
    break;
  default:
    if (funct >= F_LOOP_WS_CONFIG_BOUNDS && funct <= F_LOOP_WS_CONFIG_STRIDES_DC) {
      gm_loop_ws_config(funct, rs1, rs2);
    } else if (funct >= F_LOOP_CONV_WS_CONFIG_1 && funct <= F_LOOP_CONV_WS_CONFIG_6) {
      gm_loop_conv_ws_config(funct, rs1, rs2);
    } else {
      gm_fail("unknown instruction funct=%llu", (unsigned long long)funct);
    }
  }
  tm_host_end();
  in_model = 0;
  model_busy = 0;
  gm_in_loop = NULL;
  gm_guard_seal();
  return rd;
}

GM_SCRUB uint64_t gemmini_model_rocc_rd(uint64_t funct, uint64_t rs1, uint64_t rs2) {
  return rocc(funct, rs1, rs2, (uintptr_t)__builtin_return_address(0));
}
GM_SCRUB void gemmini_model_rocc(uint64_t funct, uint64_t rs1, uint64_t rs2) {
  (void)rocc(funct, rs1, rs2, (uintptr_t)__builtin_return_address(0));
}

/* Functional effects already happened at issue; the fence only moves the host clock to the moment
 * everything outstanding has completed. */
GM_SCRUB void gemmini_model_fence(void) {
  init();
  gm_guard_check("a fence");
  host_segment((uintptr_t)__builtin_return_address(0), 0);
  S.fences++;
  tm_fence();
  gm_guard_seal();
}

void gemmini_model_declare_problem(uint64_t macs, uint64_t min_read_bytes, uint64_t min_write_bytes) {
  init();
  region_check("declare_problem");
  if (!declared) declared = 1, declared_macs = macs, declared_read = min_read_bytes, declared_write = min_write_bytes;
  region_seal = region_digest();
}

uint64_t gemmini_model_cycles(void) {
  init();
  gm_guard_check("read_cycles");
  host_segment((uintptr_t)__builtin_return_address(0), 0);
  region_check("read_cycles");
  S.cycle_reads++;
  S.last_cycles = T.host;
  if (S.cycle_reads % 2) {
    region_start = T.host, region_start_work = work_insns, region_start_macs = S.macs;
    region_start_read = S.dram_read_bytes, region_start_write = S.dram_write_bytes;
  } else {
    if (S.cycle_reads == 2) {
      first_pair_cycles = T.host - region_start, first_pair_macs = S.macs - region_start_macs;
      first_pair_read = S.dram_read_bytes - region_start_read;
      first_pair_write = S.dram_write_bytes - region_start_write;
    }
    if (work_insns > region_start_work) {
      const uint64_t end = T.all_done > T.host ? T.all_done : T.host;
      regions++;
      region_cycles += end - region_start;
      region_unfinished += end - T.host;
      region_macs += S.macs - region_start_macs;
    }
  }
  region_seal = region_digest();
  return T.host;
}

void gemmini_model_charge_host(uint64_t cycles) {
  gm_guard_check("host work");
  S.host_external_cycles += cycles;
  tm_charge_host(cycles);
  gm_guard_seal();
}

uint64_t gemmini_model_accelerator_done(void) { return T.all_done; }

/* ---- DRAM access ---- */

static void host_read(uint64_t addr, void *dst, uint64_t n) {
  if (gm_guard_owns(addr, n)) gm_fail("the accelerator was aimed at the model's own memory (DRAM address 0x%llx)", (unsigned long long)addr);
  memcpy(dst, (const void *)(uintptr_t)addr, n);
}
static void host_write(uint64_t addr, const void *src, uint64_t n) {
  if (gm_guard_owns(addr, n)) gm_fail("the accelerator was aimed at the model's own memory (DRAM address 0x%llx)", (unsigned long long)addr);
  memcpy((void *)(uintptr_t)addr, src, n);
}
static gemmini_model_read_fn dram_read = host_read;
static gemmini_model_write_fn dram_write = host_write;

void gemmini_model_set_memory(gemmini_model_read_fn read, gemmini_model_write_fn write) {
  dram_read = read ? read : host_read;
  dram_write = write ? write : host_write;
}

/* The program's memory as the model's own checks read it (the harness's stack frames): not accelerator
 * traffic, so the timing model does not see it. */
void gm_host_memory_read(uint64_t addr, void *dst, uint64_t n) {
#ifdef GEMMINI_MODEL_SPIKE
  dram_read(addr, dst, n);
#else
  /* not memcpy: the native link routes it through the charging wrapper, which would bill the program */
  const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)addr;
  for (uint64_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = src[i];
#endif
}

void gemmini_model_memory_fault(uint64_t addr) {
  gm_fail("invalid DRAM address 0x%llx touched by the accelerator", (unsigned long long)addr);
}

/* Every accelerator DRAM access is also a DMA piece for the cycle model (timing.c). */
void gm_dram_read(uint64_t addr, void *dst, uint64_t n) {
  tm_note_dram(addr, n, 0);
#ifdef GEMMINI_MODEL_SPIKE
  dram_read(addr, dst, n);
#else
  /* Natively a direct call: the two pointers are writable memory, and a program that pointed them at a copy
   * without the own-memory check would have the model itself write (and seal) a forged clock. */
  (void)dram_read;
  host_read(addr, dst, n);
#endif
}
void gm_dram_write(uint64_t addr, const void *src, uint64_t n) {
  tm_note_dram(addr, n, 1);
#ifdef GEMMINI_MODEL_SPIKE
  dram_write(addr, src, n);
#else
  (void)dram_write;
  host_write(addr, src, n);
#endif
}

/* ---- host work ---- */

/* Instructions per basic block, keyed by the block's return address from its trace-pc call (as an
 * offset from __executable_start). build.py writes the table next to the executable
 * (<exe>.blocks: lines "offset_hex count"); without it every block costs T_HOST_CYCLES_PER_BLOCK. */
extern char __executable_start __attribute__((weak));
/* The table, and the page that says where it is, are read-only once loaded (natively): a kernel that finds
 * its own blocks' entries in memory could zero them while it runs and put them back before the region's
 * digest check (a 2,000-iteration host loop measured 98,191 cycles, 26,359 with its entries zeroed). */
static union {
  struct {
    uint64_t *keys;
    uint32_t *sizes;
    uint64_t mask;
    int started; /* the model has started (read-only from then on, see init) */
  } t;
  char page[4096];
} block_table __attribute__((aligned(4096)));

static int model_started(void) { return block_table.t.started; }
#define block_keys (block_table.t.keys)
#define block_sizes (block_table.t.sizes)
#define block_mask (block_table.t.mask)

static void *table_alloc(size_t bytes) {
#ifdef GEMMINI_MODEL_SPIKE
  return calloc(1, bytes);
#else
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
#endif
}

static void load_block_table_file(void);

static void load_block_table(void) {
  load_block_table_file();
  block_table.t.started = 1;
#ifndef GEMMINI_MODEL_SPIKE
  const uint64_t size = block_keys ? block_mask + 1 : 0;
  if (size) {
    mprotect(block_keys, size * sizeof *block_keys, PROT_READ);
    mprotect(block_sizes, size * sizeof *block_sizes, PROT_READ);
  }
  mprotect(&block_table, sizeof block_table, PROT_READ);
#endif
}

static uint64_t hash64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

static void load_block_table_file(void) {
  char path[4096];
  const char *env = getenv("GEMMINI_MODEL_BLOCKS");
  if (env && *env) {
    snprintf(path, sizeof path, "%s", env);
  } else {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 8);
    if (n <= 0) return;
    memcpy(path + n, ".blocks", 8);
  }
  FILE *f = fopen(path, "r");
  if (!f || !&__executable_start) {
    if (f) fclose(f);
    return;
  }
  unsigned long long key;
  unsigned count;
  size_t n = 0;
  while (fscanf(f, "%llx %u", &key, &count) == 2) n++;
  uint64_t size = 16;
  while (size < 2 * n + 16) size <<= 1;
  block_keys = table_alloc(size * sizeof *block_keys);
  block_sizes = table_alloc(size * sizeof *block_sizes);
  if (!block_keys || !block_sizes) {
    block_keys = NULL; /* every block then costs the constant */
    fclose(f);
    return;
  }
  block_mask = size - 1;
  rewind(f);
  while (fscanf(f, "%llx %u", &key, &count) == 2) {
    uint64_t k = (uint64_t)key + 1; /* 0 marks an empty slot */
    uint64_t i = hash64(k) & block_mask;
    while (block_keys[i] && block_keys[i] != k) i = (i + 1) & block_mask;
    block_keys[i] = k;
    block_sizes[i] = count;
  }
  fclose(f);
}

uint64_t gm_block_table_digest(void) {
  uint64_t h = block_mask + 1;
  if (block_keys)
    for (uint64_t i = 0; i <= block_mask; i++) h = hash64(h ^ block_keys[i] ^ ((uint64_t)block_sizes[i] << 40)) + i;
  return h;
}

/* Instructions of the host-work segment that starts at this return address (build.py's table), or -1 when
 * the table does not list it. */
static int64_t segment_insns(uintptr_t return_address) {
  if (!block_keys) return -1;
  uint64_t k = (uint64_t)(return_address - (uintptr_t)&__executable_start) + 1;
  for (uint64_t i = hash64(k) & block_mask; block_keys[i]; i = (i + 1) & block_mask)
    if (block_keys[i] == k) return block_sizes[i];
  return -1;
}

/* A segment of host work starts at return_address: the one before it is charged now (its instructions ran
 * before this point), this one's when the next starts. A call into the model from code the table does not
 * list (the trusted harness) starts an empty segment. */
static void host_segment(uintptr_t return_address, int basic_block) {
  const int64_t insns = segment_insns(return_address);
  uint64_t cycles = 0;
  if (insns >= 0) {
    S.host_instructions += (uint64_t)insns;
    cycles = (uint64_t)insns * T_HOST_CYCLES_PER_INSN;
  } else if (basic_block) {
    cycles = T_HOST_CYCLES_PER_BLOCK;
  }
  S.host_block_cycles += gm_host_pending;
  gm_guard_host_segment(cycles);
}

/* Called by the compiler at every basic block of code built with -fsanitize-coverage=trace-pc (the
 * user's file, library headers included): host computation costs cycles like on the real core. */
GM_SCRUB void __sanitizer_cov_trace_pc(void) {
  S.host_blocks++;
  host_segment((uintptr_t)__builtin_return_address(0), 1);
}

/* What a memcpy/memmove (set = 0) or memset (set = 1) of n bytes called from the program costs the host. */
uint64_t gemmini_model_copy_cycles(uint64_t n, int set) {
  return T_HOST_CALL_CYCLES + n / (set ? T_HOST_SET_BYTES_PER_CYCLE : T_HOST_COPY_BYTES_PER_CYCLE);
}

#ifdef GEMMINI_MODEL_WRAP_LIBC
/* The native link routes the user's memcpy/memmove/memset through these (-Wl,--wrap=...), because libc
 * is not instrumented: copying data on the host is work, whether written as a loop or as a call. */
void *__real_memcpy(void *dst, const void *src, size_t n);
void *__real_memmove(void *dst, const void *src, size_t n);
void *__real_memset(void *dst, int value, size_t n);

/* The model's own calls (its memcpy, functional.c's nearbyintf) are not the program's work. */
static void charge_program(uint64_t cycles) {
  const int models_own = in_model && gm_guard_key && model_busy == MODEL_BUSY_TOKEN;
  if (!models_own && model_started()) gm_guard_host_add(cycles);
}
static void charge_libc(size_t n, int set) { charge_program(gemmini_model_copy_cycles(n, set)); }
GM_SCRUB void *__wrap_memcpy(void *dst, const void *src, size_t n) {
  charge_libc(n, 0);
  return __real_memcpy(dst, src, n);
}
GM_SCRUB void *__wrap_memmove(void *dst, const void *src, size_t n) {
  charge_libc(n, 0);
  return __real_memmove(dst, src, n);
}
GM_SCRUB void *__wrap_memset(void *dst, int value, size_t n) {
  charge_libc(n, 1);
  return __real_memset(dst, value, n);
}

/* Math library calls, charged what they retire on the RISC-V core (host_calls.h). */
#define GM_WRAP_1(ret, name, arg, insns)                                \
  ret __real_##name(arg);                                               \
  ret __wrap_##name(arg x);                                             \
  GM_SCRUB ret __wrap_##name(arg x) {                                   \
    charge_program((uint64_t)(insns) * T_HOST_CYCLES_PER_INSN);        \
    return __real_##name(x);                                            \
  }
#define GM_WRAP_2(ret, name, arg, insns)                                \
  ret __real_##name(arg, arg);                                          \
  ret __wrap_##name(arg x, arg y);                                      \
  GM_SCRUB ret __wrap_##name(arg x, arg y) {                            \
    charge_program((uint64_t)(insns) * T_HOST_CYCLES_PER_INSN);        \
    return __real_##name(x, y);                                         \
  }
#define GM_WRAP(ret, name, n, arg, insns) GM_WRAP_##n(ret, name, arg, insns)
GM_LIBM_CALLS(GM_WRAP)
#undef GM_WRAP
#undef GM_WRAP_1
#undef GM_WRAP_2
#endif
