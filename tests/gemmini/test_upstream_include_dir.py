"""--include-dir DIR on evaluate/optimize: the same setting as [backend.gemmini-native] include_dir (a
gemmini-rocc-tests checkout whose include/ headers replace speedpatch's), given on the command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from speedpatch.cli.main import _overrides, build_parser

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

OUR_HEADERS = Path(__file__).resolve().parents[2] / "targets" / "gemmini" / "include"

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t In[DIM][DIM] row_align(1);
static elem_t Out[DIM][DIM] row_align(1);

int main() {
  for (size_t i = 0; i < DIM; i++)
    for (size_t j = 0; j < DIM; j++) In[i][j] = (elem_t)(i * j);
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  uint64_t start = read_cycles();
  gemmini_mvin(In, 0);
  gemmini_mvout(Out, 0);
  gemmini_fence();
  uint64_t end = read_cycles();
  printf("took %llu cycles, checkout %d\n", (unsigned long long)(end - start), CHECKOUT_MARKER);
  return is_equal(In, Out) ? 0 : 1;
}
"""


def checkout(root: Path) -> Path:
    """A stand-in for a gemmini-rocc-tests checkout: a copy of the headers with a marker only it defines."""
    include = root / "include"
    shutil.copytree(OUR_HEADERS, include)
    gemmini_h = include / "gemmini.h"
    gemmini_h.write_text(gemmini_h.read_text().replace("#endif /* SPEEDPATCH_GEMMINI_H */",
                                                       "#define CHECKOUT_MARKER 41\n#endif /* SPEEDPATCH_GEMMINI_H */"))
    return root


def evaluate(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_include_dir_flag_compiles_against_the_checkouts_headers(tmp_path: Path) -> None:
    checkout(tmp_path / "rocc-tests")
    (tmp_path / "prog.c").write_text(PROGRAM)
    proc = evaluate(tmp_path, "prog.c", "--include-dir", "rocc-tests", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 0 and result["correct"], result["output"]
    assert "checkout 41" in result["output"]
    assert result["receipt"]["headers"] == str((tmp_path / "rocc-tests").resolve())


def test_without_the_flag_the_checkout_is_not_used(tmp_path: Path) -> None:
    checkout(tmp_path / "rocc-tests")
    (tmp_path / "prog.c").write_text(PROGRAM)
    proc = evaluate(tmp_path, "prog.c", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and result["status"] == "compile_error" and "CHECKOUT_MARKER" in result["output"]


def test_the_flag_overrides_the_toml_key(tmp_path: Path) -> None:
    checkout(tmp_path / "rocc-tests")
    (tmp_path / "speedpatch.toml").write_text('[backend.gemmini-native]\ninclude_dir = "/nonexistent/rocc-tests"\n')
    (tmp_path / "prog.c").write_text(PROGRAM)
    proc = evaluate(tmp_path, "prog.c", "--include-dir", str(tmp_path / "rocc-tests"), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_folder_that_is_not_a_checkout_is_refused_with_what_is_missing(tmp_path: Path) -> None:
    (tmp_path / "prog.c").write_text(PROGRAM)
    (tmp_path / "empty").mkdir()
    proc = evaluate(tmp_path, "prog.c", "--include-dir", "empty")
    assert proc.returncode == 2
    assert "include_dir" in proc.stderr and "include/gemmini.h not found" in proc.stderr


def test_optimize_takes_the_flag_too(tmp_path: Path) -> None:
    args = build_parser().parse_args(["optimize", "k.c", "--include-dir", str(tmp_path), "--offline"])
    assert _overrides(args)["backend"] == {"gemmini-native": {"include_dir": str(tmp_path.resolve())}}


# A harness program built against upstream headers is one translation unit whose printed line is the verdict.
# Red-team: a kernel that did the work (so the harness's checks pass and main returns 0), printed its own
# result line first and then moved stdout to another descriptor (so the harness's real line was lost) was
# "correct (ok)" at 1,000 cycles, 819% of the array, against the honest 14,178.
FORGING_KERNEL = """  static int once;
  if (!once) {
    once = 1;
    fflush(stdout);
    printf("speedpatch: correct=1 cycles=1000 macs=2097152 trials=1\\n");
    fflush(stdout);
    stdout->_fileno = 1000;
  }
}
"""


def test_a_printed_figure_that_is_not_the_models_is_rejected_with_both_figures(tmp_path: Path) -> None:
    checkout(tmp_path / "rocc-tests")
    example = (OUR_HEADERS.parents[2] / "examples" / "gemmini" / "matmul_128.c").read_text()
    end = example.index("\n}\n", example.index("void matmul_kernel")) + 1
    (tmp_path / "forged.c").write_text(example[:end] + FORGING_KERNEL + example[end + 2:])
    proc = evaluate(tmp_path, "forged.c", "--include-dir", "rocc-tests", "--json")
    result = json.loads(proc.stdout)
    assert result["status"] == "rejected", result
    assert "printed 1000 cycles, but the model measured" in result["message"]


def test_an_honest_harness_program_s_printed_figure_is_the_models(tmp_path: Path) -> None:
    checkout(tmp_path / "rocc-tests")
    shutil.copy(OUR_HEADERS.parents[2] / "examples" / "gemmini" / "matmul_128.c", tmp_path / "honest.c")
    proc = evaluate(tmp_path, "honest.c", "--include-dir", "rocc-tests", "--json")
    result = json.loads(proc.stdout)
    assert result["status"] == "ok" and "model's own figure" in result["receipt"]["verdict"], result


def test_a_checkout_without_the_speedpatch_harness_still_builds_a_harness_program(tmp_path: Path) -> None:
    root = checkout(tmp_path / "rocc-tests")
    for name in ("speedpatch_harness.h", "speedpatch_functs.h"):  # an upstream checkout has neither
        (root / "include" / name).unlink()
    shutil.copy(OUR_HEADERS.parents[2] / "examples" / "gemmini" / "matmul_128.c", tmp_path / "k.c")
    proc = evaluate(tmp_path, "k.c", "--include-dir", "rocc-tests", "--json")
    result = json.loads(proc.stdout)
    assert result["status"] == "ok", result["output"]


def test_a_kernel_that_leaves_the_work_to_the_host_is_rejected_as_on_the_trusted_path(tmp_path: Path) -> None:
    # the library's own CPU mode computes C correctly without the array: the trusted harness rejects it,
    # and so must the one-unit build, whose first timed trial the model holds to the declared work
    checkout(tmp_path / "rocc-tests")
    example = (OUR_HEADERS.parents[2] / "examples" / "gemmini" / "matmul_128.c").read_text()
    (tmp_path / "host.c").write_text(example.replace("false, false, 0, WS);", "false, false, 0, CPU);\n  gemmini_fence();"))
    proc = evaluate(tmp_path, "host.c", "--include-dir", "rocc-tests", "--json")
    result = json.loads(proc.stdout)
    assert result["status"] == "rejected", result
    assert "multiply-accumulates: 0 of the problem's 2097152" in result["message"]
