"""APIs the third sweep of public NKI kernels needed (nki-samples contributed kernels: exact top-k mask, the
neuron-team transposes): the current nisa.iota form, bitvec operators, t.view(dtype) reinterpretation and
regrouping the free axes of an on-chip tile with reshape. Our own minimal kernels, values against NumPy."""

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

RNG_S = np.random.default_rng(3)

# ---- nisa.iota(dst, pattern, offset, channel_multiplier) -----------------------------------------------


def _iota(shape: tuple[int, ...], dtype: object, **kw: object) -> np.ndarray:
    @jit
    def k(x):
        out = nl.ndarray(shape, dtype=dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(shape, dtype=dtype, buffer=nl.sbuf)
        nisa.iota(dst=t, **kw)
        nl.store(out, value=t)
        return out

    return k(np.zeros((1, 1), dtype=np.float32))


def test_iota_pattern_form_follows_the_documented_loop_nest():
    got = _iota((4, 2, 3), nl.int32, pattern=[[10, 2], [1, 3]], offset=5, channel_multiplier=100)
    c = np.arange(4)[:, None, None]
    expected = 5 + 100 * c + 10 * np.arange(2)[None, :, None] + np.arange(3)[None, None, :]
    np.testing.assert_array_equal(got, expected)


def test_iota_is_exact_32_bit_integer_arithmetic_beyond_float32_precision():
    got = _iota((2, 3), nl.int32, pattern=[[1, 3]], offset=(1 << 30) + 1, channel_multiplier=0)
    np.testing.assert_array_equal(got, np.full((2, 1), (1 << 30) + 1) + np.arange(3))


def test_iota_into_a_float_tile_is_cast():
    got = _iota((3, 4), nl.float32, pattern=[[2, 4]], offset=0, channel_multiplier=1)
    np.testing.assert_array_equal(got, np.arange(3)[:, None] + 2 * np.arange(4)[None, :])


def test_iota_pattern_must_cover_the_elements_per_partition():
    with pytest.raises(NkiError, match="makes 6 values per partition"):
        _iota((2, 8), nl.int32, pattern=[[1, 6]], offset=0)


def test_iota_pattern_form_runs_on_gpsimd():
    _iota((128, 64), nl.int32, pattern=[[1, 64]], offset=0)
    engines = last_report()["engines"]
    assert engines["gpsimd"]["instructions"] == 1 and engines["vector"]["instructions"] == 0


# ---- bitvec operators -------------------------------------------------------------------------------------

A = np.array([[0x3F800001, -7, 12, 0x7FFFFFF0]] * 2, dtype=np.int32)
B = np.array([[0x0000FFFF, 3, 10, 0x0F0F0F0F]] * 2, dtype=np.int32)


def _tt(op: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    @jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=nl.load(a), data2=nl.load(b), op=op)
        nl.store(out, value=r)
        return out

    return k(a, b)


@pytest.mark.parametrize(("op", "expected"), [(nl.bitwise_or, np.bitwise_or), (nl.bitwise_and, np.bitwise_and),
                                              (nl.bitwise_xor, np.bitwise_xor), (np.bitwise_or, np.bitwise_or)])
def test_tensor_tensor_bitvec_ops_keep_every_bit_of_int32_patterns(op, expected):
    np.testing.assert_array_equal(_tt(op, A, B), expected(A, B))


def test_tensor_scalar_shifts_with_a_scalar_amount():
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=nl.load(a), op0=nl.right_shift, operand0=4, op1=nl.left_shift,
                           operand1=1)
        nl.store(out, value=r)
        return out

    np.testing.assert_array_equal(k(A), (A >> 4) << 1)


def test_a_left_shift_wraps_to_the_destination_width():
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.left_shift(nl.load(a), 4))
        return out

    np.testing.assert_array_equal(k(A), (A.astype(np.int64) << 4).astype(np.int32))


