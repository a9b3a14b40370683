"""The emulated NKI API takes the arguments its API reference documents and nothing else: an unknown keyword (a
misspelling, an argument of another function or of another NKI version) is an NkiError naming the function, the
argument and the accepted names; a documented argument whose effect the emulator does not model is NotEmulated
unless it is left at its default. Nothing is silently ignored (targets/nki/emulator/arguments.py)."""

from __future__ import annotations

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.errors import NkiError, NotEmulated
from speedpatch.targets.nki.emulator.jit import jit

RNG = np.random.default_rng(11)
X = RNG.standard_normal((128, 64)).astype(np.float32)
W = RNG.standard_normal((128, 128)).astype(np.float32)


def _run(body, *arrays):
    """Run body(tiles...) -> SBUF tile in a kernel; the tile comes back as an array."""

    @jit
    def k(*hbm):
        tiles = [nl.load(t) for t in hbm]
        res = body(*tiles)
        out = nl.ndarray(res.shape, dtype=res.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=res)
        return out

    return k(*(arrays or (X,)))


# ---- unknown keywords -------------------------------------------------------------------------------------


def _matmul_misspelt(x, w):
    dst = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst, w, x, acumulate=True)
    return nl.copy(dst)


UNKNOWN = [
    ("nisa.nc_matmul", "acumulate", _matmul_misspelt, (X, W)),
    ("nisa.tensor_tensor", "engin", lambda x: nisa.tensor_tensor(x, x, op=np.add, engin=nisa.vector_engine), (X,)),
    ("nisa.activation", "scael", lambda x: nisa.activation(op=nl.exp, data=x, scael=2.0), (X,)),
    ("nisa.tensor_scalar", "reverse", lambda x: nisa.tensor_scalar(x, np.subtract, 1.0, reverse=True), (X,)),
    ("nisa.tensor_reduce", "keepdim", lambda x: nisa.tensor_reduce(np.add, x, axis=1, keepdim=True), (X,)),
    ("nisa.iota", "offest", lambda x: nisa.iota(nl.arange(128)[:, None], dtype=nl.int32, offest=3), (X,)),
    ("nl.load", "msk", None, None),
    ("nl.exp", "dtyp", lambda x: nl.exp(x, dtyp=nl.bfloat16), (X,)),
    ("nl.sum", "keepdim", lambda x: nl.sum(x, axis=1, keepdim=True), (X,)),
    ("nl.ndarray", "bufer", lambda x: nl.ndarray((128, 4), dtype=nl.float32, bufer=nl.sbuf), (X,)),
    ("nl.copy", "dst", lambda x: nl.copy(x, dst=x), (X,)),
    ("tensor.reshape_dim", "dims", lambda x: x.reshape_dim(1, (8, 8), dims=2), (X,)),
]


@pytest.mark.parametrize(("function", "argument", "body", "arrays"), UNKNOWN, ids=[u[0] for u in UNKNOWN])
def test_an_unknown_keyword_is_refused_naming_function_argument_and_accepted_names(function, argument, body,
                                                                                   arrays):
    if body is None:  # nl.load itself
        @jit
        def k(x):
            t = nl.load(x, msk=None)
            out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=t)
            return out

        with pytest.raises(NkiError) as info:
            k(X)
    else:
        with pytest.raises(NkiError) as info:
            _run(body, *arrays)
    message = str(info.value)
    assert not isinstance(info.value, NotEmulated)
    assert function in message and repr(argument) in message and "takes" in message


def test_the_refusal_lists_the_documented_names():
    with pytest.raises(NkiError, match=r"nisa\.nc_matmul takes .*stationary.*moving.*accumulate.*perf_mode"):
        _run(_matmul_misspelt, X, W)


@pytest.mark.parametrize("name", sorted(nisa.PUBLIC_FUNCTIONS - {"get_nc_version"}))
def test_every_isa_instruction_refuses_an_unknown_keyword(name):
    with pytest.raises(NkiError, match=rf"nisa\.{name}: unknown keyword argument 'bogus'"):
        _run(lambda x: getattr(nisa, name)(bogus=1))


