/* Shared state and helpers of the native Gemmini model (not part of its public interface). */
#ifndef GEMMINI_MODEL_INTERNAL_H
#define GEMMINI_MODEL_INTERNAL_H

#include <stdint.h>

#include <gemmini_params.h>

#include "timing_params.h"

#define SPAD_ROWS ((uint32_t)BANK_NUM * (uint32_t)BANK_ROWS)
#define GARBAGE_LOCAL 0xFFFFFFFFu
#define NUM_FUNCTS 128

/* On the model's entry points that return into the program's code (RoCC, fence, the trace-pc hook, the
 * charging wrappers, the checked kernel call's entry): clear every call-clobbered register on return. The
 * program owns them after a call, and they held the model's working values: the seal key itself was in r8
 * after each trace-pc hook and at the kernel's entry, and the key XOR a constant in xmm1's upper half, which
 * a kernel reads as extra parameters of an old-style (unprototyped) function it calls, with no memory access
 * (red-team, tests/security/test_gemmini_register_attacks.py). Natively only: inside Spike the program never
 * sees the host's registers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && !defined(GEMMINI_MODEL_SPIKE)
#define GM_SCRUB __attribute__((zero_call_used_regs("all")))
#else
#define GM_SCRUB
#endif

/* Instruction numbers (funct field). */
enum {
  F_CONFIG = 0, F_MVIN2 = 1, F_MVIN = 2, F_MVOUT = 3, F_COMPUTE_PRELOADED = 4, F_COMPUTE_ACCUMULATE = 5,
  F_PRELOAD = 6, F_FLUSH = 7, F_LOOP_WS = 8, F_LOOP_WS_CONFIG_BOUNDS = 9, F_LOOP_WS_CONFIG_ADDRS_AB = 10,
  F_LOOP_WS_CONFIG_ADDRS_DC = 11, F_LOOP_WS_CONFIG_STRIDES_AB = 12, F_LOOP_WS_CONFIG_STRIDES_DC = 13,
  F_MVIN3 = 14, F_LOOP_CONV_WS = 15, F_LOOP_CONV_WS_CONFIG_1 = 16, F_LOOP_CONV_WS_CONFIG_6 = 21,
  F_COUNTER = 126
};

enum { DF_OS = 0, DF_WS = 1 };
enum { ACT_NONE = 0, ACT_RELU = 1 }; /* 2 LayerNorm, 3 iGELU, 4 softmax: functional.c, with HAS_NORMALIZATIONS */
enum { U_LOAD = 0, U_EX = 1, U_STORE = 2, U_NUM = 3 };
enum { MEM_SPAD = 0, MEM_ACC = 1 };

typedef struct {
  /* storage */
  elem_t spad[BANK_NUM * BANK_ROWS][DIM];
  acc_t acc[ACC_ROWS][DIM];
  acc_t pe[DIM][DIM]; /* WS: the preloaded weights; OS: the running sums */

  /* CONFIG_EX */
  int dataflow, sys_act, a_transpose, b_transpose;
  uint32_t sys_shift, a_stride, c_stride;

  /* CONFIG_LD, one per load slot (mvin, mvin2, mvin3) */
  uint64_t ld_stride[3];
  uint32_t ld_block_stride[3], ld_pixels[3];
  int ld_shrunk[3];
  float ld_scale[3];

  /* CONFIG_ST */
  uint64_t st_stride;
  int acc_act;
  float acc_scale;
  uint32_t pool_stride, pool_size, pool_upad, pool_lpad, pool_out_dim, pool_porows, pool_pocols,
      pool_orows, pool_ocols;

  /* PRELOAD */
  uint32_t preload_addr, output_addr, preload_rows, preload_cols, output_rows, output_cols;
  uint32_t preload_streamed; /* rows the last PRELOAD shifts in (timing) */

  /* LOOP_WS configuration */
  uint32_t lw_I, lw_J, lw_K, lw_pad_I, lw_pad_J, lw_pad_K;
  uint64_t lw_A, lw_B, lw_D, lw_C, lw_A_stride, lw_B_stride, lw_D_stride, lw_C_stride;
  uint32_t lw_slot; /* the loop unit's slot the next LOOP_WS runs in (0/1): its scratchpad half for id 0 */

  /* LOOP_CONV_WS configuration */
  uint32_t lc_batch_size, lc_in_row_dim, lc_in_col_dim, lc_in_channels, lc_out_channels, lc_out_row_dim,
      lc_pool_out_row_dim, lc_out_col_dim, lc_stride, lc_padding, lc_kernel_dim, lc_pool_out_col_dim,
      lc_pool_size, lc_pool_stride, lc_pool_padding, lc_batches, lc_porows, lc_pocols, lc_pochs, lc_krows,
      lc_kcols, lc_kchs, lc_lpad, lc_rpad, lc_upad, lc_dpad, lc_plpad, lc_prad, lc_pupad, lc_pdpad,
      lc_orows, lc_ocols, lc_kernel_dilation, lc_in_stride, lc_weight_stride, lc_out_stride;
  uint64_t lc_weights, lc_output, lc_bias, lc_input;
  uint32_t lc_D_row, lc_C_row; /* accumulator halves alternate between successive conv loops */
  uint32_t lc_slot; /* the conv loop unit's slot the next LOOP_CONV_WS runs in (0/1) */
} gm_state_t;

