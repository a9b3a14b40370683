"""Kernel detection for Gemmini codes written with the short instruction names (config_ld, mvin, preload,
compute_preloaded...), as macros or as wrapper functions, and for whole programs."""

from __future__ import annotations

import pytest
from speedpatch.targets import get_target


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


MACROS = r"""
#include "include/gemmini.h"
#define config_ld(stride) gemmini_config_ld(stride)
#define mvin(dram, spad) gemmini_mvin(dram, spad)
#define preload(bd, c) gemmini_preload(bd, c)
#define compute_preloaded(a, bd) gemmini_compute_preloaded(a, bd)
#define mvout(dram, spad) gemmini_mvout(dram, spad)

void tile_kernel(elem_t *A, elem_t *B, elem_t *C) {
  config_ld(DIM);
  mvin(A, 0);
  mvin(B, DIM);
  preload(DIM, 2 * DIM);
  compute_preloaded(0, GARBAGE_ADDR);
  mvout(C, 2 * DIM);
}

int main(void) { return 0; }
"""

WRAPPERS = r"""
#include "include/gemmini.h"
static void mvin(const elem_t *dram, uint32_t spad) { gemmini_extended_mvin(dram, spad, DIM, DIM); }
static void mvout(elem_t *dram, uint32_t spad) { gemmini_extended_mvout(dram, spad, DIM, DIM); }
static void compute_accumulated(uint32_t a, uint32_t bd) { gemmini_compute_accumulated(a, bd); }

void copy_kernel(const elem_t *in, elem_t *out) {
  mvin(in, 0);
  compute_accumulated(0, GARBAGE_ADDR);
  mvout(out, 0);
}

int main(void) { return 0; }
"""


def test_a_kernel_written_with_short_instruction_macros_is_found(target) -> None:
    kernels = target.find_kernels(MACROS, "k.c")
    assert [k.name for k in kernels] == ["tile_kernel"] and kernels[0].runnable


def test_short_instruction_wrapper_functions_are_not_kernels_but_their_callers_are(target) -> None:
    assert [k.name for k in target.find_kernels(WRAPPERS, "k.c")] == ["copy_kernel"]


def test_a_plain_function_that_happens_to_be_named_fence_is_not_a_kernel_maker(target) -> None:
    text = "void fence(void) {}\nvoid f(void) { fence(); }\nint main(void) { f(); return 0; }\n"
    assert target.find_kernels(text, "k.c") == []


def test_a_program_with_its_gemmini_work_in_main_is_a_whole_program(target) -> None:
    text = ('#include "include/gemmini.h"\n'
            "int main(void) { gemmini_flush(0); mvin(0, 0); gemmini_fence(); return 0; }\n")
    assert target.find_kernels(text, "p.c") == []
    whole = target.whole_program_kernel(text, "p.c")
    assert whole is not None and whole.name == "main" and whole.runnable and "whole program" in whole.reason


def test_a_program_with_a_kernel_function_is_not_a_whole_program(target) -> None:
    assert target.whole_program_kernel(MACROS, "k.c") is None


def test_a_main_without_gemmini_calls_is_not_a_whole_program(target) -> None:
    assert target.whole_program_kernel("int main(void) { return 0; }\n", "p.c") is None


# Upstream's mvin_mvout_acc_full_stride.c: an #ifdef whose two branches each open the same `if (...) {` (one
# brace closes both), and a main() whose whole body sits inside an #ifdef. As written it is not C for any
# parser; each branch taken alone is.
SPLIT_BRANCHES = """#include "include/gemmini_testutils.h"
int same(acc_t x, acc_t y) {
#ifndef ELEM_T_IS_FLOAT
  if (x != y) {
#else
  if (x != y && !(x != x && y != y)) {
    printf("bits differ\\n");
#endif
    return 0;
  }
  return 1;
}

int main() {
#ifdef ACC_READ_FULL_WIDTH
  gemmini_flush(0);
  gemmini_mvin(0, 0);
  gemmini_fence();
#endif
  exit(0);
}
"""


def test_a_program_with_braces_split_across_ifdef_branches_is_a_whole_program(target) -> None:
    whole = target.whole_program_kernel(SPLIT_BRANCHES, "p.c")
    assert whole is not None and whole.name == "main"
    assert SPLIT_BRANCHES[whole.start:whole.end] == whole.text  # offsets into the file as written
    assert whole.text.startswith("int main() {\n#ifdef ACC_READ_FULL_WIDTH") and whole.text.endswith("}")


def test_reducing_conditionals_to_their_first_branch_keeps_every_offset() -> None:
    from speedpatch.targets.gemmini import csource

    text = "a\n#if X\nkeep é\n#elif Y \\\n  && Z\ndrop\n#else\ndrop\n#endif\nb\n"
    reduced = csource._first_branches(text)
    assert len(reduced) == len(text) and reduced.count("\n") == text.count("\n")
    # the directives (the continued one with its next line) and the #elif/#else branches are blanks
    assert reduced.split("\n") == ["a", " " * 5, "keep é", " " * 9, " " * 6, " " * 4, " " * 5, " " * 4, " " * 6,
                                   "b", ""]


def test_the_static_check_still_reads_every_branch(target) -> None:
    # The first-branch reading is for finding main() only: kernel detection and the checks parse the file as
    # written, so a call in an #else branch stays visible to them.
    from speedpatch.targets.gemmini import csource

    assert [f.name for f in csource.functions(SPLIT_BRANCHES)] == []
    text = "void k(void) {\n#if 1\n  gemmini_fence();\n#else\n  read_cycles();\n#endif\n}\n"
    (k,) = csource.functions(text, first_branches=True)
    assert "read_cycles" in k.calls and "gemmini_fence" in k.calls
