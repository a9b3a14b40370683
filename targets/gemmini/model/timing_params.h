/* Every timing parameter of the Gemmini cycle model, in one place.
 *
 * Starting values follow the published defaults of a Gemmini timing model (see README.md): queues of
 * 8/16/4 entries, DMA requests of up to 64 bytes, ~8 bytes/cycle of DRAM bandwidth plus latency, a mesh latency of
 * about 2*DIM+1 cycles, about one RoCC instruction per host instruction, and host work that is not free.
 * Sizes (DIM, rows) come from gemmini_params.h; nothing here depends on a particular configuration
 * except through DIM.
 */
#ifndef GEMMINI_TIMING_PARAMS_H
#define GEMMINI_TIMING_PARAMS_H

/* ---- host core ---- */
#define T_HOST_CYCLES_PER_INSN 1   /* host cycles per instruction of an executed basic block of the user
                                      file (-fsanitize-coverage=trace-pc; block sizes from the build's
                                      block table): an in-order core at ~1 IPC */
#define T_HOST_CYCLES_PER_BLOCK 4  /* used instead when a block's size is unknown (no block table) */
#define T_HOST_CALL_CYCLES 10      /* memcpy/memmove/memset called from the user file: call overhead ... */
#define T_HOST_COPY_BYTES_PER_CYCLE 4 /* ... plus bytes copied at this rate (8-byte loads and stores) */
#define T_HOST_SET_BYTES_PER_CYCLE 8  /* ... or bytes set at this rate (8-byte stores) */
#define T_ROCC_ISSUE_CYCLES 2      /* host cycles to issue one RoCC instruction (operands + handshake) */
#define T_FENCE_CYCLES 4           /* host cycles a fence costs on top of waiting for the accelerator */

/* ---- command frontend ---- */
#define T_FRONTEND_CYCLES 1        /* cycles between two commands entering the queues (hardware loops too) */

/* ---- reservation-station queues (entries; an entry is freed when its command completes) ---- */
#define T_LOAD_QUEUE 8             /* mvin, mvin2, mvin3, config_ld */
#define T_EX_QUEUE 16              /* preload, compute, config_ex, flush */
#define T_STORE_QUEUE 4            /* mvout, config_st */

/* ---- DMA and DRAM (one read channel for loads, one write channel for stores) ---- */
#define T_DMA_REQUEST_BYTES 64     /* largest DMA request: each row of a mvin/mvout is split into requests
                                      of at most this many bytes */
#define T_BUS_BYTES 16             /* memory bus width: a request moves whole beats of this size */
#define T_DRAM_BYTES_PER_CYCLE 8   /* sustained DRAM bandwidth, per direction */
#define T_DRAM_LATENCY 80          /* cycles from a read request to its data (and for write acks) */
#define T_DMA_MAX_INFLIGHT 16      /* requests in flight: with the latency, narrow requests are bounded by
                                      T_DMA_MAX_INFLIGHT requests per T_DRAM_LATENCY cycles */
#define T_DMA_CMD_OVERHEAD 4       /* cycles to decode a mvin/mvout and translate its address */

/* ---- scratchpad / accumulator ports ---- */
#define T_SPAD_ROW_CYCLES 1        /* cycles per row written or read by the DMA side */
#define T_ACC_READ_LATENCY 4       /* accumulator read + scale + activation pipeline on mvout */

/* ---- execute (mesh) ---- */
#define T_MESH_LATENCY (2 * DIM + 1) /* cycles from the first operand row entering the mesh to the
                                        last result row leaving it (fill + drain) */
#define T_EX_ROW_CYCLES 1          /* cycles per operand row streamed into the mesh */
#define T_EX_CMD_OVERHEAD 1        /* cycles for a command that streams nothing (config, garbage preload) */

#endif /* GEMMINI_TIMING_PARAMS_H */
