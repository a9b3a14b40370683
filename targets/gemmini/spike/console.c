/* The bare-metal program's console and exit on Spike, through the Gemmini extension (RoCC functs
 * SPEEDPATCH_FUNCT_CONSOLE and SPEEDPATCH_FUNCT_EXIT, include/speedpatch_functs.h), hooked into picolibc's
 * stdio, line-buffered.
 *
 * Not HTIF: a program with `tohost`/`fromhost` symbols gets Spike's front-end system-call proxy, and any
 * code of the program could write a request there. A kernel opened and read /proc/self/maps of the Spike
 * process that way (red-team, tests/security/test_gemmini_spike_attacks.py); with openat/write/unlinkat it
 * could have replaced the model's statistics file or written the model's memory (/proc/self/mem). Without
 * the symbols Spike has no channel to the host but the extension. */
#include <stdint.h>
#include <stdio.h>

#include "../include/speedpatch_functs.h"

#define ROCC_RS1_RS2(funct, rs1, rs2)                                                                \
  __asm__ volatile(".insn r 0x7b, 3, " SPEEDPATCH_FUNCT_STR(funct) ", x0, %0, %1"                   \
                   :                                                                              \
                   : "r"((uint64_t)(rs1)), "r"((uint64_t)(rs2))                                    \
                   : "memory")

static char line[256];
static unsigned line_len;

static void flush_line(void) {
  if (line_len) ROCC_RS1_RS2(SPEEDPATCH_FUNCT_CONSOLE, (uintptr_t)line, line_len);
  line_len = 0;
}

static int console_putc(char c, FILE *file) {
  (void)file;
  line[line_len++] = c;
  if (c == '\n' || line_len == sizeof line) flush_line();
  return (uint8_t)c;
}

static FILE console_stdio = FDEV_SETUP_STREAM(console_putc, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &console_stdio;
FILE *const stdout = &console_stdio;
FILE *const stderr = &console_stdio;

void _exit(int code) {
  flush_line();
  for (;;) ROCC_RS1_RS2(SPEEDPATCH_FUNCT_EXIT, (unsigned)code, 0);
}
