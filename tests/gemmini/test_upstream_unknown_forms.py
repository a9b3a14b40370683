"""A library call with an argument count no gemmini-rocc-tests version had (a fork's or a branch's form:
tiled_conv_auto with separate kernel_row_dim/kernel_col_dim takes 28, a fork's early conv 18) fails to build
with a message that names the function, the count and the counts our headers know, instead of 'undefined
reference to tiled_conv_auto_with_28_args' (a name the program never wrote)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from speedpatch.targets.gemmini.backends.common import compile_error_line

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# A conv with a rectangular kernel written as a 28-argument tiled_conv_auto (kernel rows, then kernel columns).
RECT_KERNEL_CONV = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t input[1][8][8][16];
static elem_t weights[4 * 3 * 16][16];
static elem_t output[1 * 7 * 8][16];

int main(void) {
  gemmini_flush(0);
  uint64_t start = read_cycles();
  tiled_conv_auto(1, 8, 8, 16, 16, 7, 8, 1, 1, 1, 1, 4, 3, false, false, false, false, false,
                  (elem_t *)input, (elem_t *)weights, NULL, (elem_t *)output, NO_ACTIVATION,
                  ACC_SCALE_IDENTITY, 0, 0, 0, WS);
  uint64_t end = read_cycles();
  printf("%llu\n", (unsigned long long)(end - start));
  return 0;
}
"""


def test_a_call_with_an_unknown_argument_count_names_the_function_and_the_known_counts(tmp_path: Path) -> None:
    path = tmp_path / "rect.c"
    path.write_text(RECT_KERNEL_CONV)
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    result = json.loads(proc.stdout)
    assert result["status"] == "compile_error", result
    message = result["message"]
    assert "tiled_conv_auto is called with 28 arguments" in message
    assert "19, 26 or 27" in message
    assert "--include-dir" in message
    assert "_with_28_args" not in message


def test_a_compiler_that_refuses_implicit_declarations_gets_the_same_message() -> None:
    # gcc 14 makes an implicit function declaration an error; the form's name then comes in that error line
    output = ("prog.c:9:3: error: implicit declaration of function 'tiled_matmul_auto_with_13_args'; did you "
              "mean 'tiled_matmul_auto_with_12_args'? [-Wimplicit-function-declaration]\n")
    line = compile_error_line(output)
    assert line.startswith("tiled_matmul_auto is called with 13 arguments"), line
    assert "12, 19, 22, 23, 24 or 25" in line


def test_a_known_form_named_in_an_unrelated_error_is_not_blamed() -> None:
    output = ("prog.c:4:3: note: in expansion of macro 'gemmini_extended_config_ex_with_6_args'\n"
              "prog.c:4:3: error: 'A_stride' undeclared (first use in this function)\n")
    assert compile_error_line(output) == "prog.c:4:3: error: 'A_stride' undeclared (first use in this function)"
