"""The cost model ranks well-known NKI practices above their naive forms (deterministic modeled time)."""

from __future__ import annotations

import numpy as np
import pytest
from speedpatch.targets.nki.emulator import costmodel, params
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.jit import jit, last_report
from speedpatch.targets.nki.emulator.tensor import new_tile

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


def test_sequential_range_is_not_a_pipeline_barrier_for_independent_iterations():
    # sequential_range only tells the compiler that iterations may carry a dependency; iterations that
    # share no data still overlap (the issue #13 defect: it used to wait for all engines each iteration)
    def kernel(loop):
        @jit
        def k(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in loop(x.shape[0] // 128):
                nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.load(x[i * 128:(i + 1) * 128, :])))
            return out

        return k

    assert latency(kernel(nl.sequential_range), X) == latency(kernel(nl.affine_range), X)


def test_a_loop_carried_dependency_serializes_iterations_through_the_data():
    @jit
    def carried(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.sequential_range(x.shape[0] // 128):
            acc[...] = nl.add(acc, nl.exp(nl.load(x[i * 128:(i + 1) * 128, :])))
        nl.store(out, value=acc)
        return out

    @jit
    def independent(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        for i in nl.sequential_range(x.shape[0] // 128):
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.load(x[i * 128:(i + 1) * 128, :])))
        return out

    np.testing.assert_allclose(carried(X), np.exp(X).reshape(8, 128, 512).sum(axis=0), rtol=1e-5)
    independent(X)
    report = last_report()
    carried(X)
    chain = last_report()
    # 8 dependent adds run one after the other: the vector engine is busy for each of them in turn
    assert chain["engines"]["vector"]["instructions"] >= 8
    assert report["engines"]["vector"]["instructions"] == 0


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


# ---- the cost model against the documented hardware facts (params.py names the sources) -------------


def dma_efficiency(width: int) -> float:
    """Fraction of the DMA engines' peak bandwidth one (128, width) fp32 load achieves."""

    @jit
    def k(x):
        out = nl.ndarray((128, width), dtype=x.dtype, buffer=nl.shared_hbm)
        tile = nl.load(x[0:128, 0:width])
        nl.store(out, value=tile)
        return out

    k(np.zeros((128, width), dtype=np.float32))
    report = last_report()
    busy_ns = report["engines"]["dma"]["busy_us"] * 1000 / 2  # the load's half of load + store
    return 128 * width * 4 / params.DMA_ENGINE_BYTES_PER_NS / busy_ns


def test_dma_bandwidth_follows_the_documented_payload_curve():
    # [DMA]: < 256 B per partition is severely overhead-bound, >= 2 KiB approaches peak, 4 KiB nearly
    # saturates (these include the completion semaphore every engine writes per DMA)
    assert dma_efficiency(64) < 0.3  # 256 B rows
    assert 0.6 < dma_efficiency(512) < 0.8  # 2 KiB rows
    assert dma_efficiency(1024) > 0.8  # 4 KiB rows
    assert dma_efficiency(4096) > 0.9  # 16 KiB rows


def test_masked_edge_tile_dma_moves_only_its_in_bounds_rows():
    rows = 1000  # 7 full tiles of 128 rows and an edge tile of 104

    @jit
    def edge(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:128, 0:512]
        start = 7 * 128
        tile = nl.load(x[start + i_p, i_f], mask=(start + i_p < rows))
        nl.store(out[start + i_p, i_f], value=tile, mask=(start + i_p < rows))
        return out

    @jit
    def full(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out[0:128, :], value=nl.load(x[0:128, :]))
        return out

    x = RNG.standard_normal((rows, 512)).astype(np.float32)
    np.testing.assert_array_equal(edge(x)[896:], x[896:])
    masked = last_report()
    full(x)
    whole = last_report()
    # one descriptor per valid row, for the load and the store: not one transfer per element
    assert masked["dma_descriptors"] == 2 * (rows - 896)
    assert masked["dma_bytes"] == 2 * (rows - 896) * 512 * 4
    assert masked["engines"]["dma"]["busy_us"] < whole["engines"]["dma"]["busy_us"]


def test_broadcast_to_is_a_tensor_engine_matmul_not_per_element_gpsimd_work():
    @jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        row = nl.load(x[0:1, :])
        nl.store(out, value=nl.copy(row.broadcast_to((128, 512))))
        return out

    np.testing.assert_array_equal(k(X), np.broadcast_to(X[0:1], (128, 512)))
    report = last_report()
    assert report["engines"]["gpsimd"]["instructions"] == 0
    assert report["engines"]["tensor"]["instructions"] == 1
    # fp32 moving data of 512 columns: 4 passes x 512 cycles at the Tensor engine clock
    expected_us = 4 * 512 / params.TENSOR_GHZ / 1000
    assert report["engines"]["tensor"]["busy_us"] == round(expected_us, 3)


def test_tensor_engine_initiation_interval_is_max_of_columns_and_64_cycles():
    def busy(cols: int, dtype) -> float:
        @jit
        def k(a, b):
            out = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.shared_hbm)
            res = nisa.nc_matmul(nl.load(a[0:128, 0:128], dtype=dtype), nl.load(b[0:128, 0:cols], dtype=dtype))
            nl.store(out, value=nl.copy(res))
            return out

        k(X, X)
        return last_report()["engines"]["tensor"]["busy_us"] * 1000

    assert busy(512, nl.bfloat16) == pytest.approx(512 / params.TENSOR_GHZ, abs=1)
    assert busy(32, nl.bfloat16) == pytest.approx(64 / params.TENSOR_GHZ, abs=1)  # MM_INIT_LATENCY floor
    assert busy(512, nl.float32) == pytest.approx(4 * 512 / params.TENSOR_GHZ, abs=1)


def test_vector_engine_streams_each_input_tile_and_pays_a_static_overhead_for_small_ones():
    def vector_ns(fn, cols: int) -> float:
        @jit
        def k(a):
            out = nl.ndarray((128, cols), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(a[0:128, 0:cols])
            nl.store(out, value=fn(t))
            return out

        k(X)
        return last_report()["engines"]["vector"]["busy_us"] * 1000

    two = vector_ns(lambda t: nisa.tensor_tensor(t, t, op=nl.add), 512)
    one = vector_ns(lambda t: nisa.tensor_scalar(t, op0=nl.multiply, operand0=2.0), 512)
    assert one == pytest.approx(512 / params.VECTOR_GHZ, abs=1)
    assert two == pytest.approx(2 * one, abs=1)
    small = vector_ns(lambda t: nisa.tensor_scalar(t, op0=nl.multiply, operand0=2.0), 16)
    assert small == pytest.approx(params.STATIC_OVERHEAD_CYCLES / params.VECTOR_GHZ, abs=1)


def test_tensor_tensor_with_one_operand_in_psum_streams_in_n_cycles_not_2n():
    # nki.isa.tensor_tensor's cost table: max(MIN_II, N) when one input is in PSUM and the other in SBUF,
    # 2N when both are in SBUF (fp32)
    def vector_ns(from_psum: bool) -> float:
        @jit
        def k(a):
            out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.load(a[0:128, 0:512])
            if from_psum:
                other = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
                other[...] = t  # a VectorE copy (DMA cannot write PSUM)
            else:
                other = nl.load(a[0:128, 0:512])
            nl.store(out, value=nisa.tensor_tensor(t, other, op=nl.multiply))
            return out

        np.testing.assert_allclose(k(X), X[0:128] * X[0:128], rtol=1e-6)
        copy_ns = 512 / params.VECTOR_GHZ if from_psum else 0.0
        return last_report()["engines"]["vector"]["busy_us"] * 1000 - copy_ns

    assert vector_ns(True) == pytest.approx(512 / params.VECTOR_GHZ, abs=1)
    assert vector_ns(False) == pytest.approx(2 * 512 / params.VECTOR_GHZ, abs=1)


def test_a_partition_broadcast_is_a_psum_tile_and_a_wider_one_is_evacuated_to_sbuf():
    def broadcast(cols: int):
        @jit
        def k(x):
            out = nl.ndarray((128, cols), dtype=x.dtype, buffer=nl.shared_hbm)
            row = nl.load(x[0:1, 0:cols])
            wide = row.broadcast_to((128, cols))
            assert wide.buffer.name == ("psum" if cols <= 512 else "sbuf")
            nl.store(out, value=nl.multiply(nl.load(x[0:128, 0:cols]), wide))
            return out

        x = RNG.standard_normal((128, cols)).astype(np.float32)
        np.testing.assert_allclose(k(x), x * x[0:1], rtol=1e-6)
        return last_report()

    narrow, wide = broadcast(512), broadcast(1024)
    # TensorE wrote the result into one PSUM bank (512 fp32): the multiply reads it at N cycles
    assert narrow["engines"]["vector"]["instructions"] == 1
    # two banks' worth is no PSUM tile: a VectorE copy to SBUF, then a 2N multiply
    assert wide["engines"]["vector"]["instructions"] == 2
    assert wide["engines"]["vector"]["busy_us"] == pytest.approx(3 * 1024 / params.VECTOR_GHZ / 1000, abs=1e-3)


def test_a_new_tile_takes_the_space_freed_earliest_not_the_space_of_the_tile_still_being_stored():
    # SBUF holds two out-of-scope halves: the older one is still being read (a store until t = 10 us),
    # the newer one was last read at t = 0.1 us. A new half-size tile takes the newer one's space and may
    # start at 0.1 us; taking the older one's (allocation order) would make it wait for the store.
    trace = costmodel.Trace()
    previous = costmodel.activate(trace)
    try:
        half = params.SBUF_BYTES_PER_PARTITION // 2 // 4
        stored = new_tile((128, half), "float32", nl.sbuf, name="stored")
        done = new_tile((128, half), "float32", nl.sbuf, name="done")
        stored.alloc.reads.add(stored.alloc.full_region(), 10_000.0)
        done.alloc.reads.add(done.alloc.full_region(), 100.0)
        stored.alloc.slot.retire()
        done.alloc.slot.retire()
        fresh = new_tile((128, half), "float32", nl.sbuf, name="fresh")
    finally:
        costmodel.activate(previous)
    assert fresh.alloc.writes.floor == 100.0
    assert trace.reuse_waits == 1


# ---- SPMD launch grids -----------------------------------------------------------------------------------


@jit
def _slice_per_program(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0) * nl.num_programs(1) + nl.program_id(1) if nl.program_ndim() == 2 else nl.program_id(0)
    t = nl.load(x[i * 128:(i + 1) * 128, :])
    nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.multiply(t, 2.0)))
    return out


