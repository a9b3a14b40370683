/* The native Gemmini model: what a program compiled for the host calls instead of the accelerator.
 *
 * gemmini_model_rocc   one RoCC instruction (funct, rs1, rs2) as the custom-3 instruction would carry it.
 *                      The functional effect happens at once (memory written by mvout is readable right
 *                      after the call); the cycle model schedules the same instruction on its queues.
 * gemmini_model_fence  the RISC-V `fence`: the host clock waits for all outstanding accelerator work.
 * gemmini_model_cycles the host clock in cycles (what `rdcycle` returns on the modelled core).
 */
#ifndef GEMMINI_MODEL_H
#define GEMMINI_MODEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void gemmini_model_rocc(uint64_t funct, uint64_t rs1, uint64_t rs2);
uint64_t gemmini_model_rocc_rd(uint64_t funct, uint64_t rs1, uint64_t rs2);
void gemmini_model_fence(void);
uint64_t gemmini_model_cycles(void);
/* The speedpatch harness's problem (array MACs, least DRAM bytes read and written), declared before any
 * kernel runs; the first declaration stands. */
void gemmini_model_declare_problem(uint64_t macs, uint64_t min_read_bytes, uint64_t min_write_bytes);

/* Host work that the trace-pc hook cannot see (e.g. a Spike wrapper counting instructions itself). */
void gemmini_model_charge_host(uint64_t cycles);
/* What the host pays for a library memcpy/memmove (set = 0) or memset (set = 1) of n bytes, on every
 * platform the same: natively libc is not instrumented, on Spike picolibc's own loop is not counted. */
uint64_t gemmini_model_copy_cycles(uint64_t n, int set);

/* Where DRAM is, for a simulator that has its own memory (Spike): both functions copy n bytes and
 * report a bad address by calling gemmini_model_memory_fault. Natively (the default) DRAM is host memory. */
typedef void (*gemmini_model_read_fn)(uint64_t addr, void *dst, uint64_t n);
typedef void (*gemmini_model_write_fn)(uint64_t addr, const void *src, uint64_t n);
void gemmini_model_set_memory(gemmini_model_read_fn read, gemmini_model_write_fn write);
__attribute__((noreturn)) void gemmini_model_memory_fault(uint64_t addr);

/* The model's clocks at this moment: the host clock and the completion of all issued work. */
uint64_t gemmini_model_accelerator_done(void);

#ifdef __cplusplus
}
#endif

#endif /* GEMMINI_MODEL_H */
