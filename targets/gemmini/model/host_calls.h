/* What a call from the program into the math library costs the host, natively.
 *
 * The native build charges the program's own code by its instructions (the trace-pc hook), but libm itself is
 * not instrumented: without a charge, expf() would cost the program only its calling block, while on the
 * RISC-V core (and on gemmini-spike, which counts every retired instruction) it runs its ~90 instructions. A
 * kernel doing host math through libm then looked faster natively than it is, and re-verification on Spike
 * rejected honest winners for the gap. The native link routes these calls through charging wrappers
 * (-Wl,--wrap, names read from this list by build.py), as it does memcpy/memmove/memset. A kernel may call
 * exactly these math functions, and sqrt, fabs and lround (build.ALLOWED_CALLS).
 *
 * Each cost is the RISC-V instructions one direct call retires with picolibc, the library the Spike build
 * links, as benchmarks/gemmini_host_call_costs.py measures it (Debian picolibc-riscv64-unknown-elf 1.8,
 * riscv64-unknown-elf-gcc 12.2, -march=rv64gc -O2; Spike's minstret around one call, the mean over 64
 * arguments spread over [-8, 8], logarithms over (0.05, 8], powers a base in (0.1, 4.1] and an exponent in
 * [-2, 2]). The core retires them at T_HOST_CYCLES_PER_INSN each. A constant per function is an
 * approximation: the benchmark prints each function's range (expf 65-95, powf 53-307, erff 46-289).
 * Functions that compile inline on the x86 host (floor, ceil, rint with SSE2; sqrt and fabs on both) are
 * charged as the instructions of the calling block instead; sqrt, fabs and lround are not listed.
 *
 * X(return type, name, argument count (1 or 2), argument type, RISC-V instructions per call) */
#ifndef GEMMINI_HOST_CALLS_H
#define GEMMINI_HOST_CALLS_H

#define GM_LIBM_CALLS(X)                \
  X(float, floorf, 1, float, 25)        \
  X(double, floor, 1, double, 30)       \
  X(float, ceilf, 1, float, 25)         \
  X(double, ceil, 1, double, 30)        \
  X(float, roundf, 1, float, 24)        \
  X(double, round, 1, double, 33)       \
  X(float, rintf, 1, float, 45)         \
  X(double, rint, 1, double, 52)        \
  X(float, nearbyintf, 1, float, 77)    \
  X(double, nearbyint, 1, double, 84)   \
  X(float, fminf, 2, float, 29)         \
  X(double, fmin, 2, double, 37)        \
  X(float, fmaxf, 2, float, 29)         \
  X(double, fmax, 2, double, 37)        \
  X(float, expf, 1, float, 92)          \
  X(double, exp, 1, double, 89)         \
  X(float, logf, 1, float, 104)         \
  X(double, log, 1, double, 108)        \
  X(float, powf, 2, float, 293)         \
  X(double, pow, 2, double, 303)        \
  X(float, tanhf, 1, float, 144)        \
  X(double, tanh, 1, double, 152)       \
  X(float, erff, 1, float, 192)         \
  X(double, erf, 1, double, 185)        \
  X(float, sinf, 1, float, 143)         \
  X(double, sin, 1, double, 139)        \
  X(float, cosf, 1, float, 144)         \
  X(double, cos, 1, double, 140)        \
  X(float, tanf, 1, float, 184)         \
  X(double, tan, 1, double, 180)        \
  X(float, atanf, 1, float, 81)         \
  X(double, atan, 1, double, 80)        \
  X(float, atan2f, 2, float, 142)       \
  X(double, atan2, 2, double, 161)      \
  X(float, exp2f, 1, float, 295)        \
  X(double, exp2, 1, double, 313)       \
  X(float, expm1f, 1, float, 97)        \
  X(float, log2f, 1, float, 118)        \
  X(double, log2, 1, double, 109)       \
  X(float, log10f, 1, float, 151)       \
  X(double, log10, 1, double, 160)      \
  X(float, log1pf, 1, float, 92)        \
  X(float, truncf, 1, float, 17)        \
  X(double, trunc, 1, double, 15)       \
  X(float, fmodf, 2, float, 99)         \
  X(double, fmod, 2, double, 126)       \
  X(float, hypotf, 2, float, 70)        \
  X(float, cbrtf, 1, float, 46)

#endif /* GEMMINI_HOST_CALLS_H */