typedef struct {
  uint64_t host_issued[NUM_FUNCTS];  /* RoCC instructions the program issued, per funct */
  uint64_t executed[NUM_FUNCTS];     /* including those the hardware loops generated */
  uint64_t macs;                     /* useful multiply-accumulates (rows x cols x depth of each compute) */
  uint64_t host_blocks;              /* basic blocks of the user file executed (trace-pc) */
  uint64_t host_instructions;        /* their instructions, where the block table knows them */
  uint64_t host_block_cycles;        /* host cycles charged for them */
  uint64_t host_external_cycles;     /* host cycles charged by a simulator wrapper (Spike: instructions) */
  uint64_t fences, cycle_reads, last_cycles;
  uint64_t dram_read_bytes, dram_write_bytes;
  int64_t max_spad_row, max_acc_row;
  uint64_t spad_rows_touched, acc_rows_touched;
  uint8_t spad_touched[BANK_NUM * BANK_ROWS];
  uint8_t acc_touched[ACC_ROWS];
} gm_stats_t;

extern gm_state_t G;
extern gm_stats_t S;

/* Error context: the host instruction being executed and, inside a hardware loop, which loop. */
extern uint64_t gm_insn_no, gm_cur_funct, gm_cur_rs1, gm_cur_rs2;
extern const char *gm_in_loop;

__attribute__((noreturn, format(printf, 1, 2))) void gm_fail(const char *fmt, ...);

/* DRAM as the accelerator sees it: host memory natively, the simulated memory under Spike
 * (gemmini_model_set_memory in gemmini_model.h). */
void gm_dram_read(uint64_t addr, void *dst, uint64_t n);
void gm_dram_write(uint64_t addr, const void *src, uint64_t n);

/* functional.c: one instruction each, functional effect plus its cycle-model scheduling */
void gm_reset(void);
void gm_config(uint64_t rs1, uint64_t rs2);
void gm_mvin(uint64_t dram, uint64_t local, int slot);
void gm_mvout(uint64_t dram, uint64_t local);
void gm_preload(uint64_t bd, uint64_t c);
void gm_compute(uint64_t a, uint64_t bd, int preload);
void gm_flush(void);

/* loops.c: the hardware loops and their configuration instructions */
void gm_loop_ws_config(uint64_t funct, uint64_t rs1, uint64_t rs2);
void gm_loop_ws(uint64_t rs1, uint64_t rs2);
void gm_loop_conv_ws_config(uint64_t funct, uint64_t rs1, uint64_t rs2);
void gm_loop_conv_ws(uint64_t rs1, uint64_t rs2);

/* timing.c: the cycle model */
typedef struct {
  uint64_t host;        /* host clock: what read_cycles returns */
  uint64_t next_issue;  /* earliest cycle the frontend hands the next command to a queue */
  uint64_t all_done;    /* completion of everything issued so far */
  uint64_t busy[U_NUM]; /* cycles each unit was occupied */
} gm_clock_t;
extern gm_clock_t T;

void tm_reset(void);
void tm_read(int mem, uint32_t first, uint32_t count, uint32_t stride);
void tm_write(int mem, uint32_t first, uint32_t count, uint32_t stride);
/* One DRAM access of the command being executed (runtime.c's gm_dram_read/gm_dram_write call it): the
 * cycle model moves these pieces through its DMA, L2 and DRAM when the command is scheduled. */
void tm_note_dram(uint64_t addr, uint64_t n, int write);
/* Schedules the command whose dependencies were just declared; returns its completion cycle. */
uint64_t tm_schedule(int unit, uint64_t occupancy, uint64_t latency, uint64_t dram_cycles);
void tm_frontend_only(void);   /* a raw command that only passes the front end (waits for idle loops) */
void tm_frontend_loop(void);   /* a loop configuration or loop start (waits for a free loop slot) */
/* Commands generated by a hardware loop follow, until tm_loop_end. alternate_acc: the loop stores C to
 * DRAM, so the hardware puts its accumulator rows (acc_rows_used of them) in the other half. */
void tm_loop_begin(int alternate_acc, uint32_t acc_rows_used);
void tm_loop_end(void);
/* The loop's `later` stream issues nothing before its `earlier` stream has issued everything so far. */
void tm_loop_stage(int earlier, int later);
void tm_host_begin(void);      /* a host RoCC instruction starts */
void tm_host_end(void);        /* ... and ends: the host waits until its first command was accepted */
void tm_fence(void);
void tm_charge_host(uint64_t cycles);
uint64_t tm_dma_cycles(uint64_t rows, uint64_t row_bytes);
/* Gets, Puts, L2 hits, L2 misses, dirty write-backs so far. */
#define TM_MEMORY_STATS 7 /* gets, puts, l2_hits, l2_misses, writebacks, tlb_misses, gets_behind_fill */
void tm_memory_stats(uint64_t out[TM_MEMORY_STATS]);

#endif /* GEMMINI_MODEL_INTERNAL_H */
