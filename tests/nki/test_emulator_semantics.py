"""NKI semantics and API coverage of the emulator, each with a hand-computed result (issue #13)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from speedpatch.targets.nki.emulator import PKGS_DIR
from speedpatch.targets.nki.emulator import isa as nisa
from speedpatch.targets.nki.emulator import language as nl
from speedpatch.targets.nki.emulator.errors import NkiError
from speedpatch.targets.nki.emulator.jit import jit, last_report


def _module(name: str) -> object:
    spec = importlib.util.spec_from_file_location(f"emulated_{name}", Path(PKGS_DIR) / "nki" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


# ---- 1-D (P,) tiles -----------------------------------------------------------------------------------


def test_a_reduction_without_keepdims_broadcasts_along_the_free_axis():
    @jit
    def k(x):
        out = nl.ndarray((4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        row_sum = nl.sum(t, axis=1)  # shape (4,): one value per partition
        nl.store(out, value=nl.subtract(t, row_sum))
        return out

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    # row sums 3, 12, 21, 30 subtracted from each row (NumPy would align (4,) with the last axis of 3)
    expected = x - np.array([[3], [12], [21], [30]], dtype=np.float32)
    np.testing.assert_array_equal(k(x), expected)


def test_a_partition_vector_is_copied_into_a_p_by_1_tile():
    @jit
    def k(x):
        out = nl.ndarray((4, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        col = nl.ndarray((4, 1), dtype=x.dtype, buffer=nl.sbuf)
        col[...] = nl.max(nl.load(x), axis=1)  # (4,) into (4, 1)
        nl.store(out, value=col)
        return out

    x = np.array([[1, 5], [7, 2], [-3, -4], [0, 9]], dtype=np.float32)
    np.testing.assert_array_equal(k(x), [[5], [7], [-3], [9]])


def test_an_integer_index_on_a_free_axis_gives_a_partition_vector():
    @jit
    def k(x):
        out = nl.ndarray((3, 2), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out, value=nl.multiply(t, t[:, 1]))  # each row scaled by its own second element
        return out

    x = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    np.testing.assert_array_equal(k(x), [[2, 4], [12, 16], [30, 36]])


# ---- bn_stats with a mask, stores from PSUM ------------------------------------------------------------


def test_bn_stats_counts_only_the_elements_the_mask_selects():
    @jit
    def k(x):
        out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        i_p, i_f = nl.mgrid[0:2, 0:4]
        stats = nisa.bn_stats(t, mask=(i_f < 2))  # only the first two columns
        nl.store(out, value=nisa.bn_aggr(stats))
        return out

    x = np.array([[1, 3, 100, 100], [2, 6, -50, 7]], dtype=np.float32)
    # row 0: mean 2, variance 1; row 1: mean 4, variance 4
    np.testing.assert_allclose(k(x), [[2, 1], [4, 4]])


def test_bn_stats_free_size_limit_is_bn_stats_fmax():
    assert nl.tile_size.bn_stats_fmax == 512

    @jit
    def k(x):
        out = nl.ndarray((1, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.bn_aggr(nisa.bn_stats(nl.load(x))))
        return out

    with pytest.raises(NkiError, match="bn_stats_fmax"):
        k(np.zeros((1, 1024), dtype=np.float32))


def test_nl_store_from_psum_inserts_a_copy_to_sbuf():
    @jit
    def k(a, b):
        out = nl.ndarray((2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.nc_matmul(nl.load(a), nl.load(b)))
        return out

    a = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)  # (K=3, M=2)
    b = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=np.float32)  # (K=3, N=3)
    np.testing.assert_array_equal(k(a, b), a.T @ b)
    assert last_report()["engines"]["vector"]["instructions"] == 1  # the inserted PSUM -> SBUF copy


def test_dma_copy_from_psum_is_still_refused():
    @jit
    def k(x):
        out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((2, 2), nl.float32, buffer=nl.psum)
        nisa.dma_copy(dst=out, src=acc)
        return out

    with pytest.raises(NkiError, match="DMA cannot access PSUM"):
        k(np.zeros((2, 2), dtype=np.float32))


# ---- SPMD grids, non-tensor arguments, bf16 --------------------------------------------------------------


def test_an_spmd_grid_runs_every_program_with_its_ids():
    @jit
    def k(x, scale):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        i, j = nl.program_id(0), nl.program_id(1)
        tile = nl.load(x[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2])
        nl.store(out[i * 2:(i + 1) * 2, j * 2:(j + 1) * 2], value=nl.multiply(tile, scale + i * 10 + j))
        return out

    x = np.ones((4, 4), dtype=np.float32)
    result = k[nl.spmd_dim(nl.nc(1), 2), nl.nc(2)](x, 1.0)
    np.testing.assert_array_equal(result, [[1, 1, 2, 2], [1, 1, 2, 2], [11, 11, 12, 12], [11, 11, 12, 12]])


def test_bf16_inputs_are_bf16_tensors_and_bf16_outputs_come_back_as_bf16():
    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        assert x.dtype is nl.bfloat16
        nl.store(out, value=nl.add(nl.load(x), nl.load(x)))
        return out

    x = np.array([[1.5, 3.015625]], dtype=ml_dtypes.bfloat16)  # 3 + 1/64: the bf16 step above 2
    result = k(x)
    assert result.dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(result.astype(np.float32), [[3.0, 6.03125]])


def test_shared_constant_is_an_hbm_tensor_of_the_given_values():
    @jit
    def k(x):
        out = nl.ndarray((2, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        eye = nl.shared_constant(np.eye(2, dtype=np.float32), dtype=nl.float32)
        nl.store(out, value=nl.add(nl.load(x), nl.load(eye)))
        return out

    np.testing.assert_array_equal(k(np.full((2, 2), 3, dtype=np.float32)), [[4, 3], [3, 4]])


# ---- capacity: scope, reuse, explicit allocation ---------------------------------------------------------


def _loop_kernel(free: int, iterations: int = 8):
    """Per iteration: load a (128, free) tile, square it (VectorE, about as long as the load) and keep
    its row sums: two (128, free) tiles per iteration."""

    @jit
    def k(x):
        out = nl.ndarray((128, iterations), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(iterations):
            t = nl.ndarray((128, free), dtype=nl.float32, buffer=nl.sbuf)
            t[...] = nl.load(x[:, 0:free])
            sq = nisa.tensor_tensor(t, t, op=nl.multiply)
            nl.store(out[:, i:i + 1], value=nl.sum(sq, axis=1, keepdims=True))
        return out

    return k


def test_tiles_allocated_in_a_loop_are_local_to_their_iteration():
    # 2 x 64 KiB per iteration (the tile and exp's result), 8 iterations: 1 MiB in all, far above the
    # 192 KiB of a partition, but only one iteration's tiles are ever in scope
    x = RNG.standard_normal((128, 16384)).astype(np.float32)
    sums = (x.astype(np.float64) ** 2).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_loop_kernel(16384)(x), np.repeat(sums, 8, axis=1), rtol=1e-5)
    assert last_report()["sbuf_peak_kib_per_partition"] <= 192


def test_when_two_iterations_fit_they_overlap_and_when_one_fits_they_wait():
    x = RNG.standard_normal((128, 24576)).astype(np.float32)
    _loop_kernel(8192)(x)  # 2 x 32 KiB per iteration: several iterations in flight
    small = last_report()
    _loop_kernel(24000)(x)  # 2 x 94 KiB per iteration: the next one reuses this one's space
    large = last_report()
    assert small["buffer_reuse_waits"] < large["buffer_reuse_waits"]
    # per byte, the kernel whose load cannot overlap the previous iteration's compute is slower
    assert large["latency_us"] / (24000 / 8192) > small["latency_us"] * 1.3


def test_tiles_in_scope_beyond_sbuf_are_spilled_to_hbm_at_the_cost_of_dma():
    def kernel(second: bool):
        @jit
        def k(x):
            out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            a = nl.ndarray((128, 32768), dtype=nl.float32, buffer=nl.sbuf)  # 128 KiB per partition
            a[:, 0:4] = nl.load(x)
            # another 128 KiB: 256 > 192 KiB in scope, so the compiler spills (a is used again below)
            b = nl.ndarray((128, 32768 if second else 4), dtype=nl.float32, buffer=nl.sbuf)
            b[:, 0:4] = nl.load(x)
            nl.store(out, value=nl.add(a[:, 0:4], b[:, 0:4]))
            return out

        return k

    x = np.ones((128, 4), dtype=np.float32)
    np.testing.assert_array_equal(kernel(second=True)(x), 2 * x)
    spilled = last_report()
    kernel(second=False)(x)
    fits = last_report()
    assert spilled["sbuf_spills"] >= 1 and fits["sbuf_spills"] == 0
    # a 128 KiB-per-partition tile out and back in: 2 x 16 MiB more through the DMA engines
    assert spilled["dma_bytes"] - fits["dma_bytes"] >= 2 * 128 * 128 * 1024
    assert spilled["latency_us"] > fits["latency_us"] + 100


def test_a_blocked_tensor_is_spilled_and_reloaded_block_by_block():
    # two blocked tensors of 8 x 16 KiB per partition each (256 KiB > 192 KiB), used a block pair at a time: the
    # compiler spills the blocks the loop is done with (public conv1d_depthwise_default, N=8: spilling whole
    # tensors moved 4.4 TB through the DMA engines and modeled 16.5 s where trn1 measures 8.0 ms)
    @jit
    def k(x):
        out = nl.ndarray((8, 128, 4096), dtype=x.dtype, buffer=nl.shared_hbm)
        a = nl.ndarray((8, nl.par_dim(128), 4096), dtype=x.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(8):
            a[b] = nl.load(x[b])
        y = nl.ndarray((8, nl.par_dim(128), 4096), dtype=x.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(8):
            y[b] = nl.multiply(a[b], 2.0)
        for b in nl.affine_range(8):
            nl.store(out[b], value=y[b])
        return out

    x = RNG.standard_normal((8, 128, 4096)).astype(np.float32)
    np.testing.assert_array_equal(k(x), 2 * x)
    report = last_report()
    tensor = 8 * 128 * 4096 * 4
    # in and out once, plus blocks out to HBM and back: 6 tensors' worth here (the model spills the least recently
    # used blocks, not the ones the program is done with), where spilling whole tensors moved 37
    assert report["sbuf_spills"] >= 1
    assert report["dma_bytes"] <= 8 * tensor


def test_a_tile_larger_than_sbuf_is_refused():
    @jit
    def k(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        big = nl.ndarray((128, 50000), dtype=nl.float32, buffer=nl.sbuf)  # 195 KiB per partition
        nl.store(out, value=big[:, 0:4])
        return out

    with pytest.raises(NkiError, match=r"SBUF overflow: allocating 'ndarray' \(200000 bytes per partition\)"):
        k(np.zeros((128, 4), dtype=np.float32))


def test_nine_psum_accumulators_in_scope_overflow_the_eight_banks():
    @jit
    def k(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        accs = [nl.zeros((128, 4), nl.float32, buffer=nl.psum) for _ in range(9)]
        nl.store(out, value=nl.copy(accs[0]))
        return out

    with pytest.raises(NkiError, match=r"PSUM overflow.*8 banks of 2 KiB"):
        k(np.zeros((128, 4), dtype=np.float32))


def test_psum_tiles_python_still_names_but_never_uses_again_give_their_banks_to_new_ones():
    # the compiler allocates PSUM by live ranges; a list holding dead tiles is not a use (the public chunked
    # delta-rule kernel keeps eleven PSUM tiles in names across its helper's frames)
    @jit
    def k(x):
        out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        done = []
        for _ in range(12):
            acc = nl.ndarray((128, 4), nl.float32, buffer=nl.psum)
            nisa.nc_matmul(dst=acc, stationary=nl.load(x[:, 0:128]), moving=nl.load(x[:, 128:132]))
            done.append(acc)
        nl.store(out, value=nl.copy(done[-1]))
        return out

    x = np.random.default_rng(0).standard_normal((128, 132)).astype(np.float32)
    np.testing.assert_allclose(k(x), x[:, :128].T @ x[:, 128:132], rtol=1e-4, atol=1e-3)


def test_mod_alloc_holds_only_its_free_tiles_of_a_blocked_tensor():
    compiler = _module("compiler")

    def kernel(buffer):
        @jit
        def k(x):
            out = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.shared_hbm)
            # 8 blocks of 64 KiB = 512 KiB logical; with 2 free tiles, 128 KiB physical
            blocks = nl.ndarray((8, nl.par_dim(128), 16384), dtype=nl.float32, buffer=buffer)
            blocks[0, :, 0:4] = nl.load(x)
            nl.store(out, value=blocks[0, :, 0:4])
            return out

        return k

    x = np.ones((128, 4), dtype=np.float32)
    np.testing.assert_array_equal(kernel(compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))(x), x)
    assert 128 <= last_report()["sbuf_peak_kib_per_partition"] < 129  # (plus the 16-byte loaded tile)
    with pytest.raises(NkiError, match="SBUF overflow"):
        kernel(nl.sbuf)(x)


def _aliased_blocks_kernel(buffer):
    @jit
    def k(x):
        out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
        blocks = nl.ndarray((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=buffer)
        blocks[0] = nl.load(x[:, 0:512])
        first = nl.exp(blocks[0])  # reads block 0
        blocks[2] = nl.load(x[:, 512:1024])  # on the same memory as block 0 with 2 free tiles
        nl.store(out[:, 0:512], value=nl.copy(blocks[0]))
        nl.store(out[:, 512:1024], value=first)
        return out

    return k


def test_mod_alloc_blocks_on_the_same_memory_share_their_data():
    compiler = _module("compiler")
    x = np.random.default_rng(0).standard_normal((128, 1024)).astype(np.float32)
    aliased = _aliased_blocks_kernel(compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))(x)
    # block 0 reads what block 2 (2 % 2 == 0) wrote last
    np.testing.assert_array_equal(aliased[:, 0:512], x[:, 512:1024])
    separate = _aliased_blocks_kernel(compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(4,)))(x)
    np.testing.assert_array_equal(separate[:, 0:512], x[:, 0:512])


def test_a_write_to_a_mod_alloc_block_waits_for_the_reads_of_the_block_on_its_memory():
    compiler = _module("compiler")
    x = np.random.default_rng(0).standard_normal((128, 1024)).astype(np.float32)
    _aliased_blocks_kernel(compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(4,)))(x)
    separate = last_report()["latency_us"]
    _aliased_blocks_kernel(compiler.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))(x)
    # the load into block 2 cannot start before exp has read block 0 (the same memory)
    assert last_report()["latency_us"] > separate


# ---- PSUM elements nothing wrote (per element; tests/security/test_nki_unwritten_psum_attacks.py) -------------


def _partial_psum_kernel(read: str, buffer: object = None):
    """nc_matmul into columns 0:128 of a (128, 512) nl.ndarray PSUM tile, then a copy of the view `read`
    selects (cols: a gather of those columns; blocks 0 and 2 of a blocked tile when buffer is given)."""

    @jit
    def k(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        if buffer is not None:
            blocks = nl.ndarray((4, nl.par_dim(128), 128), dtype=nl.float32, buffer=buffer)
            nisa.nc_matmul(blocks[0], nl.load(a), nl.load(b))
            nl.store(out, value=nl.copy(blocks[2], dtype=nl.float32))
            return out
        acc = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(acc[:, 0:128], nl.load(a), nl.load(b))
        i_p, i_f = nl.mgrid[0:128, 0:512]
        views = {"written": lambda: nl.copy(acc[:, 0:128], dtype=nl.float32),
                 "masked": lambda: nl.copy(acc, dtype=nl.float32, mask=(i_f < 128))[:, 0:128],
                 "cols 0 5 100 (and 127)": lambda: nl.copy(acc[nl.arange(128)[:, None], np.array([[0, 5, 100] + [127] * 125])],
                                                          dtype=nl.float32),
                 "cols 0 5 300 (and 127)": lambda: nl.copy(acc[nl.arange(128)[:, None], np.array([[0, 5, 300] + [127] * 125])],
                                                          dtype=nl.float32)}
        nl.store(out, value=views[read]())
        return out

    return k


def _ab() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.random((128, 128), dtype=np.float32), rng.random((128, 128), dtype=np.float32)


def test_the_part_of_a_psum_tile_a_matmul_wrote_can_be_read_alone():
    a, b = _ab()
    for read in ("written", "masked"):
        np.testing.assert_allclose(_partial_psum_kernel(read)(a, b), a.T @ b, rtol=1e-5)
    np.testing.assert_allclose(_partial_psum_kernel("cols 0 5 100 (and 127)")(a, b)[:, :3], (a.T @ b)[:, [0, 5, 100]],
                               rtol=1e-5)


def test_a_gather_reaching_a_psum_element_nothing_wrote_is_refused():
    # before: column 300 read 0.0
    with pytest.raises(NkiError, match=r"before anything wrote it \(128 of the elements read"):
        _partial_psum_kernel("cols 0 5 300 (and 127)")(*_ab())


def test_a_psum_block_is_written_when_the_block_on_its_memory_is():
    compiler = _module("compiler")
    a, b = _ab()
    shared = compiler.psum.mod_alloc(base_bank=0, num_free_tiles=(2,))  # block 2 is block 0's memory
    np.testing.assert_allclose(_partial_psum_kernel("", shared)(a, b), a.T @ b, rtol=1e-5)
    with pytest.raises(NkiError, match="before anything wrote it"):  # before: block 2 read 0.0
        _partial_psum_kernel("", compiler.psum.mod_alloc(base_bank=0, num_free_tiles=(4,)))(a, b)


# ---- modules of the public API -------------------------------------------------------------------------


def test_typing_annotations_and_compiler_switches_are_accepted():
    typing, compiler = _module("typing"), _module("compiler")
    assert "tensor" in repr(typing.tensor[(128, 512), nl.float32])
    with compiler.no_reorder():
        pass
    assert compiler.skip_middle_end_transformations(len) is len


@pytest.mark.slow
def test_both_package_names_expose_typing_compiler_and_spmd_dims():
    code = (
        "import nki.typing as nt, nki.compiler as ncc, nki.language as nl\n"
        "import neuronxcc.nki.typing as lt, neuronxcc.nki.compiler as lc, neuronxcc.nki.language as ll\n"
        "with lc.no_reorder():\n    pass\n"
        "print(int(ll.spmd_dim(ll.nc(2), 3)), nl.tile_size.bn_stats_fmax, lt.tensor is nt.tensor)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": PKGS_DIR, "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["6", "512", "True"]


RNG = np.random.default_rng(3)


def test_public_apis_the_emulator_lacks_are_refused_by_name_and_reason():
    from speedpatch.targets.nki.emulator.errors import NotEmulated

    with pytest.raises(NotEmulated, match=r"nl\.all_reduce is part of NKI but not of the speedpatch emulator "
                                          r"\(collective communication\)"):
        nl.all_reduce  # noqa: B018
    with pytest.raises(NotEmulated, match=r"nisa\.nc_stream_shuffle"):
        nisa.nc_stream_shuffle  # noqa: B018
    assert not hasattr(nl, "layer_norm")
    with pytest.raises(AttributeError, match="no attribute 'not_an_api'"):
        nl.not_an_api  # noqa: B018


def test_the_public_api_lists_name_only_what_the_emulator_implements():
    for module in (nl, nisa):
        for name in module.PUBLIC_FUNCTIONS:
            assert callable(getattr(module, name)), name
        for name in module.PUBLIC_VALUES:
            getattr(module, name)
    assert {"exp", "sum", "spmd_dim", "shared_constant"} <= nl.PUBLIC_FUNCTIONS
    assert "all_reduce" not in nl.PUBLIC_FUNCTIONS


def test_the_partition_axis_of_a_5d_block_view_is_tracked_through_indexing():
    @jit
    def k(x):
        out = nl.ndarray((2, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        blocks = nl.ndarray((2, 3, nl.par_dim(4), 2, 8), dtype=nl.float32, buffer=nl.sbuf)
        i_p, i_f = nl.mgrid[0:4, 0:8]
        for b in nl.affine_range(2):
            blocks[b, 1, i_p, 0, i_f] = nl.load(x[b])
        # keep the leading block axis: a (2, 4, 8) view whose partition axis is axis 1, not 0
        view = blocks[:, 1, :, 0, :]
        assert view.shape == (2, 4, 8) and view.par_axis == 1 and view.partitions == 4
        # a reduction along the free axis (2) of each block is allowed; along axis 1 (partitions) it is not
        nl.store(out[:, :, 0:1], value=nl.sum(view, axis=2, keepdims=True))
        with pytest.raises(NkiError, match="partition axis"):
            nl.sum(view, axis=1)
        return out

    x = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    np.testing.assert_array_equal(k(x)[:, :, 0], x.sum(axis=2))


def test_broadcast_to_repeats_a_partition_vector_along_the_free_axis():
    @jit
    def k(x):
        out = nl.ndarray((3, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        total = nisa.tensor_reduce(np.add, data=nl.load(x), axis=(1,))  # (3,): one value per partition
        nl.store(out, value=nl.copy((1.0 / total).broadcast_to((3, 4))))
        return out

    x = np.array([[1, 1], [2, 2], [4, 4]], dtype=np.float32)
    np.testing.assert_array_equal(k(x), np.repeat([[0.5], [0.25], [0.125]], 4, axis=1))
    assert last_report()["engines"]["tensor"]["instructions"] == 0  # no partition broadcast needed


def test_num_programs_counts_an_axis_a_set_of_axes_or_the_whole_grid():
    seen = []

    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        seen.append((nl.num_programs(0), nl.num_programs(1), nl.num_programs((0, 1)), nl.num_programs(),
                     nl.program_ndim()))
        nl.store(out, value=nl.load(x))
        return out

    k[2, 3](np.ones((2, 2), dtype=np.float32))
    assert set(seen) == {(2, 3, 6, 6, 2)} and len(seen) == 6


# ---- index arrays with more axes than the tile ---------------------------------------------------------


def test_a_gather_view_with_more_axes_than_its_tile_keeps_partitions_on_axis_0():
    # Pooling by index arithmetic: a (4, 4, 6) tile seen as (4, 2, 2, 3, 2) windows. The free-axis index
    # pool*i_1 + i_2 is not a single progression, so the view is a gather; its partitions are still axis 0
    # (the reduction over axes 2 and 4 is along free axes, not across partitions).
    @jit
    def k(x):
        out = nl.ndarray((4, 2, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        i0 = nl.arange(4)[:, None, None, None, None]
        i1 = nl.arange(2)[None, :, None, None, None]
        i2 = nl.arange(2)[None, None, :, None, None]
        i3 = nl.arange(3)[None, None, None, :, None]
        i4 = nl.arange(2)[None, None, None, None, :]
        nl.store(out, value=nl.sum(t[i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4]))
        return out

    x = np.arange(96, dtype=np.float32).reshape(4, 4, 6)
    np.testing.assert_array_equal(k(x), x.reshape(4, 2, 2, 3, 2).sum(axis=(2, 4)))


# ---- access patterns (tensor.ap) ------------------------------------------------------------------------


def test_an_access_pattern_reads_the_flattened_tensor_as_nested_step_num_loops():
    # (4, 8) SBUF tensor; [[8, 4], [1, 4]] from offset 4 is t[0:4, 4:8] (the docs' "concrete example")
    @jit
    def k(x):
        out = nl.ndarray((4, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.dma_copy(dst=out, src=t.ap([[8, 4], [1, 4]], offset=4))
        return out

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(k(x), x[:, 4:8])


def test_an_access_pattern_can_regroup_the_free_axis_into_pool_windows():
    # a (2, 4, 4) tile as (2, 2, 2, 2, 2) windows; summing the window axes pools 2x2
    @jit
    def k(x):
        out = nl.ndarray((2, 2, 2), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((2, 4, 4), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        s = nl.sum(t.ap([[16, 2], [8, 2], [2, 2], [4, 2], [1, 2]]), axis=[3, 4])
        nl.store(out, value=s)
        return out

    x = np.arange(32, dtype=np.float32).reshape(2, 4, 4)
    np.testing.assert_array_equal(k(x), x.reshape(2, 2, 2, 2, 2).sum(axis=(2, 4)))


def test_an_access_pattern_that_skips_partitions_is_refused():
    @jit
    def k(x):
        t = nl.ndarray((16, 32), dtype=x.dtype, buffer=nl.sbuf)
        t.ap([[64, 8], [1, 32]])  # every other partition: the docs' illegal example
        return x

    with pytest.raises(NkiError, match="step must be the free size 32"):
        k(np.zeros((16, 32), dtype=np.float32))


def test_an_access_pattern_past_the_end_of_the_tensor_is_refused():
    @jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
        t.ap([[8, 4], [1, 8]], offset=1)
        return x

    with pytest.raises(NkiError, match="out of bounds"):
        k(np.zeros((4, 8), dtype=np.float32))


def test_an_access_pattern_on_an_indexed_tile_is_refused():
    @jit
    def k(x):
        t = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
        t[0:4, 0:4].ap([[8, 4], [1, 4]])
        return x

    with pytest.raises(NkiError, match="already indexed"):
        k(np.zeros((4, 8), dtype=np.float32))


# ---- NkiTensor view methods ----------------------------------------------------------------------------


def _through_view(x: np.ndarray, view_fn: object, out_shape: tuple[int, ...]) -> np.ndarray:
    """x DMA'd into SBUF, view_fn(tile) copied by VectorE into a fresh tile, DMA'd out."""

    @jit
    def k(x):
        out = nl.ndarray(out_shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        r = nl.ndarray(out_shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=view_fn(t))  # type: ignore[operator]
        nisa.dma_copy(dst=out, src=r)
        return out

    return k(x)


X = np.arange(48, dtype=np.float32).reshape(4, 12)


def test_slice_views_start_end_step_along_a_dimension():
    np.testing.assert_array_equal(_through_view(X, lambda t: t.slice(1, 2, 11, 3), (4, 3)), X[:, 2:11:3])


def test_reshape_dim_splits_a_dimension_row_major_with_one_inferred_size():
    got = _through_view(X, lambda t: t.reshape_dim(1, (3, -1)), (4, 3, 4))
    np.testing.assert_array_equal(got, X.reshape(4, 3, 4))


def test_permute_reorders_the_free_dimensions():
    got = _through_view(X, lambda t: t.reshape_dim(1, (3, 4)).permute((0, 2, 1)), (4, 4, 3))
    np.testing.assert_array_equal(got, X.reshape(4, 3, 4).transpose(0, 2, 1))


def test_select_drops_a_dimension_at_one_index():
    got = _through_view(X, lambda t: t.reshape_dim(1, (3, 4)).select(1, 2), (4, 4))
    np.testing.assert_array_equal(got, X.reshape(4, 3, 4)[:, 2, :])


def test_expand_broadcast_and_squeeze_dim_move_no_data():
    got = _through_view(X, lambda t: t.slice(1, 5, 6).expand_dim(2).squeeze_dim(1).broadcast(1, 3), (4, 3))
    np.testing.assert_array_equal(got, np.repeat(X[:, 5:6], 3, axis=1))


def test_a_view_that_moves_the_partition_dimension_of_an_sbuf_tensor_is_refused():
    with pytest.raises(NkiError, match="partition dimension of an on-chip tensor must stay at position 0"):
        _through_view(X, lambda t: t.permute((1, 0)), (12, 4))


def test_nki_tensor_methods_not_emulated_are_named_with_what_is_offered():
    with pytest.raises(NkiError, match=r"NkiTensor.flatten_dims is part of NKI but not of the speedpatch emulator.*"
                                       r"reshape_dim"):
        _through_view(X, lambda t: t.flatten_dims(0, 1), (4, 12))


# ---- flash-attention constructs: affine_select, fp32 constants, column vectors, jit helpers -------------


def test_affine_select_legacy_form_keeps_the_tile_where_the_index_predicate_holds():
    @jit
    def k(x):
        out = nl.ndarray((4, 6), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p, i_f = nl.mgrid[0:4, 0:6]
        nl.store(out, value=nisa.affine_select(pred=(2 + i_p >= i_f), on_true_tile=nl.load(x),
                                               on_false_value=nl.fp32.min))
        return out

    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    keep = np.arange(4)[:, None] + 2 >= np.arange(6)[None, :]
    np.testing.assert_array_equal(k(x), np.where(keep, x, np.finfo(np.float32).min))


def test_affine_select_current_form_compares_offset_channel_and_pattern_terms_with_zero():
    # value = offset + p * channel_multiplier + f * step; keep where value >= 0 (p - f >= 0: lower triangle)
    @jit
    def k(x):
        out = nl.ndarray((4, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        res = nl.ndarray((4, 4), dtype=x.dtype, buffer=nl.sbuf)
        nisa.affine_select(dst=res, pattern=[[-1, 4]], offset=0, channel_multiplier=1, on_true_tile=nl.load(x),
                           on_false_value=0.0, cmp_op=nl.greater_equal)
        nl.store(out, value=res)
        return out

    x = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(k(x), np.tril(x))


def test_nl_fp32_min_is_the_most_negative_finite_fp32():
    assert nl.fp32.min == float(np.finfo(np.float32).min)


def test_the_modeled_neuron_core_is_gen2_and_generations_are_ordered():
    assert nisa.get_nc_version() == nisa.nc_version.gen2
    assert nisa.get_nc_version() < nisa.nc_version.gen3


def test_a_column_of_a_tile_can_be_indexed_again_as_a_p_by_1_tile():
    # t[:, j] is a per-partition vector; NKI kernels index it again as v[:, 0] (a (P, 1) tile)
    @jit
    def k(x):
        out = nl.ndarray((4, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        col = t[:, 2]
        nl.store(out, value=nl.add(col[:, 0], 1.0))
        return out

    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(k(x), x[:, 2:3] + 1.0)


def test_a_jit_helper_called_inside_a_kernel_runs_in_the_callers_trace():
    @jit
    def helper(t, out_tile):
        out_tile[...] = nl.exp(t)

    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        res = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        helper(nl.load(x), res)
        nl.store(out, value=res)
        return out

    x = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_allclose(k(x), np.exp(x), rtol=1e-6)
    report = last_report()
    assert report["engines"]["scalar"]["instructions"] == 1 and report["engines"]["dma"]["instructions"] == 2


def test_finfo_and_iinfo_give_the_device_dtype_limits():
    assert nl.finfo(nl.bfloat16).min == float(ml_dtypes.finfo(ml_dtypes.bfloat16).min)
    assert nl.finfo(nl.float32).max == float(np.finfo(np.float32).max)
    assert nl.iinfo(nl.uint8).max == 255 and nl.iinfo(nl.int16).min == -32768
    with pytest.raises(NkiError, match="not a float type"):
        nl.finfo(nl.int32)


def test_finfo_of_tfloat32_has_its_10_mantissa_bits():
    # tf32 values are rounded to 10 mantissa bits: its eps is 2^-10, not fp32's 2^-23
    info = nl.finfo(nl.tfloat32)
    assert info.eps == 2.0 ** -10 and info.max == (2.0 - 2.0 ** -10) * 2.0 ** 127 and info.min == -info.max
    assert info.tiny == float(np.finfo(np.float32).tiny)


def test_loop_reduce_accumulates_into_the_assignment_target_across_the_loop():
    # dst[...] = nl.loop_reduce(x, op, loop_indices=[k]) is dst = op(dst, x) (nki.language.loop_reduce docs)
    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        best = nl.full((128, 64), -1e30, dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            t = nl.load(x[i])
            acc[...] = nl.loop_reduce(t, op=np.add, loop_indices=[i])
            best[...] = nl.loop_reduce(t, op=nl.maximum, loop_indices=[i])
        nl.store(out, value=nl.add(acc, best))
        return out

    x = np.random.default_rng(3).standard_normal((4, 128, 64)).astype(np.float32)
    np.testing.assert_allclose(k(x), x.sum(axis=0) + x.max(axis=0), rtol=1e-5, atol=1e-5)
    # two fills (zeros, full), one VectorE instruction per reduction step, the final add
    assert last_report()["engines"]["vector"]["instructions"] == 2 + 4 * 2 + 1


def test_mod_and_fmod_follow_the_divisor_and_the_dividend_sign():
    @jit
    def k(x):
        out = nl.ndarray((2, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        nl.store(out[0:1, :], value=nl.mod(t, 3.0))
        nl.store(out[1:2, :], value=nl.fmod(t, 3.0))
        return out

    x = np.array([[-7.0, -1.0, 4.0, 8.0]], dtype=np.float32)
    np.testing.assert_array_equal(k(x), [[2.0, 2.0, 1.0, 2.0], [-1.0, -1.0, 1.0, 2.0]])


def test_empty_like_allocates_a_tensor_of_the_same_shape_dtype_and_buffer():
    t = nl.empty_like(nl.ndarray((128, 32), dtype=nl.bfloat16, buffer=nl.sbuf))
    assert t.shape == (128, 32) and t.dtype == nl.bfloat16 and t.buffer is nl.sbuf


def test_dma_copy_accepts_the_descriptor_generation_and_out_of_bounds_modes():
    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x, dge_mode=nisa.dge_mode.hwdge, oob_mode=nisa.oob_mode.error)
        nisa.dma_copy(dst=out, src=t, dge_mode=nisa.dge_mode.swdge)
        return out

    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.testing.assert_array_equal(k(x), x)


def test_scalar_tensor_tensor_applies_a_scalar_op_then_a_tile_op_with_optional_reversal():
    @jit
    def k(x, y):
        out = nl.ndarray((2, 128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        a, b = nl.load(x), nl.load(y)
        col = nl.load(x[:, 0:1])
        r0 = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
        nisa.scalar_tensor_tensor(dst=r0, data=a, op0=nl.subtract, operand0=col, op1=nl.multiply, operand1=b)
        r1 = nisa.scalar_tensor_tensor(data=a, op0=nl.subtract, operand0=2.0, reverse0=True, op1=nl.subtract,
                                       operand1=b, reverse1=True)
        nl.store(out[0], value=r0)
        nl.store(out[1], value=r1)
        return out

    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((128, 8)).astype(np.float32), rng.standard_normal((128, 8)).astype(np.float32)
    got = k(x, y)
    np.testing.assert_allclose(got[0], (x - x[:, 0:1]) * y, rtol=1e-6)
    np.testing.assert_allclose(got[1], y - (2.0 - x), rtol=1e-6)


def test_scalar_tensor_tensor_refuses_data_and_operand1_both_in_psum():
    @jit
    def k(x):
        a = nl.load(x)
        p = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.psum)
        q = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.psum)
        nisa.scalar_tensor_tensor(dst=a, data=p, op0=nl.add, operand0=1.0, op1=nl.add, operand1=q)
        return x

    with pytest.raises(NkiError, match="cannot both be in PSUM"):
        k(np.zeros((128, 8), dtype=np.float32))


def test_max8_and_find_index8_give_the_top_eight_values_and_their_first_positions():
    @jit
    def k(x):
        out = nl.ndarray((2, 128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(x)
        top = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(dst=top, src=t)
        idx = nisa.nc_find_index8(data=t, vals=top)  # legacy form: returns uint32 indices
        nl.store(out[0], value=top)
        nl.store(out[1], value=nl.copy(idx, dtype=nl.float32))
        return out

    x = np.random.default_rng(7).permutation(128 * 40).astype(np.float32).reshape(128, 40)
    got = k(x)
    order = np.argsort(-x, axis=1)[:, :8]
    np.testing.assert_array_equal(got[0], np.take_along_axis(x, order, axis=1))
    np.testing.assert_array_equal(got[1], order)


def test_find_index8_refuses_a_value_absent_from_the_data():
    @jit
    def k(x):
        t = nl.load(x)
        vals = nl.full((128, 8), -5.0, dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_find_index8(data=t, vals=vals)
        return x

    with pytest.raises(NkiError, match="does not occur in data"):
        k(np.zeros((128, 16), dtype=np.float32))


# ---- nl.mgrid: dense grids (nki.language.mgrid) -----------------------------------------------------------


def test_mgrid_axes_have_the_dense_grid_shape():
    grid = nl.mgrid[0:4, 0:3, 0:2]
    assert all(nl.dense_shape(axis) == (4, 3, 2) for axis in grid)
    assert nl.dense_shape(3 * grid.x + grid.y) == (4, 3, 2)
    assert nl.dense_shape(nl.arange(4)[:, None]) is None  # nl.arange is an open axis, as before


def test_an_iota_of_free_grid_axes_fills_every_partition_of_the_grid():
    @jit
    def k(x):
        out = nl.ndarray((128, 4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
        g = nl.mgrid[0:128, 0:4, 0:3]
        idx = nisa.iota(3 * g.x + g.y, dtype=nl.float32)  # the vision select-and-scatter kernel's form
        nl.store(out, value=nl.add(nl.load(x), idx))
        return out

    x = np.random.default_rng(3).standard_normal((128, 4, 3)).astype(np.float32)
    window = np.arange(12, dtype=np.float32).reshape(1, 4, 3)  # 3 * y + z, the same in every partition
    np.testing.assert_array_equal(k(x), x + window)


def test_axes_of_differently_shaped_grids_index_together():
    # the legacy matmul tutorial: ip from mgrid[0:P, 0:P] with ib from mgrid[0:P, 0:F] in one index
    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        ip, _ = nl.mgrid[0:128, 0:128]
        _, ib = nl.mgrid[0:128, 0:64]
        t = nl.load(x[ip, 64 + ib])
        nl.store(out[ip, ib], value=t)
        return out

    x = np.random.default_rng(4).standard_normal((128, 128)).astype(np.float32)
    np.testing.assert_array_equal(k(x), x[:, 64:])
    assert last_report()["dma_descriptors"] <= 2 * 128  # strided boxes, not a gather of 8192 elements


def test_a_grid_index_gives_a_tile_of_the_iterators_it_names_in_their_order():
    # a 3-D grid indexing a 2-D tensor: the unused grid axis is no tile axis, and the tile's axes follow the
    # index's order (the layernorm tutorials' gamma[i_p_param, i_f] is (1, N), not NumPy's (1, N, 1))
    @jit
    def k(v):
        out = nl.ndarray((128, 64), dtype=v.dtype, buffer=nl.shared_hbm)
        i_p, i_f, i_one = nl.mgrid[0:128, 0:64, 0:1]
        row = nl.load(v.reshape((1, 64))[i_one, i_f])
        assert row.shape == (1, 64)
        nl.store(out[i_p, i_f], value=row.broadcast_to((128, 64)))
        return out

    v = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(k(v), np.broadcast_to(v, (128, 64)))



def test_a_grid_index_naming_its_axes_out_of_order_keeps_numpy_s_transposed_elements():
    # the SD-attention tutorial's store: a (d, q) tile through out[i * 128 + if_out, ip_out] with ip_out,
    # if_out = nl.mgrid[0:d, 0:q] writes out[q, d] = tile[d, q] (the iterators keep their grid order)
    @jit
    def k(x):
        out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        ip, i_f = nl.mgrid[0:64, 0:128]
        nl.store(out[i_f, ip], value=nl.load(x))
        return out

    x = np.random.default_rng(7).standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_array_equal(k(x), x.T)

def test_a_reduction_over_a_3d_grid_tile_reduces_the_named_free_axis():
    # ix, iw, iy = nl.mgrid[0:128, 0:1, 0:N] (the rmsnorm tutorial): x[ix, iy] is (128, N), so axis 1 is the
    # row; ragged rows masked by a partition predicate of the same grid
    @jit
    def k(x):
        out = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.shared_hbm)
        ix, iw, iy = nl.mgrid[0:128, 0:1, 0:x.shape[1]]
        for i in nl.affine_range(2):
            t = nl.load(x[i * 128 + ix, iy], mask=(i * 128 + ix < x.shape[0]))
            s = nl.sum(t, axis=[1], keepdims=True)
            nl.store(out[i * 128 + ix, iw], value=s, mask=(i * 128 + ix < x.shape[0]))
        return out

    x = np.random.default_rng(5).standard_normal((200, 96)).astype(np.float32)
    np.testing.assert_allclose(k(x), x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_a_grid_mask_applies_to_the_tile_axis_of_its_iterator():
    # a free-axis predicate of a 2-D grid on a tile indexed with a 3-D grid's partition axis and that 2-D
    # grid's axis (the layernorm v2 tutorial's bn_stats chunks): it selects columns, not partitions
    @jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        i_p, _, _ = nl.mgrid[0:128, 0:8, 0:1]
        i_f, _ = nl.mgrid[0:8, 0:6]
        t = nl.load(x)
        stats = nisa.bn_stats(t[i_p, i_f], mask=(i_f < 5), dtype=nl.float32)
        mean_var = nisa.bn_aggr(stats)
        nl.store(out, value=mean_var[:, 0:1])
        return out

    x = np.random.default_rng(6).standard_normal((128, 8)).astype(np.float32)
    np.testing.assert_allclose(k(x), x[:, :5].mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)

# ---- nisa.tensor_partition_reduce (GpSimd) ---------------------------------------------------------------


def test_tensor_partition_reduce_adds_across_partitions_in_the_legacy_form():
    @jit
    def k(x):
        out = nl.ndarray((1, 32, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        b = nisa.tensor_partition_reduce(np.add, nl.load(x))  # the docs' example 1: (128, 32, 4) -> (1, 32, 4)
        nl.store(out, value=b)
        return out

    x = np.random.default_rng(5).standard_normal((128, 32, 4)).astype(np.float32)
    np.testing.assert_allclose(k(x), x.sum(axis=0, keepdims=True), rtol=1e-5, atol=1e-5)


def test_tensor_partition_reduce_takes_the_maximum_into_a_destination_and_the_mean():
    @jit
    def k(x):
        out = nl.ndarray((2, 1, 64), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        top = nl.ndarray((1, 64), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_partition_reduce(top, nl.maximum, t)
        nl.store(out[0], value=top)
        nl.store(out[1], value=nisa.tensor_partition_reduce(nl.mean, t))
        return out

    x = np.random.default_rng(6).standard_normal((96, 64)).astype(np.float32)
    got = k(x)
    np.testing.assert_array_equal(got[0, 0], x.max(axis=0))
    np.testing.assert_allclose(got[1, 0], x.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_tensor_partition_reduce_of_a_block_tile_reduces_its_partition_axis():
    @jit
    def k(x):
        out = nl.ndarray((2, 1, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        blocks = nl.ndarray((2, nl.par_dim(16), 8), dtype=x.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(2):
            blocks[b] = nl.load(x[b])
        nl.store(out, value=nisa.tensor_partition_reduce(nl.add, blocks))  # (b, p, f) -> (b, 1, f)
        return out

    x = np.random.default_rng(8).standard_normal((2, 16, 8)).astype(np.float32)
    np.testing.assert_allclose(k(x), x.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_tensor_partition_reduce_ors_integer_bit_patterns():
    @jit
    def k(x):
        out = nl.ndarray((1, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.tensor_partition_reduce(np.bitwise_or, nl.load(x)))
        return out

    x = (1 << np.random.default_rng(9).integers(0, 20, size=(128, 16))).astype(np.int32)  # one bit each
    x[:, 3] = 0
    np.testing.assert_array_equal(k(x), np.bitwise_or.reduce(x, axis=0, keepdims=True))


@pytest.mark.parametrize(("op", "where", "message"), [
    (nl.subtract, "sbuf", "not one of its reduction operators"),
    (np.bitwise_and, "sbuf", "needs integer data"),
    (nl.add, "psum", "reads and writes SBUF only"),
])
def test_tensor_partition_reduce_refuses_other_ops_float_bitwise_and_psum(op, where, message):
    @jit
    def k(x):
        t = nl.load(x)
        if where == "psum":
            p = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.psum)
            nisa.tensor_copy(dst=p, src=t)
            t = p
        nisa.tensor_partition_reduce(op, t)
        return x

    with pytest.raises(NkiError, match=message):
        k(np.zeros((128, 16), dtype=np.float32))


# ---- nisa.dma_transpose --------------------------------------------------------------------------------


def test_dma_transpose_of_a_2d_hbm_tile_in_the_legacy_form():
    @jit
    def k(x):
        out = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nisa.dma_transpose(x))  # (128, 64) in HBM -> (64, 128) in SBUF
        return out

    x = np.random.default_rng(10).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(k(x), x.T)


def test_dma_transpose_permutes_3d_and_4d_tiles_as_documented():
    @jit
    def k3(x):
        out = nl.ndarray((4, 8, 16), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((4, 8, 16), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=nl.load(x), axes=(2, 1, 0))  # SBUF -> SBUF
        nl.store(out, value=t)
        return out

    @jit
    def k4(x):
        out = nl.ndarray((5, 3, 4, 2), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((5, 3, 4, 2), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(t, x)
        nl.store(out, value=t)
        return out

    rng = np.random.default_rng(11)
    x3 = rng.standard_normal((16, 8, 4)).astype(np.float32)
    np.testing.assert_array_equal(k3(x3), np.transpose(x3, (2, 1, 0)))
    x4 = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(k4(x4), np.transpose(x4, (3, 1, 2, 0)))


@pytest.mark.parametrize(("call", "message"), [
    ("axes", r"axes \(0, 2, 1\) are not supported"),
    ("shape", r"dst shape \(64, 64\) != \(64, 128\)"),
    ("psum", "it must be in HBM or SBUF"),
    ("hwdge", "dge_mode=hwdge. needs src.shape"),
    ("indices", "indirect gather transpose"),
])
def test_dma_transpose_refuses_other_axes_shapes_psum_sources_and_hwdge_misfits(call, message):
    @jit
    def k(x):
        if call == "axes":
            nisa.dma_transpose(x.reshape((128, 8, 8)), axes=(0, 2, 1))
        elif call == "shape":
            nisa.dma_transpose(dst=nl.ndarray((64, 64), dtype=x.dtype, buffer=nl.sbuf), src=x)
        elif call == "psum":
            p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
            nisa.tensor_copy(dst=p, src=nl.load(x))
            nisa.dma_transpose(p)
        elif call == "hwdge":
            nisa.dma_transpose(dst=nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.sbuf), src=x,
                               dge_mode=nisa.dge_mode.hwdge)
        else:
            nisa.dma_transpose(dst=nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.sbuf), src=x, indices=x)
        return x

    with pytest.raises(NkiError, match=message):
        k(np.zeros((128, 64), dtype=np.float32))


# ---- indirect DMA: HBM tensors indexed with SBUF index tiles (legacy nl.load / nl.store docs) ----------------


def _gather_rows(data, idx):
    out = nl.ndarray((64, 512), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(64)[:, None]
    i_f = nl.arange(512)[None, :]
    idx_tile = nl.load(idx[i_p])  # indices have to be in SBUF
    nl.store(out, value=nl.load(data[idx_tile[i_p, 0], i_f]))
    return out


def test_an_indirect_load_gathers_the_rows_an_index_tile_names():
    rng = np.random.default_rng(12)
    data = rng.standard_normal((128, 512)).astype(np.float32)
    idx = rng.integers(0, 128, size=64).astype(np.int32)  # repeats and any order
    np.testing.assert_array_equal(jit(_gather_rows)(data, idx), data[idx])


def test_an_indirect_load_with_an_iota_index_tile():
    @jit
    def k(data):
        out = nl.ndarray((64, 512), dtype=data.dtype, buffer=nl.shared_hbm)
        idx_tile = nisa.iota(2 * nl.arange(64)[:, None], dtype=nl.int32)
        nl.store(out, value=nl.load(data[idx_tile, nl.arange(512)[None, :]]))
        return out

    data = np.random.default_rng(13).standard_normal((128, 512)).astype(np.float32)
    np.testing.assert_array_equal(k(data), data[0::2])


def test_an_indirect_store_scatters_rows_to_the_indexed_positions():
    @jit
    def k(data, idx):
        out = nl.ndarray((128, 512), dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(64)[:, None]
        i_f = nl.arange(512)[None, :]
        idx_tile = nl.load(idx[i_p])
        nl.store(out[idx_tile[i_p, 0], i_f], value=nl.load(data[i_p, i_f]))
        return out

    rng = np.random.default_rng(14)
    data = rng.standard_normal((64, 512)).astype(np.float32)
    idx = rng.permutation(128)[:64].astype(np.int32)
    np.testing.assert_array_equal(k(data, idx)[idx], data)


def test_an_out_of_bounds_index_fails_the_dma_without_showing_the_value_or_is_skipped_with_oob_skip():
    @jit
    def k(data, idx, skip):
        out = nl.ndarray((4, 8), dtype=data.dtype, buffer=nl.shared_hbm)
        i_p = nl.arange(4)[:, None]
        i_f = nl.arange(8)[None, :]
        t = nl.full((4, 8), -1.0, dtype=data.dtype, buffer=nl.sbuf)
        idx_tile = nl.load(idx[i_p])
        mode = nisa.oob_mode.skip if skip else nisa.oob_mode.error
        nisa.dma_copy(dst=t, src=data[idx_tile[i_p, 0], i_f], oob_mode=mode)
        nl.store(out, value=t)
        return out

    data = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    idx = np.array([3, 977, 0, 15], dtype=np.int32)
    with pytest.raises(NkiError, match="holds a value outside the tensor") as info:
        k(data, idx, False)
    assert "977" not in str(info.value)  # the index is data: never in a message a kernel can read
    got = k(data, idx, True)
    np.testing.assert_array_equal(got[[0, 2, 3]], data[[3, 0, 15]])
    np.testing.assert_array_equal(got[1], -1.0)  # the skipped row is left as it was


@pytest.mark.parametrize(("case", "message"), [
    ("float", "indices must be integers"),
    ("on_chip", "only possible on an HBM tensor"),
])
def test_indirect_indexing_refuses_float_index_tiles_and_on_chip_data(case, message):
    @jit
    def k(data):
        i_p = nl.arange(8)[:, None]
        if case == "float":
            idx_tile = nisa.iota(i_p, dtype=nl.float32)
            nl.load(data[idx_tile, nl.arange(8)[None, :]])
        else:
            idx_tile = nisa.iota(i_p, dtype=nl.int32)
            t = nl.load(data)
            nl.copy(t[idx_tile, nl.arange(8)[None, :]])
        return data

    with pytest.raises(NkiError, match=message):
        k(np.zeros((8, 8), dtype=np.float32))


def test_tensor_indirection_is_refused_as_a_trainium3_feature():
    @jit
    def k(data):
        nl.load(data).indirect(0)
        return data

    with pytest.raises(NkiError, match=r"NeuronCore-v4\+ \(Trainium3\) only"):
        k(np.zeros((8, 8), dtype=np.float32))


# ---- dropout (nl.dropout / nisa.dropout, VectorE) -------------------------------------------------------


def _dropout_kernel(prob_kind):
    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        if prob_kind == "tile":  # per-partition probabilities: even partitions keep all, odd ones drop all
            prob = nisa.iota(nl.arange(128)[:, None] % 2, dtype=nl.float32)
            nl.store(out, value=nisa.dropout(t, prob))
        else:
            nl.store(out, value=nl.dropout(t, rate=prob_kind))
        return out

    return k


def test_dropout_with_probability_zero_keeps_everything_and_one_drops_everything():
    x = np.random.default_rng(15).standard_normal((128, 64)).astype(np.float32) + 10.0
    np.testing.assert_array_equal(_dropout_kernel(0.0)(x), x)
    np.testing.assert_array_equal(_dropout_kernel(1.0)(x), np.zeros_like(x))


def test_dropout_zeroes_about_the_given_fraction_keeps_the_rest_unscaled_and_is_deterministic():
    x = np.random.default_rng(16).standard_normal((128, 512)).astype(np.float32) + 10.0  # no zeros of its own
    got = _dropout_kernel(0.25)(x)
    dropped = got == 0
    assert 0.23 < dropped.mean() < 0.27  # 65,536 draws: the fraction is within 2 points of 0.25
    np.testing.assert_array_equal(got[~dropped], x[~dropped])  # kept elements are not rescaled
    np.testing.assert_array_equal(_dropout_kernel(0.25)(x), got)  # the same launch drops the same elements


def test_dropout_takes_a_per_partition_probability_tile():
    x = np.random.default_rng(17).standard_normal((128, 32)).astype(np.float32)
    got = _dropout_kernel("tile")(x)
    np.testing.assert_array_equal(got[0::2], x[0::2])
    np.testing.assert_array_equal(got[1::2], 0.0)


@pytest.mark.parametrize(("prob", "message"), [(1.5, r"outside \[0, 1\]"), ("wide", "per-partition")])
def test_dropout_refuses_probabilities_outside_0_1_and_wide_prob_tiles(prob, message):
    @jit
    def k(x):
        t = nl.load(x)
        nisa.dropout(t, t if prob == "wide" else prob)
        return x

    with pytest.raises(NkiError, match=message):
        k(np.zeros((128, 8), dtype=np.float32))


# ---- nisa.range_select / nisa.select_reduce (VectorE, with reduction registers) ----------------------------


def test_range_select_keeps_a_causal_band_and_reduces_each_row_to_its_max():
    @jit
    def k(x):
        out = nl.ndarray((128, 65), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        row = nisa.iota(nl.arange(128)[:, None], dtype=nl.float32)  # the partition's own row index
        sel = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
        top = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=sel, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less_equal, bound0=0.0,
                          bound1=row, range_start=32.0, on_false_value=-1e9, reduce_res=top,
                          reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_op=nl.maximum)
        nl.store(out[:, 0:64], value=sel)
        nl.store(out[:, 64:65], value=top)
        return out

    x = np.random.default_rng(18).standard_normal((128, 64)).astype(np.float32)
    j = np.arange(64)[None, :] + 32  # free index + range_start
    keep = j <= np.arange(128)[:, None]
    expected = np.where(keep, x, np.float32(-1e9))
    got = k(x)
    np.testing.assert_array_equal(got[:, :64], expected)
    np.testing.assert_array_equal(got[:, 64], expected.max(axis=1))


def test_reduce_cmd_reduce_carries_the_registers_from_one_instruction_to_the_next():
    @jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
        top = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        for half in nl.sequential_range(2):
            t = nl.load(x[:, half * 32:(half + 1) * 32])
            cmd = nisa.reduce_cmd.reset_reduce if half == 0 else nisa.reduce_cmd.reduce
            nisa.range_select(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=0.0,
                              bound1=32.0, reduce_res=top, reduce_cmd=cmd)
        nl.store(out, value=top)
        return out

    x = np.random.default_rng(19).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_array_equal(k(x)[:, 0], x.max(axis=1))


def test_select_reduce_picks_by_an_integer_predicate_reversed_or_not_and_reduces_to_the_max():
    @jit
    def k(x, reverse):
        out = nl.ndarray((128, 33), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.load(x)
        pred = nl.greater(t, 0.0, dtype=nl.uint8)
        sel = nl.ndarray((128, 32), dtype=x.dtype, buffer=nl.sbuf)
        top = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(dst=sel, predicate=pred, on_true=t, on_false=-5.0, reduce_res=top,
                           reduce_cmd=nisa.reduce_cmd.reset_reduce, reverse_pred=reverse)
        nl.store(out[:, 0:32], value=sel)
        nl.store(out[:, 32:33], value=top)
        return out

    x = np.random.default_rng(20).standard_normal((128, 32)).astype(np.float32)
    for reverse in (False, True):
        chosen = (x > 0) != reverse
        expected = np.where(chosen, x, np.float32(-5.0))
        got = k(x, reverse)
        np.testing.assert_array_equal(got[:, :32], expected)
        np.testing.assert_array_equal(got[:, 32], expected.max(axis=1))


@pytest.mark.parametrize(("case", "message"), [
    ("float_pred", "predicate must be int8, uint8, int16 or uint16"),
    ("add", "only reduces with max"),
    ("psum", "cannot both be in PSUM"),
    ("res", r"reduce_res must be a \(128, 1\) tile"),
])
def test_select_reduce_refuses_what_its_docs_rule_out(case, message):
    @jit
    def k(x):
        t = nl.load(x)
        pred = nl.greater(t, 0.0, dtype=nl.float32 if case == "float_pred" else nl.uint8)
        if case == "psum":
            pt = nl.ndarray((128, 16), dtype=nl.float32, buffer=nl.psum)
            nisa.tensor_copy(dst=pt, src=t)
            pp = nl.ndarray((128, 16), dtype=nl.uint8, buffer=nl.psum)
            nisa.tensor_copy(dst=pp, src=pred)
            t, pred = pt, pp
        res = nl.ndarray((128, 2) if case == "res" else (128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.select_reduce(predicate=pred, on_true=t, on_false=0.0, reduce_res=res,
                           reduce_op=nl.add if case == "add" else nl.maximum)
        return x

    with pytest.raises(NkiError, match=message):
        k(np.ones((128, 16), dtype=np.float32))
