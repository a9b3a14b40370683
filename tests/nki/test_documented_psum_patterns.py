"""Documented NKI patterns around PSUM that the engine rules must keep accepting, at their honest cost.

The red-team rules (GpSimd never touches PSUM; a Tensor-engine transpose that ends in SBUF pays its copy out of
PSUM) once refused or double-charged them; our own minimal kernels here, not the public ones that showed it.
"""

from __future__ import annotations

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.jit import jit, last_report

RNG = np.random.default_rng(7)
Q = RNG.standard_normal((128, 128)).astype(np.float32)
K = RNG.standard_normal((128, 128)).astype(np.float32)
CAUSAL = np.tril(np.ones((128, 128), dtype=bool))


def test_affine_select_reads_matmul_scores_straight_from_psum_through_a_charged_copy():
    # the causal mask of an attention kernel, applied to the scores where the matmul left them: affine_select
    # takes no engine (GpSimd), and GpSimd cannot reach PSUM, so the compiler's VectorE copy to SBUF is charged
    @jit
    def masked_scores(q, k):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        scores = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        scores[...] = nisa.nc_matmul(nl.load(q), nl.load(k))
        i_p, i_f = nl.mgrid[0:128, 0:128]
        masked = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        masked[...] = nisa.affine_select(pred=(i_p >= i_f), on_true_tile=scores, on_false_value=-1e4)
        nl.store(out, value=masked)
        return out

    result = masked_scores(Q, K)
    np.testing.assert_allclose(result, np.where(CAUSAL, Q.T @ K, -1e4), rtol=1e-5, atol=1e-4)
    engines = last_report()["engines"]
    assert engines["gpsimd"]["instructions"] == 1
    assert engines["vector"]["instructions"] == 1  # the copy out of PSUM


def test_a_gpsimd_instruction_the_kernel_puts_on_psum_by_choice_is_still_refused():
    @jit
    def on_psum(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_scalar(dst=p, data=nl.load(x), op0=nl.add, operand0=1.0)
        r = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=p, op0=nl.multiply, operand0=2.0, engine=nisa.gpsimd_engine)
        nl.store(out, value=r)
        return out

    with pytest.raises(NkiError, match="GpSimd cannot access PSUM"):
        on_psum(Q)


def test_nl_transpose_then_the_documented_copy_to_sbuf_pays_one_copy():
    # nki.language.transpose docs: the result is in PSUM, and the kernel copies it to SBUF itself
    @jit
    def transposed(x):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t_psum = nl.transpose(nl.load(x))
        t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(t, t_psum)
        nl.store(out, value=t)
        return out

    np.testing.assert_array_equal(transposed(Q), Q.T)
    engines = last_report()["engines"]
    assert engines["tensor"]["instructions"] == 1 and engines["vector"]["instructions"] == 1


def test_nl_transpose_costs_the_same_as_nc_transpose_when_both_are_copied_out():
    def kernel(transpose):
        @jit
        def k(x):
            out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(t, transpose(nl.load(x)))
            nl.store(out, value=t)
            return out

        return k

    by_language, by_isa = kernel(nl.transpose), kernel(nisa.nc_transpose)
    np.testing.assert_array_equal(by_language(Q), by_isa(Q))
    by_language(Q)
    language_us = last_report()["latency_us"]
    by_isa(Q)
    assert language_us == last_report()["latency_us"]


def test_nl_transpose_used_as_a_matmul_operand_still_pays_the_copy_the_compiler_inserts():
    @jit
    def a_at(x, y):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        res[...] = nisa.nc_matmul(nl.transpose(nl.load(x)), nl.load(y))
        nl.store(out, value=nl.copy(res))
        return out

    np.testing.assert_allclose(a_at(Q, K), Q @ K, rtol=1e-4, atol=1e-3)
    engines = last_report()["engines"]
    assert engines["vector"]["instructions"] == 2  # the transpose's copy to SBUF, and the result's