@jit
def _slices_in_a_loop(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(nl.multiply(t, 2.0)))
    return out


SPMD_X = RNG.standard_normal((1024, 1024)).astype(np.float32)


def test_grid_programs_on_one_core_cost_what_a_loop_over_them_costs():
    # "the different instances of the SPMD program are executed serially on a single NeuronCore"; "Neuron
    # compiler translates the SPMD launch grid into nested loops of compute-kernel invocations" (NKI
    # programming model, SPMD section): eight programs cost what a loop of eight iterations costs
    grid = latency(_slice_per_program[8], SPMD_X)
    loop = latency(_slices_in_a_loop, SPMD_X)
    one = latency(_slice_per_program[1], SPMD_X)
    assert grid == pytest.approx(loop, rel=1e-6)
    assert grid > 4 * one


def test_programs_of_an_nc_dimension_run_in_parallel_on_their_own_neuron_cores():
    serial = latency(_slice_per_program[8], SPMD_X)
    result = _slice_per_program[nl.spmd_dim(nl.nc(2), 4)](SPMD_X)
    np.testing.assert_allclose(result, np.exp(2 * SPMD_X), rtol=1e-5)
    report = last_report()
    assert report["cores"] == 2
    assert 0.45 * serial < report["latency_us"] < 0.6 * serial