@pytest.mark.parametrize("name", sorted(nl.PUBLIC_FUNCTIONS - {"spmd_dim", "nc"}))
def test_every_language_function_refuses_an_unknown_keyword(name):
    shown = getattr(getattr(nl, name), "name", name)  # an alias (nl.copy_op) says the operator's name
    with pytest.raises(NkiError, match=rf"nl\.{shown}: unknown keyword argument 'bogus'"):
        _run(lambda x: getattr(nl, name)(bogus=1))


def test_documented_defaults_and_labels_are_accepted():
    def body(x, w):
        dst = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst, w, x, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
                       tile_position=(), tile_size=(), perf_mode=nisa.matmul_perf_mode.none, name="mm")
        return nl.copy(dst)

    np.testing.assert_allclose(_run(body, X, W), W.T @ X, rtol=1e-4, atol=1e-4)


def test_a_matmul_predicate_that_always_holds_is_the_matmul():
    # the legacy `psum += nisa.nc_matmul(a, b, mask=k == 0)` of the contributed LoRA kernel, in the iteration where
    # its predicate holds: the whole instruction executes ("controls whether/how this instruction is executed")
    def body(x, w):
        acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(1):
            acc += nisa.nc_matmul(w, x, mask=k == 0)
        return nl.copy(acc)

    np.testing.assert_allclose(_run(body, X, W), W.T @ X, rtol=1e-4, atol=1e-4)


def test_a_transpose_hinted_matmul_with_an_identity_moving_tile_is_the_transpose():
    # nc_matmul(x, identity, is_transpose=True): on NeuronCore-v2 a hint "that this is a transpose operation with
    # moving as an identity matrix" (legacy nc_matmul page); x.T @ I is x.T
    def body(x, w):
        eye = nl.load(nl.shared_constant(np.identity(128, dtype=np.float32), dtype=nl.float32))
        return nl.copy(nisa.nc_matmul(w[:, 0:64], eye, is_transpose=True))

    np.testing.assert_array_equal(_run(body, X, W), W[:, 0:64].T)


# ---- documented but not modeled ---------------------------------------------------------------------------


def _matmul_with(**kw):
    def body(x, w):
        dst = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst, w, x, **kw)
        return nl.copy(dst)

    return body


UNMODELED = [
    ("nisa.nc_matmul(is_transpose", _matmul_with(is_transpose=True), (X, W)),
    ("nisa.nc_matmul(tile_position", _matmul_with(tile_position=(0, 0), tile_size=(64, 64)), (X, W)),
    ("nisa.nc_matmul(is_moving_onezero", _matmul_with(is_moving_onezero=True), (X, W)),
    # (a constant False mask, the instruction not executed, is modeled since: tests/nki/test_public_sweep6.py)
    # (a mask over the contraction partitions is modeled since: tests/nki/test_tensor_engine_masks.py; one over a
    # free axis, which NKI API Masking calls ambiguous for a matmul, is not)
    ("nisa.nc_matmul(mask", lambda x, w: nl.copy(nisa.nc_matmul(w, x, mask=(nl.arange(128)[None, :] < 64))),
     (X, W)),
    ("nisa.activation(reduce_cmd", lambda x: nisa.activation(op=nl.exp, data=x, reduce_cmd=nisa.reduce_cmd.reduce,
                                                             reduce_op=np.add, reduce_res=nl.ndarray(
                                                                 (128, 1), dtype=nl.float32)), (X,)),
    ("nisa.tensor_tensor_scan(reverse0", lambda x: nisa.tensor_tensor_scan(x, x, 0.0, np.multiply, np.add,
                                                                           reverse0=True), (X,)),
    ("nisa.reciprocal(engine", lambda x: nisa.reciprocal(x, engine=nisa.scalar_engine), (X,)),
    ("nl.matmul(mask", lambda x, w: nl.copy(nl.matmul(w, x, transpose_x=True, mask=(nl.arange(128)[None, :] < 64))),
     (X, W)),
]


