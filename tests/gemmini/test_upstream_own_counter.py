"""Programs that read the RISC-V counters themselves, in inline assembly (their own read_cycles() with
`rdcycle`, a macro around `csrr %0, mcycle`, their own `asm volatile("fence")`).

On gemmini-native the program's cycle-counter reads become reads of the model's counter, as the headers'
read_cycles does, so the figure is the program's own region wherever its clock is defined. Counters the
model does not keep (instret, time) are refused by name. A candidate kernel never gets a clock: a counter
read in its region, or a use of the program's own clock macro or function, is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch import api
from speedpatch.config import load_config
from speedpatch.model import COMPILE_ERROR, OK, REJECTED
from speedpatch.targets.base import EvalContext
from speedpatch.targets.gemmini.backends import upstream
from speedpatch.targets.gemmini.backends.native import NativeBackend

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# Copies N 16x16 blocks through the scratchpad between two clock reads (@START@/@END@) and checks them;
# @CLOCK@ is where the program defines its clock (or includes gemmini_testutils.h's).
PROGRAM = r"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/@HEADER@"
@CLOCK@
#define N 4
static elem_t In[N][DIM][DIM] row_align(1);
static elem_t Out[N][DIM][DIM] row_align(1);

void copy_blocks(void) {
  for (size_t n = 0; n < N; n++) {
    gemmini_mvin(In[n], n * DIM);
    gemmini_mvout(Out[n], n * DIM);
  }
}

int main() {
  for (size_t n = 0; n < N; n++)
    for (size_t i = 0; i < DIM; i++)
      for (size_t j = 0; j < DIM; j++) In[n][i][j] = (elem_t)(i * 3 + j + n);
  gemmini_flush(0);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  uint64_t start, end;
  @START@;
  copy_blocks();
  @FENCE@;
  @END@;
  printf("took %llu cycles\n", (unsigned long long)(end - start));
  for (size_t n = 0; n < N; n++)
    for (size_t i = 0; i < DIM; i++)
      for (size_t j = 0; j < DIM; j++)
        if (Out[n][i][j] != In[n][i][j]) return 1;
  return 0;
}
"""

OWN_READ_CYCLES = r"""
static uint64_t read_cycles() {
  uint64_t cycles;
  asm volatile ("rdcycle %0" : "=r" (cycles));
  return cycles;
}
"""
TICK_MACRO = r"""
#define TICK(x) __asm__ __volatile__( \
    "csrr %0, mcycle" : "=r"(x))
"""


def program(clock: str = "", header: str = "gemmini.h", start: str = "start = read_cycles()",
            end: str = "end = read_cycles()", fence: str = "gemmini_fence()") -> str:
    return (PROGRAM.replace("@CLOCK@", clock).replace("@HEADER@", header).replace("@START@", start)
            .replace("@END@", end).replace("@FENCE@", fence))


# The reference: the same program timed with gemmini_testutils.h's read_cycles.
REFERENCE = program(header="gemmini_testutils.h")


def evaluate(tmp_path: Path, source: str, candidate: str | None = None, kernel: str | None = None):
    path = tmp_path / "prog.c"
    path.write_text(source)
    config = load_config(tmp_path, {"offline": True})
    problem = api.make_problem(str(path), source, kernel, config, whole_program=True)
    return api.evaluate(problem, candidate, config)


def backend_evaluate(tmp_path: Path, original: str, candidate: str):
    """The native backend alone (no source checks before it), on a candidate of copy_blocks()."""
    from speedpatch.targets.gemmini.target import GemminiTarget

    kernel = next(k for k in GemminiTarget().find_kernels(original) if k.name == "copy_blocks")
    workdir = tmp_path / "work"
    workdir.mkdir()
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "prog.c"), workdir=workdir, timeout=120,
                      baseline_source=original)
    return NativeBackend().evaluate(candidate, ctx)


@pytest.fixture(scope="module")
def reference_cycles(tmp_path_factory: pytest.TempPathFactory) -> float:
    ev = evaluate(tmp_path_factory.mktemp("ref"), REFERENCE, kernel="main")
    assert ev.status == OK, ev.message + ev.log
    return ev.value


def test_a_programs_own_rdcycle_read_cycles_builds_and_times_the_same_region(tmp_path, reference_cycles):
    ev = evaluate(tmp_path, program(OWN_READ_CYCLES), kernel="main")
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == reference_cycles
    assert f"took {int(reference_cycles)} cycles" in ev.log  # the program's own printed difference


def test_a_csrr_mcycle_macro_with_a_line_continuation_reads_the_models_counter(tmp_path, reference_cycles):
    ev = evaluate(tmp_path, program(TICK_MACRO, start="TICK(start)", end="TICK(end)"), kernel="main")
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == reference_cycles


def test_the_programs_own_fence_instruction_is_the_models_fence(tmp_path, reference_cycles):
    ev = evaluate(tmp_path, program(OWN_READ_CYCLES, fence='asm volatile("fence")'), kernel="main")
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == reference_cycles


