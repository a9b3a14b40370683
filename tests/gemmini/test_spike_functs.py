"""The RoCC functs the trusted side uses on Spike (verdict, timed region, checked kernel call, library copies)
are written once, in include/speedpatch_functs.h, and build.py's kernel check refuses each by name."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.targets.gemmini import build

GEMMINI = Path(build.__file__).resolve().parent
# Every C file that issues or takes one of these functs.
USERS = [GEMMINI / "model" / "runtime.c", GEMMINI / "spike" / "gemmini_spike.cc", GEMMINI / "spike" / "host_copies.c",
         GEMMINI / "include" / "speedpatch_harness.h", GEMMINI / "spike" / "console.c", GEMMINI / "spike" / "start.S"]


def test_the_harness_functs_are_read_from_the_shared_header():
    assert build.HARNESS_FUNCTS == {117: "exit", 118: "console", 119: "kernel leave", 120: "kernel enter",
                                    121: "copy ends", 122: "copy begins", 123: "region begin", 124: "region end",
                                    125: "verdict"}
    assert not set(build.HARNESS_FUNCTS) & build.GEMMINI_FUNCTS  # none of them is accelerator work


@pytest.mark.parametrize("path", USERS, ids=lambda p: p.name)
def test_no_file_writes_a_harness_funct_as_a_literal(path: Path):
    text = path.read_text()
    assert "speedpatch_functs.h" in text
    literal = r"\b(?:11[7-9]|12[0-5])\b"
    asm = re.findall(rf"\.insn r 0x7b, 3, {literal}", text)
    rocc = re.findall(rf"ROCC_INSTRUCTION\w*\([^;]*,\s*{literal}\s*\)", text)
    define = re.findall(rf"#define F_\w+ {literal}", text)
    assert not asm + rocc + define


def test_the_model_is_rebuilt_when_the_functs_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # runtime.c (the model, and through it the Spike extension) compiles the header in: a cached model
    # built with other numbers would take a kernel's instruction as the harness's
    before = build.model_key()
    changed = tmp_path / "speedpatch_functs.h"
    changed.write_text(build.FUNCTS_HEADER.read_text().replace("VERDICT 125", "VERDICT 127"))
    monkeypatch.setattr(build, "FUNCTS_HEADER", changed)
    assert build.model_key() != before


@pytest.mark.skipif(shutil.which(build.RISCV_CC) is None, reason="the RISC-V toolchain is not installed")
@pytest.mark.parametrize("funct", sorted(build.HARNESS_FUNCTS))
def test_a_kernel_object_issuing_a_harness_funct_is_refused_by_name(tmp_path: Path, funct: int):
    src = tmp_path / "k.c"
    src.write_text('#include "include/gemmini.h"\n'
                   f"void kernel(void) {{ ROCC_INSTRUCTION_RS1_RS2(XCUSTOM_ACC, 0, 0, {funct}); }}\n")
    obj = tmp_path / "k.o"
    subprocess.run([build.RISCV_CC, *build.RISCV_CFLAGS, *build.KERNEL_TU_CFLAGS, "-I", str(build.INCLUDE_DIR.parent),
                    "-I", str(build.INCLUDE_DIR), "-c", str(src), "-o", str(obj)], check=True, capture_output=True)
    problems = build.kernel_object_problems(obj, riscv=True)
    assert len(problems) == 1, problems
    assert f"funct {funct} ({build.HARNESS_FUNCTS[funct]}), which is reserved for speedpatch's harness" in problems[0]
