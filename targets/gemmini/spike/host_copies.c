/* memcpy/memmove/memset on Spike cost what they cost natively.
 *
 * Natively libc is not instrumented, so the model charges a library copy by its bytes
 * (gemmini_model_copy_cycles). On Spike every retired instruction is host work, and picolibc's copies
 * are a byte loop there (about six instructions a byte): the same kernel measured 47,143 cycles natively
 * and 800,706 on Spike, and re-verification would have called its honest figure forged. The link routes
 * the program's calls through these wrappers (-Wl,--wrap), which tell the model inside Spike the copy's
 * size (RoCC funct SPEEDPATCH_FUNCT_COPY_BEGINS, charged by the model's rule) and that it ended
 * (SPEEDPATCH_FUNCT_COPY_ENDS; include/speedpatch_functs.h): the extension leaves
 * the instructions in between uncounted. A kernel object may issue neither (build.py). */
#include <stddef.h>
#include <stdint.h>

#include "../include/speedpatch_functs.h"

void *__real_memcpy(void *dst, const void *src, size_t n);
void *__real_memmove(void *dst, const void *src, size_t n);
void *__real_memset(void *dst, int value, size_t n);

/* custom-3 R-type with rs1 and rs2 read and no rd (funct3 = 3), as gemmini.h's RoCC macros emit it */
#define COPY_BEGINS(n, set)                                                                             \
  __asm__ volatile(".insn r 0x7b, 3, " SPEEDPATCH_FUNCT_STR(SPEEDPATCH_FUNCT_COPY_BEGINS) ", x0, %0, %1" \
                   :                                                                              \
                   : "r"((uint64_t)(n)), "r"((uint64_t)(set))                                      \
                   : "memory")
#define COPY_ENDS() \
  __asm__ volatile(".insn r 0x7b, 3, " SPEEDPATCH_FUNCT_STR(SPEEDPATCH_FUNCT_COPY_ENDS) ", x0, x0, x0" : : : "memory")

void *__wrap_memcpy(void *dst, const void *src, size_t n) {
  COPY_BEGINS(n, 0);
  void *r = __real_memcpy(dst, src, n);
  COPY_ENDS();
  return r;
}

void *__wrap_memmove(void *dst, const void *src, size_t n) {
  COPY_BEGINS(n, 0);
  void *r = __real_memmove(dst, src, n);
  COPY_ENDS();
  return r;
}

void *__wrap_memset(void *dst, int value, size_t n) {
  COPY_BEGINS(n, 1);
  void *r = __real_memset(dst, value, n);
  COPY_ENDS();
  return r;
}
