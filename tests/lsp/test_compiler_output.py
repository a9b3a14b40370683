"""Compiler output about a scratch copy of the user's file, read back as the user's file (real gcc)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.lsp.compiler import CompilerError, compiler_errors, relabel

SOURCE = "int main(void) {\n    int x = 1;\n    undefined_call(x);\n    return y;\n}\n"


@pytest.fixture
def gcc_output(tmp_path: Path) -> str:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    scratch = tmp_path / "speedpatch-eval-abc123"
    scratch.mkdir()
    (scratch / "kernel.c").write_text(SOURCE)
    done = subprocess.run(
        ["gcc", "-Werror=implicit-function-declaration", "-c", str(scratch / "kernel.c"), "-o", "/dev/null"],
        capture_output=True, text=True,
    )
    assert done.returncode != 0
    return done.stderr


def test_gcc_errors_in_the_scratch_copy_are_placed_at_the_users_lines(gcc_output):
    found = compiler_errors(gcc_output, "/home/me/project/kernel.c")
    assert [(e.line, e.column) for e in found] == [(2, 4), (3, 11)]
    assert "undefined_call" in found[0].message and "'y'" in found[1].message.replace("‘", "'").replace("’", "'")


def test_errors_in_other_files_are_left_out(gcc_output):
    assert compiler_errors(gcc_output, "/home/me/project/other.c") == []


def test_nvcc_style_errors_are_read_too():
    output = '/tmp/speedpatch-eval-x/matmul.cu(42): error: identifier "tile" is undefined\n'
    assert compiler_errors(output, "/w/matmul.cu") == [CompilerError(41, 0, 'identifier "tile" is undefined')]


def test_the_same_error_twice_is_one_error():
    line = "/tmp/speedpatch-eval-q/k.c:3:5: error: boom"
    assert len(compiler_errors(f"compile error: {line}\n{line}\n", "/w/k.c")) == 1


def test_scratch_paths_are_named_as_the_users_file(gcc_output):
    shown = relabel(gcc_output, "/home/me/project/kernel.c")
    assert "speedpatch-eval" not in shown and "/home/me/project/kernel.c:3:5:" in shown