def test_spmd_dim_places_programs_on_cores_as_the_nki_docs_show():
    # nki.language.spmd_dim examples: spmd_dim(nc(2), 2) puts programs 0,1 on core 0 and 2,3 on core 1;
    # spmd_dim(2, nc(2)) puts 0,2 on core 0 and 1,3 on core 1; nc(2) alone: program i on core i
    major = nl.spmd_dim(nl.nc(2), 2)
    minor = nl.spmd_dim(2, nl.nc(2))
    assert [nl.physical_core((major, 2), (i, 0))[0] for i in range(4)] == [0, 0, 1, 1]
    assert [nl.physical_core((minor, 2), (i, 1))[0] for i in range(4)] == [0, 1, 0, 1]
    assert [nl.physical_core((nl.nc(2), 3), (i, 2)) for i in range(2)] == [(0, 2), (1, 2)]
    assert nl.physical_core((4, 2), (3, 1)) == (0, 1)


def test_an_nc_dimension_times_an_int_is_the_spmd_dim_the_docs_call_its_syntactic_sugar():
    # nki.language.spmd_dim (and the AWS doc example test_nki_spmd_grid.py): kernel[nl.nc(2) * 2, 2] is
    # kernel[nl.spmd_dim(nl.nc(2), 2), 2] and kernel[2 * nl.nc(2), 2] is kernel[nl.spmd_dim(2, nl.nc(2)), 2]
    major, minor = nl.nc(2) * 2, 2 * nl.nc(2)
    assert isinstance(major, nl.spmd_dim) and isinstance(minor, nl.spmd_dim) and major == minor == 4
    assert [nl.physical_core((major, 2), (i, 0))[0] for i in range(4)] == [0, 0, 1, 1]
    assert [nl.physical_core((minor, 2), (i, 1))[0] for i in range(4)] == [0, 1, 0, 1]
    _slice_per_program[nl.nc(2) * 4](SPMD_X)
    assert last_report()["cores"] == 2


