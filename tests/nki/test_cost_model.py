"""The cost model ranks well-known NKI practices above their naive forms (deterministic modeled time)."""

from __future__ import annotations

import numpy as np
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator import params
from speedpatch.targets.nki.emulator.jit import jit, last_report

RNG = np.random.default_rng(1)
X = RNG.standard_normal((1024, 512)).astype(np.float32)
W = RNG.standard_normal((128, 512)).astype(np.float32)


def latency(kernel, *args) -> float:
    kernel(*args)
    return last_report()["latency_us"]


def test_hoisting_a_loop_invariant_load_out_of_the_loop_is_faster():
    @jit
    def naive(x, w):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            w_tile = nl.load(w)
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(nl.load(x[i * 128:(i + 1) * 128, :]), w_tile))
        return out

    @jit
    def hoisted(x, w):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        w_tile = nl.load(w)
        for i in nl.affine_range(x.shape[0] // 128):
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.multiply(nl.load(x[i * 128:(i + 1) * 128, :]), w_tile))
        return out

    np.testing.assert_array_equal(naive(X, W), hoisted(X, W))
    assert latency(hoisted, X, W) < 0.9 * latency(naive, X, W)


def test_fewer_larger_dma_transfers_are_faster_than_many_small_ones():
    def copy_kernel(width: int):
        @jit
        def kernel(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(x.shape[0] // 128):
                for j in nl.affine_range(x.shape[1] // width):
                    tile = nl.load(x[i * 128:(i + 1) * 128, j * width:(j + 1) * width])
                    nl.store(out[i * 128:(i + 1) * 128, j * width:(j + 1) * width], value=tile)
            return out

        return kernel

    small, large = latency(copy_kernel(64), X), latency(copy_kernel(512), X)
    assert large < 0.6 * small


def test_strided_transposing_dma_is_slower_than_a_contiguous_load_plus_tensor_engine_transpose():
    @jit
    def dma_transpose(x):
        out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(x[0:128, 0:128]))
        return out

    @jit
    def pe_transpose(x):
        out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.copy(nisa.nc_transpose(nl.load(x[0:128, 0:128]))))
        return out

    np.testing.assert_array_equal(dma_transpose(X), pe_transpose(X))
    assert latency(pe_transpose, X) < latency(dma_transpose, X)


def test_keeping_intermediates_resident_in_sbuf_beats_a_round_trip_through_hbm():
    @jit
    def round_trip(x):
        tmp = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            rows = slice(i * 128, (i + 1) * 128)
            nl.store(tmp[rows, :], value=nl.multiply(nl.load(x[rows, :]), 2.0))
            nl.store(out[rows, :], value=nl.add(nl.load(tmp[rows, :]), 1.0))
        return out

    @jit
    def resident(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            rows = slice(i * 128, (i + 1) * 128)
            nl.store(out[rows, :], value=nl.add(nl.multiply(nl.load(x[rows, :]), 2.0), 1.0))
        return out

    np.testing.assert_array_equal(round_trip(X), resident(X))
    assert latency(resident, X) < 0.8 * latency(round_trip, X)


def test_fresh_buffers_per_iteration_overlap_dma_with_compute_unlike_one_reused_buffer():
    @jit
    def single_buffer(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        buf = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        res = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(x.shape[0] // 128):
            nisa.dma_copy(dst=buf, src=x[i * 128:(i + 1) * 128, :])
            nisa.activation(dst=res, op=nl.exp, data=buf)
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=res)
        return out

    @jit
    def pipelined(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(x.shape[0] // 128):
            buf = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
            res = nl.ndarray((128, x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=buf, src=x[i * 128:(i + 1) * 128, :])
            nisa.activation(dst=res, op=nl.exp, data=buf)
            nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=res)
        return out

    np.testing.assert_array_equal(single_buffer(X), pipelined(X))
    assert latency(pipelined, X) < 0.8 * latency(single_buffer, X)


def test_sequential_range_forbids_the_overlap_that_affine_range_allows():
    def kernel(loop):
        @jit
        def k(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in loop(x.shape[0] // 128):
                nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.load(x[i * 128:(i + 1) * 128, :])))
            return out

        return k

    assert latency(kernel(nl.affine_range), X) < 0.8 * latency(kernel(nl.sequential_range), X)


def test_fusing_a_scale_into_activation_beats_a_separate_multiply():
    @jit
    def separate(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x[0:128, :])
        nl.store(out, value=nl.exp(nl.multiply(tile, 0.5)))
        return out

    @jit
    def fused(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x[0:128, :])
        nl.store(out, value=nisa.activation(op=nl.exp, data=tile, scale=0.5))
        return out

    np.testing.assert_allclose(separate(X), fused(X), rtol=1e-6)
    assert latency(fused, X) < latency(separate, X)


def test_instruction_cost_grows_with_tile_free_size_not_partition_count():
    def exp_cost(rows: int, cols: int) -> float:
        @jit
        def k(x):
            out = nl.ndarray((rows, cols), dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.exp(nl.load(x[0:rows, 0:cols])))
            return out

        k(X)
        return last_report()["engines"]["scalar"]["busy_us"]

    assert exp_cost(128, 512) > exp_cost(128, 128)
    assert exp_cost(32, 128) == exp_cost(128, 128)


def test_bf16_matmul_is_cheaper_than_fp32_on_the_tensor_engine():
    def mm(dtype):
        @jit
        def k(a, b):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            res = nisa.nc_matmul(nl.load(a[0:128, 0:128], dtype=dtype), nl.load(b[0:128, :], dtype=dtype))
            nl.store(out, value=nl.copy(res))
            return out

        k(X, X)
        return last_report()["engines"]["tensor"]["busy_us"]

    assert mm(nl.bfloat16) * params.TENSOR_FP32_PASSES < mm(nl.float32) * 1.2
