"""Programs written for Gemmini variants the model does not follow stop at compile time and say why:
branches of gemmini-rocc-tests call a move from the accumulator into the scratchpad (mvin_mvout_spad.c,
matmul_spad.c: gemmini_mvout_spad) or lookup-table activations (lut_template.c: gemmini_preload_lut1/2),
ReRoCC acquires several accelerators (acquire_release.c: rr_acquire_single...), and include/gemmini_mt.h
runs a program on several cores; include/matrix_util.h serves the command-line gemm benchmark (gemm.c), which
reads its sizes from argv. Each is reproduced here on a program of our own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

HEAD = r"""
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"
"""


def evaluate(tmp_path: Path, source: str) -> dict:
    path = tmp_path / "prog.c"
    path.write_text(source)
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


def test_a_move_from_the_accumulator_into_the_scratchpad_is_another_variants_instruction(tmp_path: Path) -> None:
    result = evaluate(tmp_path, HEAD + r"""
int main() {
  gemmini_flush(0);
  gemmini_mvout_spad(0, 1u << 31, DIM, DIM);
  gemmini_fence();
  return 0;
}
""")
    assert result["status"] == "compile_error", result
    assert "gemmini_mvout_spad" in result["message"] and "another variant" in result["message"]


def test_lookup_table_activations_are_another_variants_instructions(tmp_path: Path) -> None:
    result = evaluate(tmp_path, HEAD + r"""
int main() {
  gemmini_flush(0);
  gemmini_preload_lut1(0x5432109876543210LL, 0x0123456789012345LL);
  return 0;
}
""")
    assert result["status"] == "compile_error", result
    assert "gemmini_preload_lut1" in result["message"] and "another variant" in result["message"]


def test_acquiring_accelerators_through_rerocc_cannot_run_on_one_gemmini(tmp_path: Path) -> None:
    result = evaluate(tmp_path, HEAD + r"""
int main() {
  bool acquired = rr_acquire_single(0, 0);
  rr_set_opc(XCUSTOM_ACC, 0);
  gemmini_flush(0);
  rr_release(0);
  return acquired ? 0 : 1;
}
""")
    assert result["status"] == "compile_error", result
    assert "ReRoCC" in result["message"] and "one Gemmini to one core" in result["message"]


def test_a_multi_core_program_stops_at_its_thread_pool_header(tmp_path: Path) -> None:
    result = evaluate(tmp_path, r"""
#include "include/gemmini_mt.h"
#include "include/gemmini_testutils.h"
int main() {
  gemmini_flush(0);
  return 0;
}
""")
    assert result["status"] == "compile_error", result
    assert "multi-core" in result["message"] and "one core with one Gemmini" in result["message"]


def test_the_command_line_gemm_benchmarks_header_says_the_program_needs_arguments(tmp_path: Path) -> None:
    result = evaluate(tmp_path, r"""
#include "include/gemmini.h"
#include "include/matrix_util.h"
int main(int argc, char *argv[]) {
  gemmini_flush(0);
  return argc > 3 ? 0 : 1;
}
""")
    assert result["status"] == "compile_error", result
    assert "argv" in result["message"] and "without arguments" in result["message"]


def test_a_program_defining_such_a_name_itself_keeps_its_own(tmp_path: Path) -> None:
    result = evaluate(tmp_path, r"""
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#define rr_release(id) ((void)(id))
#include "include/gemmini_testutils.h"
int main() {
  gemmini_flush(0);
  rr_release(0);
  return 0;
}
""")
    assert result["status"] == "ok", result
