"""API forms of public NKI kernels the sixth sweep found refused or wrong (3 December): an HBM-to-HBM
nisa.dma_copy (the AWS example of nki.isa.dma_copy copies its input tensor straight into the output),
nl.logical_xor / nl.logical_not (a bitonic-sort kernel's compare-exchange), and the nl.load / nl.store forms
their API pages do not allow (HBM to HBM, on-chip to on-chip), which the emulator used to run as DMAs. Our own
minimal kernels, values against NumPy, through the isolated backend where the trust checks decide."""

from __future__ import annotations

import math
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

RNG = np.random.default_rng(6)


def _isolated(source: str, tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(source)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=source)
    return target.backend("nki-emulator").evaluate(source, ctx)


HBM_COPY = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def copy_hbm(a):
    b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=b, src=a)
    return b


INPUTS = {"a": ((256, 1), "float32")}


def reference(a):
    return a.copy()
'''


def test_a_dma_copy_from_the_input_tensor_into_the_output_tensor_is_a_correct_kernel(tmp_path: Path):
    # one DMA reads every input byte and writes every output byte: the required work, done once (it was
    # rejected for moving 1,024 bytes where inputs plus outputs are 2,048)
    ev = _isolated(HBM_COPY, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- nl.logical_xor / nl.logical_not ------------------------------------------------------------------------

A = (RNG.standard_normal((128, 64)) > 0).astype(np.float32)
B = (RNG.standard_normal((128, 64)) > 0).astype(np.float32)


def test_nl_logical_xor_and_logical_not_are_numpy_s_on_0_1_tiles():
    @jit
    def k(a, b):
        out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        x, y = nl.load(a), nl.load(b)
        nl.store(out[0], value=nl.logical_xor(x, y))
        nl.store(out[1], value=nl.logical_not(x))
        return out

    got = k(A, B)
    np.testing.assert_array_equal(got[0], np.logical_xor(A, B))
    np.testing.assert_array_equal(got[1], np.logical_not(A))
    assert last_report()["engines"]["vector"]["instructions"] == 2


COMPARE_EXCHANGE = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def compare_exchange(src, dst):
    # pairs (i, i + 4) within each run of 8, the order flipped where bit 4 of i is set
    pat = [[64, 16], [1, 64]]
    t = nl.ndarray((16, 8, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t.ap(pattern=pat), src=src.ap(pattern=pat, offset=0))
    lo = t[:, :, 0:4]
    hi = t[:, :, 4:8]
    idx = nl.ndarray((16, 8, 4), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=idx, pattern=[[8, 8], [1, 4]], offset=0, channel_multiplier=64)
    flip = nl.greater(nl.add(nl.right_shift(nl.bitwise_and(idx, 16), 4), 0.0, dtype=nl.float32), 0.5)
    keep = nl.logical_xor(nl.less_equal(lo, hi), flip)
    out = nl.ndarray((16, 8, 8), dtype=nl.float32, buffer=nl.sbuf)
    out[:, :, 0:4] = nl.where(keep, lo, hi)
    out[:, :, 4:8] = nl.where(keep, hi, lo)
    nisa.dma_copy(dst=dst.ap(pattern=pat, offset=0), src=out.ap(pattern=pat))
    return dst


INPUTS = {"src": ((1024, 1), "float32")}
OUTPUTS = {"dst": ((1024, 1), "float32")}


def reference(src):
    x = src.reshape(16, 8, 8)
    lo, hi = x[:, :, :4], x[:, :, 4:]
    i = np.arange(16)[:, None, None] * 64 + np.arange(8)[None, :, None] * 8 + np.arange(4)[None, None, :]
    keep = (lo <= hi) ^ ((i & 16) > 0)
    return np.concatenate([np.where(keep, lo, hi), np.where(keep, hi, lo)], axis=2).reshape(1024, 1)
'''


def test_a_compare_exchange_stage_with_logical_xor_runs_isolated(tmp_path: Path):
    # before: AttributeError, module 'nki.language' has no attribute 'logical_xor'
    ev = _isolated(COMPARE_EXCHANGE, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- nl.load / nl.store move between HBM and SBUF only -----------------------------------------------------


X = RNG.standard_normal((128, 64)).astype(np.float32)


def test_nl_store_of_an_hbm_tensor_is_refused_naming_dma_copy():
    # nki.language.store: "value - An SBUF tile" (a PSUM tile is copied first); HBM to HBM is nisa.dma_copy
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=a)
        return out

    with pytest.raises(NkiError, match=r"value 'a' is an HBM tensor.*nisa.dma_copy"):
        k(X)


