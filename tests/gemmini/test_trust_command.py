"""gemmini-command's trust boundary: the configured build is one unit with the harness and the program, and the
harness's printed result line is the verdict. A candidate's region still passes gemmini-native's kernel checks
(compiled with the host gcc), and an output with more than one result line is refused.

The configured commands here build the candidate with the host gcc against speedpatch's native model (what a
Verilator or FireSim command would do with its own toolchain) and run it; each hostile kernel was "correct,
1 cycles" before, against the library call's 14,586."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from speedpatch.model import OK, REJECTED
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext, ProcResult
from speedpatch.targets.gemmini import build
from speedpatch.targets.gemmini.backends import common

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gemmini" / "matmul_128.c"
SIGNATURE = "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, elem_t *C)"
LIBRARY_CALL = ("tiled_matmul_auto(MAT_DIM_I, MAT_DIM_J, MAT_DIM_K, A, B, bias, C, MAT_DIM_K, MAT_DIM_J, MAT_DIM_J, "
                "MAT_DIM_J, MVIN_SCALE_IDENTITY, MVIN_SCALE_IDENTITY, 1, MATMUL_ACT, MATMUL_SCALE, 0, true, false, "
                "false, false, false, 0, WS);")


def kernel(body: str, before: str = "") -> str:
    return f"{before}\n{SIGNATURE} {{\n{body}\n}}"


@pytest.fixture(scope="module")
def settings() -> dict[str, str]:
    _, archive = build.model_archive()
    assert archive is not None
    flags = " ".join(shlex.quote(f) for f in build.USER_CFLAGS)
    libs = " ".join(shlex.quote(f) for f in build.NATIVE_LINK_LIBS)
    return {"build": f"gcc {flags} -I{{include_root}} -I{{include}} {{source}} {shlex.quote(str(archive))} {libs} "
                     "-o {binary}",
            "command": "{binary}"}


def evaluate(tmp_path: Path, settings: dict[str, str], region: str):
    target = get_target("gemmini")
    original = EXAMPLE.read_text()
    (k,) = target.find_kernels(original)
    work = tmp_path / f"w{len(list(tmp_path.glob('w*')))}"
    work.mkdir()
    ctx = EvalContext(kernel=k, path=str(EXAMPLE), workdir=work, timeout=120, baseline_source=original, seed=1,
                      settings=settings)
    return target.backend("gemmini-command").evaluate(target.splice(original, k, region), ctx)


def test_the_library_call_is_measured_by_the_configured_command(tmp_path, settings):
    ev = evaluate(tmp_path, settings, kernel(LIBRARY_CALL))
    assert ev.status == OK and ev.value and ev.value > 8192, ev.message  # 128^3 MACs on a 16x16 array


def test_a_result_line_begun_by_the_kernel_is_refused(tmp_path, settings):
    # no line end: the harness's own line was appended to the kernel's, which then began the verdict line
    ev = evaluate(tmp_path, settings, kernel(f"  {LIBRARY_CALL}\n  static int once;\n"
                                             '  if (!once++) printf("speedpatch: correct=1 cycles=1 ");'))
    assert ev.status == REJECTED and "2 speedpatch result lines" in ev.message, ev.message


def test_a_kernel_that_prints_a_verdict_and_ends_the_program_is_refused(tmp_path, settings):
    ev = evaluate(tmp_path, settings, kernel(
        f'  {LIBRARY_CALL}\n  printf("speedpatch: correct=1 cycles=1 macs=2097152 trials=2\\n");\n  fflush(stdout);\n'
        "  JOIN2(ex, it)(0);", before="#define JOIN2(a, b) a##b"))
    assert ev.status == REJECTED and "the kernel calls exit" in ev.message, ev.message


def test_a_kernel_of_the_configured_build_may_not_read_the_clock(tmp_path, settings):
    ev = evaluate(tmp_path, settings, kernel(f"  (void)JOIN2(read_, cycles)();\n  {LIBRARY_CALL}",
                                             before="#define JOIN2(a, b) a##b"))
    assert ev.status == REJECTED and "gemmini_model_cycles" in ev.message, ev.message


def test_two_result_lines_are_no_verdict():
    run = ProcResult(0, "speedpatch: correct=1 cycles=1 speedpatch: correct=1 cycles=14594 macs=2097152 trials=2\n",
                     0.1, False)
    ev = common.run_to_evaluation(run, 10, {}, {})
    assert ev.status == REJECTED and "2 speedpatch result lines" in ev.message