def test_bitvec_ops_refuse_float_tiles():
    with pytest.raises(NkiError, match="bitvec operators need integer tiles"):
        _tt(nl.bitwise_and, A.astype(np.float32), B.astype(np.float32))


def test_bitvec_and_arithmetic_ops_do_not_mix_in_one_tensor_scalar():
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=nl.load(a), op0=nl.right_shift, operand0=1, op1=nl.add, operand1=1)
        nl.store(out, value=r)
        return out

    with pytest.raises(NkiError, match="both be bitvec operators or both arithmetic"):
        k(A)


def test_bitvec_ops_run_on_the_vector_engine_only():
    @jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        r = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=nl.load(a), op0=nl.bitwise_and, operand0=3, engine=nisa.gpsimd_engine)
        nl.store(out, value=r)
        return out

    with pytest.raises(NkiError, match="Vector engine only"):
        k(A)


# ---- t.view(dtype) --------------------------------------------------------------------------------------


def test_view_reads_int32_bit_patterns_as_float32():
    bits = np.array([[0x3F800000, 0x40490FDB], [0xBF000000, 0x00000000]], dtype=np.uint32).view(np.int32)

    @jit
    def k(b):
        out = nl.ndarray(b.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(b)
        r = nl.ndarray(b.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=r, data=t.view(nl.float32), op0=nl.multiply, operand0=2.0)
        nl.store(out, value=r)
        return out

    np.testing.assert_array_equal(k(bits), bits.view(np.float32) * 2)


def test_writing_through_a_float32_view_stores_its_bits():
    x = np.array([[1.0, -0.5, 3.25]], dtype=np.float32)

    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, dtype=nl.int32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t.view(nl.float32), src=nl.load(x))
        nl.store(out, value=t)
        return out

    np.testing.assert_array_equal(k(x), x.view(np.int32))


def test_view_between_widths_or_of_widened_types_is_refused():
    @jit
    def k(x, dtype):
        nl.load(x).view(dtype)
        return x

    with pytest.raises(NkiError, match="keeps the element width"):
        k(np.zeros((2, 2), dtype=np.float32), nl.int16)
    with pytest.raises(NotEmulated, match="bf16/fp16/fp8"):
        k(np.zeros((2, 2), dtype=np.float16), nl.int16)


# ---- reshape of an on-chip tile --------------------------------------------------------------------------


def test_an_sbuf_tile_regroups_its_free_axes_with_reshape():
    x = np.arange(4 * 2 * 3 * 5, dtype=np.float32).reshape(4, 2, 3, 5)

    @jit
    def k(x):
        out = nl.ndarray((4, 5, 6), dtype=x.dtype, buffer=nl.shared_hbm)
        flat = nl.load(x).reshape((4, 30))
        nl.store(out, value=nl.copy(flat).reshape((4, 5, 6)))
        return out

    np.testing.assert_array_equal(k(x), x.reshape(4, 5, 6))


def test_reshape_of_an_sbuf_tile_keeps_the_partition_axis():
    @jit
    def k(x):
        nl.load(x).reshape((8, 6))
        return x

    with pytest.raises(NkiError, match="partition axis"):
        k(np.zeros((4, 12), dtype=np.float32))


def test_reshape_of_a_strided_slice_of_an_sbuf_tile_is_refused():
    @jit
    def k(x):
        nl.load(x)[:, 0:12:2].reshape((4, 2, 3))
        return x

    with pytest.raises(NkiError, match="not contiguous"):
        k(np.zeros((4, 12), dtype=np.float32))


# ---- through the isolated kernel process ------------------------------------------------------------------