def test_nl_load_of_an_sbuf_tile_is_refused():
    # nki.language.load: "src - HBM tensor to load the data from"
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nl.load(t))
        return out

    with pytest.raises(NkiError, match="nl.load: source .* is in SBUF, not HBM"):
        k(X)


def test_nl_store_into_an_sbuf_tile_is_refused():
    # nki.language.store: "dst - HBM tensor to store the data into"
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nl.store(t, value=nl.load(a))
        nisa.dma_copy(dst=out, src=t)
        return out

    with pytest.raises(NkiError, match="nl.store: destination .* is in SBUF, not HBM"):
        k(X)


# ---- nisa.dma_copy(dst_rmw_op=nl.add): the read-modify-write DMA ---------------------------------------------

Y = RNG.standard_normal((128, 64)).astype(np.float32)


def test_a_read_modify_write_dma_adds_the_source_to_what_the_destination_holds():
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        nisa.dma_copy(dst=out, src=b, dst_rmw_op=nl.add)
        return out

    np.testing.assert_allclose(k(X, Y), X + Y, rtol=1e-6)


def test_a_read_modify_write_dma_into_sbuf_accumulates_there_with_np_add():
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        nisa.dma_copy(dst=t, src=b, dst_rmw_op=np.add)
        nisa.dma_copy(dst=out, src=t)
        return out

    np.testing.assert_allclose(k(X, Y), X + Y, rtol=1e-6)


