"""What upstream programs rely on in the instruction encoding and the model's numerics: a load scale of
0.0 is a real scale (zeros), CONFIG_LD's pixel_repeats is 1 unless a program asks otherwise, and the
config_ld macros have upstream's argument lists."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

INCLUDE = Path(__file__).resolve().parents[2] / "targets" / "gemmini"

# A RoCC layer that records the operands instead of running them (gemmini.h leaves the macro to a program
# that defines it first), so the encoding is checked without the model.
CAPTURE = r"""
#include <stdint.h>
#include <stdio.h>
static uint64_t seen_rs1, seen_rs2, seen_funct;
#define ROCC_INSTRUCTION_RS1_RS2(x, rs1, rs2, funct) { seen_rs1 = (rs1); seen_rs2 = (rs2); seen_funct = (funct); }
#include "include/gemmini.h"
#define SHOW(call) do { call; printf("%llu %llu %llu\n", (unsigned long long)seen_funct, \
  (unsigned long long)seen_rs1, (unsigned long long)seen_rs2); } while (0)
int main(void) {
  SHOW(gemmini_extended3_config_ld(64, MVIN_SCALE_IDENTITY, false, 1));
  SHOW(gemmini_extended4_config_ld(48, MVIN_SCALE_IDENTITY, true, 7, 2));
  SHOW(gemmini_extended5_config_ld(32, 0.5f, false, 9, 3, 0));
  SHOW(gemmini_config_ld(16));
  return 0;
}
"""


def decoded(tmp_path: Path) -> list[dict[str, int]]:
    src = tmp_path / "capture.c"
    src.write_text(CAPTURE)
    exe = tmp_path / "capture"
    subprocess.run(["gcc", "-std=gnu11", "-Wall", "-Werror", "-I", str(INCLUDE), "-I", str(INCLUDE / "include"),
                    str(src), "-o", str(exe)], check=True, capture_output=True, text=True)
    rows = []
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n"):
        if line:
            funct, rs1, rs2 = map(int, line.split())
            rows.append({"funct": funct, "stride": rs2, "scale_bits": rs1 >> 32, "block_stride": (rs1 >> 16) & 0xFFFF,
                         "pixel_repeats": (rs1 >> 8) & 0xFF, "slot": (rs1 >> 3) & 3, "shrunk": (rs1 >> 2) & 1,
                         "config": rs1 & 3})
    return rows


def test_config_ld_macros_encode_one_pixel_repeat(tmp_path: Path) -> None:
    ext3, ext4, _, plain = decoded(tmp_path)
    assert ext3["pixel_repeats"] == 1 and ext4["pixel_repeats"] == 1 and plain["pixel_repeats"] == 1


def test_extended4_config_ld_has_upstreams_five_arguments(tmp_path: Path) -> None:
    ext4 = decoded(tmp_path)[1]
    assert ext4 == {"funct": 0, "stride": 48, "scale_bits": 0x3F800000, "block_stride": 7, "pixel_repeats": 1,
                    "slot": 2, "shrunk": 1, "config": 1}


def test_extended5_config_ld_sets_pixel_repeats(tmp_path: Path) -> None:
    ext5 = decoded(tmp_path)[2]
    assert ext5["pixel_repeats"] == 3 and ext5["block_stride"] == 9 and ext5["scale_bits"] == 0x3F000000


def test_extended3_config_ld_keeps_the_dim_block_stride(tmp_path: Path) -> None:
    ext3 = decoded(tmp_path)[0]
    assert ext3["block_stride"] == 16 and ext3["slot"] == 1 and ext3["stride"] == 64


SCALE_ZERO = r"""
#include <stdio.h>
#include <stdlib.h>
#include "include/gemmini_testutils.h"

static elem_t In[DIM][DIM] row_align(1);
static elem_t Out[DIM][DIM] row_align(1);

int main() {
  for (size_t i = 0; i < DIM; i++)
    for (size_t j = 0; j < DIM; j++) { In[i][j] = (elem_t)(i + j + 1); Out[i][j] = 99; }
  gemmini_extended_config_ld(DIM * sizeof(elem_t), SCALE);
  gemmini_config_st(DIM * sizeof(elem_t));
  gemmini_mvin(In, 0);
  gemmini_mvout(Out, 0);
  gemmini_fence();
  for (size_t i = 0; i < DIM; i++)
    for (size_t j = 0; j < DIM; j++) {
      float y = (float)In[i][j] * (float)SCALE;
      elem_t want = (elem_t)(y > 127 ? 127 : y);  /* exact for these scales: no rounding needed */
      if (Out[i][j] != want) { printf("Out[%u][%u] = %d, want %d\n", (unsigned)i, (unsigned)j, Out[i][j], want); exit(1); }
    }
  exit(0);
}
"""


@pytest.mark.parametrize("scale", ["0.0f", "2.0f", "1.0f"])
def test_a_load_scale_is_applied_as_given_zero_included(gemmini_c, scale: str) -> None:
    run = gemmini_c(f"#define SCALE {scale}\n" + SCALE_ZERO)()
    assert run.returncode == 0, run.output
