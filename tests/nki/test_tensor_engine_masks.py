"""Non-constant masks on the Tensor engine's transpose and matmul (NKI API Masking: the mask makes the compiler
"generate the instruction with a smaller input tile shape"). A transpose under a mask transposes the selected
rectangle of its input and writes nothing else; a matmul under a mask over the contraction (partition) axis
sums the selected partitions only. Autocomp's Trainium conv problem transposes its ragged edge tiles with
`nc_transpose(t[i, j], mask=(i < B) & (j < N))`. Our own minimal kernels, values against NumPy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from speedpatch.model import OK
from speedpatch.targets.base import EvalContext
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.errors import NkiError, NotEmulated
from speedpatch.targets.nki.emulator.jit import jit, last_report
from speedpatch.targets.nki.target import NkiTarget

RNG = np.random.default_rng(11)
X = RNG.standard_normal((100, 72)).astype(np.float32)
A = RNG.standard_normal((100, 64)).astype(np.float32)
B = RNG.standard_normal((100, 256)).astype(np.float32)


@jit
def _edge_transpose(x):
    # the conv problem's pattern: a 128 x 128 tile over a 100 x 72 tensor, loaded, transposed and stored under
    # the masks of its ragged edges; the parts of the tiles outside the tensor are never written
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    local = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    transposed = nl.ndarray((nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
    i = nl.arange(128)[:, None]
    j = nl.arange(128)[None, :]
    mask = (i < rows) & (j < cols)
    local[i, j] = nl.load(x[i, j], mask=mask)
    p = nl.arange(128)[:, None]
    q = nl.arange(128)[None, :]
    transposed[p, q] = nisa.nc_transpose(local[i, j], mask=mask)
    nl.store(out[p, q], transposed[p, q], mask=(q < rows) & (p < cols))
    return out


def test_a_transpose_under_an_edge_mask_transposes_the_selected_rectangle():
    np.testing.assert_array_equal(_edge_transpose(X), X.T)


EDGE_TRANSPOSE = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def edge_transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    local = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
    transposed = nl.ndarray((nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
    i = nl.arange(128)[:, None]
    j = nl.arange(128)[None, :]
    mask = (i < rows) & (j < cols)
    local[i, j] = nl.load(x[i, j], mask=mask)
    p = nl.arange(128)[:, None]
    q = nl.arange(128)[None, :]
    transposed[p, q] = nisa.nc_transpose(local[i, j], mask=mask)
    nl.store(out[p, q], transposed[p, q], mask=(q < rows) & (p < cols))
    return out


INPUTS = {"x": ((100, 72), "float32")}


def reference(x):
    return x.T.copy()
'''


def test_a_masked_edge_transpose_is_a_correct_kernel_in_the_isolated_backend(tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(EDGE_TRANSPOSE)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=EDGE_TRANSPOSE)
    ev = target.backend("nki-emulator").evaluate(EDGE_TRANSPOSE, ctx)
    assert ev.status == OK and ev.correct, ev.message + ev.log


def test_a_masked_transpose_costs_what_the_whole_tile_costs():
    # the cost model is unchanged by a mask (the pages give no cost of a smaller tile)
    _edge_transpose(X)
    masked = last_report()["engines"]["tensor"]
    _edge_transpose(RNG.standard_normal((128, 128)).astype(np.float32))
    whole = last_report()["engines"]["tensor"]
    assert masked["instructions"] == whole["instructions"] == 1
    assert masked["busy_us"] == pytest.approx(whole["busy_us"])


def test_a_masked_transpose_leaves_the_rest_of_its_destination():
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.full((128, 128), -1.0, dtype=nl.float32, buffer=nl.sbuf)
        i, j = nl.mgrid[0:128, 0:128]
        t[...] = nisa.nc_transpose(nl.load(x), mask=(i < 64) & (j < 32))
        nl.store(out, value=t)
        return out

    x = RNG.standard_normal((128, 128)).astype(np.float32)
    expected = np.full((128, 128), -1.0, dtype=np.float32)
    expected[:32, :64] = x[:64, :32].T
    np.testing.assert_array_equal(k(x), expected)


def test_reading_what_a_masked_transpose_did_not_write_is_an_error():
    # its PSUM result holds whatever the bank held outside the mask (on hardware), as an nl.ndarray would
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        i = nl.arange(128)[:, None]
        nl.store(out, value=nl.copy(nl.transpose(nl.load(x), mask=(i < 64))))
        return out

    with pytest.raises(NkiError, match="read before anything wrote it"):
        k(RNG.standard_normal((128, 128)).astype(np.float32))


def test_a_transpose_mask_that_selects_nothing_executes_nothing():
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.full((128, 128), 2.0, dtype=nl.float32, buffer=nl.sbuf)
        i = nl.arange(128)[:, None]
        for tile in nl.affine_range(1):
            t[...] = nisa.nc_transpose(nl.load(x), mask=(tile * 128 + i >= 128))
        nl.store(out, value=t)
        return out

    np.testing.assert_array_equal(k(np.ones((128, 128), dtype=np.float32)), np.full((128, 128), 2.0))
    assert last_report()["engines"]["tensor"]["instructions"] == 0


def test_a_transpose_mask_that_is_no_rectangle_is_not_emulated():
    # each comparison of a mask restricts one axis (NKI API Masking); a triangle is no smaller tile shape
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        i, j = nl.mgrid[0:128, 0:128]
        nl.store(out, value=nl.copy(nisa.nc_transpose(nl.load(x), mask=(i >= j))))
        return out

    with pytest.raises(NotEmulated, match="rectangle"):
        k(np.ones((128, 128), dtype=np.float32))


@jit
def _ragged_k_matmul(a, b):
    # K = 100 of a 128-partition tile: the rows the masked loads leave unwritten (NaN) must not reach the sum
    kk, m = a.shape
    n = b.shape[1]
    out = nl.ndarray((m, n), dtype=nl.float32, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_m = nl.arange(m)[None, :]
    i_n = nl.arange(n)[None, :]
    at = nl.ndarray((128, m), dtype=a.dtype, buffer=nl.sbuf)
    bt = nl.ndarray((128, n), dtype=b.dtype, buffer=nl.sbuf)
    at[i_p, i_m] = nl.load(a[i_p, i_m], mask=(i_p < kk))
    bt[i_p, i_n] = nl.load(b[i_p, i_n], mask=(i_p < kk))
    acc = nl.zeros((m, n), dtype=nl.float32, buffer=nl.psum)
    acc += nisa.nc_matmul(at[i_p, i_m], bt[i_p, i_n], mask=(i_p < kk))
    acc += nl.matmul(at[i_p, i_m], bt[i_p, i_n], transpose_x=True, mask=(i_p < kk))
    nl.store(out, value=nl.copy(acc))
    return out


def test_a_matmul_under_a_contraction_mask_sums_the_selected_partitions_only():
    np.testing.assert_allclose(_ragged_k_matmul(A, B), 2 * (A.T @ B), rtol=1e-4, atol=1e-3)


def test_a_matmul_under_a_contraction_mask_costs_what_the_whole_tile_costs():
    _ragged_k_matmul(A, B)
    masked = last_report()["engines"]["tensor"]["busy_us"]
    _ragged_k_matmul(RNG.standard_normal((128, 64)).astype(np.float32),
                     RNG.standard_normal((128, 256)).astype(np.float32))
    assert masked == pytest.approx(last_report()["engines"]["tensor"]["busy_us"])


def test_a_matmul_mask_over_a_free_axis_is_not_emulated():
    # NKI API Masking: the mask field cannot tell the stationary's free axis from the moving's ("operand
    # masking" is the documented way); the emulator refuses rather than guess
    @jit
    def k(a, b):
        out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        i_f = nl.arange(256)[None, :]
        nl.store(out, value=nl.copy(nisa.nc_matmul(nl.load(a), nl.load(b), mask=(i_f < 200))))
        return out

    with pytest.raises(NotEmulated, match="free axis"):
        k(RNG.standard_normal((128, 64)).astype(np.float32), RNG.standard_normal((128, 256)).astype(np.float32))