def test_a_scatter_add_with_repeated_indices_adds_every_contribution():
    # rows 0..127 of src go to row idx[p] = p // 2 of out: each output row gets two rows added (the pages:
    # with duplicated offsets the compiler adds synchronization, so no contribution is lost)
    idx = (np.arange(128) // 2).astype(np.int32).reshape(128, 1)

    @jit
    def k(a, rows):
        out = nl.ndarray((64, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        zero = nl.ndarray((64, 64), dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=zero, value=0.0)
        nisa.dma_copy(dst=out, src=zero)
        i_f = nl.arange(64)[None, :]
        r = nl.load(rows)
        nisa.dma_copy(dst=out[r[:, 0], i_f], src=nl.load(a), dst_rmw_op=nl.add)
        return out

    np.testing.assert_allclose(k(X, idx), X[0::2] + X[1::2], rtol=1e-6)


def test_a_read_modify_write_dma_waits_for_the_destination_s_earlier_writer():
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        nisa.dma_copy(dst=out, src=b, dst_rmw_op=nl.add)
        return out

    k(X, Y)
    both = last_report()["latency_us"]

    @jit
    def one(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out

    one(X, Y)
    assert both > 1.9 * last_report()["latency_us"]  # in order, not overlapped


@pytest.mark.parametrize("kwargs, message", [
    ({"dst_rmw_op": nl.multiply}, "adds only"),
    ({"dst_rmw_op": nl.add, "oob_mode": nisa.oob_mode.skip}, "only oob_mode=oob_mode.error"),
])
def test_read_modify_write_dmas_other_than_an_add_that_faults_out_of_bounds_are_refused(kwargs, message):
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        nisa.dma_copy(dst=out, src=b, **kwargs)
        return out

    with pytest.raises(NkiError, match=message):
        k(X, Y)


HBM_ADD = HBM_COPY.replace("copy_hbm(a)", "add_hbm(a, b)").replace(
    "    nisa.dma_copy(dst=b, src=a)\n    return b",
    "    nisa.dma_copy(dst=out, src=a)\n    nisa.dma_copy(dst=out, src=b, dst_rmw_op=nl.add)\n    return out").replace(
    "    b = nl.ndarray(", "    out = nl.ndarray(").replace(
    'INPUTS = {"a": ((256, 1), "float32")}', 'INPUTS = {"a": ((128, 64), "float32"), "b": ((128, 64), "float32")}').replace(
    "def reference(a):\n    return a.copy()", "def reference(a, b):\n    return a + b")


def test_an_add_of_two_inputs_by_read_modify_write_dmas_is_correct_isolated(tmp_path: Path):
    assert "dst_rmw_op" in HBM_ADD and "def reference(a, b)" in HBM_ADD
    ev = _isolated(HBM_ADD, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- nisa.dma_compute (NKI 0.3's replacement of dst_rmw_op) -------------------------------------------------


def test_dma_compute_adds_its_sources_in_one_dma():
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_compute(out, [a, nl.load(b)], [1.0, 1.0], nl.add)
        return out

    np.testing.assert_allclose(k(X, Y), X + Y, rtol=1e-6)
    report = last_report()
    assert report["dma_transfers"] >= 1 and report["dma_bytes"] == 3 * X.nbytes  # the load of b, then a and b


@pytest.mark.parametrize("call, message", [
    (lambda out, a, b: nisa.dma_compute(out, [a, b], [1.0, 2.0], nl.add), "one 1.0 per source"),
    (lambda out, a, b: nisa.dma_compute(out, [a, b], [1.0, 1.0], nl.multiply), "nl.add"),
    (lambda out, a, b: nisa.dma_compute(out, [a, b[0:64]], [1.0, 1.0], nl.add), "element counts must match"),
    (lambda out, a, b: nisa.dma_compute(out, [a] * 17, [1.0] * 17, nl.add), "1 to 16"),
])
def test_dma_compute_keeps_its_page_s_limits(call, message):
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        call(out, a, b)
        return out

    with pytest.raises(NkiError, match=message):
        k(X, Y)


HBM_COMPUTE = HBM_ADD.replace(
    "    nisa.dma_copy(dst=out, src=a)\n    nisa.dma_copy(dst=out, src=b, dst_rmw_op=nl.add)",
    "    nisa.dma_compute(out, [a, b], [1.0, 1.0], nl.add)")


def test_an_add_of_two_inputs_by_dma_compute_is_correct_isolated(tmp_path: Path):
    assert "dma_compute" in HBM_COMPUTE
    ev = _isolated(HBM_COMPUTE, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log


def test_the_rest_of_nki_0_3_s_isa_index_is_refused_by_name():
    with pytest.raises(NotEmulated, match=r"nisa\.nc_n_gather is part of NKI but not of the speedpatch emulator"):
        nisa.nc_n_gather  # noqa: B018 - the attribute access is what is refused


# ---- nl.shared_identity_matrix ------------------------------------------------------------------------------

Z = RNG.standard_normal((128, 128)).astype(np.float32)


def test_shared_identity_matrix_is_an_sbuf_identity_a_matmul_can_transpose_with():
    @jit
    def k(a):
        out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        eye = nl.shared_identity_matrix(n=128, dtype=nl.float32)
        t = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=t, stationary=nl.load(a[:, 0:64]), moving=eye)  # a.T @ I
        nl.store(out, value=nl.copy(t))
        return out

    np.testing.assert_allclose(k(X), X[:, 0:64].T, rtol=1e-6)
    assert last_report()["dma_bytes"] == 128 * 128 * 4 + 128 * 64 * 4 * 2  # the identity is loaded, and charged


def test_shared_identity_matrix_into_a_given_tile_and_its_default_uint8():
    @jit
    def k(a):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        eye = nl.ndarray((128, 128), dtype=nl.uint8, buffer=nl.sbuf)
        nl.shared_identity_matrix(128, dst=eye)
        nl.store(out, value=nl.multiply(nl.load(a), eye, dtype=nl.float32))
        return out

    np.testing.assert_allclose(k(Z), np.diag(np.diag(Z)), rtol=1e-6)


def test_shared_identity_matrix_wider_than_the_partitions_is_refused():
    @jit
    def k(a):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.shared_identity_matrix(n=256, dtype=nl.float32)[0:128, 0:64])
        return out

    with pytest.raises(NkiError, match="n must be an int from 1 to 128"):
        k(X)


EYE_TRANSPOSE = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose_eye(a):
    out = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    eye = nl.shared_identity_matrix(n=128, dtype=nl.float32)
    t = nl.ndarray((64, 128), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=t, stationary=nl.load(a), moving=eye)
    nl.store(out, value=nl.copy(t))
    return out


INPUTS = {"a": ((128, 64), "float32")}


def reference(a):
    return a.T.copy()
'''


def test_shared_identity_matrix_reaches_the_isolated_kernel(tmp_path: Path):
    ev = _isolated(EYE_TRANSPOSE, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- the rest of the legacy nki.language index: tan, mish, gelu_dx, silu_dx, erf_dx, var, all ----------------


def test_the_legacy_index_s_activation_functions_are_their_formulas_on_the_scalar_engine():
    @jit
    def k(a):
        out = nl.ndarray((5, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        for i, f in enumerate((nl.tan, nl.mish, nl.gelu_dx, nl.silu_dx, nl.erf_dx)):
            nl.store(out[i], value=f(x))
        return out

    got = k(X)
    sig = 1.0 / (1.0 + np.exp(-X))
    phi = 0.5 * (1.0 + np.vectorize(math.erf)(X / math.sqrt(2.0)))
    np.testing.assert_allclose(got[0], np.tan(X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], X * np.tanh(np.log1p(np.exp(X))), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], phi + X * np.exp(-X * X / 2) / math.sqrt(2 * math.pi), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], sig * (1 + X * (1 - sig)), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[4], 2 / math.sqrt(math.pi) * np.exp(-X * X), rtol=1e-5, atol=1e-6)
    assert last_report()["engines"]["scalar"]["instructions"] == 5


def test_nl_var_and_nl_all_reduce_the_free_axis_like_numpy():
    @jit
    def k(a):
        out = nl.ndarray((2, 128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.load(a)
        nl.store(out[0], value=nl.var(x, axis=[1]))
        nl.store(out[1], value=nl.all(nl.greater(x, -1.0), axis=1))
        return out

    got = k(X)
    np.testing.assert_allclose(got[0, :, 0], X.var(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(got[1, :, 0], (X > -1.0).all(axis=1))


def test_a_partition_masked_reduction_still_runs_now_that_all_is_an_nki_name():
    # language.py's own use of Python's all() must not reach nl.all
    @jit
    def k(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        i_p = nl.arange(128)[:, None]
        x = nl.load(a)
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=s, value=0.0)
        s[...] = nl.sum(x, axis=1, keepdims=True, mask=(i_p < 64))
        nl.store(out, value=s)
        return out

    got = k(X)
    np.testing.assert_allclose(got[0:64, 0], X[0:64].sum(axis=1), rtol=1e-5)


# ---- constant masks: a False one executes nothing (flash-attention tiles above the diagonal) ------------------

W = RNG.standard_normal((128, 512)).astype(np.float32)


def test_matmuls_under_constant_masks_run_only_where_the_mask_holds():
    # nl.matmul(..., mask=k_i * 512 <= q_tile * 128) in Autocomp's flash-attention problem: a False mask executes
    # nothing, and `acc += it` adds nothing (it was NotEmulated for nl.matmul, and for nc_matmul's False)
    @jit
    def k(q, kk):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for i in nl.affine_range(2):
            acc[...] += nl.matmul(nl.load(q), nl.load(kk), transpose_x=True, mask=(i == 0))
            acc += nisa.nc_matmul(nl.load(q), nl.load(kk), mask=(i == 5))
            acc += nl.matmul(nl.load(q), nl.load(kk), mask=(i == 7))
        nl.store(out, value=nl.copy(acc))
        return out

    np.testing.assert_allclose(k(Z, W), Z.T @ W, rtol=1e-4, atol=1e-3)
    assert last_report()["engines"]["tensor"]["busy_us"] == pytest.approx(4 * 512 / 2.8 / 1000, abs=0.002)


def test_an_instruction_under_a_false_constant_mask_leaves_its_assigned_destination_and_costs_nothing():
    # the same kernel's two writers of one score tile, affine_select on the diagonal and a plain copy left of it,
    # each under its own constant mask: the copy that is not executed must not overwrite the select's result
    @jit
    def k(q):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        x = nl.load(q)
        ip, jf = nl.arange(128)[:, None], nl.arange(128)[None, :]
        on_diagonal = True
        buf[ip, jf] = nisa.affine_select(pred=(ip >= jf), on_true_tile=x, on_false_value=-9984.0, mask=on_diagonal)
        buf[ip, jf] = nl.copy(x, mask=not on_diagonal)
        nl.store(out, value=buf)
        return out

    expected = np.where(np.arange(128)[:, None] >= np.arange(128)[None, :], Z, -9984.0)
    np.testing.assert_array_equal(k(Z), expected)  # NaN everywhere before: the unexecuted copy's unwritten tile
    assert last_report()["engines"]["vector"]["instructions"] == 0



def test_a_transpose_under_a_false_constant_mask_leaves_its_destination():
    # Autocomp's flash-attention problem transposes score tiles with nc_transpose(..., mask=forward_mask)
    @jit
    def k(q):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        x = nl.load(q)
        for i in nl.affine_range(2):
            t[...] = nisa.nc_transpose(x, mask=(i == 0))
        nl.store(out, value=nl.copy(t))
        return out

    np.testing.assert_array_equal(k(Z), Z.T)
    assert last_report()["engines"]["tensor"]["instructions"] == 1