def test_a_grid_over_more_physical_cores_than_a_logical_neuron_core_has_is_refused():
    with pytest.raises(NkiError, match="at most 2"):
        _slice_per_program[nl.nc(4), 2](SPMD_X)


# ---- legacy assignments of instruction results --------------------------------------------------------


def test_assigning_a_fresh_instruction_result_into_a_tile_is_that_instruction_writing_it():
    # `t[:, cols] = nl.exp(x)`: the compiler makes t's slice the activation's output; no VectorE copy after it
    @jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
        for j in nl.affine_range(4):
            t[:, nl.ds(j * 128, 128)] = nl.exp(nl.load(x[:, nl.ds(j * 128, 128)]))
        nl.store(out, value=t)
        return out

    x = X[:128, :]
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-6)
    engines = last_report()["engines"]
    assert engines["scalar"]["instructions"] == 4
    assert engines["vector"]["instructions"] == 0


def test_a_one_column_result_assigned_into_a_tile_is_that_instruction_writing_it():
    # `t[i_p, j] = nisa.tensor_reduce(...)`: one element per partition has no free stride (the partitions' distance,
    # 256 bytes here, is none), so the reduction writes the column itself (public conv1d_depthwise_default: a
    # VectorE copy per output column was charged on top)
    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.zeros((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        i_p = nl.arange(128)[:, None]
        for j in nl.affine_range(4):
            t[i_p, j] = nisa.tensor_reduce(np.add, nl.load(x[:, nl.ds(j * 128, 128)]), axis=[1])
        nl.store(out, value=t)
        return out

    x = X[:128, :]
    expected = np.zeros((128, 64), dtype=np.float32)
    expected[:, :4] = x.reshape(128, 4, 128).sum(axis=2)
    np.testing.assert_allclose(k(x), expected, rtol=1e-5)
    assert last_report()["engines"]["vector"]["instructions"] == 1 + 4  # the memset, the four reductions


def test_a_result_the_kernel_reads_before_assigning_it_is_still_copied():
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)
        e = nl.exp(nl.load(x))
        s = nl.add(e, 1.0)  # e is read by another instruction first
        t[...] = e
        nl.store(out, value=nl.add(t, s))
        return out

    x = X[:128, :128]
    np.testing.assert_allclose(k(x), 2 * np.exp(x) + 1, rtol=1e-5)
    assert last_report()["engines"]["vector"]["instructions"] == 3  # add, copy, add


def test_a_gpsimd_result_assigned_into_psum_is_copied_because_gpsimd_cannot_write_psum():
    @jit
    def k(x):
        out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        i_p, i_f = nl.mgrid[0:128, 0:128]
        acc[...] = nisa.affine_select(i_p >= i_f, nl.load(x), -1.0)
        nl.store(out, value=acc)
        return out

    x = X[:128, :128]
    np.testing.assert_array_equal(k(x), np.where(np.tril(np.ones((128, 128), dtype=bool)), x, -1.0))
    engines = last_report()["engines"]
    assert engines["gpsimd"]["instructions"] == 1 and engines["vector"]["instructions"] >= 1


def test_a_casting_dma_moves_the_bytes_of_its_hbm_side():
    # a bf16 tile stored into an fp32 output writes 4 bytes per element to HBM (the required-work floor
    # counts the output's bytes)
    @jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(x, dtype=nl.bfloat16))
        return out

    k(X[:128, :])
    assert last_report()["dma_bytes"] == 2 * 128 * 512 * 4