ISOLATED = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def bits(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    pos = nl.ndarray((128, 4), dtype=nl.int32, buffer=nl.sbuf)
    nisa.iota(dst=pos, pattern=[[1, 4]], offset=0, channel_multiplier=0)
    hi = nl.ndarray((128, 4), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=hi, data=pos, op0=nl.left_shift, operand0=23, op1=nl.bitwise_or, operand1=0x3F800000)
    scaled = nl.ndarray((128, 4), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=scaled, data1=hi.view(nl.float32), data2=nl.load(x).reshape((128, 4)), op=nl.multiply)
    nl.store(out, value=scaled.reshape((128, 2, 2)))
    return out


INPUTS = {"x": ((128, 2, 2), "float32")}


def reference(x):
    pos = np.tile(np.arange(4, dtype=np.int64), (128, 1))
    one = ((pos << 23) | 0x3F800000).astype(np.uint32).view(np.float32)
    return one.reshape(128, 2, 2) * x
'''


def test_iota_bitvec_view_and_reshape_reach_the_isolated_kernel(tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(ISOLATED)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=ISOLATED)
    ev = target.backend("nki-emulator").evaluate(ISOLATED, ctx)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- torch_neuronx.nki_jit (older NKI documentation examples) ---------------------------------------------

TORCH_NKI_JIT = '''import numpy as np
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa
from torch_neuronx import nki_jit


@nki_jit
def mm_spmd(a_t, b, result):
    col = nl.program_id(0) * 128
    psum = nisa.nc_matmul(nl.load(a_t[0:128, col:col + 128]), nl.load(b))
    nl.store(result[col:col + 128, 0:512], value=nl.copy(psum, dtype=result.dtype))


GRID = (2,)
INPUTS = {"a_t": ((128, 256), "float32"), "b": ((128, 512), "float32")}
OUTPUTS = {"result": ((256, 512), "float32")}


def reference(a_t, b):
    return a_t.T @ b
'''


def test_a_kernel_decorated_with_torch_neuronx_nki_jit_is_found_and_runs_isolated(tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(TORCH_NKI_JIT)
    assert kernel.name == "mm_spmd"
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=TORCH_NKI_JIT)
    ev = target.backend("nki-emulator").evaluate(TORCH_NKI_JIT, ctx)
    assert ev.status == OK and ev.correct, ev.message + ev.log


def test_torch_neuronx_offers_the_kernel_only_nki_jit_not_torch(tmp_path: Path):
    problem = TORCH_NKI_JIT.replace("from torch_neuronx import nki_jit", "from torch_neuronx import nki_jit\n"
                                    "from torch_neuronx import trace")
    target = NkiTarget()
    (kernel,) = target.find_kernels(problem)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=problem)
    ev = target.backend("nki-emulator").evaluate(problem, ctx)
    assert ev.status != OK and "trace" in ev.message + ev.log


# ---- a legacy transpose result (in PSUM) as a matmul operand ----------------------------------------------


def _transpose_then_matmul(uses: int):
    @jit
    def k(a, b):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        a_t = nisa.nc_transpose(nl.load(a))  # the legacy return value: the Tensor engine writes PSUM
        acc = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
        for _ in range(uses):
            acc += nisa.nc_matmul(a_t, nl.load(b))
        nl.store(out, value=nl.copy(acc))
        return out

    return k


def test_a_legacy_transpose_result_feeds_a_matmul_through_one_sbuf_copy():
    a = RNG_S.standard_normal((128, 128)).astype(np.float32)
    b = RNG_S.standard_normal((128, 128)).astype(np.float32)
    once = _transpose_then_matmul(1)(a, b)
    np.testing.assert_allclose(once, a @ b, rtol=1e-4, atol=1e-3)
    copies_once = last_report()["engines"]["vector"]["instructions"]
    twice = _transpose_then_matmul(2)(a, b)
    np.testing.assert_allclose(twice, 2 * (a @ b), rtol=1e-4, atol=1e-3)
    # the second matmul reads the same SBUF copy: no second copy
    assert last_report()["engines"]["vector"]["instructions"] == copies_once


def test_a_tile_the_kernel_declared_in_psum_is_still_no_matmul_operand():
    @jit
    def k(a):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=p, data=nl.load(a))
        nl.store(out, value=nl.copy(nisa.nc_matmul(p, nl.load(a))))
        return out

    with pytest.raises(NkiError, match="must be in SBUF"):
        k(np.zeros((128, 128), dtype=np.float32))


def _matmul_with_perf_mode(mode: object):
    @jit
    def k(a):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a, dtype=nl.bfloat16)
        nl.store(out, value=nl.copy(nisa.nc_matmul(t, t, perf_mode=mode)))
        return out

    return k


def test_the_fp8_double_row_performance_mode_is_refused_on_the_modeled_neuroncore_v2():
    with pytest.raises(NkiError, match="NeuronCore-v2 .* has no performance mode"):
        _matmul_with_perf_mode("double_row_gen3")(np.zeros((128, 128), dtype=np.float32))
    with pytest.raises(NkiError, match="no performance mode"):
        _matmul_with_perf_mode(nisa.matmul_perf_mode.double_row)(np.zeros((128, 128), dtype=np.float32))


def test_perf_mode_none_is_the_plain_matmul():
    a = RNG_S.standard_normal((128, 128)).astype(np.float32)
    got = _matmul_with_perf_mode(nisa.matmul_perf_mode.none)(a)
    np.testing.assert_allclose(got, a.T @ a, rtol=2e-2, atol=0.5)


# ---- nc_matmul: several free axes, accumulate= ------------------------------------------------------------


def test_a_moving_tile_with_two_free_axes_multiplies_flattened_into_a_matching_psum_tile():
    a = RNG_S.standard_normal((128, 64)).astype(np.float32)
    b = RNG_S.standard_normal((128, 2, 128)).astype(np.float32)

    @jit
    def k(a, b):
        out = nl.ndarray((64, 2, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray((64, 2, 128), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=nl.load(a), moving=nl.load(b))
        nl.store(out, value=nl.copy(p))
        return out

    np.testing.assert_allclose(k(a, b), np.einsum("km,kfn->mfn", a, b), rtol=1e-4, atol=1e-3)


def test_nc_matmul_accumulate_false_overwrites_and_true_adds():
    a = RNG_S.standard_normal((128, 128)).astype(np.float32)

    def run_twice(second: bool) -> np.ndarray:
        @jit
        def k(a):
            out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
            p = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
            t = nl.load(a)
            nisa.nc_matmul(dst=p, stationary=t, moving=t, accumulate=False)
            nisa.nc_matmul(dst=p, stationary=t, moving=t, accumulate=second)
            nl.store(out, value=nl.copy(p))
            return out

        return k(a)

    np.testing.assert_allclose(run_twice(False), a.T @ a, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(run_twice(True), 2 * (a.T @ a), rtol=1e-4, atol=1e-3)


# ---- the static check: a local variable named like a module -----------------------------------------------

LOCAL_GC = '''import nki
import nki.language as nl


@nki.jit
def k(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    gc = nl.load(x)
    nl.store(out, value=nl.multiply(gc, 2.0))
    return out
'''


def test_a_local_variable_named_gc_is_not_the_gc_module():
    target = NkiTarget()
    (kernel,) = target.find_kernels(LOCAL_GC)
    assert target.static_check(LOCAL_GC, kernel) == []


def test_the_gc_module_itself_stays_refused():
    target = NkiTarget()
    # `gc` used without the kernel binding it: the module's name, refused; so is `import gc`
    unbound = LOCAL_GC.replace("    gc = nl.load(x)\n", "    gc.collect()\n    y = nl.load(x)\n").replace(
        "nl.multiply(gc, 2.0)", "nl.multiply(y, 2.0)")
    (kernel,) = target.find_kernels(unbound)
    assert any("'gc'" in r for r in target.static_check(unbound, kernel))
    imported = "import gc\n" + LOCAL_GC
    (kernel,) = target.find_kernels(imported)
    assert any("imports 'gc'" in r for r in target.static_check(imported, kernel))


# ---- a return at the end of an NKI loop's body (doc examples prof-kernel.py, layout-dynamic-loop.py) -------

RETURN_IN_LOOP = '''import math
import numpy as np
import nki
import nki.language as nl


@nki.jit
def exp_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for p in nl.affine_range(math.ceil(x.shape[0] / 128)):
        i_p = p * 128 + nl.arange(128)[:, None]
        i_f = nl.arange(x.shape[1])[None, :]
        t = nl.load(x[i_p, i_f], mask=(i_p < x.shape[0]))
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < x.shape[0]))
        return out