def test_the_kernel_mode_baseline_with_its_own_clock_is_evaluated(tmp_path, reference_cycles):
    # copy_blocks() is a kernel: the program as written is the baseline, its clock is the program's
    ev = evaluate(tmp_path, program(OWN_READ_CYCLES), kernel="copy_blocks")
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == reference_cycles


def test_an_instret_read_is_refused_by_name(tmp_path):
    source = program(OWN_READ_CYCLES.replace("rdcycle", "rdinstret"))
    ev = evaluate(tmp_path, source, kernel="main")
    assert ev.status == COMPILE_ERROR
    assert "line 8" in ev.message and "instret counter" in ev.message and "gemmini-spike" in ev.message


def test_a_time_csr_read_is_refused_by_name(tmp_path):
    ev = evaluate(tmp_path, program(TICK_MACRO.replace("mcycle", "time"), start="TICK(start)", end="TICK(end)"),
                  kernel="main")
    assert ev.status == COMPILE_ERROR and "time counter" in ev.message


def test_a_compile_error_after_a_rewritten_clock_keeps_its_line(tmp_path):
    source = program(TICK_MACRO + OWN_READ_CYCLES + "static int broken = no_such_name;\n", start="TICK(start)",
                     end="TICK(end)")
    line = source.splitlines().index("static int broken = no_such_name;") + 1
    ev = evaluate(tmp_path, source, kernel="main")
    assert ev.status == COMPILE_ERROR
    assert f"prog.c:{line}:" in ev.message


def test_a_candidate_using_the_programs_clock_macro_is_refused(tmp_path):
    original = program(TICK_MACRO, start="TICK(start)", end="TICK(end)")
    candidate = original.replace("void copy_blocks(void) {\n", "void copy_blocks(void) {\n  uint64_t t; TICK(t);\n")
    ev = backend_evaluate(tmp_path, original, candidate)
    assert ev.status == REJECTED
    assert "TICK" in ev.message and "cycle counter" in ev.message


def test_a_candidate_calling_a_function_that_uses_the_clock_macro_is_refused(tmp_path):
    clock = TICK_MACRO + "static uint64_t now(void) { uint64_t t; TICK(t); return t; }\n"
    original = program(clock, start="start = now()", end="end = now()")
    candidate = original.replace("void copy_blocks(void) {\n", "void copy_blocks(void) {\n  if (now() & 1) return;\n")
    ev = backend_evaluate(tmp_path, original, candidate)
    assert ev.status == REJECTED
    assert "now" in ev.message and "through TICK" in ev.message


def test_a_candidate_reading_the_counter_itself_is_refused(tmp_path):
    original = program(OWN_READ_CYCLES)
    candidate = original.replace(
        "void copy_blocks(void) {\n",
        'void copy_blocks(void) {\n  uint64_t t;\n  asm volatile("rdcycle %0" : "=r"(t));\n  if (t & 1) return;\n')
    ev = backend_evaluate(tmp_path, original, candidate)
    assert ev.status == REJECTED
    assert "kernel reads the RISC-V cycle counter" in ev.message


def test_the_source_check_still_refuses_inline_assembly_in_a_kernel(tmp_path):
    # the guard's rule, before any build: asm in kernel code, even a clock read the program itself may make
    from speedpatch.targets.gemmini.target import GemminiTarget

    original = program(OWN_READ_CYCLES)
    kernel = next(k for k in GemminiTarget().find_kernels(original) if k.name == "copy_blocks")
    candidate = original.replace("void copy_blocks(void) {\n",
                                 'void copy_blocks(void) {\n  uint64_t t;\n  asm volatile("rdcycle %0" : "=r"(t));\n')
    reasons = GemminiTarget().static_check(candidate, kernel)
    assert any("inline assembly" in r for r in reasons)


def test_a_candidate_keeps_the_programs_clock_outside_its_region(tmp_path, reference_cycles):
    original = program(OWN_READ_CYCLES)
    candidate = original.replace("    gemmini_mvin(In[n], n * DIM);\n", "    gemmini_mvin(In[n], n * DIM);  /* same */\n")
    ev = backend_evaluate(tmp_path, original, candidate)
    assert ev.status == OK, ev.message + ev.log
    assert ev.value == reference_cycles


def test_only_whole_counter_reads_are_rewritten():
    text = ('asm volatile("rdcycle %0; addi %0, %0, 1" : "=r"(x));\n'  # more than a counter read
            'asm volatile("csrr %0, mstatus" : "=r"(x));\n'  # not a counter
            'asm volatile("rdcycle %1" : "=r"(x) : "r"(y));\n'  # into an input operand
            'asm volatile("rdcycle %0" : "=r"(x));\n')
    reads = upstream.counter_reads(text)
    assert [r.line for r in reads] == [4]
    adapted = upstream.adapt_program(text)
    assert adapted.splitlines()[:3] == text.splitlines()[:3]
    assert "gemmini_model_cycles()" in adapted.splitlines()[3]
