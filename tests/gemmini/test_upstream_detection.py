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
