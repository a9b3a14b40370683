"""The program's own data sits at a fixed place, whatever the size of the model it is linked with.

The cycle model charges DMA by the 64-byte lines, 4 KiB pages and 16 KiB TLB groups a row touches, so a
static array's address is part of a program's figure. It used to follow the model's own sections (upstream
large_padded_matmul.c measured 1,303 or 1,423 cycles depending on the model's data size); build.py now
links the program's sections at PROGRAM_DATA_ADDRESS. Model growth is simulated by linking an extra object
with 12 KiB of data and 100 KiB of read-only data, as a bigger model archive would add."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from speedpatch.targets.gemmini import build

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# Matrices whose rows are 20 bytes apart (not line-aligned: each row's line count depends on where the
# array starts), copied through the scratchpad between two read_cycles(); initialised data with a pointer
# (a dynamic relocation) and a constant table are checked too.
PROGRAM = r"""#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"
#define ROWS 64
#define COLS 20
static elem_t In[ROWS][COLS];
static elem_t Out[ROWS][COLS];
static const elem_t Table[ROWS] = {3, 1, 4, 1, 5, 9, 2, 6};
static int value = 42;
static int *pointer = &value;

int main() {
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < COLS; j++) In[i][j] = (elem_t)(i * 7 + j + Table[i % 8]);
  gemmini_flush(0);
  gemmini_config_ld(COLS * sizeof(elem_t));
  gemmini_config_st(COLS * sizeof(elem_t));
  uint64_t start = read_cycles();
  for (int i = 0; i < ROWS; i += DIM) {
    gemmini_extended_mvin(In[i], i, DIM, DIM);
    gemmini_extended_mvout(Out[i], i, DIM, DIM);
  }
  gemmini_fence();
  uint64_t end = read_cycles();
  printf("took %llu cycles\n", (unsigned long long)(end - start));
  printf("In at %p\n", (void *)In);
  for (int i = 0; i < ROWS; i++)
    for (int j = 0; j < DIM; j++)
      if (Out[i][j] != In[i][j]) return 1;
  return *pointer == 42 && Table[5] == 9 ? 0 : 2;
}
"""

MODEL_GROWTH = "char speedpatch_test_growth_data[12288] = {1};\nconst char speedpatch_test_growth_rodata[100000] = {1};\n"


@pytest.fixture
def growth_object(tmp_path: Path) -> Path:
    src, obj = tmp_path / "growth.c", tmp_path / "growth.o"
    src.write_text(MODEL_GROWTH)
    subprocess.run(["gcc", "-O2", "-c", str(src), "-o", str(obj)], check=True)
    return obj


def build_and_run(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, extra: Path | None = None,
                  placed: bool = True) -> tuple[int, dict, dict[str, int]]:
    """(exit status, model statistics, program symbol -> address) of PROGRAM linked with `extra`."""
    with monkeypatch.context() as m:
        if extra is not None:
            m.setattr(build, "NATIVE_LINK_LIBS", [str(extra), *build.NATIVE_LINK_LIBS])
        if not placed:
            m.setattr(build, "program_data_link_flags", lambda workdir: [])
        workdir = tmp_path / name
        workdir.mkdir()
        src = workdir / "prog.c"
        src.write_text(PROGRAM)
        res, exe = build.build_native(src, workdir, timeout=120)
    assert exe is not None, res.output
    run = build.run_native(exe, workdir, 60, workdir / "stats.json")
    stats = json.loads((workdir / "stats.json").read_text())
    symbols: dict[str, int] = {}
    for line in subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("In", "Out", "Table", "value", "pointer"):
            symbols[parts[2]] = int(parts[0], 16)
    return run.returncode, stats, symbols


def test_the_programs_data_is_linked_at_the_fixed_address(tmp_path, monkeypatch):
    code, _, symbols = build_and_run(tmp_path, "plain", monkeypatch)
    assert code == 0
    assert all(build.PROGRAM_DATA_ADDRESS <= a < build.PROGRAM_DATA_ADDRESS + (1 << 20) for a in symbols.values()), symbols


def test_a_bigger_model_moves_neither_the_programs_data_nor_its_figure(tmp_path, monkeypatch, growth_object):
    code, stats, symbols = build_and_run(tmp_path, "small", monkeypatch)
    grown_code, grown_stats, grown_symbols = build_and_run(tmp_path, "grown", monkeypatch, growth_object)
    assert code == grown_code == 0
    assert grown_symbols == symbols
    assert stats["timed_regions"] == 1
    assert grown_stats["timed_region_cycles"] == stats["timed_region_cycles"]


def test_without_the_placement_a_bigger_model_moves_the_programs_data(tmp_path, monkeypatch, growth_object):
    # the control: what the placement prevents
    _, _, symbols = build_and_run(tmp_path, "small", monkeypatch, placed=False)
    _, _, grown_symbols = build_and_run(tmp_path, "grown", monkeypatch, growth_object, placed=False)
    assert grown_symbols["In"] != symbols["In"]
