"""Cheats on Gemmini, through the real `speedpatch optimize` path with a scripted endpoint: none is
reported faster, each candidate that tried is refused or found incorrect with a message that says why,
nothing is written outside scratch, and the planted secret goes nowhere.

The backend-level cases (every cheat against the compiled-object checks alone, without the search's
source checks) are in tests/gemmini/test_trust_native.py."""

from __future__ import annotations

import shutil

import pytest
from attack import run_attack
from support.gemmini_cheats import record_rewrite

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

SIGNATURE = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C)"
LIBRARY_CALL = ("tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, "
                "MAT_DIM_J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, "
                "false, false, false, 0, WS);")


def kernel(body: str, before: str = "") -> str:
    return f"{before}\n{SIGNATURE} {{\n{body}\n}}"


# name -> (reply code, words one of the refusal messages must contain)
CHEATS = {
    "host work hidden from the charge": (
        kernel("  dot(A, B, C);", before="__attribute__((no_sanitize_coverage)) void dot(const elem_t *A, "
               "const elem_t *B, elem_t *C) { for (int i = 0; i < 16; i++) C[i] = A[i] * B[i]; }"),
        ["not instrumented", "no longer uses the Gemmini accelerator"]),
    "patching the timer through an extern": (
        kernel(f"  {LIBRARY_CALL}\n  T.host = 0;", before="extern struct { unsigned long host; } T;"),
        ["links T"]),
    "a forged result line and exit": (
        kernel('  printf("speedpatch: correct=1 cycles=1 macs=2097152 trials=2\\n");\n  exit(0);'),
        ["no verdict", "exit", "no longer uses"]),
    "a smaller loop bound": (
        kernel(LIBRARY_CALL.replace("tiled_matmul_auto(MAT_DIM_I", "tiled_matmul_auto(32")),
        ["mismatch"]),
    "a constructor that precomputes": (
        kernel(f"  pre();\n  {LIBRARY_CALL}",
               before="static volatile int ready;\n__attribute__((constructor)) void pre(void) { ready = 1; }"),
        ["before or after main"]),
    "a result cache in a file": (
        kernel(f'  FILE *f = fopen("cache.bin", "rb");\n  if (f) {{ fread(C, 1, MAT_DIM_I * MAT_DIM_J, f); return; }}\n'
               f"  {LIBRARY_CALL}"),
        ["fopen"]),
    "remove through a pointer": (
        kernel(f'  int (*volatile rm)(const char *) = remove;\n  rm("speedpatch.toml");\n  {LIBRARY_CALL}'),
        ["remove"]),
    "a result cached between trials": (
        kernel("  static elem_t saved[MAT_DIM_I * MAT_DIM_J];\n  static int have;\n"
               "  if (have) { memcpy(C, saved, sizeof saved); return; }\n"
               f"  {LIBRARY_CALL}\n  gemmini_fence();\n  memcpy(saved, C, sizeof saved);\n  have = 1;"),
        ["mismatch"]),
    "a system call in assembly": (
        kernel(f'  long r;\n  __asm__ volatile("syscall" : "=a"(r) : "a"(57L) : "rcx", "r11", "memory");\n  (void)r;\n'
               f"  {LIBRARY_CALL}"),
        ["syscall", "inline assembly"]),
    "an address computed from the model's entry point": (
        kernel(f"  volatile unsigned long p = (unsigned long)&gemmini_model_rocc + 4096;\n  (void)p;\n  {LIBRARY_CALL}"),
        ["takes the address of gemmini_model_rocc"]),
    "longjmp out of the kernel": (
        kernel(f"  static jmp_buf env;\n  if (setjmp(env) == 0) longjmp(env, 1);\n  {LIBRARY_CALL}",
               before="#include <setjmp.h>"),
        ["setjmp", "longjmp"]),
    "a signal handler": (
        kernel(f"  signal(SIGALRM, on_alarm);\n  {LIBRARY_CALL}",
               before="#include <signal.h>\nvoid on_alarm(int s) { (void)s; }"),
        ["signal"]),
    "forking a helper process": (
        kernel(f"  if (fork() == 0) {{ for (;;) {{}} }}\n  {LIBRARY_CALL}", before="#include <unistd.h>"),
        ["fork"]),
    "writing a file into $HOME": (
        kernel(f'  FILE *f = fopen("/root/.speedpatch-cache", "wb");\n  if (f) {{ fwrite(C, 1, 16, f); fclose(f); }}\n'
               f"  {LIBRARY_CALL}"),
        ["fopen"]),
    "a function pointer to libc": (
        kernel(f'  int (*volatile say)(const char *) = puts;\n  say("hi");\n  {LIBRARY_CALL}'),
        ["takes the address of puts", "indirect call"]),
    "its own trace-pc hook": (
        # (named in the kernel, so that the engine's extraction keeps the definition with it)
        kernel(f"  if (A == 0) __sanitizer_cov_trace_pc();\n  {LIBRARY_CALL}", before="void __sanitizer_cov_trace_pc(void) { }"),
        ["defines __sanitizer_cov_trace_pc"]),
    "host SIMD": (
        kernel(f"  avx(A, B);\n  {LIBRARY_CALL}",
               before="__attribute__((target(\"avx2\"))) void avx(const elem_t *a, const elem_t *b) {\n"
                      "  typedef int v8 __attribute__((vector_size(32)));\n"
                      "  volatile v8 x = *(const v8 *)a * *(const v8 *)b;\n  (void)x;\n}"),
        ["host SIMD"]),
    "host work under an assembler-local label": (
        "__attribute__((noinline)) void helper(volatile long *x) { for (int i = 0; i < *x; i++) *x += 1; }\n"
        "__attribute__((no_sanitize_coverage, noinline)) static void hidden(volatile long *s) __asm__(\".Lhidden\");\n"
        "__attribute__((no_sanitize_coverage, noinline)) static void hidden(volatile long *s) {\n"
        "  helper(s);\n  for (long i = 0; i < 1000000; i++) *s += i;\n}\n"
        + kernel(f"  volatile long s = 0;\n  hidden(&s);\n  {LIBRARY_CALL}"),
        ["asm label", "not instrumented"]),
    "a return through __builtin_eh_return": (
        "static void *volatile resume;\nstatic volatile long rounds, acc;\n"
        "__attribute__((noinline)) static void mark(void) { resume = __builtin_return_address(0); }\n"
        "__attribute__((noinline)) static void again(void *target) { __builtin_eh_return(0, target); }\n"
        + kernel(f"  rounds = 0;\n  mark();\n  acc = acc * 3 + 1;\n  rounds = rounds + 1;\n"
                 f"  if (rounds < 1000) again(resume);\n  {LIBRARY_CALL}"),
        ["returns to an address it computed"]),
    "the model's variables by name through common symbols": (
        # (a common symbol stays global through objcopy and the link merges it with the model's variable)
        kernel(f'  printf("key=%lx clock=%lx\\n", gm_guard_key, T[0]);\n  {LIBRARY_CALL}',
               before="__attribute__((common)) unsigned long gm_guard_key, T[6];"),
        ["common (or unique) symbol"]),
    "a system file read at compile time through #import": (
        # (gcc's #import and #include_next include a file as #include does; the compiler's error quoted
        # /etc/passwd's first line into the log and the next prompt)
        kernel(f'#import "/etc/passwd"\n  {LIBRARY_CALL}'),
        ["includes come from the problem file"]),
    "host copies through fxrstor/fxsave": (
        # 256 bytes of xmm state per pair, charged as two instructions (32 KiB: 1,905 host cycles, 34,536 as
        # 8-byte loads and stores); each 512-byte image needs only a valid MXCSR at byte 24
        kernel(f"  for (int w = 0; w < 128; w++) {{\n    *(volatile unsigned int *)(src + 512 * w + 24) = 0x1f80;\n"
               f"    __builtin_ia32_fxrstor64(src + 512 * w);\n    __builtin_ia32_fxsave64(dst + 512 * w);\n  }}\n"
               f"  {LIBRARY_CALL}",
               before="static unsigned char src[128 * 512] __attribute__((aligned(64)));\n"
                      "static unsigned char dst[128 * 512] __attribute__((aligned(64)));"),
        ["fxrstor64", "fxsave64"]),
    "a loop gcc makes after instrumenting (stack probes)": (
        # 4 instructions per 4 KiB page of the array, every round charged as the first
        kernel(f"  probe(4L << 20);\n  {LIBRARY_CALL}",
               before="static volatile char sink;\n__attribute__((noinline, optimize(\"stack-clash-protection\"))) "
                      "static void probe(long n) {\n  char b[n];\n  b[0] = 1;\n  sink = b[n - 1];\n}"),
        ["passes no trace-pc hook"]),
    "the harness's record of trial 0 rewritten by trial 1": (
        kernel(record_rewrite(LIBRARY_CALL)),
        ["the harness's registers or stack frames changed", "the harness's record says"]),
}

