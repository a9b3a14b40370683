"""nki-emulator: a kernel that reads an on-chip tile nothing has written (PSUM, or integers in SBUF), and a tile
read as a sequence by NumPy in the trusted process.

The emulator starts PSUM at zero only because a matmul into a fresh accumulator overrides the bank instead of
adding to it; on hardware the bank holds whatever it held before. Red-team: an accumulator taken as
nl.ndarray(buffer=nl.psum) and summed into by VectorE was correct here (the zeros) and would be garbage on the
device; one from nl.zeros(buffer=nl.psum) had its memset for free (9 VectorE instructions where the same
kernel with an SBUF accumulator pays 10). The check is per element: a PSUM tile a matmul wrote in part read
zeros in the rest (a padded product whose padding was never written: correct here, garbage on a device). Each
kernel runs through the real nki-emulator backend."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import INCORRECT, OK, RUNTIME_ERROR
from support.nki_eval import evaluate_problem

pytestmark = pytest.mark.slow

BLOCK_SUM = '''"""out = the sum of x's four 128-row blocks, x (512, 512) fp32."""

import nki
import nki.language as nl


@nki.jit
def block_sum(x):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = {accumulator}
    for i in nl.affine_range(4):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        acc[...] = nl.add(acc, t)
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


INPUTS = {{"x": ((512, 512), "float32")}}


def reference(x):
    return x.reshape(4, 128, 512).sum(axis=0)
'''


def _problem(accumulator: str) -> str:
    return BLOCK_SUM.format(accumulator=accumulator)


def test_a_psum_accumulator_nothing_wrote_is_not_read_as_zeros(tmp_path: Path) -> None:
    # before: ok, "correct on 3 seeds" at 11.2 us
    ev = evaluate_problem(tmp_path, _problem("nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)"))
    assert ev.status == RUNTIME_ERROR, (ev.status, ev.message)
    assert "before anything wrote it" in ev.message


def test_a_zeroed_psum_accumulator_read_by_the_vector_engine_pays_its_memset(tmp_path: Path) -> None:
    in_sbuf = evaluate_problem(tmp_path, _problem("nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)"))
    in_psum = evaluate_problem(tmp_path, _problem("nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)"))
    assert in_sbuf.status == OK and in_psum.status == OK, (in_sbuf.message, in_psum.message)
    vector = [ev.feedback["engines"]["vector"]["instructions"] for ev in (in_sbuf, in_psum)]
    assert vector[1] == vector[0] == 10, vector  # the same VectorE instructions, the memset included (before: 10, 9)


def test_an_integer_tile_nothing_wrote_is_not_read_as_zeros(tmp_path: Path) -> None:
    # SBUF floats start as NaN; integers started at zero, so an int32 accumulator taken as nl.ndarray and summed
    # into was ok, "correct on 3 seeds", with one VectorE instruction (its memset) fewer than the honest kernel
    problem = BLOCK_SUM.replace("fp32", "int32").replace("nl.float32", "nl.int32").replace('"float32"', '"int32"')
    ev = evaluate_problem(tmp_path, problem.format(accumulator="nl.ndarray((128, 512), dtype=nl.int32, buffer=nl.sbuf)"))
    assert ev.status == INCORRECT, (ev.status, ev.message)


def test_an_index_array_indexed_by_a_tile_fails_at_once(tmp_path: Path) -> None:
    # NumPy reads a tile used as an index as a sequence (len, then t[0], t[1], ...), and a tile's integer index
    # is checked only at its access: the trusted process looped until the evaluation's timeout (not a figure,
    # but a whole evaluation's time for one line of hostile kernel)
    attack = _problem("nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)").replace(
        "        acc[...] = nl.add(acc, t)", "        probe = nl.arange(4)[t]\n        acc[...] = nl.add(acc, t)")
    ev = evaluate_problem(tmp_path, attack, timeout=30)
    assert ev.status == RUNTIME_ERROR, (ev.status, ev.message)
    assert "not iterable" in ev.message or "sequence" in ev.message, ev.message


PADDED_PRODUCT = '''"""out (128, 512) = a.T @ b in columns 0:128, zeros in the rest; a and b (128, 128) fp32."""

import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def padded_product(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = {accumulator}((128, 512), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(acc[:, 0:128], nl.load(a), nl.load(b))
    nl.store(out, value=nl.copy(acc, dtype=nl.float32))
    return out


INPUTS = {{"a": ((128, 128), "float32"), "b": ((128, 128), "float32")}}


def reference(a, b):
    out = np.zeros((128, 512), dtype=np.float32)
    out[:, 0:128] = a.T @ b
    return out
'''


def test_a_psum_tile_a_matmul_wrote_in_part_is_not_read_as_zeros_in_the_rest(tmp_path: Path) -> None:
    # before: ok, "correct on 3 seeds" (the 384 columns no instruction wrote read 0.0; on a device, old data)
    ev = evaluate_problem(tmp_path, PADDED_PRODUCT.format(accumulator="nl.ndarray"))
    assert ev.status == RUNTIME_ERROR, (ev.status, ev.message)
    assert "before anything wrote it" in ev.message and "49152 of the elements read" in ev.message, ev.message


def test_a_zeroed_psum_tile_a_matmul_wrote_in_part_pays_its_memset_when_read_whole(tmp_path: Path) -> None:
    ev = evaluate_problem(tmp_path, PADDED_PRODUCT.format(accumulator="nl.zeros"))
    assert ev.status == OK, (ev.status, ev.message)
    assert ev.feedback["engines"]["vector"]["instructions"] == 2, ev.feedback["engines"]  # memset, copy (before: 1)
