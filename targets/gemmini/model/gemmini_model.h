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

/* Host work that the trace-pc hook cannot see (e.g. a Spike wrapper counting instructions itself). */
void gemmini_model_charge_host(uint64_t cycles);

#ifdef __cplusplus
}
#endif

#endif /* GEMMINI_MODEL_H */
