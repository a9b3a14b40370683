"""gemmini-native's trust boundary for a candidate of a program without the speedpatch harness: the program's
own main() fills the inputs, reads the clock around its call of the kernel function and checks the result, so
it is built as one unit with the kernel (backends/region_check.py). The candidate's region still passes the
trusted build's kernel checks, compiled apart as a kernel unit, and its functions as the program's build
compiled them; a figure below the array's bound is refused.

Each hostile kernel below was "correct" at the backend, and "correct on gemmini-spike" on re-verification
(which has no figure for such programs), before those checks: the honest kernel measures 2,348 cycles."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch.model import OK, REJECTED
from speedpatch.targets.base import EvalContext
from speedpatch.targets.gemmini.backends import common
from speedpatch.targets.gemmini.target import GemminiTarget

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# A 64x64x64 GEMM checked by the program itself against a CPU result computed before the timed region.
PROGRAM = r"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define N 64 /* results are checked below, not written with fprintf */
static elem_t A[N][N] row_align(1);
static elem_t B[N][N] row_align(1);
static elem_t C[N][N] row_align(1);
static elem_t G[N][N];

static void clear_row(int i);

static void zero_output(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) C[i][j] = 0;
}

void gemm_kernel(void) {
  tiled_matmul_auto(N, N, N, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, N, N, N, N, MVIN_SCALE_IDENTITY,
                    MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f / 16, 0, false, false, false,
                    false, false, 0, WS);
}

static void clear_row(int i) {
  for (int j = 0; j < N; j++) C[i][j] = 0;
}

int main() {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) { A[i][j] = (elem_t)(rand() % 31 - 16); B[i][j] = (elem_t)(rand() % 31 - 16); }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      int64_t s = 0;
      for (int k = 0; k < N; k++) s += A[i][k] * B[k][j];
      long r = __builtin_lrintf((float)s / 16);
      G[i][j] = r > 127 ? 127 : r < -128 ? -128 : r;
    }
  zero_output();
  gemmini_flush(0);
  uint64_t start = read_cycles();
  gemm_kernel();
  gemmini_fence();
  uint64_t end = read_cycles();
  printf("took %llu cycles\n", (unsigned long long)(end - start));
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      if (C[i][j] != G[i][j]) return 1;
  return 0;
}
"""
SIGNATURE = "void gemm_kernel(void)"
LIBRARY_CALL = ("tiled_matmul_auto(N, N, N, (elem_t *)A, (elem_t *)B, NULL, (elem_t *)C, N, N, N, N, "
                "MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, NO_ACTIVATION, 1.0f / 16, 0, false, "
                "false, false, false, false, 0, WS);")


def kernel(body: str, before: str = "") -> str:
    return f"{before}\n{SIGNATURE} {{\n{body}\n}}"


def evaluate(tmp_path: Path, region: str):
    """The native backend alone (no source checks of the search before it) on `region` as the kernel."""
    path = tmp_path / "prog.c"
    path.write_text(PROGRAM)
    target = GemminiTarget()
    (k,) = [k for k in target.find_kernels(PROGRAM) if k.name == "gemm_kernel"]
    work = tmp_path / f"w{len(list(tmp_path.glob('w*')))}"
    work.mkdir()
    ctx = EvalContext(kernel=k, path=str(path), workdir=work, timeout=120, baseline_source=PROGRAM)
    return target.backend("gemmini-native").evaluate(target.splice(PROGRAM, k, region), ctx)


def test_an_honest_rewrite_that_calls_the_programs_own_functions_is_measured(tmp_path):
    # (one defined before the kernel, one after it)
    ev = evaluate(tmp_path, kernel(f"  zero_output();\n  clear_row(0);\n  {LIBRARY_CALL}\n  gemmini_fence();"))
    assert ev.status == OK, ev.message + ev.log[-2000:]
    assert ev.value and ev.value > 1024  # 64^3 MACs on a 16x16 array


