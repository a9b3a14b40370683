"""Gemmini backends: every way a candidate can end maps to the right Evaluation status, never an exception;
availability messages say what is missing; the command backend with a fake command."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest
from speedpatch.model import COMPILE_ERROR, INCORRECT, INFRA_ERROR, OK, RUNTIME_ERROR, TIMEOUT
from speedpatch.targets import get_target
from speedpatch.targets.base import EvalContext

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "gemmini"
QUICK_PATH = EXAMPLES / "matmul_128.c"
QUICK = QUICK_PATH.read_text()
INCLUDE = Path(__file__).resolve().parents[2] / "targets" / "gemmini" / "include"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


@pytest.fixture(scope="module")
def target():
    return get_target("gemmini")


def _ctx(target, tmp_path: Path, settings: dict | None = None, timeout: float = 60, path: Path = QUICK_PATH):
    (k,) = target.find_kernels(QUICK)
    work = tmp_path / f"w{len(list(tmp_path.iterdir()))}"
    work.mkdir()
    return EvalContext(kernel=k, path=str(path), workdir=work, timeout=timeout, settings=settings or {}, seed=5)


def _with_body(target, body: str) -> str:
    (k,) = target.find_kernels(QUICK)
    return target.splice(QUICK, k, "void matmul_kernel(const elem_t *A, const elem_t *B, const acc_t *bias, "
                                   "elem_t *C) {\n" + body + "\n}")


# ------------------------------------------------------------------------------------------- native
@needs_gcc
def test_native_measures_a_correct_program(target, tmp_path: Path) -> None:
    ev = target.backend("gemmini-native").evaluate(QUICK, _ctx(target, tmp_path))
    assert ev.status == OK, ev.log
    assert ev.unit == "cycles" and ev.value and ev.value > 0
    assert 0 < ev.feedback["utilization"] < 1 and ev.feedback["macs"] == 128 ** 3
    assert ev.feedback["spad_kb_total"] == 256 and ev.feedback["acc_kb_total"] == 64
    for key in ("backend", "model", "params", "compiler", "flags", "seed", "statistic", "date"):
        assert key in ev.receipt, key
    assert ev.receipt["seed"] == 5 and "deterministic" in ev.receipt["statistic"]


@needs_gcc
def test_native_reports_compile_errors_with_the_compiler_output(target, tmp_path: Path) -> None:
    ev = target.backend("gemmini-native").evaluate(_with_body(target, "  this is not C;"), _ctx(target, tmp_path))
    assert ev.status == COMPILE_ERROR and "error" in ev.log and ev.message.startswith("compile error")


@needs_gcc
def test_native_reports_the_models_error_line(target, tmp_path: Path) -> None:
    src = _with_body(target, "  gemmini_config_ld(MAT_DIM_K);\n  gemmini_extended_mvin(A, 20000, DIM, DIM);")
    ev = target.backend("gemmini-native").evaluate(src, _ctx(target, tmp_path))
    assert ev.status == RUNTIME_ERROR and "gemmini-model: error" in ev.message and "out of range" in ev.message


@needs_gcc
def test_native_reports_wrong_results_as_incorrect(target, tmp_path: Path) -> None:
    wrong = QUICK.replace("MATMUL_ACT, MATMUL_SCALE, 0, true", "MATMUL_ACT, MATMUL_SCALE * 2, 0, true")
    ev = target.backend("gemmini-native").evaluate(wrong, _ctx(target, tmp_path))
    assert ev.status == INCORRECT and "mismatch" in ev.message


@needs_gcc
def test_native_reports_a_library_refusal_as_runtime_error(target, tmp_path: Path) -> None:
    src = QUICK.replace("tiled_matmul_auto(MAT_DIM_I", "tiled_matmul(MAT_DIM_I").replace(
        "true, false, false,\n                    false, false, 0, WS", "true, 64, 64, 64, false, false,\n false, false, 0, WS")
    ev = target.backend("gemmini-native").evaluate(src, _ctx(target, tmp_path))
    assert ev.status == RUNTIME_ERROR and "tiles do not fit" in ev.message


@needs_gcc
@pytest.mark.slow
def test_native_stops_a_hung_program(target, tmp_path: Path) -> None:
    src = _with_body(target, "  for (volatile int i = 0; ; i++) gemmini_flush(0);")
    ev = target.backend("gemmini-native").evaluate(src, _ctx(target, tmp_path, timeout=2))
    assert ev.status == TIMEOUT


@needs_gcc
def test_native_requires_the_result_line_from_a_harness_program(target, tmp_path: Path) -> None:
    # A kernel that exits before the harness can compare must not pass by its exit status.
    src = _with_body(target, "  gemmini_fence();\n  exit(0);")
    ev = target.backend("gemmini-native").evaluate(src, _ctx(target, tmp_path))
    assert ev.status == RUNTIME_ERROR and "no speedpatch result line" in ev.message


@needs_gcc
def test_native_runs_a_program_without_the_harness_by_exit_status(target, tmp_path: Path) -> None:
    prog = '#include "include/gemmini.h"\n#include "include/gemmini_testutils.h"\n' \
           "void k(void) { gemmini_flush(0); gemmini_fence(); }\n" \
           "int main(void) { k(); (void)read_cycles(); return %d; }\n"
    backend = target.backend("gemmini-native")
    ok = backend.evaluate(prog % 0, _ctx(target, tmp_path))
    assert ok.status == OK and ok.value and ok.receipt["timed_region"].startswith("the whole run")
    bad = backend.evaluate(prog % 1, _ctx(target, tmp_path))  # its own checks failed: incorrect, not a crash
    assert bad.status == INCORRECT and "exit status 1" in bad.message


def _fake_upstream(root: Path) -> Path:
    """A folder with the upstream layout whose headers use RISC-V inline assembly for fence/rdcycle."""
    (root / "include").mkdir(parents=True)
    (root / "rocc-software" / "src").mkdir(parents=True)
    shutil.copyfile(INCLUDE / "gemmini_params.h", root / "include" / "gemmini_params.h")
    (root / "rocc-software" / "src" / "xcustom.h").write_text("#error the RISC-V-only xcustom.h was used\n")
    (root / "include" / "gemmini.h").write_text(
        '#include <stdint.h>\n#include <stdio.h>\n#include "include/gemmini_params.h"\n'
        '#include "rocc-software/src/xcustom.h"\n#define k_FLUSH 7\n'
        "#define gemmini_flush(skip) ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, skip, 0, k_FLUSH)\n"
        '#define gemmini_fence() asm volatile("fence")\n')
    (root / "include" / "gemmini_testutils.h").write_text(
        '#include "include/gemmini.h"\nstatic uint64_t read_cycles() {\n  uint64_t cycles;\n'
        '  asm volatile("rdcycle %0" : "=r" (cycles));\n  return cycles;\n}\n')
    return root


@needs_gcc
def test_native_builds_against_adapted_upstream_headers(target, tmp_path: Path) -> None:
    root = _fake_upstream(tmp_path / "gemmini-rocc-tests")
    prog = ('#include "include/gemmini.h"\n#include "include/gemmini_testutils.h"\n'
            "int main(void) { gemmini_flush(0); gemmini_fence(); uint64_t c = read_cycles();\n"
            '  printf("speedpatch: correct=1 cycles=%llu\\n", (unsigned long long)c + 1); return 0; }\n')
    ctx = _ctx(target, tmp_path, {"include_dir": str(root)})
    ev = target.backend("gemmini-native").evaluate(prog, ctx)
    assert ev.status == OK, ev.log
    assert str(root) in ev.receipt["headers"]
    # The host work is charged per instruction from the block table, as on the normal build.
    assert list(ctx.workdir.glob("*.native.blocks")), "no block table written next to the executable"


def test_native_rejects_an_include_dir_without_gemmini_h(target, tmp_path: Path) -> None:
    why = target.backend("gemmini-native").availability({"include_dir": str(tmp_path)})
    assert not why.usable and "include/gemmini.h not found" in why.reason


# ---------------------------------------------------------------------------------------- availability
def test_native_is_available_with_gcc(target) -> None:
    usable = target.backend("gemmini-native").availability({})
    assert usable.usable == (shutil.which("gcc") is not None)


def test_spike_availability_says_what_is_missing_and_how_to_install(target) -> None:
    usable = target.backend("gemmini-spike").availability({})
    if not usable.usable:
        assert "missing" in usable.reason or "driver" in usable.reason
        assert "gemmini-spike.sh" in usable.reason or "build_spike" in usable.reason


def test_command_backend_unconfigured(target, tmp_path: Path) -> None:
    backend = target.backend("gemmini-command")
    why = backend.availability({})
    assert not why.usable and "set [backend.gemmini-command] command in speedpatch.toml" in why.reason
    ev = backend.evaluate(QUICK, _ctx(target, tmp_path))
    assert ev.status == INFRA_ERROR and "not configured" in ev.message


# ----------------------------------------------------------------------------------------- command
def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-firesim.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


@pytest.mark.parametrize("body, settings, status, value", [
    ('echo "speedpatch: correct=1 cycles=4242"', {}, OK, 4242),
    ('echo "speedpatch: correct=0 cycles=4242"; exit 1', {}, INCORRECT, None),
    ('echo "Cycles taken: 1,234"', {"cycles_regex": r"Cycles taken: ([\d,]+)"}, OK, 1234),
    ('echo "Cycles taken: 77"; exit 2', {"cycles_regex": r"Cycles taken: (\d+)"}, RUNTIME_ERROR, None),
    ('echo "nothing useful"', {"cycles_regex": r"Cycles taken: (\d+)"}, RUNTIME_ERROR, None),
    ('echo "nothing useful"', {}, RUNTIME_ERROR, None),
], ids=["result-line", "incorrect", "regex", "regex-exit-2", "regex-no-match", "no-line"])
def test_command_backend_maps_the_output(target, tmp_path: Path, body, settings, status, value) -> None:
    script = _script(tmp_path, body)
    settings = {"command": f"{script} {{binary}}", **settings}
    ev = target.backend("gemmini-command").evaluate(QUICK, _ctx(target, tmp_path, settings))
    assert ev.status == status, ev.message
    assert ev.value == value
    if status == OK:
        assert ev.unit == "cycles" and ev.receipt["backend"] == "gemmini-command"


def test_command_backend_passes_quoted_paths_and_builds_first(target, tmp_path: Path) -> None:
    script = _script(tmp_path, 'test -f "$1" && echo "speedpatch: correct=1 cycles=$(wc -c < "$1")"')
    settings = {"build": "cp {source} {binary}", "command": f"{script} {{binary}}"}
    ev = target.backend("gemmini-command").evaluate(QUICK, _ctx(target, tmp_path, settings))
    assert ev.status == OK and ev.value == len(QUICK.encode())


def test_command_backend_build_failure_is_a_compile_error(target, tmp_path: Path) -> None:
    settings = {"build": "echo 'error: no toolchain' >&2; exit 1", "command": "true"}
    ev = target.backend("gemmini-command").evaluate(QUICK, _ctx(target, tmp_path, settings))
    assert ev.status == COMPILE_ERROR and "no toolchain" in ev.log


@pytest.mark.parametrize("sandbox, seen", [(None, "none"), (False, "kept")], ids=["sandboxed", "sandbox-false"])
def test_command_backend_runs_the_command_sandboxed_unless_told_and_the_build_always(
        target, tmp_path: Path, monkeypatch, sandbox, seen) -> None:
    monkeypatch.setenv("SPEEDPATCH_TEST_MARK", "kept")  # not on the sandbox's environment allowlist
    settings = {"build": "echo ${SPEEDPATCH_TEST_MARK:-none} > build.txt; cp {source} {binary}",
                "command": "echo ${SPEEDPATCH_TEST_MARK:-none} > run.txt; echo 'speedpatch: correct=1 cycles=9'",
                **({} if sandbox is None else {"sandbox": sandbox})}
    ctx = _ctx(target, tmp_path, settings)
    ev = target.backend("gemmini-command").evaluate(QUICK, ctx)
    assert ev.status == OK, ev.message
    assert (ctx.workdir / "build.txt").read_text().strip() == "none"
    assert (ctx.workdir / "run.txt").read_text().strip() == seen


def test_command_backend_timeout(target, tmp_path: Path) -> None:
    settings = {"command": "sleep 30", "timeout": 1}
    ev = target.backend("gemmini-command").evaluate(QUICK, _ctx(target, tmp_path, settings))
    assert ev.status == TIMEOUT


def test_command_backend_unknown_placeholder(target, tmp_path: Path) -> None:
    ev = target.backend("gemmini-command").evaluate(QUICK, _ctx(target, tmp_path, {"command": "run {elf}"}))
    assert ev.status == INFRA_ERROR and "{elf}" in ev.message