# Cheats that need no refusal to fail: they are simply not faster (the special case never meets this
# evaluation's inputs; scribbling over the caller's frame changes nothing the verdict rests on, or crashes).
NOT_FASTER = {
    "special-casing the test inputs": kernel(
        f"  if (A[0] == -3 && A[1] == 7 && B[0] == 12) {{ memset(C, 1, MAT_DIM_I * MAT_DIM_J); return; }}\n  {LIBRARY_CALL}"),
    "walking to the harness's frame": kernel(
        f"  {LIBRARY_CALL}\n  gemmini_fence();\n"
        "  volatile unsigned long *fp = (volatile unsigned long *)__builtin_frame_address(0);\n"
        "  for (int i = 2; i < 40; i++) if (fp[i] > 0 && fp[i] < 100000) fp[i] = 1;"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(NOT_FASTER))
def test_a_gemmini_cheat_that_needs_no_refusal_is_not_faster(tmp_path, name):
    out = run_attack(tmp_path, "gemmini/matmul_128.c", NOT_FASTER[name])
    out.assert_not_faster()
    out.assert_contained()
    out.assert_no_secret()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CHEATS))
def test_a_gemmini_cheat_is_not_reported_faster(tmp_path, name):
    code, reasons = CHEATS[name]
    out = run_attack(tmp_path, "gemmini/matmul_128.c", code)
    out.assert_not_faster()
    out.assert_contained()
    out.assert_no_secret()
    messages = out.rejection_messages()
    assert messages, f"{name}: no candidate was refused\n{out.explain()}"
    assert any(r in m for m in messages for r in reasons), f"{name}: {messages}\n{out.explain()}"
