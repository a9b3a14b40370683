/* Bare-metal start for Spike: trap vector, FPU on, code and constants made read-only, stack, thread
 * pointer (picolibc keeps errno in TLS), zeroed .bss, main(), then exit through the Gemmini extension (spike/console.c). A trap (illegal
 * instruction, bad address, a store into code) ends the run with exit status 128 + mcause instead of
 * looping forever. */
#include "../include/speedpatch_functs.h"

  .section .text.start, "ax"
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la t0, trap_exit
  csrw mtvec, t0
  li t0, (1 << 13)          /* mstatus.FS = initial: the program may use the FPU */
  csrs mstatus, t0
  csrwi fcsr, 0
  /* The program runs in machine mode, where memory is writable and executable unless a LOCKED
   * physical-memory-protection entry says otherwise (privileged spec, PMP: L applies the entry to M-mode
   * too, until reset). Three top-of-range entries:
   *   0: [0, __text_end) code: readable and executable, not writable. Without it the one RWX image let a
   *      kernel rewrite the harness's code that runs after it returns.
   *   1: [__text_end, __readonly_end) constants (the harness's compiled-in secrets among them): read only.
   *   2: everything above (data, heap, stack, the rest of memory): readable and writable, not executable.
   * Without 1 and 2 a kernel wrote instruction words into its own array (static or const) and "returned"
   * into them through its rewritten return address: code the kernel object's inspection never saw, which
   * wrote minstret and dropped 500,000 instructions of host work from the figure (red-team,
   * tests/security/test_gemmini_spike_attacks.py). Kernel objects may not touch CSRs. */
  la t0, __text_end
  srli t0, t0, 2
  csrw pmpaddr0, t0
  la t0, __readonly_end
  srli t0, t0, 2
  csrw pmpaddr1, t0
  li t0, -1                 /* the top of the address space */
  csrw pmpaddr2, t0
  li t0, 0x8b898d           /* 2: L | A=TOR | W | R; 1: L | A=TOR | R; 0: L | A=TOR | X | R */
  csrw pmpcfg0, t0
  la sp, __stack_top
  la tp, __tdata_start
  la t0, __bss_start
  la t1, __bss_end
1:
  bgeu t0, t1, 2f
  sd zero, 0(t0)
  addi t0, t0, 8
  j 1b
2:
  li a0, 0
  li a1, 0
  call main
  call exit
3:
  j 3b

  .align 2
trap_exit:
  csrr t0, mcause
  addi t0, t0, 128
4:
  .insn r 0x7b, 3, SPEEDPATCH_FUNCT_EXIT, x0, t0, x0   /* exit status 128 + mcause (spike/console.c) */
  j 4b
