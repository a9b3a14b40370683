"""Kernel detection knows every library entry point a Gemmini kernel may call (tiled_resadd*, tiled_norm*,
tiled_global_average*, tiled_pool*) and upstream's instruction names from before the gemmini_* rename
(matmul_mvin, matmul_fence...: include/systolic.h and the first include/gemmini.h; bareMetalC/aligned.c still
calls them). gemmini.h maps the two-argument legacy forms onto today's instructions."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from speedpatch import api
from speedpatch.config import load_config
from speedpatch.model import COMPILE_ERROR, INCORRECT, OK
from speedpatch.targets.gemmini.target import GemminiTarget

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def kernel_names(text: str) -> list[str]:
    return [k.name for k in GemminiTarget().find_kernels(text)]


@pytest.mark.parametrize("call", [
    "tiled_resadd_auto(16, 16, 1.0f, 1.0f, 1.0f, a, b, c, false, WS)",
    "tiled_resadd_stride_auto(16, 16, 1.0f, 1.0f, 1.0f, 32, a, b, c, false, WS)",
    "tiled_norm_auto(16, 16, a, c, 1.0f, LAYERNORM, WS)",
    "tiled_global_average_auto(a, c, 1, 16, 4, WS)",
    "tiled_pool_auto(1, 16, 8, 4, 2, 2, 2, 0, a, c)",
    "matmul_mvin(a, 0)",
    "matmul_fence()",
])
def test_a_function_calling_a_library_or_legacy_entry_point_is_a_kernel(call: str) -> None:
    text = f"void layer(elem_t *a, elem_t *b, elem_t *c) {{ {call}; }}\nint main() {{ return 0; }}\n"
    assert kernel_names(text) == ["layer"]


def test_an_ordinary_function_named_matmul_something_is_not_a_gemmini_call() -> None:
    text = "void check(int *a) { matmul_cpu(a); matmul_kernel_reference(a); }\nint main() { return 0; }\n"
    assert kernel_names(text) == []


def test_a_function_named_like_a_legacy_instruction_is_a_wrapper_not_a_kernel() -> None:
    text = ("void matmul_mvin(elem_t *a, int s) { gemmini_mvin(a, s); }\n"
            "void load(elem_t *a) { matmul_mvin(a, 0); }\nint main() { return 0; }\n")
    assert kernel_names(text) == ["load"]


def test_a_main_written_with_legacy_names_is_a_whole_program() -> None:
    text = '#include "include/gemmini.h"\nint main() { matmul_flush(0); matmul_fence(); return 0; }\n'
    kernel = GemminiTarget().whole_program_kernel(text)
    assert kernel is not None and kernel.name == "main"


# C = A * B + D on one 16x16 block, written with the legacy names (@P@ = matmul) or today's (@P@ = gemmini),
# checked against a CPU reference; the two must issue the same instructions and take the same cycles.
BLOCK_MATMUL = r"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t A[DIM][DIM] row_align(1);
static elem_t B[DIM][DIM] row_align(1);
static elem_t D[DIM][DIM] row_align(1);
static elem_t C[DIM][DIM] row_align(1);

int main() {
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      A[i][j] = (elem_t)((i + 2 * j) % 5 - 2);
      B[i][j] = (elem_t)((3 * i + j) % 7 - 3);
      D[i][j] = (elem_t)(i - j);
    }
  @P@_flush(0);
  gemmini_config_ex(OUTPUT_STATIONARY, NO_ACTIVATION, 0);
  @P@_config_ld(DIM * sizeof(elem_t));
  @P@_config_st(DIM * sizeof(elem_t));
  uint64_t start = read_cycles();
  @P@_mvin(A, 0);
  @P@_mvin(B, DIM);
  @P@_mvin(D, 2 * DIM);
  @P@_preload(2 * DIM, 3 * DIM);
  @P@_compute_preloaded(0, DIM);
  @P@_mvout(C, 3 * DIM);
  @P@_fence();
  uint64_t end = read_cycles();
  printf("took %llu cycles\n", (unsigned long long)(end - start));
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) {
      int32_t sum = D[i][j];
      for (int k = 0; k < DIM; k++) sum += A[i][k] * B[k][j];
      elem_t want = sum > elem_t_max ? elem_t_max : sum < elem_t_min ? elem_t_min : (elem_t)sum;
      if (C[i][j] != want) { printf("C[%d][%d] = %d, want %d\n", i, j, C[i][j], want); return 1; }
    }
  return 0;
}
"""


def evaluate(tmp_path: Path, name: str, source: str):
    path = tmp_path / name
    path.write_text(source)
    config = load_config(tmp_path, {"offline": True})
    problem = api.make_problem(str(path), source, None, config, whole_program=True)
    return api.evaluate(problem, None, config)