# name -> (region, what the refusal names); each was OK at the backend before, at the figure in the comment
CHEATS = {
    # 6 cycles: the program's clock pairs moved onto one configuration instruction
    "the clock read through a pasted name": (
        kernel("  (void)JOIN2(read_, cycles)();\n  (void)JOIN2(read_, cycles)();\n  gemmini_config_ld(N);\n"
               f"  (void)JOIN2(read_, cycles)();\n  {LIBRARY_CALL}", before="#define JOIN2(a, b) a##b"),
        "links gemmini_model_cycles"),
    # 15 cycles: every MAC on the host, none of it charged
    "host work in an uninstrumented function with one flat loop": (
        kernel("  gemmini_config_ld(N);\n  host_gemm();",
               before="__attribute__((no_sanitize_coverage, noinline)) static void host_gemm(void) {\n"
                      "  int64_t s = 0;\n  for (int x = 0; x < N * N * N; x++) {\n"
                      "    const int i = x / (N * N), j = (x / N) % N, k = x % N;\n    s += A[i][k] * B[k][j];\n"
                      "    if (k == N - 1) {\n      long r = __builtin_lrintf((float)s / 16);\n"
                      "      C[i][j] = r > 127 ? 127 : r < -128 ? -128 : r;\n      s = 0;\n    }\n  }\n}"),
        "not instrumented"),
    # 25 cycles (natively only; RISC-V builds the honest kernel): the clock set back and sealed again
    "the model's clock and seal by name": (
        "#ifdef __x86_64__\nextern struct { uint64_t host, next_issue, all_done, busy[3]; } T;\n"
        "void gm_guard_seal(void);\n#endif\n"
        + kernel(f"#ifdef __x86_64__\n  const uint64_t h = T.host;\n#endif\n  {LIBRARY_CALL}\n#ifdef __x86_64__\n"
                 "  gemmini_fence();\n  T.host = T.all_done = T.next_issue = h + 10;\n  gm_guard_seal();\n#endif"),
        "links T, gm_guard_seal"),
    # the program's own checks come after the kernel: exit(0) from it is a pass
    "ending the program from the kernel": (
        kernel(f"  {LIBRARY_CALL}\n  JOIN2(ex, it)(0);", before="#define JOIN2(a, b) a##b"),
        "may not end the program"),
    # 2,383 cycles for the library call and an 8 KiB round trip, the copies charged as two instructions
    "a struct copy the program's build makes a rep movsq": (
        kernel(f"  {LIBRARY_CALL}\n  gemmini_fence();\n  static struct block scratch;\n"
               "  scratch = *(struct block *)C;\n  *(struct block *)C = scratch;",
               before="struct block { elem_t b[N][N]; };"),
        "rep movs"),
    # 1,100 cycles: libc's fprintf and fwrite replaced for the whole program, so the model's statistics file said
    # what the kernel wrote (the figure stays above the array's bound, 1,024)
    "the model's statistics written through a replaced fprintf": (
        "int fprintf(FILE *f, const char *fmt, ...) {\n  static const char fake[] = \"{\\\"dim\\\": 16, "
        "\\\"instructions\\\": {\\\"MVIN\\\": 1}, \\\"timed_regions\\\": 1, \\\"timed_region_cycles\\\": 1100, "
        "\\\"timed_region_macs\\\": 262144}\\n\";\n  const char *volatile text = fake;\n"
        "  if (fmt[0] == 0x7b) fputs(text, f);\n  return 0;\n}\n"
        "unsigned long fwrite(const void *p, unsigned long size, unsigned long n, FILE *f) {\n"
        "  (void)p, (void)size, (void)f;\n  return n;\n}\n" + kernel(LIBRARY_CALL),
        "the kernel defines fprintf, fwrite, a function of the C library or the model"),
    # the same copy in a function a macro defines, which a reader of the region's C does not see
    "a struct copy in a function a macro defines": (
        kernel(f"  {LIBRARY_CALL}\n  gemmini_fence();\n  round_trip();",
               before="struct block { elem_t b[N][N]; };\n#define COPIER(name) __attribute__((noinline)) void name(void) "
                      "{ static struct block s; s = *(struct block *)C; *(struct block *)C = s; }\nCOPIER(round_trip)"),
        "rep movs"),
}


@pytest.mark.parametrize("name", list(CHEATS))
def test_a_kernel_of_a_program_without_the_harness_passes_the_trusted_kernel_checks(tmp_path, name):
    region, why = CHEATS[name]
    ev = evaluate(tmp_path, region)
    assert ev.status == REJECTED, f"{name}: {ev.status} {ev.value} {ev.message}"
    assert why in ev.message, f"{name}: {ev.message}"


def test_a_program_figure_below_the_arrays_bound_is_refused():
    stats = {"dim": 16, "timed_regions": 1, "timed_region_cycles": 25, "timed_region_macs": 64 ** 3,
             "instructions": {"MVIN": 1}}
    from speedpatch.targets.base import ProcResult

    ev = common.whole_program_evaluation(ProcResult(0, "", 0.1, False), stats, {})
    assert ev.status == REJECTED
    assert "25 cycles is below the array's bound" in ev.message and "1024 cycles" in ev.message
