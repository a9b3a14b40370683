"""The NKI API a kernel reaches from its sandboxed process includes what the emulator supports: the
constants, compiler hints and helpers public kernels use (nl.tile_size.bn_stats_fmax, nki.compiler's
no_reorder, nl.shared_constant...), served by the trusted emulator like every other call."""

from __future__ import annotations

from pathlib import Path

from speedpatch.model import OK, Evaluation
from support.nki_eval import evaluate_problem

PROBLEM = '''import numpy as np
import nki
import nki.compiler as ncc
import nki.language as nl


@nki.jit
def scaled_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    width = min(a.shape[1], nl.tile_size.bn_stats_fmax)
    two = nl.shared_constant(np.full((nl.tile_size.pmax, 1), 2.0, dtype=np.float32))
    for i in nl.affine_range(a.shape[1] // width):
        cols = nl.ds(i * width, width)
        x = nl.load(a[:, cols])
        y = nl.load(b[:, cols])
        k = nl.load(two)
        with ncc.no_reorder():
            s = nl.add(x, nl.multiply(y, k))
        nl.store(out[:, cols], value=s)
    return out


INPUTS = {"a": ((128, 1024), "float32"), "b": ((128, 1024), "float32")}


def reference(a, b):
    return a + 2.0 * b
'''


def evaluate(problem: str, tmp_path: Path) -> Evaluation:
    """The problem as its own candidate, through the real nki-emulator backend (kernel process isolated)."""
    ev = evaluate_problem(tmp_path, problem)
    assert ev.status == OK, ev.message + "\n" + ev.log
    return ev


def test_a_kernel_using_tile_size_constants_compiler_hints_and_shared_constants_runs_isolated(tmp_path: Path):
    ev = evaluate(PROBLEM, tmp_path)
    assert "separate process" in ev.receipt["isolation"] or "bubblewrap" in ev.receipt["isolation"]


BF16_PROBLEM = '''import numpy as np
import nki
import nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, value=nl.add(x, y))
    return out


INPUTS = {"a": ((128, 512), "bfloat16"), "b": ((128, 512), "bfloat16")}


def reference(a, b):
    return (a.astype(np.float32) + b.astype(np.float32)).astype(a.dtype)
'''


def test_bf16_inputs_are_declared_by_name_and_checked_at_the_low_precision_tolerance(tmp_path: Path):
    ev = evaluate(BF16_PROBLEM, tmp_path)
    assert ev.receipt["inputs"]["a"][1] == "bfloat16"


