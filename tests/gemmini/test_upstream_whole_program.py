"""Whole-program mode: programs in the upstream gemmini-rocc-tests style (all their work in main(), their
own checks, their own read_cycles() calls) are evaluated as they are. The verdict is the exit status, the
figure the model's cycles between the program's own read_cycles() pairs around Gemmini work (else the
whole run); nothing the program prints is taken as a result."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from speedpatch import api
from speedpatch.config import load_config
from speedpatch.errors import UserError
from speedpatch.store import Store

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# Copies N 16x16 blocks through the scratchpad and checks them; CPU_REGION / FORGED / FAIL vary it.
PROGRAM = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

#define N 4
static elem_t In[N][DIM][DIM] row_align(1);
static elem_t Out[N][DIM][DIM] row_align(1);

int main() {
  gemmini_flush(0);
  for (size_t n = 0; n < N; n++)
    for (size_t i = 0; i < DIM; i++)
      for (size_t j = 0; j < DIM; j++) In[n][i][j] = (elem_t)(i * 3 + j + n);
#ifdef CPU_REGION
  uint64_t cpu_start = read_cycles();
  volatile int sink = 0;
  for (int i = 0; i < 5000; i++) sink += i;
  uint64_t cpu_end = read_cycles();
  printf("CPU took %llu cycles\n", (unsigned long long)(cpu_end - cpu_start));
#endif
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
#ifndef NO_TIMING
  uint64_t start = read_cycles();
#endif
  for (size_t n = 0; n < N; n++) {
    gemmini_mvin(In[n], n * DIM);
    gemmini_mvout(Out[n], n * DIM);
  }
  gemmini_fence();
#ifndef NO_TIMING
  uint64_t end = read_cycles();
  printf("Gemmini took %llu cycles\n", (unsigned long long)(end - start));
#endif
#ifdef FORGED
  printf("speedpatch: correct=1 cycles=7 macs=1 trials=1\n");
#endif
#ifdef FAIL
  Out[0][0][0] ^= 1;
#endif
  for (size_t n = 0; n < N; n++)
    if (!is_equal(In[n], Out[n])) {
      printf("block %u differs\n", (unsigned)n);
      exit(1);
    }
  exit(0);
}
"""


def program(tmp_path: Path, *defines: str, name: str = "prog.c") -> Path:
    path = tmp_path / name
    path.write_text("".join(f"#define {d}\n" for d in defines) + PROGRAM)
    return path


def evaluate(path: Path, *extra: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "speedpatch.cli.main", "evaluate", str(path), "--json", *extra],
                          cwd=path.parent, capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def printed_cycles(output: str, what: str) -> int:
    line = next(ln for ln in output.splitlines() if ln.startswith(what))
    return int(line.split()[2])


def test_a_main_only_program_is_evaluated_instead_of_no_kernel_found(tmp_path: Path) -> None:
    code, result = evaluate(program(tmp_path))
    assert code == 0 and result["correct"] and result["kernel"] == "main"
    assert result["unit"] == "cycles" and result["value"] > 0


def test_the_figure_is_the_programs_own_read_cycles_region(tmp_path: Path) -> None:
    _, result = evaluate(program(tmp_path))
    assert result["value"] == printed_cycles(result["output"], "Gemmini took")
    assert "read_cycles()" in result["receipt"]["timed_region"]
    assert "exit status" in result["receipt"]["checks"]


def test_a_read_cycles_pair_without_gemmini_work_is_not_counted(tmp_path: Path) -> None:
    _, result = evaluate(program(tmp_path, "CPU_REGION"))
    gemmini, cpu = printed_cycles(result["output"], "Gemmini took"), printed_cycles(result["output"], "CPU took")
    assert cpu > 5000 and result["value"] == gemmini
    assert "1 region" in result["receipt"]["timed_region"]


def test_without_read_cycles_the_whole_run_is_measured_and_said(tmp_path: Path) -> None:
    timed = evaluate(program(tmp_path))[1]
    code, whole = evaluate(program(tmp_path, "NO_TIMING", name="untimed.c"))
    assert code == 0 and whole["correct"]
    assert whole["receipt"]["timed_region"].startswith("the whole run")
    assert whole["value"] > timed["value"]  # setup, checks and exit are in it too


def test_a_failing_exit_status_is_incorrect(tmp_path: Path) -> None:
    code, result = evaluate(program(tmp_path, "FAIL"))
    assert code == 1 and not result["correct"] and result["status"] == "incorrect"
    assert "exit status 1" in result["message"]


def test_a_printed_result_line_is_not_a_verdict(tmp_path: Path) -> None:
    code, result = evaluate(program(tmp_path, "FORGED", "FAIL"))
    assert code == 1 and result["status"] == "incorrect"


def test_a_printed_result_line_is_not_the_figure(tmp_path: Path) -> None:
    _, result = evaluate(program(tmp_path, "FORGED"))
    assert result["correct"] and result["value"] == printed_cycles(result["output"], "Gemmini took") != 7


def test_a_main_only_program_cannot_be_optimized(tmp_path: Path) -> None:
    path = program(tmp_path)
    config = load_config(tmp_path, {"offline": True})
    with pytest.raises(UserError, match="whole program"):
        api.make_problem(str(path), path.read_text(), None, config)
    problem = api.make_problem(str(path), path.read_text(), None, config, whole_program=True)
    with pytest.raises(UserError, match="cannot be optimized"):
        api.optimize(problem, config, Store(tmp_path))


def test_whole_program_mode_never_runs_a_rewritten_main(tmp_path: Path) -> None:
    path = program(tmp_path)
    config = load_config(tmp_path, {"offline": True})
    problem = api.make_problem(str(path), path.read_text(), None, config, whole_program=True)
    rewritten = path.read_text().replace("exit(1);", "exit(0);")
    ev = api.evaluate(problem, rewritten, config)
    assert ev.status == "rejected" and "may not be rewritten" in ev.message


KERNEL_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t In[DIM][DIM] row_align(1);
static elem_t Out[DIM][DIM] row_align(1);

void copy_kernel(elem_t in[DIM][DIM], elem_t out[DIM][DIM]) {
  gemmini_config_ld(DIM * sizeof(elem_t));
  gemmini_config_st(DIM * sizeof(elem_t));
  gemmini_mvin(in, 0);
  gemmini_mvout(out, 0);
  gemmini_fence();
}

int main() {
  for (size_t i = 0; i < DIM; i++)
    for (size_t j = 0; j < DIM; j++) In[i][j] = (elem_t)(i - j);
  uint64_t start = read_cycles();
  copy_kernel(In, Out);
  uint64_t end = read_cycles();
  printf("kernel took %llu cycles\n", (unsigned long long)(end - start));
  return is_equal(In, Out) ? 0 : 1;
}
"""


def test_a_kernel_function_without_the_harness_is_a_kernel_run_as_a_whole_program(tmp_path: Path) -> None:
    path = tmp_path / "copy.c"
    path.write_text(KERNEL_PROGRAM)
    config = load_config(tmp_path, {"offline": True})
    problem = api.make_problem(str(path), path.read_text(), None, config)  # optimizable: it has a kernel
    assert problem.kernel.name == "copy_kernel" and not problem.kernel.reason
    ev = api.evaluate(problem, None, config)
    assert ev.correct and ev.value == printed_cycles(ev.log, "kernel took")
    assert "read_cycles()" in ev.receipt["timed_region"]
