"""nki-emulator: a two-tensor element-wise operation passed off as an instruction that reads one tensor.

ScalarE reads one input tile per instruction (its cost is N cycles for N elements per partition) and the
scalar operands of tensor_scalar are per-partition vectors, (P, 1), or constants (nki.isa.tensor_scalar:
"Both operand0 and operand1 can be SBUF or PSUM tiles of shape (data.shape[0], 1), i.e., vectors, or
compile-time constant scalars"); tensor_tensor runs on the Vector or GpSimd engine, not ScalarE. Both were
accepted: a full tile as tensor_scalar's operand0, or tensor_tensor(engine=scalar), made a tensor-tensor
operation cost ScalarE's one-input N cycles. Red-team, on the problem below: correct at 36.2 us against the
honest VectorE kernel's 47.2 us, either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from speedpatch.model import OK, RUNTIME_ERROR
from support.nki_eval import evaluate_problem

pytestmark = pytest.mark.slow

# Vector-engine bound: five tensor-tensor operations per element of two (128, 4096) fp32 inputs.
PROBLEM = '''"""out = ((a + b) * a + b) * a + b, (128, 4096) fp32."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def poly(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(4):
        x = nl.load(a[:, j * 1024:(j + 1) * 1024])
        y = nl.load(b[:, j * 1024:(j + 1) * 1024])
        t = nisa.tensor_tensor(x, y, op=nl.add)
        t = nisa.tensor_tensor(t, x, op=nl.multiply)
        t = nisa.tensor_tensor(t, y, op=nl.add)
        t = nisa.tensor_tensor(t, x, op=nl.multiply)
        t = nisa.tensor_tensor(t, y, op=nl.add)
        nl.store(out[:, j * 1024:(j + 1) * 1024], value=t)
    return out


INPUTS = {"a": ((128, 4096), "float32"), "b": ((128, 4096), "float32")}


def reference(a, b):
    return ((a + b) * a + b) * a + b
'''

KERNEL = '''@nki.jit
def poly(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(4):
        x = nl.load(a[:, j * 1024:(j + 1) * 1024])
        y = nl.load(b[:, j * 1024:(j + 1) * 1024])
        t = {op}(x, y, nl.add)
        t = {op}(t, x, nl.multiply)
        t = {op}(t, y, nl.add)
        t = {op}(t, x, nl.multiply)
        t = {op}(t, y, nl.add)
        nl.store(out[:, j * 1024:(j + 1) * 1024], value=t)
    return out
'''

FULL_TILE_AS_SCALAR_OPERAND = '''
def on_scalar(data, operand, op):
    return nisa.tensor_scalar(data, op, operand, engine=nisa.scalar_engine)


''' + KERNEL.format(op="on_scalar")

TENSOR_TENSOR_ON_SCALAR_ENGINE = '''
def on_scalar(data1, data2, op):
    return nisa.tensor_tensor(data1, data2, op=op, engine=nisa.scalar_engine)


''' + KERNEL.format(op="on_scalar")

PER_PARTITION_VECTOR = '''@nki.jit
def poly(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    s = nisa.tensor_scalar(x, nl.multiply, y[:, 0:1], op1=nl.add, operand1=2.0, engine=nisa.scalar_engine)
    nl.store(out, value=s)
    return out
'''

VECTOR_PROBLEM = PROBLEM.replace("((a + b) * a + b) * a + b\n", "a * b[:, 0:1] + 2.0\n")


def test_the_honest_tensor_tensor_kernel_is_measured(tmp_path: Path) -> None:
    ev = evaluate_problem(tmp_path, PROBLEM)
    assert ev.status == OK, ev.message + "\n" + ev.log


@pytest.mark.parametrize("kernel", [FULL_TILE_AS_SCALAR_OPERAND, TENSOR_TENSOR_ON_SCALAR_ENGINE],
                         ids=["full-tile-tensor_scalar-operand", "tensor_tensor-on-scalar-engine"])
def test_a_tensor_tensor_operation_cannot_run_at_the_cost_of_a_one_input_instruction(tmp_path: Path,
                                                                                   kernel: str) -> None:
    ev = evaluate_problem(tmp_path, PROBLEM, kernel)
    assert ev.status == RUNTIME_ERROR, f"{ev.status} {ev.value}: {ev.message}"
    assert "(128, 1) vector" in ev.message or "vector or gpsimd engine, not scalar" in ev.message, ev.message


def test_a_per_partition_vector_operand_on_the_scalar_engine_is_still_measured(tmp_path: Path) -> None:
    ev = evaluate_problem(tmp_path, VECTOR_PROBLEM, PER_PARTITION_VECTOR)
    assert ev.status == OK, ev.message + "\n" + ev.log
