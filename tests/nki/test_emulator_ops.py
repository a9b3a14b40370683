"""Emulated NKI operations give the same numbers as plain NumPy (run in-process: trusted test kernels)."""

from __future__ import annotations

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.dtypes import round_bf16
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.jit import jit, last_report

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def unary_kernel(fn):
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=fn(nl.load(x)))
        return out

    return kernel


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (nl.exp, np.exp),
        (nl.tanh, np.tanh),
        (nl.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        (nl.relu, lambda x: np.maximum(x, 0)),
        (nl.square, np.square),
        (nl.negative, np.negative),
        (nl.abs, np.abs),
        (nl.silu, lambda x: x / (1 + np.exp(-x))),
    ],
)
def test_unary_math_matches_numpy(op, expected):
    x = rand(128, 64)
    np.testing.assert_allclose(unary_kernel(op)(x), expected(x), rtol=1e-5, atol=1e-6)


def test_gelu_matches_the_erf_definition():
    import math

    x = rand(16, 32)
    exact = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)
    np.testing.assert_allclose(unary_kernel(nl.gelu)(x), exact, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("op", "expected"),
    [(nl.add, np.add), (nl.subtract, np.subtract), (nl.multiply, np.multiply), (nl.divide, np.divide),
     (nl.maximum, np.maximum), (nl.minimum, np.minimum)],
)
def test_binary_ops_match_numpy_and_broadcast_along_free_axis(op, expected):
    @jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=op(nl.load(a), nl.load(b)))
        return out

    a, b = rand(128, 32), rand(128, 1) + 3.0
    np.testing.assert_allclose(kernel(a, b), expected(a, b), rtol=1e-6)