NUMPY_OPS_PROBLEM = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def shifted_scan(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    centered = nisa.tensor_scalar(data=x, op0=np.subtract, operand0=1.0, op1=np.multiply, operand1=0.5)
    nl.store(out, value=nisa.tensor_tensor_scan(centered, y, initial=0, op0=np.multiply, op1=np.add))
    return out


INPUTS = {"a": {"shape": (128, 64), "dtype": "float32", "low": 0.0, "high": 1.0}, "b": ((128, 64), "float32")}


def reference(a, b):
    decay = (a - 1.0) * 0.5
    out = np.zeros_like(a)
    state = np.zeros(a.shape[0], dtype=np.float32)
    for i in range(a.shape[1]):
        state = decay[:, i] * state + b[:, i]
        out[:, i] = state
    return out
'''


def test_numpy_functions_passed_as_operators_reach_the_emulator_from_the_kernel_process(tmp_path: Path):
    # the public tutorials write op0=np.subtract, op0=np.multiply, op1=np.add (not nl.*)
    evaluate(NUMPY_OPS_PROBLEM, tmp_path)


AP_AND_HELPER_PROBLEM = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def halve_pairs(t, out):
    out[...] = nl.multiply(nl.sum(t.ap([[16, 8], [2, 8], [1, 2]]), axis=[2]), 0.5)


@nki.jit
def pair_mean(x):
    out = nl.ndarray((8, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((8, 16), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    res = nl.ndarray((8, 8), dtype=x.dtype, buffer=nl.sbuf)
    halve_pairs(t, res)
    nisa.dma_copy(dst=out, src=res)
    return out


INPUTS = {"x": ((8, 16), "float32")}


def reference(x):
    return np.concatenate([x[:, 0::2, None], x[:, 1::2, None]], axis=2).mean(axis=2)
'''


def test_an_access_pattern_and_a_jit_helper_reach_the_emulator_from_the_kernel_process(tmp_path: Path):
    # tile.ap() is served to the sandboxed kernel; the @nki.jit helper the kernel calls is not a kernel of
    # its own; the reference concatenates input slices held in a list (the harness's work counter unwraps them)
    evaluate(AP_AND_HELPER_PROBLEM, tmp_path)


VIEWS_PROBLEM = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def views(x):
    out = nl.ndarray((4, 3, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((4, 12), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((4, 3, 2), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=t.reshape_dim(1, (2, -1)).permute((0, 2, 1)).slice(1, 0, 6, 2))
    nisa.dma_copy(dst=out, src=r)
    return out


INPUTS = {"x": ((4, 12), "float32")}


def reference(x):
    return x.reshape(4, 2, 6).transpose(0, 2, 1)[:, 0:6:2, :]
'''


def test_nki_tensor_view_methods_reach_the_emulator_from_the_kernel_process(tmp_path: Path):
    evaluate(VIEWS_PROBLEM, tmp_path)


def test_an_nki_tensor_method_not_emulated_is_named_to_the_isolated_kernel(tmp_path: Path):
    problem = VIEWS_PROBLEM.replace("t.reshape_dim(1, (2, -1)).permute((0, 2, 1)).slice(1, 0, 6, 2)",
                                    "t.flatten_dims(0, 1)")
    ev = evaluate_problem(tmp_path, problem)
    assert ev.status != OK
    assert "NkiTensor.flatten_dims is part of NKI but not of the speedpatch emulator" in ev.message + ev.log


CAUSAL_PROBLEM = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def causal_mask(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:128]
    t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    t[...] = nisa.affine_select(pred=(i_p >= i_f), on_true_tile=nl.load(x), on_false_value=nl.fp32.min)
    if nisa.get_nc_version() >= nisa.nc_version.gen3:
        t[...] = nl.copy(t)  # not on the modeled gen2 core
    nl.store(out, value=nl.maximum(t, -1e30))
    return out


INPUTS = {"x": ((128, 128), "float32")}


def reference(x):
    return np.where(np.tril(np.ones((128, 128), dtype=bool)), x, -1e30)
'''


def test_affine_select_fp32_constants_and_the_core_version_reach_the_emulator_from_the_kernel_process(
        tmp_path: Path):
    evaluate(CAUSAL_PROBLEM, tmp_path)


def test_finfo_limits_reach_the_kernel_process(tmp_path: Path):
    evaluate(CAUSAL_PROBLEM.replace("on_false_value=nl.fp32.min", "on_false_value=nl.finfo(x.dtype).min"), tmp_path)


def test_loop_reduce_reaches_the_emulator_from_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.language as nl


@nki.jit
def summed(x):
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        acc[...] = nl.loop_reduce(nl.load(x[i]), op=np.add, loop_indices=[i])
    nl.store(out, value=acc)
    return out


INPUTS = {"x": ((4, 128, 64), "float32")}


def reference(x):
    return x.sum(axis=0)
'''
    evaluate(problem, tmp_path)


def test_dma_modes_reach_the_kernel_process(tmp_path: Path):
    evaluate(CAUSAL_PROBLEM.replace("nl.store(out, value=nl.maximum(t, -1e30))",
                                    "r = nl.maximum(t, -1e30)\n    nisa.dma_copy(dst=out, src=r, dge_mode=nisa.dge_mode.hwdge)"),
             tmp_path)


def test_max8_reaches_the_emulator_from_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def top8(x):
    out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    top = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.sbuf)
    nisa.max8(dst=top, src=nl.load(x))
    nl.store(out, value=top)
    return out


INPUTS = {"x": ((128, 64), "float32")}


def reference(x):
    return -np.sort(-x, axis=1)[:, :8]
'''
    evaluate(problem, tmp_path)


def test_an_iota_of_free_mgrid_axes_fills_every_partition_in_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def window_index(x):
    out = nl.ndarray((128, 4, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    window = nl.mgrid[0:128, 0:4, 0:3]
    idx = nisa.iota(3 * window.x + window.y, dtype=nl.float32)
    nl.store(out, value=nl.add(nl.load(x), idx))
    return out


INPUTS = {"x": ((128, 4, 3), "float32")}


def reference(x):
    return x + np.arange(12, dtype=np.float32).reshape(1, 4, 3)
'''
    evaluate(problem, tmp_path)


def test_tensor_partition_reduce_reaches_the_emulator_from_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def column_sums(x):
    out = nl.ndarray((1, 256), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.tensor_partition_reduce(np.add, nl.load(x)))
    return out


INPUTS = {"x": ((128, 256), "float32")}


def reference(x):
    return x.sum(axis=0, keepdims=True)
'''
    ev = evaluate(problem, tmp_path)
    assert ev.feedback["engines"]["gpsimd"]["instructions"] == 1


def test_dma_transpose_reaches_the_emulator_from_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def transpose(x):
    out = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    return out


INPUTS = {"x": ((128, 64), "float32")}


def reference(x):
    return np.ascontiguousarray(x.T)
'''
    evaluate(problem, tmp_path)


GATHER_PROBLEM = '''import numpy as np
import nki
import nki.language as nl


@nki.jit
def gather(data, idx):
    out = nl.ndarray((128, 256), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    idx_tile = nl.load(idx[i_p])
    nl.store(out, value=nl.load(data[idx_tile[i_p, 0], nl.arange(256)[None, :]]))
    return out


def make_inputs(rng):
    return {"data": rng.standard_normal((128, 256)).astype(np.float32),
            "idx": rng.permutation(128).astype(np.int32)}


def reference(data, idx):
    return data[idx]
'''


def test_an_indirect_dma_gather_runs_in_the_kernel_process(tmp_path: Path):
    evaluate(GATHER_PROBLEM, tmp_path)


def test_an_embedding_lookup_that_reads_only_the_rows_it_needs_is_correct(tmp_path: Path):
    # 128 of a 1024-row table: the rows no index names are never loaded, and the result does not depend
    # on them (the trusted side changes them and runs the reference again).
    lookup = GATHER_PROBLEM.replace("standard_normal((128, 256))", "standard_normal((1024, 256))").replace(
        "rng.permutation(128)", "rng.choice(1024, 128, replace=False)")
    evaluate(lookup, tmp_path)


def test_dropout_reaches_the_emulator_from_the_kernel_process(tmp_path: Path):
    # LoRA forward's form: the rate is a kernel argument (0 at inference)
    problem = '''import numpy as np
import nki
import nki.language as nl


@nki.jit
def scaled(x, rate):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.dropout(nl.load(x), rate=rate), 2.0))
    return out


INPUTS = {"x": ((128, 256), "float32"), "rate": 0.0}


def reference(x, rate):
    return 2.0 * x
'''
    ev = evaluate(problem, tmp_path)
    assert ev.feedback["engines"]["vector"]["instructions"] >= 2


def test_range_select_and_select_reduce_reach_the_emulator_from_the_kernel_process(tmp_path: Path):
    problem = '''import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def masked_max(x):
    out = nl.ndarray((128, 2), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    res = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.range_select(on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less, bound0=0.0, bound1=16.0,
                      on_false_value=-1e30, reduce_res=res[:, 0:1], reduce_cmd=nisa.reduce_cmd.reset_reduce)
    pred = nl.greater(t, 0.0, dtype=nl.uint8)
    nisa.select_reduce(predicate=pred, on_true=t, on_false=-1e30, reduce_res=res[:, 1:2],
                       reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nl.store(out, value=res)
    return out


INPUTS = {"x": ((128, 64), "float32")}


def reference(x):
    return np.stack([x[:, :16].max(axis=1), np.where(x > 0, x, -1e30).max(axis=1)], axis=1)
'''
    evaluate(problem, tmp_path)


ALLOCATION_FUNCTION_AND_BROADCAST_PROBLEM = '''import numpy as np
import nki
import nki.compiler as ncc
import nki.isa as nisa
import nki.language as nl


def place(base):
    def at(idx, pdim_size, fdim_size):
        return (0, 0, base)
    return at


@nki.jit
def rows_plus_first(x, mask):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    first = nl.broadcast_to(nl.load(x[0:1, :]), shape=(128, x.shape[1]))
    acc = nl.ndarray((128, x.shape[1]), dtype=nl.float32, buffer=ncc.psum.alloc(place(0)))
    nisa.tensor_tensor(dst=acc, data1=nl.load(x), data2=first, op=nl.add)
    dst = nl.load(x)
    nisa.tensor_copy_predicated(dst=dst, src=acc, predicate=nl.load(mask))
    nl.store(out, value=dst)
    return out


def make_inputs(rng):
    return {"x": rng.standard_normal((128, 64)).astype(np.float32),
            "mask": (rng.random((128, 64)) < 0.5).astype(np.uint8)}


def reference(x, mask):
    return np.where(mask != 0, x + x[0:1, :], x)
'''


def test_an_allocation_function_nl_broadcast_to_and_a_predicated_copy_reach_the_emulator_from_the_kernel_process(
        tmp_path: Path):
    # the AWS doc example test_psum_modulo_alloc.py passes a function of its own to ncc.psum.alloc (only its place
    # travels: the emulator places tiles itself), test_nki_nl_broadcast.py calls nl.broadcast_to, and
    # test_nki_isa_copypredicated.py nisa.tensor_copy_predicated
    evaluate(ALLOCATION_FUNCTION_AND_BROADCAST_PROBLEM, tmp_path)
