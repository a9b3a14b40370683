"""gemmini-native's trust boundary, at the backend: the trusted side owns the inputs, the gold result, the
clock and the verdict; the kernel object may link and execute only what a kernel needs; a figure below the
hardware's bound or with less array work than the problem needs is refused with the numbers.

Each hostile kernel is spliced into the trusted matmul_128 problem as its kernel region (what the engine
does with any reply) and evaluated with the real build and run; the static source checks of the search
(checks.py) are not involved, so each case shows what the compiled-object checks and the harness hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch.model import OK, REJECTED
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext
from support.gemmini_cheats import record_rewrite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK_PATH = EXAMPLES / "matmul_128.c"
QUICK = QUICK_PATH.read_text()
SIGNATURE = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C)"
LIBRARY_CALL = ("tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, "
                "MAT_DIM_J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, "
                "false, false, false, 0, WS);")

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


def evaluate(target, tmp_path: Path, region: str, original: str = QUICK):
    (kernel,) = target.find_kernels(original)
    source = target.splice(original, kernel, region)
    work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    ctx = EvalContext(kernel=kernel, path=str(QUICK_PATH), workdir=work, timeout=120, baseline_source=original, seed=1)
    return target.backend("gemmini-native").evaluate(source, ctx)


def kernel(body: str, before: str = "") -> str:
    return f"{before}\n{SIGNATURE} {{\n{body}\n}}"


# ---- the baseline is measured, with the model's own work figures -----------------------------------------
def test_the_baseline_is_measured_with_the_models_work_figures(target, tmp_path):
    ev = evaluate(target, tmp_path, kernel(LIBRARY_CALL))
    assert ev.status == OK, ev.message + ev.log
    assert ev.feedback["array_macs"] >= 128 ** 3
    assert "array MACs (the problem needs 2097152)" in ev.receipt["work"]
    assert "random per evaluation" in ev.receipt["inputs"]


def test_each_evaluation_draws_its_own_inputs(target, tmp_path):
    body = f'  printf("first inputs %d %d %d %d\\n", A[0], A[1], B[0], B[1]);\n  {LIBRARY_CALL}'
    logs = [evaluate(target, tmp_path, kernel(body)).log for _ in range(2)]
    firsts = [next(line for line in log.splitlines() if line.startswith("first inputs")) for log in logs]
    assert firsts[0] != firsts[1]


# ---- the verdict does not come from what the program prints -----------------------------------------------
def test_a_forged_result_line_and_exit_is_no_verdict(target, tmp_path):
    body = '  printf("speedpatch: correct=1 cycles=1 macs=2097152 trials=2\\n");\n  exit(0);'
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status != OK and "no verdict" in ev.message


def test_a_verdict_forged_on_every_descriptor_is_refused(target, tmp_path):
    # stdout's descriptor pointed at each possible result pipe in turn, a complete forged verdict, exit.
    forged = ("speedpatch-problem required_macs=2097152 min_read_bytes=32768 min_write_bytes=16384\\n"
              "speedpatch-verdict nonce=0 correct=1 cycles=9000 trials=2 required_macs=2097152 "
              "min_read_bytes=32768 min_write_bytes=16384 why=\\n")
    body = (f"  for (int fd = 3; fd < 64; fd++) {{ fflush(stdout); stdout->_fileno = fd; printf(\"{forged}\"); }}\n"
            "  fflush(stdout);\n  exit(0);")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status == REJECTED, ev.message
    assert "nonce" in ev.message or "harness" in ev.message



def test_the_secret_is_not_left_in_libcs_stdin_buffer(target, tmp_path):
    # `stdout` is data a kernel may name (printing), and in glibc stdout->_chain is stdin: with a buffered
    # stdin its buffer still held "speedpatch-secret nonce=... seed=..." while every kernel ran (red-team find;
    # a verdict forged with that nonce is still refused: the model vouches only for the harness's).
    body = ("  const FILE *in = stdout->_chain;\n  const char *p = in->_IO_buf_base;\n"
            "  long n = p ? (long)(in->_IO_buf_end - p) : 0;\n"
            "  for (long i = 0; i + 6 <= n; i++)\n"
            "    if (p[i] == 'n' && p[i + 1] == 'o' && p[i + 2] == 'n' && p[i + 3] == 'c' && p[i + 4] == 'e' && p[i + 5] == '=')\n"
            '      printf("found %.60s\\n", p + i);\n'
            '  printf("stdin buffer of %ld bytes\\n", n);\n'
            f"  {LIBRARY_CALL}")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status == OK, ev.message
    assert "stdin buffer of" in ev.log and "found nonce=" not in ev.log, ev.log[-800:]

def test_a_correct_kernel_that_prints_more_than_4_mb_is_still_measured(target, tmp_path):
    body = f'  for (int i = 0; i < 120000; i++) printf("log line %06d of a chatty kernel\\n", i);\n  {LIBRARY_CALL}'
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status == OK, ev.message


# ---- the gold result and the inputs ----------------------------------------------------------------------
def test_the_gold_result_is_not_in_memory_while_the_kernel_runs(target, tmp_path):
    # Where the old harness kept the gold buffer: right after C on the heap. Copying from there is wrong now.
    body = "  for (int i = 0; i < MAT_DIM_I * MAT_DIM_J; i++) C[i] = C[i + MAT_DIM_I * MAT_DIM_J + 64];"
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status != OK


def test_a_kernel_that_rewrites_its_inputs_is_checked_against_the_real_ones(target, tmp_path):
    # Zero inputs would make the gold result the scaled bias, if the gold were computed from them.
    body = ("  memset((elem_t *)A, 0, MAT_DIM_I * MAT_DIM_K);\n  memset((elem_t *)B, 0, MAT_DIM_K * MAT_DIM_J);\n"
            f"  {LIBRARY_CALL}")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status != OK and "mismatch" in ev.message


def test_a_result_cached_between_trials_is_incorrect(target, tmp_path):
    body = ("  static elem_t saved[MAT_DIM_I * MAT_DIM_J];\n  static int have;\n"
            "  if (have) { memcpy(C, saved, sizeof saved); return; }\n"
            f"  {LIBRARY_CALL}\n  gemmini_fence();\n  memcpy(saved, C, sizeof saved);\n  have = 1;")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status != OK and "mismatch" in ev.message


def test_a_smaller_loop_bound_is_incorrect(target, tmp_path):
    ev = evaluate(target, tmp_path, kernel(LIBRARY_CALL.replace("tiled_matmul_auto(MAT_DIM_I", "tiled_matmul_auto(32")))
    assert ev.status != OK


def test_a_region_that_redefines_a_problem_constant_does_not_change_the_problem(target, tmp_path):
    ev = evaluate(target, tmp_path, kernel(LIBRARY_CALL, before="#undef MAT_DIM_I\n#define MAT_DIM_I 32"))
    assert ev.status != OK


def test_a_candidate_that_changes_the_file_outside_its_region_is_rejected(target, tmp_path):
    (k,) = target.find_kernels(QUICK)
    source = QUICK.replace("#define MAT_DIM_I 128", "#define MAT_DIM_I 32")
    work = tmp_path / "w"
    work.mkdir()
    ctx = EvalContext(kernel=k, path=str(QUICK_PATH), workdir=work, timeout=60, baseline_source=QUICK)
    ev = target.backend("gemmini-native").evaluate(source, ctx)
    assert ev.status == REJECTED and "before the kernel region" in ev.message


# ---- what the kernel object links and executes -------------------------------------------------------------
OBJECT_CHEATS = {
    "host work hidden from the charge": (
        kernel("  dot(A, B, bias, C);", before="__attribute__((no_sanitize_coverage)) static void dot(const elem_t *A, "
               "const elem_t *B, const acc_t *bias, elem_t *C) { for (int i = 0; i < 16; i++) C[i] = A[i] * B[i]; }"),
        "not instrumented"),
    "an extern to the model's clock": (
        kernel(f"  {LIBRARY_CALL}\n  T.host = 0;", before="extern struct {{ unsigned long host; }} T;".replace("{{", "{").replace("}}", "}")),
        "links T"),
    "the timer through an extern": (
        kernel(f"  {LIBRARY_CALL}\n  (void)gemmini_model_cycles();"),
        "links gemmini_model_cycles"),
    "a constructor that precomputes": (
        kernel(f"  pre();\n  {LIBRARY_CALL}", before="static volatile int ready;\n__attribute__((constructor)) static void pre(void) { ready = 1; }"),
        "before or after main"),
    "a file cache": (
        kernel(f'  FILE *f = fopen("/tmp/cache", "r");\n  if (f) fclose(f);\n  {LIBRARY_CALL}'),
        "fopen"),
    "remove through a pointer": (
        kernel(f'  int (*volatile rm)(const char *) = remove;\n  rm("/tmp/x");\n  {LIBRARY_CALL}', before="#include <stdio.h>"),
        "remove"),
    "an address computed from an allowed function": (
        kernel(f"  volatile unsigned long p = (unsigned long)&gemmini_model_rocc + 4096;\n  (void)p;\n  {LIBRARY_CALL}"),
        "takes the address of gemmini_model_rocc"),
    "a compiler builtin reading the clock": (
        kernel(f"  volatile unsigned long long t = __builtin_ia32_rdtsc();\n  (void)t;\n  {LIBRARY_CALL}"),
        "instruction rdtsc"),
    "a system call in assembly": (
        kernel(f'  long r;\n  __asm__ volatile("syscall" : "=a"(r) : "a"(39L) : "rcx", "r11", "memory");\n  (void)r;\n  {LIBRARY_CALL}'),
        "inline assembly"),
    "a host loop inside one asm statement": (
        kernel(f'  long n = 1000000;\n  __asm__ volatile("1: dec %0; jnz 1b" : "+r"(n));\n  {LIBRARY_CALL}'),
        "inline assembly"),
    "assembly hidden behind a macro": (
        kernel(f'  long n = 3;\n  SPIN(n);\n  {LIBRARY_CALL}', before='#define SPIN(x) __asm__ volatile("nop" : "+r"(x))'),
        "inline assembly"),
    "an indirect function resolved before main": (
        kernel(f"  pick();\n  {LIBRARY_CALL}",
               before="static void real(void) { }\nstatic void (*resolve(void))(void) { return real; }\n"
                      "void pick(void) __attribute__((ifunc(\"resolve\")));"),
        "indirect functions"),
    "longjmp out of the kernel": (
        kernel(f"  static jmp_buf env;\n  if (setjmp(env) == 0) longjmp(env, 1);\n  {LIBRARY_CALL}", before="#include <setjmp.h>"),
        "setjmp"),
    "a signal handler": (
        kernel(f"  signal(SIGALRM, on_alarm);\n  {LIBRARY_CALL}",
               before="#include <signal.h>\nstatic void on_alarm(int s) { (void)s; }"),
        "signal"),
    "forking": (
        kernel(f"  if (fork() == 0) for (;;) {{}}\n  {LIBRARY_CALL}", before="#include <unistd.h>"),
        "fork"),
    "writing a file": (
        kernel(f'  int fd = open("/tmp/out", 0101, 0600);\n  write(fd, C, 16);\n  {LIBRARY_CALL}',
               before="#include <fcntl.h>\n#include <unistd.h>"),
        "open"),
    "a function pointer call": (
        kernel(f"  void (*volatile f)(void) = helper;\n  f();\n  {LIBRARY_CALL}", before="static void helper(void) { }"),
        "indirect call"),
    "its own trace-pc hook": (
        kernel(LIBRARY_CALL, before="void __sanitizer_cov_trace_pc(void) { }"),
        "defines __sanitizer_cov_trace_pc"),
    "memcpy past the charging wrapper": (
        kernel(f"  __real_memcpy(C, A, 16);\n  {LIBRARY_CALL}", before="void *__real_memcpy(void *, const void *, unsigned long);"),
        "__real_memcpy"),
    "host SIMD": (
        kernel(f"  avx(A, B);\n  {LIBRARY_CALL}",
               before="__attribute__((target(\"avx2\"))) static void avx(const elem_t *a, const elem_t *b) {\n"
                      "  typedef int v8 __attribute__((vector_size(32)));\n  volatile v8 x = *(const v8 *)a * *(const v8 *)b;\n"
                      "  (void)x;\n}"),
        "host SIMD"),
    "the harness's runner": (
        kernel(f"  speedpatch_run_matmul(1, 1, 1, false, 0, 1.0f, 0);\n  {LIBRARY_CALL}"),
        "speedpatch_run_matmul"),
    # gcc writes these strings into its assembly as they are, without the #APP marks of an asm statement:
    # (measured before the check: a 1,000,000-iteration loop under a .L label cost 32 cycles; a 100M-iteration
    # loop injected through a section name cost 8)
    "an uninstrumented function under an assembler-local label": (
        "__attribute__((noinline)) void helper(volatile long *x) { for (int i = 0; i < *x; i++) *x += 1; }\n"
        "__attribute__((no_sanitize_coverage, noinline)) static void hidden(volatile long *s) __asm__(\".Lhidden\");\n"
        "__attribute__((no_sanitize_coverage, noinline)) static void hidden(volatile long *s) {\n"
        "  helper(s);\n  for (long i = 0; i < 1000000; i++) *s += i;\n}\n"
        + kernel(f"  volatile long s = 0;\n  hidden(&s);\n  {LIBRARY_CALL}"),
        "asm label"),
    "assembly injected through a section name": (
        kernel(f"  spin(100000000);\n  {LIBRARY_CALL}",
               before="__attribute__((section(\".text.x,\\\"ax\\\",@progbits\\n\\t.globl spin\\n\\t.type spin,@function\\n"
                      "spin:\\n\\tcall __sanitizer_cov_trace_pc\\n1:\\tdec %rdi\\n\\tjnz 1b\\n\\tret\\n\\t.size spin,.-spin\\n#\"))) "
                      "void dummy(void) { }\nvoid spin(long n);"),
        "section attribute"),
    "a section attribute spelled by token pasting": (
        kernel(LIBRARY_CALL, before="#define S(x) __attribute__((sec##tion(x)))\nS(\".text.y\") void dummy(void) { }"),
        "section attribute"),
    "assembly injected through a symbol version": (
        kernel(LIBRARY_CALL, before="__attribute__((symver(\"f@@V1\\n\\tnop\\n#\"))) void f(void) { }"),
        "symver attribute"),
    "assembly injected through #ident": (kernel(LIBRARY_CALL, before="#ident \"x\\\"\\n\\tnop\\n#\""), "#ident"),
    # RTM: an abort discards the transaction's writes, the trace-pc hook's charge included, and returns an 8-bit
    # code; one bit of a host dot product per transaction (SIGILL on CPUs without RTM, as here: it passed the
    # object check and was a runtime error, not a refusal)
    "host work inside a hardware transaction": (
        kernel(f"  {LIBRARY_CALL}\n  gemmini_fence();\n  C[0] = (elem_t)bit_of_dot(A, B, 0);",
               before="__attribute__((target(\"rtm\"), noinline)) static int bit_of_dot(const elem_t *a, const elem_t *b, "
                      "int bit) {\n  const unsigned status = __builtin_ia32_xbegin();\n  if (status == 0xffffffffu) {\n"
                      "    int s = 0;\n    for (int k = 0; k < MAT_DIM_K; k++) s += a[k] * b[k * MAT_DIM_J];\n"
                      "    if ((s >> bit) & 1) __builtin_ia32_xabort(1);\n    __builtin_ia32_xabort(0);\n  }\n"
                      "  return (int)((status >> 24) & 1);\n}"),
        "executes xbegin, a hardware transaction"),
    "a linemarker that makes the region's tokens look like a header's": (
        kernel(LIBRARY_CALL, before="# 1 \"fake.h\" 1\nvoid spin(void) __asm__(\".Lspin\");"), "#line"),
}


@pytest.mark.parametrize("name", list(OBJECT_CHEATS))
def test_a_kernel_object_that_links_or_executes_what_a_kernel_may_not_is_refused(target, tmp_path, name):
    region, why = OBJECT_CHEATS[name]
    ev = evaluate(target, tmp_path, region)
    assert ev.status != OK, f"{name}: {ev.message}"
    assert why in ev.message or why in ev.log, f"{name}: {ev.status} {ev.message}\n{ev.log[-1500:]}"


def test_a_kernel_may_call_the_math_library_and_each_call_costs_the_host(target, tmp_path):
    # Every libm function the model charges per call (host_calls.h) is one a kernel may call: sinf was
    # refused as "not pure math" while expf was allowed, and an allowed call that cost nothing natively
    # made host math look free. 64 sinf calls cost 64 x picolibc's 143 instructions on top of the loop.
    plain = evaluate(target, tmp_path, kernel(f"  {LIBRARY_CALL}\n  volatile float s = 0;\n"
                                                "  for (int i = 0; i < 64; i++) s += (float)C[i];"))
    with_sin = evaluate(target, tmp_path, kernel(f"  {LIBRARY_CALL}\n  volatile float s = 0;\n"
                                                   "  for (int i = 0; i < 64; i++) s += sinf((float)C[i]);"))
    assert plain.status == OK and with_sin.status == OK, with_sin.message + with_sin.log[-800:]
    assert with_sin.value - plain.value >= 64 * 143, (plain.value, with_sin.value)


# ---- work and physics ----------------------------------------------------------------------------------------
def test_a_correct_kernel_that_does_part_of_the_work_on_the_host_is_refused_with_the_numbers(target, tmp_path):
    half = LIBRARY_CALL.replace("tiled_matmul_auto(MAT_DIM_I", "tiled_matmul_auto(MAT_DIM_I / 2")
    host = ("  for (int i = MAT_DIM_I / 2; i < MAT_DIM_I; i++)\n    for (int j = 0; j < MAT_DIM_J; j++) {\n"
            "      long s = bias[j];\n      for (int k = 0; k < MAT_DIM_K; k++) s += (long)A[i * MAT_DIM_K + k] * B[k * MAT_DIM_J + j];\n"
            "      float y = (float)s * MATMUL_SCALE;\n      long r = (long)__builtin_rintf(y);\n"
            "      C[i * MAT_DIM_J + j] = r > 127 ? 127 : r < -128 ? -128 : (elem_t)r;\n    }")
    ev = evaluate(target, tmp_path, kernel(f"  {half}\n  gemmini_fence();\n{host}"))
    assert ev.status == REJECTED, ev.message + ev.log[-800:]
    assert "1048576 multiply-accumulates, the problem needs 2097152" in ev.message


# Trial 1 finds trial 0's line in the harness's record on the stack by its text, rewrites its two cycle
# figures to two thirds (same digit count), and rewrites the harness's first-trial figure (a saved register
# or a stack slot) to match. Before the kernel call was checked this was "correct, 9458 cycles" for the
# 14,188-cycle library call; the model's own log of each region would refuse it too.
REWRITE_RECORD = kernel(record_rewrite(LIBRARY_CALL))


def test_a_kernel_that_rewrites_the_harness_record_on_the_stack_is_refused(target, tmp_path):
    ev = evaluate(target, tmp_path, REWRITE_RECORD)
    assert ev.status == REJECTED, f"{ev.status} {ev.message}"
    assert "the harness's registers or stack frames changed" in ev.message, ev.message


def test_a_kernel_that_swaps_the_harness_output_pointer_is_refused(target, tmp_path):
    # The harness compares the buffer its own register or stack slot names; a kernel that rewrites the saved
    # copy (here to C + 64) would have the harness compare a buffer of its choosing.
    body = (f"  __builtin_unwind_init();\n  {LIBRARY_CALL}\n  volatile unsigned long here = 0;\n"
            "  for (long i = 0; i < 64; i++) {\n    volatile unsigned long *q = &here + i;\n"
            "    if (*q == (unsigned long)C) *q = (unsigned long)C + 64;\n  }")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status == REJECTED, f"{ev.status} {ev.message}"
    assert "the harness's registers or stack frames changed" in ev.message, ev.message


def test_a_kernel_that_rewrites_its_return_address_is_refused(target, tmp_path):
    # Returning 10 bytes further into the model's trampoline skips the check of the harness's frames.
    body = f"  void **ra = (void **)__builtin_frame_address(0) + 1;\n  *ra = (char *)*ra + 10;\n  {LIBRARY_CALL}"
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status == REJECTED, f"{ev.status} {ev.message}"
    assert "the kernel never returned to the harness" in ev.message, ev.message


def test_a_harness_record_that_differs_from_the_models_log_is_refused_with_both_numbers():
    from speedpatch.targets.gemmini.backends.trusted import model_record_problems

    trial = {"t": 0, "cycles": 9458, "macs": 2097152, "read": 98304, "write": 16384, "host": 862, "rocc": 29}
    stats = {"harness_regions": 1, "harness_region_figures": [[14188, 2097152, 98304, 16384, 862, 29]]}
    assert model_record_problems([trial], stats) == [
        "trial 0: the harness's record says 9458 cycles, the model measured 14188: the kernel rewrote the harness's record"]
    assert model_record_problems([dict(trial, cycles=14188)], stats) == []
    (more,) = model_record_problems([dict(trial, cycles=14188), dict(trial, t=1)], stats)
    assert "the model measured 1 timed regions, the harness reports 2 trials" in more


def test_the_physics_bound_names_the_array_and_dram_limits():
    from speedpatch.targets.gemmini.backends.trusted import physics_problems

    trial = {"cycles": 100, "macs": 2097152, "dim": 16, "bpc": 8, "read": 32768, "write": 16384}
    problems = physics_problems(2097152, 32768, 16384, trial)
    assert any("below the array's bound" in p and "8192 cycles" in p for p in problems)
    assert any("DRAM bound" in p and "4096 cycles" in p for p in problems)
    assert physics_problems(2097152, 32768, 16384, dict(trial, cycles=0)) == ["the timed region took 0 cycles"]
    assert physics_problems(2097152, 32768, 16384, dict(trial, cycles=10000)) == []


def test_a_verdict_the_model_was_not_given_is_refused():
    from speedpatch.targets.gemmini.backends.trusted import fnv1a64, model_vouches

    text = "speedpatch-verdict nonce=ab correct=1 cycles=9 trials=2 required_macs=1 min_read_bytes=1 min_write_bytes=1 why=\n"
    assert model_vouches(text, {"verdicts": 1, "verdict_fnv1a64": f"{fnv1a64(text):016x}"}) == ""
    assert "not the harness's" in model_vouches(text, {"verdicts": 0})
    assert "differs" in model_vouches(text, {"verdicts": 1, "verdict_fnv1a64": "0" * 16})


# ---- ordinary kernel code passes the object checks ----------------------------------------------------------
LEGITIMATE = {
    "a zero-initialized local array": kernel(
        f"  int64_t acc[512] = {{0}};\n  acc[A[0] & 511] = 1;\n  if (acc[3] == 7) printf(\"x\\n\");\n  {LIBRARY_CALL}"),
    "a struct copy": kernel(
        f"  struct big {{ int64_t v[64]; }} a = {{{{1}}}}, b;\n  b = a;\n  if (b.v[0] == 5) puts(\"y\");\n  {LIBRARY_CALL}"),
    "a switch": kernel(
        "  switch (A[0] & 7) { case 0: puts(\"a\"); break; case 1: puts(\"b\"); break; case 2: puts(\"c\"); break;\n"
        f"  case 3: puts(\"d\"); break; case 4: puts(\"e\"); break; default: break; }}\n  {LIBRARY_CALL}"),
    "an assert": kernel(f"  assert(A != 0);\n  {LIBRARY_CALL}", before="#include <assert.h>"),
    "float rounding": kernel(
        f"  volatile float f = MATMUL_SCALE * A[0];\n  volatile long r = lroundf(f) + (long)roundf(f);\n  (void)r;\n"
        f"  {LIBRARY_CALL}", before="#include <math.h>"),
    "a malloc'd scratch buffer": kernel(f"  elem_t *tmp = malloc(64);\n  memcpy(tmp, A, 64);\n  free(tmp);\n  {LIBRARY_CALL}"),
    "a static helper with division": kernel(
        f"  volatile size_t n = 1000;\n  volatile size_t d = helper(n, 7);\n  (void)d;\n  {LIBRARY_CALL}",
        before="static inline size_t helper(size_t a, size_t b) { return a / b + a % b; }"),
}


@pytest.mark.parametrize("name", list(LEGITIMATE))
def test_ordinary_kernel_code_passes_the_object_checks(target, tmp_path, name):
    ev = evaluate(target, tmp_path, LEGITIMATE[name])
    assert ev.status == OK, f"{name}: {ev.message}"


def test_a_kernel_that_moves_less_data_than_the_problem_is_refused_with_the_numbers():
    from speedpatch.targets.gemmini.backends.trusted import physics_problems

    trial = {"cycles": 10000, "macs": 2097152, "dim": 16, "bpc": 8, "read": 0, "write": 16384}
    (problem,) = physics_problems(2097152, 32768, 16384, trial)
    assert "read 0 bytes of DRAM, the problem's inputs are 32768 bytes" in problem


def test_a_kernel_that_frees_its_output_buffer_is_not_correct(target, tmp_path):
    # The array does all its MACs on zeros (no DRAM reads), and C is freed so that the gold result might
    # land in C's memory: the gold buffer is allocated before the kernel runs, and the DMA bytes are checked.
    body = ("  gemmini_config_ex(WS, NO_ACTIVATION, 0);\n  gemmini_config_ld(MAT_DIM_K);\n"
            "  for (int i = 0; i < MAT_DIM_I / DIM; i++) for (int j = 0; j < MAT_DIM_J / DIM; j++) {\n"
            "    gemmini_mvin(0, 0);\n    gemmini_mvin(0, DIM);\n"
            "    for (int k = 0; k < MAT_DIM_K / DIM; k++) { gemmini_preload(DIM, 1u << 31);\n"
            "      gemmini_compute_preloaded(0, GARBAGE_ADDR); }\n  }\n  gemmini_fence();\n  free(C);")
    ev = evaluate(target, tmp_path, kernel(body))
    assert ev.status != OK, ev.message