INPUTS = {"x": ((300, 64), "float32")}


def reference(x):
    return np.exp(x)
'''


def test_a_return_ending_an_nki_loop_body_moves_after_the_loop_with_line_numbers_kept():
    from speedpatch.targets.nki.detect import loop_returns_hoisted

    moved = loop_returns_hoisted(RETURN_IN_LOOP, "exp_rows")
    assert moved.splitlines()[14] == "    return out"
    assert len(moved.splitlines()) == len(RETURN_IN_LOOP.splitlines())
    assert [a for a, b in zip(moved.splitlines(), RETURN_IN_LOOP.splitlines(), strict=True) if a != b] == \
        ["    return out"]


def test_returns_in_python_loops_or_before_the_end_of_the_body_are_left_alone():
    from speedpatch.targets.nki.detect import loop_returns_hoisted

    python_loop = RETURN_IN_LOOP.replace("nl.affine_range(math.ceil(x.shape[0] / 128))",
                                         "range(math.ceil(x.shape[0] / 128))")
    assert loop_returns_hoisted(python_loop, "exp_rows") == python_loop
    early = RETURN_IN_LOOP.replace("        return out\n", "        return out\n        t = t\n")
    assert loop_returns_hoisted(early, "exp_rows") == early
    assert loop_returns_hoisted(RETURN_IN_LOOP, "another_kernel") == RETURN_IN_LOOP


def test_a_kernel_returning_inside_its_affine_range_loop_processes_every_tile(tmp_path: Path):
    target = NkiTarget()
    (kernel,) = target.find_kernels(RETURN_IN_LOOP)
    ctx = EvalContext(kernel=kernel, path=str(tmp_path / "problem.py"), workdir=tmp_path, timeout=120,
                      baseline_source=RETURN_IN_LOOP)
    ev = target.backend("nki-emulator").evaluate(RETURN_IN_LOOP, ctx)
    assert ev.status == OK and ev.correct, ev.message + ev.log


# ---- nl.softmax / nl.rms_norm (documented nki.language operators, emulated by their expansion) -------------


def test_nl_softmax_along_the_free_axis_matches_numpy():
    x = RNG_S.standard_normal((128, 256)).astype(np.float32)

    @jit
    def k(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.softmax(nl.load(x), axis=1))
        return out

    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(k(x), e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    engines = last_report()["engines"]
    assert engines["scalar"]["instructions"] == 1  # the subtraction rides on exp's bias


def test_nl_rms_norm_is_x_over_rms_times_w():
    x = RNG_S.standard_normal((128, 256)).astype(np.float32)
    w = RNG_S.standard_normal((1, 256)).astype(np.float32)

    @jit
    def k(x, w):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        wt = nl.load(w).broadcast_to((128, 256))
        nl.store(out, value=nl.rms_norm(nl.load(x), wt, axis=1, n=256, epsilon=1e-6))
        return out

    want = x / np.sqrt((x ** 2).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(k(x, w), want, rtol=1e-5, atol=1e-6)


def test_softmax_along_the_partition_axis_is_refused():
    @jit
    def k(x):
        nl.softmax(nl.load(x), axis=0)
        return x

    with pytest.raises(NkiError, match="partition axis"):
        k(np.zeros((128, 4), dtype=np.float32))
