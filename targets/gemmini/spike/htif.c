/* HTIF: how a bare-metal program on Spike talks to the host. Output goes through the proxied write
 * system call (tohost = address of a request block, the host answers in fromhost); exit is
 * tohost = code << 1 | 1. Hooked into picolibc's stdio, line-buffered. */
#include <stdint.h>
#include <stdio.h>

volatile uint64_t tohost __attribute__((section(".tohost"), aligned(64)));
volatile uint64_t fromhost __attribute__((section(".tohost"), aligned(64)));

#define SYS_WRITE 64

static void host_syscall(uint64_t which, uint64_t a0, uint64_t a1, uint64_t a2) {
  static volatile uint64_t request[8] __attribute__((aligned(64)));
  request[0] = which;
  request[1] = a0;
  request[2] = a1;
  request[3] = a2;
  __sync_synchronize();
  tohost = (uint64_t)(uintptr_t)request;
  while (fromhost == 0) {
  }
  fromhost = 0;
  __sync_synchronize();
}

static char line[256];
static unsigned line_len;

static void flush_line(void) {
  if (line_len) host_syscall(SYS_WRITE, 1, (uint64_t)(uintptr_t)line, line_len);
  line_len = 0;
}

static int htif_putc(char c, FILE *file) {
  (void)file;
  line[line_len++] = c;
  if (c == '\n' || line_len == sizeof line) flush_line();
  return (uint8_t)c;
}

static FILE htif_stdio = FDEV_SETUP_STREAM(htif_putc, NULL, NULL, _FDEV_SETUP_WRITE);
FILE *const stdin = &htif_stdio;
FILE *const stdout = &htif_stdio;
FILE *const stderr = &htif_stdio;

void _exit(int code) {
  flush_line();
  for (;;) tohost = ((uint64_t)(unsigned)code << 1) | 1;
}