@pytest.mark.parametrize(("red", "expected"), [(nl.sum, np.sum), (nl.max, np.max), (nl.min, np.min), (nl.mean, np.mean)])
def test_reductions_along_free_axis(red, expected):
    @jit
    def kernel(x):
        out = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=red(nl.load(x), axis=1, keepdims=True))
        return out

    x = rand(64, 48)
    np.testing.assert_allclose(kernel(x), expected(x, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_nc_matmul_computes_stationary_transposed_times_moving_and_accumulates_in_psum():
    @jit
    def kernel(aT, b):
        out = nl.ndarray((aT.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((aT.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(aT.shape[0] // 128):
            nisa.nc_matmul(acc, nl.load(aT[k * 128:(k + 1) * 128, :]), nl.load(b[k * 128:(k + 1) * 128, :]))
        nl.store(out, value=nl.copy(acc))
        return out

    aT, b = rand(256, 64), rand(256, 512)
    np.testing.assert_allclose(kernel(aT, b), aT.T @ b, rtol=1e-4, atol=1e-4)


def test_legacy_matmul_returns_psum_and_plus_equals_accumulates():
    @jit
    def kernel(a, b):
        out = nl.ndarray((a.shape[0], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((a.shape[0], b.shape[1]), nl.float32, buffer=nl.psum)
        acc += nl.matmul(nl.load(a), nl.load(b))
        acc += nisa.nc_matmul(nl.load_transpose2d(a), nl.load(b))
        nl.store(out, value=nl.copy(acc))
        return out

    a, b = rand(64, 128), rand(128, 96)
    np.testing.assert_allclose(kernel(a, b), 2 * (a @ b), rtol=1e-4, atol=1e-4)


def test_transpose_activation_tensor_scalar_tensor_tensor_and_reduce():
    @jit
    def kernel(x, y):
        out = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.shared_hbm)
        stats = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        xt, yt = nl.load(x), nl.load(y)
        act = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
        zero_bias = nisa.tensor_scalar(nl.max(yt, axis=1, keepdims=True), np.multiply, 0.0)
        nisa.activation(dst=act, op=nl.exp, data=xt, scale=0.5, bias=zero_bias)
        ts = nisa.tensor_scalar(data=act, op0=np.add, operand0=1.0, op1=np.multiply, operand1=2.0)
        tt = nisa.tensor_tensor(ts, xt, op=nl.subtract)
        red = nisa.tensor_reduce(np.add, tt, axis=1, keepdims=True)
        nl.store(stats, value=red)
        flipped = nl.ndarray((x.shape[1], x.shape[0]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(flipped, tt)
        nl.store(out, value=nl.copy(flipped))
        return out, stats

    x, y = rand(64, 32), rand(64, 32)
    expected = (np.exp(0.5 * x) + 1.0) * 2.0 - x
    got_t, got_stats = kernel(x, y)
    np.testing.assert_allclose(got_t, expected.T, rtol=1e-5)
    np.testing.assert_allclose(got_stats, expected.sum(axis=1, keepdims=True), rtol=1e-5)


def test_arange_mgrid_and_ds_indexing_and_masked_ragged_edges():
    @jit
    def kernel(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        ix = nl.mgrid[0:128, 0:cols]
        for i in nl.affine_range((rows + 127) // 128):
            mask = i * 128 + ix.p < rows
            tile = nl.load(x[i * 128 + ix.p, ix.x], mask=mask)
            doubled = nl.multiply(tile, 2.0, mask=mask)
            nl.store(out[i * 128 + ix.p, nl.arange(cols)[None, :]], value=doubled, mask=mask)
        first = nl.load(x[nl.ds(0, 4), 0:cols])
        nl.store(out[nl.ds(0, 4), :], value=nl.add(first, first))
        return out

    x = rand(200, 16)
    np.testing.assert_allclose(kernel(x), 2 * x, rtol=1e-6)


def test_sequential_static_ranges_and_par_dim_block_tensors():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        blocks = nl.ndarray((2, nl.par_dim(128), x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
        for b in nl.static_range(2):
            nisa.dma_copy(dst=blocks[b], src=x[b * 128:(b + 1) * 128, :])
        running = nl.zeros((128, x.shape[1]), nl.float32, buffer=nl.sbuf)
        for b in nl.sequential_range(2):
            running[...] = nl.add(running, blocks[b])
        nl.store(out[0:128, :], value=running)
        nl.store(out[128:256, :], value=blocks[1])
        return out

    x = rand(256, 8)
    got = kernel(x)
    np.testing.assert_allclose(got[:128], x[:128] + x[128:], rtol=1e-6)
    np.testing.assert_allclose(got[128:], x[128:])


def test_bf16_rounding_is_round_to_nearest_even():
    ones_plus = np.array([1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-9, -(1.0 + 2**-8)], dtype=np.float32)
    # halfway cases go to the even mantissa; below halfway rounds down
    np.testing.assert_array_equal(round_bf16(ones_plus), np.array([1.0, 1.0 + 2**-6, 1.0, -1.0], dtype=np.float32))
    assert np.isnan(round_bf16(np.array([np.nan], dtype=np.float32)))[0]
    assert np.isinf(round_bf16(np.array([np.inf], dtype=np.float32)))[0]


def test_bf16_tiles_round_values_when_written():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        low = nl.load(x, dtype=nl.bfloat16)
        nl.store(out, value=nl.copy(low, dtype=nl.float32))
        return out

    x = rand(8, 8)
    np.testing.assert_array_equal(kernel(x), round_bf16(x))


def test_output_arguments_are_copied_back_to_the_host_array():
    @jit
    def kernel(x, out):
        nl.store(out, value=nl.exp(nl.load(x)))

    x, out = rand(4, 4), np.zeros((4, 4), np.float32)
    kernel(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-6)


def test_spmd_grid_runs_every_program():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.load(x[i * 128:(i + 1) * 128, :]))
        return out

    x = rand(256, 4)
    np.testing.assert_array_equal(kernel[2](x), x)


def test_uninitialised_sbuf_reads_are_nan():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nl.store(out, value=scratch)
        return out

    assert np.isnan(kernel(rand(4, 4))).all()


def test_reducing_across_partitions_is_an_error():
    @jit
    def kernel(x):
        out = nl.ndarray((1, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.sum(nl.load(x), axis=0, keepdims=True))
        return out

    with pytest.raises(NkiError, match="partition axis"):
        kernel(rand(8, 8))


def test_report_counts_engines_and_dma():
    unary_kernel(nl.exp)(rand(128, 64))
    report = last_report()
    assert report["engines"]["scalar"]["instructions"] == 1
    assert report["engines"]["dma"]["instructions"] == 2  # one load, one store
    # each spread over the 16 DMA engines, one descriptor per partition row (128 x 64 fp32 contiguous)
    assert report["dma_transfers"] == 2 * 16
    assert report["dma_descriptors"] == 2 * 128
    assert report["latency_us"] > 0


def test_activation_bias_must_be_a_per_partition_vector():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, value=nisa.activation(op=nl.exp, data=t, bias=t))
        return out

    with pytest.raises(NkiError, match="bias must be a scalar or a"):
        kernel(rand(8, 8))


def test_hbm_reshape_and_partition_broadcast_of_a_weight_row():
    @jit
    def kernel(x, g):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        g_row = nl.load(g.reshape((1, g.shape[0])))
        nl.store(out, value=nl.multiply(nl.load(x), g_row.broadcast_to((x.shape[0], g.shape[0]))))
        return out

    x, g = rand(128, 16), rand(16)
    np.testing.assert_allclose(kernel(x, g), x * g, rtol=1e-6)


def test_tensor_tensor_scan_is_a_running_recurrence_along_the_free_axis():
    @jit
    def kernel(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        scan = nisa.tensor_tensor_scan(nl.load(a), nl.load(b), 0.0, np.multiply, np.add)
        nl.store(out, value=scan)
        return out

    a, b = rand(8, 6), rand(8, 6)
    expected = np.zeros_like(a)
    prev = np.zeros(8, np.float32)
    for i in range(6):
        prev = a[:, i] * prev + b[:, i]
        expected[:, i] = prev
    np.testing.assert_allclose(kernel(a, b), expected, rtol=1e-5, atol=1e-6)


def test_tensor_scalar_reduce_writes_the_free_axis_reduction():
    @jit
    def kernel(x):
        out = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
        total = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(data=nl.load(x), op0=np.multiply, operand0=2.0, reduce_op=np.add, reduce_res=total)
        nl.store(out, value=total)
        return out

    x = rand(16, 8)
    np.testing.assert_allclose(kernel(x), 2 * x.sum(axis=1, keepdims=True), rtol=1e-5)


def test_sbuf_capacity_counts_live_tiles_and_frees_dead_ones():
    @jit
    def reuse(x):
        out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        for _ in nl.affine_range(4):
            # 80 KiB per partition; the previous iteration's tile is freed when `big` is rebound, so at
            # most two are live at once (like double buffering)
            big = nl.ndarray((128, 20 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # noqa: F841
        nl.store(out, value=nl.load(x[0:128, 0:1]))
        return out

    @jit
    def too_big(x):
        return nl.ndarray((128, 49 * 1024), dtype=nl.float32, buffer=nl.sbuf)  # 196 KiB > 192 KiB

    reuse(rand(128, 4))
    assert 80 < last_report()["sbuf_peak_kib_per_partition"] <= 2 * 80 + 1
    assert last_report()["sbuf_spills"] == 0
    with pytest.raises(NkiError, match="SBUF overflow"):
        too_big(rand(128, 4))


def _vector_transpose_kernel(rows: int, cols: int, buffer=nl.sbuf):
    @jit
    def kernel(x):
        out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
        flipped = nl.ndarray((cols, rows), dtype=x.dtype, buffer=buffer)
        nisa.nc_transpose(flipped, nl.load(x), engine=nisa.vector_engine)
        nl.store(out, value=flipped)
        return out

    return kernel


@pytest.mark.parametrize("buffer", [nl.sbuf, nl.psum], ids=["sbuf", "psum"])
def test_the_vector_engine_transposes_a_tile_of_at_most_32_by_32_into_sbuf_or_psum(buffer):
    # nki.isa.nc_transpose: the Vector engine handles (32, 32) or smaller and reads/writes SBUF or PSUM; the AWS
    # doc example test_nki_isa_nc_transpose.py transposes a (32, 2) tile this way
    x = rand(32, 2)
    np.testing.assert_array_equal(_vector_transpose_kernel(32, 2, buffer)(x), x.T)
    engines = last_report()["engines"]
    assert engines["vector"]["instructions"] >= 1 and engines["tensor"]["instructions"] == 0


def test_the_vector_engine_refuses_a_transpose_larger_than_32_by_32():
    with pytest.raises(NkiError, match="at most 32 x 32"):
        _vector_transpose_kernel(64, 32)(rand(64, 32))


def test_a_transpose_on_an_engine_that_has_none_is_refused():
    @jit
    def kernel(x):
        out = nl.ndarray((32, 32), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.nc_transpose(nl.load(x), engine=nisa.gpsimd_engine))
        return out

    with pytest.raises(NkiError, match="tensor or vector engine, not gpsimd"):
        kernel(rand(32, 32))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_predicated_copy_writes_only_where_the_predicate_selects(reverse):
    @jit
    def kernel(pred, x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        dst = nl.load(y)
        nisa.tensor_copy_predicated(src=nl.load(x), dst=dst, predicate=nl.load(pred), reverse_pred=reverse)
        nl.store(out, value=dst)
        return out

    x, y = rand(128, 64), rand(128, 64)
    pred = (RNG.random((128, 64)) < 0.5).astype(np.uint8)
    chosen = (pred == 0) if reverse else (pred != 0)
    np.testing.assert_array_equal(kernel(pred, x, y), np.where(chosen, x, y))
    # two SBUF inputs streamed: 2N VectorE cycles (the legacy page's cost table), as tensor_tensor
    assert last_report()["engines"]["vector"]["instructions"] == 1


def test_a_predicated_copy_refuses_a_float_predicate():
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        dst = nl.load(x)
        nisa.tensor_copy_predicated(dst, 0.0, dst)
        nl.store(out, value=dst)
        return out

    with pytest.raises(NkiError, match="predicate must be uint8"):
        kernel(rand(128, 8))


def test_a_numpy_reduction_as_reduce_op_accumulates_across_instructions():
    # nki.isa.range_select's examples pass reduce_op=np.max and chain reset_reduce / reduce
    @jit
    def kernel(x):
        res = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        red = nl.ndarray((x.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=0.0, bound1=8.0,
                          reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=np.max, on_false_value=nl.fp32.min)
        nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less, bound0=8.0, bound1=16.0,
                          reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=red, reduce_op=np.max,
                          on_false_value=nl.fp32.min)
        nl.store(res, value=red)
        return res

    x = rand(128, 32)
    np.testing.assert_allclose(kernel(x), x[:, :16].max(axis=1, keepdims=True))


def test_a_tensor_indexed_with_an_mgrid_grid_itself_is_indexed_with_its_axes():
    # nl.load(in_tensor[nl.mgrid[0:128, 0:512]]), as the AWS doc example of nki.isa.reciprocal writes it
    @jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out[nl.mgrid[0:128, 0:64]], value=nisa.reciprocal(nl.load(x[nl.mgrid[0:128, 0:64]])))
        return out

    x = RNG.uniform(0.5, 2.0, (128, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(x), 1.0 / x, rtol=1e-6)
