"""nki-emulator: an output that is a view repeating elements of a smaller tensor is not a result.

The output's provenance is checked on its tensor (every element written by a DMA of this launch), and the
required DMA bytes count that tensor. A view whose elements repeat (an access pattern with a zero step, a
gather with repeated indices) over a tensor smaller than the output therefore looked fully written while
the kernel stored a fraction of it. Red-team: on a problem whose rows are all equal, one stored row
returned as `row.ap([[0, 128], [1, 2048]])` was correct at 5.6 us against the honest kernel's 14.2 us.
Each kernel runs through the real nki-emulator backend (isolated kernel process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import OK, REJECTED
from support.nki_eval import evaluate_problem

pytestmark = pytest.mark.slow

PROBLEM = '''"""Every row of the result is the input row doubled."""

import numpy as np
import nki
import nki.language as nl


@nki.jit
def spread(a):
    out = nl.ndarray((128, 2048), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.load(a)
    doubled = nl.multiply(row, 2.0)
    nl.store(out, value=doubled.broadcast_to((128, 2048)))
    return out


INPUTS = {"a": ((1, 2048), "float32")}


def reference(a):
    return np.broadcast_to(a * 2.0, (128, 2048)).copy()
'''

# One row stored; what the kernel returns is the attack.
ONE_ROW = '''@nki.jit
def spread(a):
    out = nl.ndarray((1, 2048), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.load(a)
    nl.store(out, value=nl.multiply(row, 2.0))
    return {returned}
'''


def evaluate(tmp_path: Path, kernel_source: str | None):
    return evaluate_problem(tmp_path, PROBLEM, kernel_source)


def test_the_honest_broadcast_kernel_is_measured(tmp_path):
    ev = evaluate(tmp_path, None)
    assert ev.status == OK, ev.message + "\n" + ev.log


def test_a_view_with_one_tensor_element_per_output_element_is_still_a_result(tmp_path):
    # half of a tensor the kernel wrote whole: a view, but no element repeated
    ev = evaluate(tmp_path, """@nki.jit
def spread(a):
    out = nl.ndarray((256, 2048), dtype=a.dtype, buffer=nl.shared_hbm)
    row = nl.load(a)
    doubled = nl.multiply(row, 2.0)
    nl.store(out[0:128, :], value=doubled.broadcast_to((128, 2048)))
    nl.store(out[128:256, :], value=doubled.broadcast_to((128, 2048)))
    return out[0:128, :]
""")
    assert ev.status == OK, ev.message + "\n" + ev.log


@pytest.mark.parametrize("returned", [
    "out.ap([[0, 128], [1, 2048]])",  # an access pattern with a zero step
    "out[np.zeros((128,), dtype=np.int32), :]",  # a gather of row 0, 128 times
], ids=["zero-step access pattern", "repeated gather"])
def test_an_output_view_that_repeats_a_stored_row_is_refused(tmp_path, returned):
    ev = evaluate(tmp_path, ONE_ROW.format(returned=returned))
    assert ev.status == REJECTED, f"{ev.status} {ev.value}: {ev.message}"
    assert "repeats elements" in ev.message and "2048 values where the output has 262144" in ev.message, ev.message
