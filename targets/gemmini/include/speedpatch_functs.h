/* The RoCC funct numbers speedpatch's trusted side uses on Spike, in one place.
 *
 * Gemmini's own instructions are funct 0-21 and 126 (gemmini.h). These are not accelerator work: the
 * model inside Spike (model/runtime.c, spike/gemmini_spike.cc) takes them as messages from the trusted
 * harness (include/speedpatch_harness.h), the library copy wrappers (spike/host_copies.c) and the
 * bare-metal runtime (spike/console.c, start.S).
 * A kernel that issued one could restart or end the timed region, open or close the checked kernel call
 * with a stack pointer of its choice, leave its own instructions uncounted, hand over a verdict line, or
 * end the run:
 * build.py refuses all of them in kernel objects (build.HARNESS_FUNCTS is read from this file).
 *
 * Plain integer literals only (build.py reads `#define SPEEDPATCH_FUNCT_<NAME> <number>` lines), so that
 * the inline assembly strings can use them through SPEEDPATCH_FUNCT_STR. */
#ifndef SPEEDPATCH_FUNCTS_H
#define SPEEDPATCH_FUNCTS_H

/* the program's console and exit on Spike (spike/console.c, start.S's trap exit): write rs2 bytes at rs1 to the
 * simulator's stdout; end the simulation with exit status rs1. They replace HTIF, whose system-call proxy
 * let any code of the program open, read and write host files (the model's statistics, /proc/self/mem) */
#define SPEEDPATCH_FUNCT_EXIT 117
#define SPEEDPATCH_FUNCT_CONSOLE 118
/* the checked kernel call: the harness's trampoline hands over its stack pointer (rs1) and the stack's top
 * (rs2) before the call (ENTER), and its stack pointer again after it (LEAVE); the model compares */
#define SPEEDPATCH_FUNCT_KERNEL_LEAVE 119
#define SPEEDPATCH_FUNCT_KERNEL_ENTER 120
/* a library memcpy/memmove/memset: its size (rs1) and kind (rs2: 1 = set) before (BEGINS), charged by the
 * model's rule, and its end (ENDS): the instructions in between are not counted */
#define SPEEDPATCH_FUNCT_COPY_ENDS 121
#define SPEEDPATCH_FUNCT_COPY_BEGINS 122
/* the timed region's start and end, measured and logged by the model */
#define SPEEDPATCH_FUNCT_REGION_BEGIN 123
#define SPEEDPATCH_FUNCT_REGION_END 124
/* the verdict line's hand-over: rs1 = address, rs2 = length; the model puts its hash in the statistics */
#define SPEEDPATCH_FUNCT_VERDICT 125

/* a funct as text, for `.insn r 0x7b, 3, <funct>, ...` inside an asm string */
#define SPEEDPATCH_FUNCT_STR_(n) #n
#define SPEEDPATCH_FUNCT_STR(n) SPEEDPATCH_FUNCT_STR_(n)

#endif
