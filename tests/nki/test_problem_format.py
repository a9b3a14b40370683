"""The problem format beyond tensor inputs: an SPMD launch grid (GRID) and non-tensor kernel arguments
(numbers, shapes) declared in INPUTS. Both are the trusted problem's: the runner launches every program of
the grid and passes the arguments to the kernel (in its own sandboxed process) and to the reference alike;
a declaration that makes no sense is a harness error that says what is wrong."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
from speedpatch.model import OK, Evaluation
from speedpatch.targets.nki import runner
from speedpatch.targets.nki.emulator import language as nl
from support.nki_eval import evaluate_problem

# Each program of a 4-program grid scales its own 128 rows; the epsilon and the shape are arguments.
GRID_PROBLEM = '''import nki
import nki.language as nl


@nki.jit
def scale_rows(x, eps, shape):
    rows, cols = shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    step = rows // nl.num_programs(0)
    tile = nl.load(x[i * step:(i + 1) * step, 0:cols])
    nl.store(out[i * step:(i + 1) * step, 0:cols], value=nl.add(nl.multiply(tile, 2.0), eps))
    return out


INPUTS = {"x": ((512, 256), "float32"), "eps": 0.25, "shape": {"value": (512, 256)}}
GRID = (4,)


def reference(x, eps, shape):
    assert isinstance(shape, tuple) and isinstance(eps, float)  # as declared, not as arrays
    return x * 2.0 + eps
'''

# A layer-norm row kernel whose epsilon and tile shape come from the problem, not from constants.
EPS_PROBLEM = '''import nki
import nki.language as nl
import numpy as np


@nki.jit
def norm_rows(x, eps, tile):
    assert isinstance(tile, tuple) and len(tile) == 2
    rows, cols = tile
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // rows):
        t = nl.load(x[i * rows:(i + 1) * rows, 0:cols])
        mean = nl.multiply(nl.sum(t, axis=1, keepdims=True), 1.0 / cols)
        centered = nl.subtract(t, mean)
        var = nl.multiply(nl.sum(nl.square(centered), axis=1, keepdims=True), 1.0 / cols)
        nl.store(out[i * rows:(i + 1) * rows, 0:cols], value=nl.multiply(centered, nl.rsqrt(nl.add(var, eps))))
    return out


INPUTS = {"x": {"shape": (256, 64), "dtype": "float32", "low": -1e-2, "high": 1e-2}, "eps": 1e-3,
          "tile": {"value": (128, 64)}}


def reference(x, eps, tile):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)
'''


def evaluate(problem: str, tmp_path: Path) -> Evaluation:
    """The problem as its own candidate, through the real nki-emulator backend (kernel process isolated)."""
    return evaluate_problem(tmp_path, problem)


def test_every_program_of_the_declared_grid_runs_and_writes_its_own_slice(tmp_path: Path):
    ev = evaluate(GRID_PROBLEM, tmp_path)
    assert ev.status == OK, ev.message + "\n" + ev.log
    # correct on fresh seeds and fully written: the provenance check saw every row come from a program
    assert ev.receipt["inputs"]["eps"] == {"value": 0.25}
    assert ev.receipt["inputs"]["shape"] == {"value": [512, 256]}
    assert ev.receipt["grid"] == [4]


def test_without_the_grid_only_program_zero_runs_and_the_unwritten_rows_are_reported(tmp_path: Path):
    # one program with the full step is a 512-partition tile: the kernel itself refuses it; with a
    # 2-program grid each program has 256 rows, also refused -- only the declared grid fits the kernel
    one_program = GRID_PROBLEM.replace("GRID = (4,)\n", "")
    ev = evaluate(one_program, tmp_path)
    assert ev.status != OK and "partition dimension" in ev.message and "512" in ev.message


def test_a_grid_program_that_skips_its_slice_leaves_the_output_unwritten(tmp_path: Path):
    # the last program redoes its neighbour's rows instead of its own
    lazy = GRID_PROBLEM.replace("    i = nl.program_id(0)\n", "    i = min(nl.program_id(0), 2)\n")
    ev = evaluate(lazy, tmp_path)
    assert ev.status != OK
    assert "never written" in ev.message or "NaN" in ev.message, ev.message


def test_an_epsilon_and_a_tuple_shape_reach_the_kernel_and_the_reference_as_declared(tmp_path: Path):
    ev = evaluate(EPS_PROBLEM, tmp_path)
    assert ev.status == OK, ev.message + "\n" + ev.log
    # the epsilon is what the result depends on here (variance ~3e-5 << eps): a kernel that ignored the
    # declared value would be off by far more than the tolerance
    wrong = EPS_PROBLEM.replace("nl.add(var, eps)", "nl.add(var, 1e-5)")
    bad = evaluate(wrong, tmp_path)
    assert bad.status != OK and "differs" in bad.message


def test_programs_of_an_nl_nc_grid_dimension_run_on_two_neuron_cores(tmp_path: Path):
    ev = evaluate(GRID_PROBLEM.replace("GRID = (4,)", "GRID = (nl.spmd_dim(nl.nc(2), 2),)"), tmp_path)
    assert ev.status == OK, ev.message + "\n" + ev.log
    assert ev.feedback["cores"] == 2  # programs of the nl.nc dimension run on two NeuronCores


# ---- declarations that make no sense: a clear harness error, before anything runs ------------------------


@pytest.mark.parametrize(("grid", "why"), [
    ((0, 2), "at least one program"),
    ((-3,), "at least one program"),
    (("4",), "not a whole number"),
    ((2.5,), "not a whole number"),
    ((True,), "not a whole number"),
    ((4096, 4096), "at most 4096"),
    ((), "1 to 8 dimensions"),
    ((1,) * 9, "1 to 8 dimensions"),
    ("4, 2", "not a whole number"),
])
def test_a_wrong_grid_declaration_is_a_harness_error_that_says_why(grid, why):
    with pytest.raises(runner.HarnessError, match=why):
        runner.launch_grid(types.SimpleNamespace(GRID=grid))


def test_grid_entries_keep_their_neuron_core_dimensions():
    grid = runner.launch_grid(types.SimpleNamespace(GRID=(nl.spmd_dim(nl.nc(2), 2), 3)))
    assert grid == (4, 3) and isinstance(grid[0], nl.spmd_dim)
    assert runner.launch_grid(types.SimpleNamespace()) == ()
    assert runner.launch_grid(types.SimpleNamespace(GRID=8)) == (8,)


@pytest.mark.parametrize(("spec", "why"), [
    ((2, 2), 'declare a tuple argument as {"value"'),
    ({"value": {"a": 1}}, "is a dict"),
    ({"value": float("nan")}, "finite number"),
    ({"value": np.zeros(3)}, "is a ndarray"),
    ({"value": tuple(range(100))}, "at most 64 items"),
])
def test_a_non_tensor_argument_that_cannot_travel_as_plain_data_is_refused(spec, why):
    problem = types.SimpleNamespace(INPUTS={"x": ((4, 4), "float32"), "arg": spec})
    with pytest.raises(runner.HarnessError, match=why):
        runner.make_inputs(problem, 0)


def test_non_tensor_arguments_keep_their_order_and_values_between_tensors():
    problem = types.SimpleNamespace(INPUTS={"k": 3, "x": ((4, 4), "float32"), "eps": {"value": 1e-6},
                                            "pool": {"value": (2, 2)}, "act": "gelu"})
    inputs = runner.make_inputs(problem, 0)
    assert list(inputs) == ["k", "x", "eps", "pool", "act"]
    assert inputs["k"] == 3 and inputs["eps"] == 1e-6 and inputs["pool"] == (2, 2) and inputs["act"] == "gelu"
    assert isinstance(inputs["x"], np.ndarray) and inputs["x"].shape == (4, 4)
    # a tensor spec may name its dtype by a NumPy type, as before
    typed = runner.make_inputs(types.SimpleNamespace(INPUTS={"y": ((2, 3), np.float16)}), 0)
    assert typed["y"].dtype == np.float16


def test_make_inputs_may_return_non_tensor_values_too():
    problem = types.SimpleNamespace(make_inputs=lambda rng: {"x": rng.standard_normal((2, 2)), "n": np.int64(5)})
    inputs = runner.make_inputs(problem, 0)
    assert inputs["n"] == 5 and type(inputs["n"]) is int


def test_a_wrong_grid_in_the_problem_file_reaches_the_user_as_a_harness_error(tmp_path: Path):
    ev = evaluate(GRID_PROBLEM.replace("GRID = (4,)", "GRID = (4, 0)"), tmp_path)
    assert ev.status != OK and "GRID = (4, 0)" in ev.message and "at least one program" in ev.message


def test_bf16_inputs_are_drawn_as_floats_like_fp32_ones():
    # ml_dtypes' bfloat16 has NumPy kind "V": it used to be drawn as integers in [-8, 8), and a uniform
    # range with |high| < 1 was a harness error ("high <= 0")
    problem = types.SimpleNamespace(INPUTS={"x": ((64, 64), "bfloat16"),
                                            "w": {"shape": (64, 64), "dtype": "bfloat16", "low": -0.05, "high": 0.05}})
    inputs = runner.make_inputs(problem, 0)
    x, w = inputs["x"].astype(np.float32), inputs["w"].astype(np.float32)
    assert str(inputs["x"].dtype) == "bfloat16"
    assert not np.all(x == np.round(x))  # normal(0, 1) values, not integers
    assert -0.051 <= w.min() < 0 < w.max() <= 0.051


def test_bf16_inputs_get_the_low_precision_tolerance_even_when_the_reference_computes_in_fp32():
    import ml_dtypes

    plain = types.SimpleNamespace()
    fp32 = [np.zeros((2, 2), dtype=np.float32)]
    bf16_inputs = {"a": np.zeros((2, 2), dtype=ml_dtypes.bfloat16), "n": 3}
    assert runner.tolerance(plain, fp32, bf16_inputs) == (2e-2, 2e-2)
    assert runner.tolerance(plain, fp32, {"a": np.zeros((2, 2), dtype=np.float32)}) == (1e-4, 1e-4)
    declared = types.SimpleNamespace(TOLERANCE={"rtol": 1e-3, "atol": 1e-5})
    assert runner.tolerance(declared, fp32, bf16_inputs) == (1e-3, 1e-5)


# An output parameter before a non-tensor input (the NKI doc example tensor_maxpool_kernel_(in_tensor,
# out_tensor, pool_size)): positional inputs would land in out_tensor's place, so arguments go by name.
OUTPUT_BEFORE_INPUT = '''import nki
import nki.language as nl


@nki.jit
def pool_rows(in_tensor, out_tensor, pool_size):
    c, h = in_tensor.shape
    i_p = nl.arange(c)[:, None, None]
    i_o = nl.arange(h // pool_size)[None, :, None]
    i_k = nl.arange(pool_size)[None, None, :]
    tile = nl.load(in_tensor)
    nl.store(out_tensor, value=nl.max(tile[i_p, pool_size * i_o + i_k], axis=[2]))


INPUTS = {"in_tensor": ((128, 64), "float32"), "pool_size": 4}
OUTPUTS = {"out_tensor": ((128, 16), "float32")}


def reference(in_tensor, pool_size):
    return in_tensor.reshape(128, 64 // pool_size, pool_size).max(axis=2)
'''


def test_inputs_after_an_output_parameter_reach_the_kernel_by_name(tmp_path: Path):
    ev = evaluate(OUTPUT_BEFORE_INPUT, tmp_path)
    assert ev.status == OK and ev.correct, ev.message + "\n" + ev.log
    # the input passed by name is still the launch's input: its bytes are required work
    assert ev.feedback["required_work"]["dma_bytes"] >= 128 * 64 * 4


def test_arguments_stay_positional_when_outputs_come_last():
    def kernel(a, b, out):
        return a, b, out

    assert runner.call_arguments(kernel, [1, 2], {"out": 3}, ["a", "b"]) == ([1, 2], {"out": 3})


def test_arguments_go_by_name_when_an_output_comes_before_an_input():
    def kernel(a, out, k):
        return a, out, k

    assert runner.call_arguments(kernel, [1, 2], {"out": 3}, ["a", "k"]) == ([], {"a": 1, "k": 2, "out": 3})
