"""Pairs of ways to write the same thing that the NKI documentation ranks, ranked the same way by the cost
model (our own kernels, both variants checked equal; modeled time is deterministic). Sources:
[ARCH] "Trainium/Inferentia2 Architecture Guide for NKI"; [ISA] the nki.isa API reference."""

from __future__ import annotations

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.jit import jit, last_report

RNG = np.random.default_rng(7)


def run(kernel, *args) -> tuple[np.ndarray, dict]:
    out = kernel(*args)
    return np.asarray(out, dtype=np.float32), last_report()


def busy(report: dict, engine: str) -> float:
    return report["engines"][engine]["busy_us"]


def test_a_matrix_times_vector_puts_the_matrix_stationary_and_the_vector_moving():
    # [ARCH] "Fast LoadStationary": LoadStationary is up to 4x faster than a MultiplyMoving of the same free
    # size, so "for a vector-matrix multiplication, it is recommended to put the matrix as stationary matrix
    # and vector as moving matrix"
    w = RNG.standard_normal((128, 512)).astype(np.float32)
    v = RNG.standard_normal((128, 1)).astype(np.float32)

    @jit
    def matrix_stationary(w, v):
        out = nl.ndarray((512, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        wt = nl.load(w, dtype=nl.bfloat16)
        vt = nl.load(v, dtype=nl.bfloat16)
        for j in nl.affine_range(4):
            res = nisa.nc_matmul(wt[:, j * 128:(j + 1) * 128], vt)  # (128, 1)
            nl.store(out[j * 128:(j + 1) * 128, :], value=nl.copy(res))
        return out

    @jit
    def vector_stationary(w, v):
        out = nl.ndarray((1, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        wt = nl.load(w, dtype=nl.bfloat16)
        vt = nl.load(v, dtype=nl.bfloat16)
        nl.store(out, value=nl.copy(nisa.nc_matmul(vt, wt)))  # (1, 512)
        return out

    a, ra = run(matrix_stationary, w, v)
    b, rb = run(vector_stationary, w, v)
    np.testing.assert_allclose(a[:, 0], b[0], rtol=1e-5)
    assert busy(ra, "tensor") < busy(rb, "tensor")


def test_activation_reduce_beats_an_activation_then_a_vector_reduction():
    # [ARCH] "Pipelined Reduction": Activate reduces at no additional cost, then ActReadAccumulator, "a low
    # cost (roughly 64 ScalarE cycles) instruction"; the alternative is a separate tensor_reduce on VectorE
    x = RNG.standard_normal((128, 512)).astype(np.float32)

    @jit
    def separate(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        e = nisa.activation(op=nl.exp, data=nl.load(x))
        nl.store(out, value=nisa.tensor_reduce(nl.add, e, axis=[1], keepdims=True))
        return out

    @jit
    def fused(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation_reduce(op=nl.exp, data=nl.load(x), reduce_op=nl.add, reduce_res=s)
        nl.store(out, value=s)
        return out

    a, ra = run(separate, x)
    b, rb = run(fused, x)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    assert rb["latency_us"] < ra["latency_us"]


def test_accumulating_in_psum_beats_separate_matmuls_added_on_the_vector_engine():
    # [ARCH] "Near-memory accumulation in PSUM": accumulation "effectively combines" the partial matmuls and
    # their sum "into a single TensorE nc_matmul instruction"
    a_t = RNG.standard_normal((256, 128)).astype(np.float32)
    b = RNG.standard_normal((256, 512)).astype(np.float32)

    @jit
    def vector_add(a_t, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        p0 = nisa.nc_matmul(nl.load(a_t[0:128], dtype=nl.bfloat16), nl.load(b[0:128], dtype=nl.bfloat16))
        p1 = nisa.nc_matmul(nl.load(a_t[128:256], dtype=nl.bfloat16), nl.load(b[128:256], dtype=nl.bfloat16))
        nl.store(out, value=nl.add(nl.copy(p0), nl.copy(p1)))
        return out

    @jit
    def psum_accumulate(a_t, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(2):
            acc += nisa.nc_matmul(nl.load(a_t[k * 128:(k + 1) * 128], dtype=nl.bfloat16),
                                  nl.load(b[k * 128:(k + 1) * 128], dtype=nl.bfloat16))
        nl.store(out, value=nl.copy(acc))
        return out

    x, rx = run(vector_add, a_t, b)
    y, ry = run(psum_accumulate, a_t, b)
    np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-3)
    assert busy(ry, "vector") < busy(rx, "vector")
    assert ry["latency_us"] < rx["latency_us"]


def _elementwise_by_partitions(parts: int):
    @jit
    def k(x):
        rows, cols = x.shape
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.affine_range(rows // parts):
            t = nl.load(x[i * parts:(i + 1) * parts, :])
            nl.store(out[i * parts:(i + 1) * parts, :], value=nisa.activation(op=nl.exp, data=t, scale=0.5))
        return out

    return k


def test_full_128_partition_tiles_beat_narrow_tiles_of_the_same_data():
    # [ARCH] "128 Parallel Compute Lanes": an instruction on fewer lanes costs the same as one on all 128, so
    # "maximize the compute lanes used"; DMA: "maximize both free and partition (ideally 128) dimension sizes"
    x = RNG.standard_normal((512, 512)).astype(np.float32)
    wide, rw = run(_elementwise_by_partitions(128), x)
    narrow, rn = run(_elementwise_by_partitions(32), x)
    np.testing.assert_array_equal(wide, narrow)
    assert busy(rw, "scalar") * 3.5 < busy(rn, "scalar")
    assert rw["latency_us"] < rn["latency_us"]


def _elementwise_by_columns(width: int):
    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        r = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        for j in nl.affine_range(x.shape[1] // width):
            nisa.tensor_scalar(dst=r[:, j * width:(j + 1) * width], data=t[:, j * width:(j + 1) * width],
                               op0=nl.multiply, operand0=2.0)
        nl.store(out, value=r)
        return out

    return k


def test_large_free_size_instructions_amortize_the_static_overhead():
    # [ARCH] VectorE cost model: roughly N cycles for N > 128, "a static instruction overhead of 100 engine
    # cycles" for N << 128; and the ~60-cycle tensor access overhead, amortized "with large P and F sizes"
    x = RNG.standard_normal((128, 2048)).astype(np.float32)
    big, rb = run(_elementwise_by_columns(512), x)
    small, rs = run(_elementwise_by_columns(16), x)
    np.testing.assert_array_equal(big, small)
    assert busy(rb, "vector") * 4 < busy(rs, "vector")


def test_two_operators_in_one_tensor_scalar_cost_what_one_does():
    # [ISA] nki.isa.tensor_scalar: "performing one operator has the same performance cost as performing two
    # operators in the instruction"
    x = RNG.standard_normal((128, 512)).astype(np.float32)

    @jit
    def two_instructions(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        a = nisa.tensor_scalar(nl.load(x), np.multiply, 3.0)
        nl.store(out, value=nisa.tensor_scalar(a, np.add, 1.0))
        return out

    @jit
    def one_instruction(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_scalar(nl.load(x), np.multiply, 3.0, op1=np.add, operand1=1.0))
        return out

    a, ra = run(two_instructions, x)
    b, rb = run(one_instruction, x)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert busy(rb, "vector") * 2 == busy(ra, "vector")


def test_independent_work_split_across_scalar_and_vector_engines_runs_in_parallel():
    # [ARCH] "These engines execute their own instruction sequences asynchronously in parallel ... NKI API calls
    # without data dependencies can run in parallel if they have different target engines"
    x = RNG.standard_normal((128, 2048)).astype(np.float32)

    def kernel(second_on_scalar: bool):
        @jit
        def k(x):
            out = nl.ndarray((128, 2048), dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.load(x)
            lo, hi = t[:, 0:1024], t[:, 1024:2048]
            for _ in range(6):  # enough work that the engines, not the DMAs, bound the kernel
                lo = nisa.tensor_scalar(lo, np.multiply, 0.5)
                hi = (nisa.activation(op=nl.copy, data=hi, scale=0.5) if second_on_scalar
                      else nisa.tensor_scalar(hi, np.multiply, 0.5))
            nl.store(out[:, 0:1024], value=lo)
            nl.store(out[:, 1024:2048], value=hi)
            return out

        return k

    a, one_engine = run(kernel(False), x)
    b, two_engines = run(kernel(True), x)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert two_engines["latency_us"] < one_engine["latency_us"]


def _matmul_engine_us(dtype) -> float:
    a = RNG.standard_normal((128, 128)).astype(np.float32)
    b = RNG.standard_normal((128, 512)).astype(np.float32)

    @jit
    def k(a, b):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        at = nl.load(a, dtype=dtype)
        bt = nl.load(b, dtype=dtype)
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
        for _ in nl.affine_range(8):
            acc += nisa.nc_matmul(at, bt)
        nl.store(out, value=nl.copy(acc))
        return out

    k(a, b)
    return last_report()["engines"]["tensor"]["busy_us"]


def test_tensor_engine_rates_per_input_type_follow_the_architecture_guide():
    # [ARCH] TensorE "supports BF16, FP16, TF32, and cFP8 input matrix data types at a maximum throughput of 92
    # TFLOPS, as well as 23 TFLOPS for FP32 inputs" (NeuronCore-v2: fp8 is not faster than bf16; tf32 is)
    bf16 = _matmul_engine_us(nl.bfloat16)
    assert _matmul_engine_us(nl.float16) == bf16
    assert _matmul_engine_us(nl.float8_e4m3) == bf16
    assert _matmul_engine_us(nl.tfloat32) == bf16
    assert _matmul_engine_us(nl.float32) == pytest.approx(4 * bf16, rel=1e-3)


def _split_kernel(second: str):
    @jit
    def k(x):
        out = nl.ndarray((128, 2048), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        lo, hi = t[:, 0:1024], t[:, 1024:2048]
        for _ in range(6):
            lo = nisa.tensor_scalar(lo, np.multiply, 0.5)
            hi = (nisa.activation(op=nl.copy, data=hi, scale=0.5) if second == "scalar"
                  else nisa.tensor_scalar(hi, np.multiply, 0.5, engine=nisa.gpsimd_engine))
        nl.store(out[:, 0:1024], value=lo)
        nl.store(out[:, 1024:2048], value=hi)
        return out

    return k


def test_vector_and_gpsimd_share_the_sbuf_port_so_scalar_is_the_better_second_engine():
    # [ARCH] "VectorE and GpSimdE cannot access SBUF in parallel", while SBUF drives VectorE/ScalarE/TensorE
    # "simultaneously without bandwidth interference"
    x = RNG.standard_normal((128, 2048)).astype(np.float32)
    a, with_gpsimd = run(_split_kernel("gpsimd"), x)
    b, with_scalar = run(_split_kernel("scalar"), x)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert with_scalar["latency_us"] < with_gpsimd["latency_us"]


def test_a_load_over_128_partitions_beats_the_same_bytes_over_8_partitions():
    # [ARCH] a 128x512 fp32 load is "16 DMA transfers (one per DMA engine), each moving ... 8 DMA buffers" (one
    # per partition); so "maximize both free (4KiB or above) and partition (ideally 128) dimension sizes"
    flat = RNG.standard_normal((128 * 512,)).astype(np.float32)

    def copy_through_sbuf(p: int):
        @jit
        def k(x):
            out = nl.ndarray((p, flat.size // p), dtype=nl.float32, buffer=nl.shared_hbm)
            nl.store(out, value=nl.load(x.reshape((p, flat.size // p))))
            return out

        return k

    a, wide = run(copy_through_sbuf(128), flat)
    b, narrow = run(copy_through_sbuf(8), flat)
    np.testing.assert_array_equal(a.reshape(-1), b.reshape(-1))
    assert wide["latency_us"] < narrow["latency_us"]


def test_pipelining_two_engines_over_tiles_beats_running_each_operator_over_the_whole_tensor():
    # [PERF] "NKI Performance Guide", Opt #3: X -> op0 (ScalarE) -> Y -> op1 (VectorE): sliced into tiles,
    # "ScalarE is able to produce partial results in tiles and unblock VectorE as soon as the first tile is
    # processed", which "shortens the end to end latency"
    x = RNG.standard_normal((128, 4096)).astype(np.float32)

    def kernel(tiles: int):
        width = 4096 // tiles

        @jit
        def k(x):
            out = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.load(x)
            z = nl.ndarray((128, 4096), dtype=x.dtype, buffer=nl.sbuf)
            for j in nl.affine_range(tiles):
                cols = slice(j * width, (j + 1) * width)
                y = nisa.activation(op=nl.exp, data=t[:, cols])
                nisa.tensor_scalar(dst=z[:, cols], data=y, op0=np.multiply, operand0=2.0)
            nl.store(out, value=z)
            return out

        return k

    a, whole = run(kernel(1), x)
    b, tiled = run(kernel(8), x)
    np.testing.assert_allclose(a, b, rtol=1e-6)
    assert tiled["latency_us"] < whole["latency_us"]


def test_partition_vectorization_halves_two_64_partition_reductions():
    # [PERF] Opt #5b: two tensor_reduce instructions on 64-partition tiles run serially; one on a 128-partition
    # tile holding both "is able to perform the reduction 2x faster"
    x = RNG.standard_normal((128, 512)).astype(np.float32)

    @jit
    def two_halves(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out[0:64], value=nisa.tensor_reduce(nl.add, t[0:64], axis=[1], keepdims=True))
        nl.store(out[64:128], value=nisa.tensor_reduce(nl.add, t[64:128], axis=[1], keepdims=True))
        return out

    @jit
    def vectorized(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_reduce(nl.add, nl.load(x), axis=[1], keepdims=True))
        return out

    a, ra = run(two_halves, x)
    b, rb = run(vectorized, x)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    assert busy(rb, "vector") * 2 == pytest.approx(busy(ra, "vector"))


def test_one_activation_with_scale_and_bias_is_about_3x_faster_than_multiply_add_exp():
    # [PERF] Opt #6: exp(data * scale + bias) as nl.multiply, nl.add, nl.exp ("impl 1") vs one
    # nki.isa.activation(exp, data, bias, scale) ("impl 2"): "impl 2 is 3x faster in terms of latency by
    # touching the input data only once"
    x = RNG.standard_normal((128, 512)).astype(np.float32)
    s = RNG.uniform(0.5, 1.0, (128, 1)).astype(np.float32)
    bias = RNG.uniform(-1.0, 0.0, (128, 1)).astype(np.float32)

    def compute_us(report: dict) -> float:
        return sum(busy(report, e) for e in ("vector", "scalar"))

    @jit
    def impl1(x, s, b):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        scaled = nl.multiply(nl.load(x), nl.load(s))
        nl.store(out, value=nl.exp(nl.add(scaled, nl.load(b))))
        return out

    @jit
    def impl2(x, s, b):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.activation(op=nl.exp, data=nl.load(x), bias=nl.load(b), scale=nl.load(s)))
        return out

    a, r1 = run(impl1, x, s, bias)
    b, r2 = run(impl2, x, s, bias)
    np.testing.assert_allclose(a, b, rtol=1e-5)
    ratio = compute_us(r1) / compute_us(r2)
    assert 2.5 < ratio < 4.0, ratio


def _activation_chain(n: int, dependent: bool):
    @jit
    def chain(x):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        last = t
        for _ in range(n):
            last = nisa.activation(op=nl.exp, data=last if dependent else t, scale=0.001)
        nl.store(out, value=last)
        return out

    return chain


def test_dependent_one_element_scalar_instructions_start_264_cycles_apart_independent_ones_100():
    # [PERF] Opt #5a: back-to-back one-element ScalarE instructions, each reading the previous one's output,
    # have an initiation interval of "around 189 ns (264 ScalarE cycles on NC-v2)"; without the dependency
    # only the ~100-cycle static instruction overhead separates them ([ARCH])
    x = np.zeros((128, 1), dtype=np.float32)
    ghz = 1.4  # ScalarE clock ([ARCH])

    def interval_cycles(dependent: bool) -> float:
        _, short = run(_activation_chain(1, dependent), x)
        _, long = run(_activation_chain(33, dependent), x)
        return (long["latency_us"] - short["latency_us"]) * 1000 * ghz / 32

    assert interval_cycles(dependent=True) == pytest.approx(264, abs=1)
    assert interval_cycles(dependent=False) == pytest.approx(100, abs=1)


@pytest.mark.parametrize("engine, ghz", [("scalar", 1.4), ("vector", 1.12)])
def test_a_fused_reduction_costs_one_minimum_initiation_interval_more(engine, ghz):
    # [ISA] activation_reduce and tensor_scalar_reduce (legacy pages, NeuronCore-v2): "max(MIN_II, N) + MIN_II ...
    # cycles", MIN_II "roughly 64 engine cycles"; [ARCH] "Pipelined Reduction": the ActReadAccumulator after
    # the activation is "roughly 64 ScalarE cycles"
    x = RNG.standard_normal((128, 512)).astype(np.float32)

    def kernel(fused: bool):
        @jit
        def k(x):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
            s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            if engine == "scalar":
                nisa.activation(dst=t, op=nl.exp, data=nl.load(x), reduce_op=nl.add,
                                reduce_res=s if fused else None)
            elif fused:
                nisa.tensor_scalar_reduce(dst=t, data=nl.load(x), op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                                          reduce_res=s)
            else:
                nisa.tensor_scalar(dst=t, data=nl.load(x), op0=nl.multiply, operand0=2.0)
            nl.store(out, value=t)
            return out

        return k

    _, alone = run(kernel(False), x)
    _, fused = run(kernel(True), x)
    assert busy(fused, engine) - busy(alone, engine) == pytest.approx(64 / ghz / 1000, abs=0.002)