def test_a_result_assigned_into_a_strided_destination_keeps_its_copy():
    # the instruction was costed for its contiguous temporary; a write with a free stride over 16 bytes costs
    # more, so the assignment stays a separate (penalised) VectorE copy rather than a free retarget
    @jit
    def k(x):
        out = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 256), dtype=x.dtype, buffer=nl.sbuf)
        t[:, 0:256:8] = nl.exp(nl.load(x[:, 0:32]))
        t[:, 1:256:8] = nl.exp(nl.load(x[:, 32:64]))
        nl.store(out[:, 0:256:8], value=t[:, 0:256:8])
        nl.store(out[:, 1:256:8], value=t[:, 1:256:8])
        return out

    k(X[:128, :256])
    engines = last_report()["engines"]
    assert engines["scalar"]["instructions"] == 2 and engines["vector"]["instructions"] == 2


def test_scalar_tensor_tensor_costs_two_passes_even_with_a_psum_operand():
    # its docs give 2N VectorE cycles (tensor_tensor with one PSUM and one SBUF input is N)
    def vector_busy(use_stt: bool) -> float:
        @jit
        def k(x):
            out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
            a = nl.load(x)
            p = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(p, nl.load(x[:, 0:128]), a)
            r = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
            if use_stt:
                nisa.scalar_tensor_tensor(dst=r, data=p, op0=nl.multiply, operand0=2.0, op1=nl.add, operand1=a)
            else:
                nisa.tensor_tensor(dst=r, data1=p, data2=a, op=nl.add)
            nl.store(out, value=r)
            return out

        k(X[:128, :])
        return last_report()["engines"]["vector"]["busy_us"]

    assert vector_busy(True) == pytest.approx(2 * vector_busy(False), rel=1e-3)


def test_tensor_partition_reduce_is_charged_to_gpsimd_one_pass_over_the_input():
    # its docs name the GpSimd engine; GpSimd streams 1 fp32 element per partition per cycle at 1.4 GHz
    @jit
    def k(x):
        out = nl.ndarray((1, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_partition_reduce(nl.add, nl.load(x)))
        return out

    k(X[:128, :])
    engines = last_report()["engines"]
    assert engines["gpsimd"]["instructions"] == 1
    assert engines["gpsimd"]["busy_us"] == pytest.approx(512 / params.GPSIMD_GHZ / 1000, abs=1e-3)  # 3 decimals
    assert engines["vector"]["instructions"] == 0 and engines["tensor"]["instructions"] == 0


def test_dma_transpose_is_charged_to_the_dma_engines_one_descriptor_per_element():
    # nisa.dma_transpose runs on the DMA engines; a transposed access has no contiguous run beyond one element
    @jit
    def k(x):
        out = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dma_transpose(x))
        return out

    @jit
    def load_t(x):
        out = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load_transpose2d(x))
        return out

    k(X[:128, :64])
    report = last_report()
    assert all(report["engines"][e]["instructions"] == 0 for e in ("tensor", "vector", "scalar", "gpsimd"))
    assert report["dma_descriptors"] == 128 * 64 + 64  # the transpose's elements, then the store's 64 rows
    load_t(X[:128, :64])
    assert last_report()["latency_us"] == report["latency_us"]  # the same DMA as nl.load_transpose2d