@pytest.mark.parametrize(("prefix", "body", "arrays"), UNMODELED, ids=[u[0] for u in UNMODELED])
def test_a_documented_argument_the_emulator_does_not_model_is_not_emulated(prefix, body, arrays):
    with pytest.raises(NotEmulated) as info:
        _run(body, *arrays)
    assert str(info.value).startswith(prefix)
    assert "part of NKI but not of the speedpatch emulator" in str(info.value)


def test_dma_copy_declaring_repeated_indices_is_not_emulated():
    # (dst_rmw_op=np.add, refused here before, is emulated since: tests/nki/test_public_sweep6.py)
    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nisa.dma_copy(dst=out, src=t, unique_indices=False)
        return out

    with pytest.raises(NotEmulated, match=r"nisa\.dma_copy\(unique_indices="):
        k(X)


# ---- arguments that were ignored and are now applied --------------------------------------------------------


def test_a_reduction_mask_over_partitions_leaves_the_masked_out_partitions_unwritten():
    mask = nl.arange(128)[:, None] < 64
    for reduce in (lambda x: nl.max(x, axis=1, keepdims=True, mask=mask),
                   lambda x: nisa.tensor_reduce(np.max, x, axis=1, keepdims=True, mask=mask)):
        got = _run(reduce)
        np.testing.assert_allclose(got[:64, 0], X[:64].max(axis=1), rtol=1e-6)
        assert np.isnan(got[64:, 0]).all()  # never written: a new tile's unwritten data reads as NaN


def test_a_reduction_mask_over_free_elements_reduces_the_selected_elements_only():
    # NKI API Masking: the instruction is generated "with a smaller input tile shape" (the contributed
    # batch-invariant RMSNorm masks the columns past its hidden size in its last chunk)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(64)[None, :]
    mask = (i_p < 100) & (i_f < 40)
    for reduce, want in ((lambda x: nl.max(x, axis=1, keepdims=True, mask=mask), X[:, :40].max(1, keepdims=True)),
                         (lambda x: nl.sum(x, axis=1, keepdims=True, mask=mask), X[:, :40].sum(1, keepdims=True)),
                         (lambda x: nl.mean(x, axis=1, keepdims=True, mask=mask), X[:, :40].mean(1, keepdims=True))):
        got = _run(lambda x, reduce=reduce: nl.copy(reduce(x), mask=(i_p < 100)))
        np.testing.assert_allclose(got[:100], want[:100], rtol=1e-5, atol=1e-5)


def test_the_destination_first_form_refuses_the_legacy_mask_and_dtype():
    def body(x, **kw):
        dst = nl.full((128, 1), 7.0, dtype=nl.float32)
        nisa.tensor_reduce(dst, np.max, x, axis=1, keepdims=True, **kw)
        return dst

    for kw in ({"mask": nl.arange(128)[:, None] < 64}, {"dtype": nl.bfloat16}):
        with pytest.raises(NkiError, match=rf"nisa\.tensor_reduce: {next(iter(kw))}= is an argument of the legacy"):
            _run(lambda x, kw=kw: body(x, **kw))


def test_positional_arguments_follow_the_documented_order_of_the_destination_first_form():
    # nisa.tensor_copy(dst, src, engine): the third positional argument is the engine, not the legacy mask
    def body(x):
        dst = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst, x, nisa.gpsimd_engine)
        return dst

    from speedpatch.targets.nki.emulator.jit import last_report

    np.testing.assert_array_equal(_run(body), X)
    assert last_report()["engines"]["gpsimd"]["instructions"] >= 1


def test_the_legacy_nc_transpose_honours_dtype():
    got = _run(lambda x: nl.copy(nisa.nc_transpose(x, dtype=nl.bfloat16), dtype=nl.float32))
    np.testing.assert_allclose(got, X.T, rtol=1e-2, atol=1e-2)
    assert not np.array_equal(got, X.T)  # rounded through bf16