def test_legacy_instruction_names_compute_what_todays_names_compute(tmp_path: Path) -> None:
    today = evaluate(tmp_path, "today.c", BLOCK_MATMUL.replace("@P@", "gemmini"))
    legacy = evaluate(tmp_path, "legacy.c", BLOCK_MATMUL.replace("@P@", "matmul"))
    assert today.status == OK, today.message + today.log
    assert legacy.status == OK, legacy.message + legacy.log
    assert legacy.value == today.value
    assert legacy.feedback["instructions"] == today.feedback["instructions"]


def test_a_program_defining_the_legacy_names_itself_turns_the_shim_off(tmp_path: Path) -> None:
    own = ("#define GEMMINI_NO_LEGACY_NAMES\n" + BLOCK_MATMUL.replace("@P@_mvin(", "my_mvin(")
           .replace("@P@", "gemmini")
           .replace("int main() {", "static int loads;\nvoid matmul_mvin(const elem_t *a, uint32_t s) { loads++; "
                    "gemmini_mvin(a, s); }\n#define my_mvin matmul_mvin\nint main() {"))
    ev = evaluate(tmp_path, "own.c", own)
    assert ev.status == OK, ev.message + ev.log


def test_the_older_legacy_forms_with_dependency_bits_are_a_compile_error(tmp_path: Path) -> None:
    # matmul_mvin(dram, spad, push_mvout, pop_mvout, push_ex, pop_ex): its bits are gone from the ISA
    source = BLOCK_MATMUL.replace("@P@_mvin(A, 0);", "matmul_mvin(A, 0, 1, 0, 0, 0);").replace("@P@", "gemmini")
    ev = evaluate(tmp_path, "deps.c", source)
    assert ev.status == COMPILE_ERROR
    assert "matmul_mvin" in ev.message and "6 arguments" in ev.message


def test_a_program_including_gemmini_nn_h_is_told_which_header_is_missing(tmp_path: Path) -> None:
    source = BLOCK_MATMUL.replace('#include "include/gemmini_testutils.h"\n',
                                  '#include "include/gemmini_testutils.h"\n#include "include/gemmini_nn.h"\n')
    ev = evaluate(tmp_path, "nn.c", source.replace("@P@", "gemmini"))
    assert ev.status == COMPILE_ERROR
    assert ev.message.startswith("the program includes gemmini_nn.h, upstream's neural-network layer helpers")
    assert "--include-dir" in ev.message


# The shape of upstream's aligned.c: only gemmini.h included, the legacy names, and is_equal()/printMatrix(),
# which upstream's early gemmini.h defined (build.py links gemmini_compat.c's when the program leaves them
# undefined). @OWN@ is where a program may define its own is_equal.
EARLY_HEADER_PROGRAM = r"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini.h"
@OWN@
static elem_t In[DIM][DIM] row_align(1);
static elem_t Out[DIM][DIM] row_align(1);

int main() {
  matmul_flush(0);
  for (int i = 0; i < DIM; i++)
    for (int j = 0; j < DIM; j++) { In[i][j] = (elem_t)(i * DIM + j); Out[i][j] = 1; }
  matmul_config_ld(DIM * sizeof(elem_t));
  matmul_config_st(DIM * sizeof(elem_t));
  matmul_mvin(In, 0);
  matmul_mvout(Out, 0);
  matmul_fence();
  @BREAK@
  if (!is_equal(In, Out)) {
    printf("Matrix output:\n");
    printMatrix(Out);
    exit(1);
  }
  exit(0);
}
"""


def early(own: str = "", broken: bool = False) -> str:
    return EARLY_HEADER_PROGRAM.replace("@OWN@", own).replace("@BREAK@", "Out[3][5] ^= 4;" if broken else "")


def test_an_early_header_program_gets_is_equal_from_the_compat_unit(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, "early.c", early())
    assert ev.status == OK, ev.message + ev.log


def test_the_compat_is_equal_sees_a_difference_and_print_matrix_prints_it(tmp_path: Path) -> None:
    ev = evaluate(tmp_path, "early.c", early(broken=True))
    assert ev.status == INCORRECT
    row3 = " ".join(str(3 * 16 + j if j != 5 else (3 * 16 + 5) ^ 4) for j in range(16))
    assert row3 in ev.log


def test_a_programs_own_is_equal_wins_over_the_compat_one(tmp_path: Path) -> None:
    own = "int is_equal(elem_t x[DIM][DIM], elem_t y[DIM][DIM]) { (void)x; (void)y; return 1; }\n"
    ev = evaluate(tmp_path, "own.c", early(own=own, broken=True))
    assert ev.status == OK, ev.message + ev.log