def test_an_indirect_dma_waits_for_its_index_tile():
    # the gather's DMA reads the index tile, so it starts only once the index load has landed (1.3 us later);
    # the same kernel with a static index overlaps the two loads
    def run(indirect: bool) -> dict:
        @jit
        def k(data, idx):
            out = nl.ndarray((64, 512), dtype=data.dtype, buffer=nl.shared_hbm)
            i_p = nl.arange(64)[:, None]
            idx_tile = nl.load(idx[i_p])
            rows = idx_tile[i_p, 0] if indirect else i_p
            nl.store(out, value=nl.load(data[rows, nl.arange(512)[None, :]]))
            return out

        k(X[:128, :], np.arange(64, dtype=np.int32))
        return last_report()

    gathered, static = run(True), run(False)
    assert gathered["latency_us"] - static["latency_us"] >= params.DMA_LATENCY_NS / 1000
    assert gathered["engines"]["vector"]["instructions"] == 0  # DMAs only, no engine copies


def test_dropout_is_one_vector_engine_pass():
    # nisa.dropout's docs name the Vector engine; one input tile streamed: N cycles at 1.12 GHz
    @jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.dropout(nl.load(x), rate=0.5))
        return out

    k(X[:128, :])
    engines = last_report()["engines"]
    assert engines["vector"]["instructions"] == 1
    assert engines["vector"]["busy_us"] == pytest.approx(512 / params.VECTOR_GHZ / 1000, abs=1e-3)
    assert engines["gpsimd"]["instructions"] == 0 and engines["scalar"]["instructions"] == 0


def test_range_select_is_one_vector_pass_and_select_reduce_streams_two_tiles():
    # both run on VectorE (their docs); range_select reads one tile (the bounds are per-lane scalars),
    # select_reduce reads the predicate and on_true: 2N cycles from SBUF, as tensor_tensor
    def vector_busy(which: str) -> float:
        @jit
        def k(x):
            out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
            t = nl.load(x)
            pred = nl.ndarray((128, 512), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.memset(dst=pred, value=1, engine=nisa.gpsimd_engine)
            if which == "range":
                r = nisa.range_select(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=0.0,
                                      bound1=100.0)
            else:
                r = nisa.select_reduce(predicate=pred, on_true=t, on_false=0.0)
            nl.store(out, value=r)
            return out

        k(X[:128, :])
        engines = last_report()["engines"]
        assert engines["vector"]["instructions"] == 1
        return engines["vector"]["busy_us"]

    assert vector_busy("range") == pytest.approx(512 / params.VECTOR_GHZ / 1000, abs=1e-3)
    assert vector_busy("select") == pytest.approx(2 * 512 / params.VECTOR_GHZ / 1000, abs=1e-3)


def test_adding_a_psum_tile_a_vector_copy_overwrote_is_a_vector_add():
    # Only a matmul's own write accumulates in PSUM for free. A PSUM tile a matmul once wrote and a VectorE
    # copy overwrote since was added for free: every `acc += t` below cost nothing.
    @jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        zeros_k = nl.zeros((1, 128), nl.float32, buffer=nl.sbuf)
        zeros_n = nl.zeros((1, 512), nl.float32, buffer=nl.sbuf)
        acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        t = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(t, zeros_k, zeros_n)
        for i in range(4):
            nisa.tensor_copy(dst=t, src=nl.load(x[:, i * 512:(i + 1) * 512]))
            acc += t
        nl.store(out, value=nl.copy(acc))
        return out

    x = np.random.default_rng(0).standard_normal((128, 2048)).astype(np.float32)
    np.testing.assert_allclose(k(x), x.reshape(128, 4, 512).sum(axis=1), rtol=1e-5, atol=1e-5)
    vector = last_report()["engines"]["vector"]["instructions"]
    # 3 memsets (acc's too: a zeroed PSUM tile first read by VectorE, not a matmul, pays its memset), 4 copies,
    # 4 adds, the final copy
    assert vector == 3 + 4 + 4 + 1, vector


def test_gpsimd_pays_for_every_input_tile_it_streams():
    from speedpatch.targets.nki.emulator import ops

    one = ops.engine_cost_ns("gpsimd", 4096, streams=1)
    two = ops.engine_cost_ns("gpsimd", 4096, streams=2)
    # 4096 fp32 elements per partition at one a cycle per tile, 1.4 GHz: 2.93 us for one tile, twice for two
    assert one == pytest.approx(4096 / 1.4) and two == pytest.approx(2 * one)
