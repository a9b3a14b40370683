"""gemmini-native: what a kernel finds in the registers the model hands back.

The model runs in the kernel's process, and its entry points (the checked kernel call, every RoCC
instruction, fence, trace-pc hook and charging wrapper) return into the kernel's code. Registers a call
may clobber then belong to the kernel, and a kernel reads them without touching memory: as extra
parameters of an old-style (unprototyped) function it calls with fewer arguments. They held the model's
working values: the seal key itself in r8 at the kernel's entry and after each trace-pc hook, and the key
XOR a constant in xmm1's upper half (red-team; the key is what the seals of the clock and the counters rest
on). The model's entry points now clear every call-clobbered register on return (GM_SCRUB in
model/model_internal.h; the model is built without tail calls, which would skip it)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from gemmini_native import LIBRARY_CALL, SIGNATURE, evaluate
from speedpatch.model import OK
from speedpatch.targets import get_target

REPO = Path(__file__).resolve().parents[2]
# peek(when) is called with one argument; its old-style definition reads five more integer registers
# (rsi, rdx, rcx, r8, r9) and xmm0-7 as they were left.
PEEK = r"""typedef long v2l __attribute__((vector_size(16)));
__attribute__((noinline)) static void peek(when, r_si, r_dx, r_cx, r8, r9, x0, x1, x2, x3, x4, x5, x6, x7)
  long when, r_si, r_dx, r_cx, r8, r9; v2l x0, x1, x2, x3, x4, x5, x6, x7; {
  (void)r_si; (void)r_dx; (void)r_cx;
  v2l x[8] = {x0, x1, x2, x3, x4, x5, x6, x7};
  printf("peek %ld r8=%lx r9=%lx", when, r8, r9);
  for (int i = 0; i < 8; i++) printf(" xmm%d=%lx:%lx", i, x[i][0], x[i][1]);
  printf("\n");
}
"""

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")]


def test_the_registers_the_model_hands_back_hold_none_of_its_values(tmp_path):
    # peek(1): at the kernel's entry, after its first trace-pc hook; peek(2): after the library call's RoCC
    # instructions and a fence. Before: "peek 1 r8=ce9fcbf7548d5bc9 ... xmm1=0:ce9f99b213c1148e" (the key,
    # and the key XOR 0x5245474c4f47).
    ev = evaluate(get_target("gemmini"), tmp_path / "peek", PEEK + f"{SIGNATURE} {{\n  peek(1L);\n  {LIBRARY_CALL}\n  gemmini_fence();\n"
                                            "  peek(2L);\n}")
    assert ev.status == OK, ev.message
    lines = [line for line in ev.log.splitlines() if line.startswith("peek ")]
    assert len(lines) == 4, ev.log[-2000:]  # two trials, two looks each
    for line in lines:
        values = re.findall(r"=([0-9a-f]+)(?::([0-9a-f]+))?", line)
        assert all(int(v, 16) == 0 for pair in values for v in pair if v), f"model values left in registers: {line}"
